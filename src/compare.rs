//! `hopscope compare RUN_A RUN_B`: what changed from one run to another,
//! each figure with a CI and a verdict under the fixed rule of
//! `hopscope_analyze::change`, and an exit status a CI job can gate on.
//! `decompose --baseline NAME` runs the same comparison against a saved
//! baseline.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_harness::gate::{self, FailOn, RunSource};
use hopscope_harness::index::RunIndex;

use crate::usage::UsageError;

/// Flags of `hopscope compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "RUN is a run directory, a baseline's name, `latest`, `#ID`, a date (YYYY-MM-DD: that \
day's newest run), a commit (prefix), or a `.hop` trace (a live capture; analysed on the way), whole or some of its windows: `TRACE@3`, `TRACE@1-4`. Exit status: 0 unless --fail-on fails it; 3 regression, 4 improvement \
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

/// What a run key names, for the receipt: the key, and the directory a
/// run key found.
fn label(key: &str, source: &RunSource) -> String {
    match source {
        RunSource::Dir(dir) if Path::new(key) != dir => format!("{key} ({})", dir.display()),
        _ => key.to_owned(),
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Reading the index never creates it.
    let index = RunIndex::located();
    // A trace (a capture of a running program) is compared as it is,
    // analysed on the way; anything else names a run.
    let find = |key: &str| -> anyhow::Result<RunSource> {
        match RunSource::trace(key) {
            // A window selector that cannot be is a usage error.
            Some(trace) => trace.map_err(|why| {
                UsageError::new("compare", clap::error::ErrorKind::InvalidValue, format!("{key}: {why}")).into()
            }),
            // A `.hop` key that names no file is a missing trace, not a
            // run the index lacks.
            None if trace_path(key).ends_with(".hop") => anyhow::bail!("no trace {}: no such file", trace_path(key)),
            None => Ok(RunSource::Dir(index.find(key)?.dir)),
        }
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

/// The path part of a trace key (`PATH.hop@N-M` → `PATH.hop`).
fn trace_path(key: &str) -> &str {
    key.rsplit_once('@').map_or(key, |(path, _)| path)
}
