//! `hopscope compare RUN_A RUN_B`: what changed from one run to another,
//! each figure with a CI and a verdict under the fixed rule of
//! `hopscope_analyze::change`, and an exit status a CI job can gate on.
//! `decompose --baseline NAME` runs the same comparison against a saved
//! baseline.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::Decomposition;
use hopscope_analyze::change::{self, Change, RunSamples, Verdict};

use crate::index::RunIndex;

/// Which verdicts fail the command (exit status 3, 4 or 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FailOn {
    /// A regression exits 3; a drift that refuses the verdict exits 5.
    Regression,
    /// A regression exits 3, an improvement 4, a refused verdict 5.
    Any,
}

/// Exit statuses of a gated comparison, documented in `--help` and the
/// README: 0 nothing the gate fails on, 3 regression, 4 improvement
/// (`--fail-on any`), 5 drift-suspected (no verdict: rerun).
pub(crate) fn exit_status(verdict: Verdict, fail_on: Option<FailOn>) -> u8 {
    match (fail_on, verdict) {
        (None, _) | (Some(_), Verdict::NoChange) | (Some(FailOn::Regression), Verdict::Improvement) => 0,
        (Some(_), Verdict::Regression) => 3,
        (Some(FailOn::Any), Verdict::Improvement) => 4,
        (Some(_), Verdict::DriftSuspected) => 5,
    }
}

/// Flags of `hopscope compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "RUN is a run directory, a baseline's name, `latest`, `#ID`, a date (YYYY-MM-DD: that \
day's newest run) or a commit (prefix). Exit status: 0 unless --fail-on fails it; 3 regression, 4 improvement \
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

/// A run directory's decomposition and samples (slices from its trace when
/// it kept one).
fn samples(dir: &Path) -> anyhow::Result<RunSamples> {
    let file = dir.join("result.json");
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let d = Decomposition::from_json(&text).with_context(|| format!("cannot read {}", file.display()))?;
    let trace = dir.join("trace.hop");
    if !trace.is_file() {
        return Ok(RunSamples::new(&d, None));
    }
    let (header, joined) =
        hopscope_analyze::join_file(&trace).with_context(|| format!("cannot read {}", trace.display()))?;
    Ok(RunSamples::new(&d, Some((&header, &joined))))
}

/// The change from the run in `a` to the run in `b`.
pub(crate) fn between(a: (&Path, &str), b: (&Path, &str)) -> anyhow::Result<Change> {
    Ok(change::compare(&samples(a.0)?, &samples(b.0)?, a.1, b.1))
}

/// What a run key names, for the receipt: the key and the directory.
fn label(key: &str, dir: &Path) -> String {
    if Path::new(key) == dir { key.to_owned() } else { format!("{key} ({})", dir.display()) }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let index = RunIndex::open()?;
    let (a, b) = (index.find(&args.run_a)?, index.find(&args.run_b)?);
    let change = between((&a.dir, &label(&args.run_a, &a.dir)), (&b.dir, &label(&args.run_b, &b.dir)))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&change).context("cannot write JSON")?);
    } else {
        print!("{}", hopscope_reports::change_markdown(&change));
    }
    Ok(ExitCode::from(exit_status(change.verdict, args.fail_on)))
}
