//! `hopscope compare RUN_A RUN_B`: what changed from one run to another,
//! each figure with a CI and a verdict under the fixed rule of
//! `hopscope_analyze::change`, and an exit status a CI job can gate on.
//! `decompose --baseline NAME` runs the same comparison against a saved
//! baseline.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_harness::gate::{self, FailOn};
use hopscope_harness::index::RunIndex;

/// Flags of `hopscope compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "RUN is a run directory, a baseline's name, `latest`, `#ID`, a date (YYYY-MM-DD: that \
day's newest run), a commit (prefix), or a `.hop` trace (a live capture; analysed on the way). Exit status: 0 unless --fail-on fails it; 3 regression, 4 improvement \
(--fail-on any), 5 drift-suspected (no verdict); 1 an error, 2 a usage error.")]
pub(crate) struct Args {
    /// The run to compare against (before).
    run_a: String,
    /// The run to judge (after).
    run_b: String,
    /// Fail (non-zero exit) on a regression, or on any change.
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
    /// Print the change as JSON (`hopscope.change/1`) instead of Markdown.
    #[arg(long)]
    json: bool,
}

/// What a run key names, for the receipt: the key and the directory.
fn label(key: &str, dir: &Path) -> String {
    if Path::new(key) == dir { key.to_owned() } else { format!("{key} ({})", dir.display()) }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Reading the index never creates it.
    let index = RunIndex::located();
    // A trace (a capture of a running program) is compared as it is,
    // analysed on the way; anything else names a run.
    let find = |key: &str| -> anyhow::Result<std::path::PathBuf> {
        let path = Path::new(key);
        if path.is_file() && path.extension().is_some_and(|e| e == "hop") {
            return Ok(path.to_owned());
        }
        Ok(index.find(key)?.dir)
    };
    let (a, b) = (find(&args.run_a)?, find(&args.run_b)?);
    let change = gate::between((&a, &label(&args.run_a, &a)), (&b, &label(&args.run_b, &b)))?;
    if args.json {
        crate::stdout::emit(&format!("{}\n", serde_json::to_string_pretty(&change).context("cannot write JSON")?))?;
    } else {
        crate::stdout::emit(&hopscope_reports::change_markdown(&change))?;
    }
    Ok(ExitCode::from(gate::change_status(&change, args.fail_on)))
}
