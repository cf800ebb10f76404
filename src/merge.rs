//! `hopscope merge`: import a CRDT changeset along the naive and the tuned
//! merge path (and each step tuned alone), and decompose a merged change
//! statement by statement.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::ab_trace::AbTrace;
use hopscope_analyze::merge::{self, Phase};

use hopscope_workloads::merge::ChangesetSpec;
use hopscope_workloads::merge::run::{self as merge_run, MergePlan};

use hopscope_harness::rundir;

use crate::usage::UsageError;

/// Flags of `hopscope merge`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A short run: 2,000 rows (8,000 changes), 6 rounds, instead of the
    /// published 20,000 rows × 4 columns (80,000 changes), 8 rounds.
    #[arg(long)]
    quick: bool,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Rows in the changeset (4 column changes each).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    rows: Option<u64>,
    /// Rounds (each imports once per arm, cold and again).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: Option<u32>,
    /// Parts per import: each import is one transaction run in this many
    /// equal parts, every arm's parts interleaved; each part is one paired
    /// sample (default: the most parts, up to 32, that split the changes
    /// evenly).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    parts: Option<u32>,
    /// Only these steps, comma-separated (default: every step). `naive`,
    /// `tuned` and `naive-control` always run: each step is judged against
    /// naive, with the control, as a share of the naive → tuned gap.
    #[arg(long, value_delimiter = ',')]
    steps: Vec<String>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let base =
        if args.quick { ChangesetSpec { rows: 2_000, ..ChangesetSpec::PUBLISHED } } else { ChangesetSpec::PUBLISHED };
    let spec = ChangesetSpec { rows: args.rows.unwrap_or(base.rows), ..base };
    let rounds = args.rounds.unwrap_or(if args.quick { 6 } else { 8 });
    let changes = spec.rows.saturating_mul(spec.columns as u64);
    let parts = args.parts.unwrap_or_else(|| merge_run::even_parts(changes, merge_run::PARTS));
    // Values clap cannot judge alone (they depend on each other or on the
    // plan's step names) are usage errors too: exit 2, before any file.
    let invalid = |message: String| UsageError::new("merge", clap::error::ErrorKind::InvalidValue, message);
    if !changes.is_multiple_of(u64::from(parts)) {
        return Err(invalid(format!(
            "--parts {parts} does not split {changes} changes evenly (try {})",
            merge_run::even_parts(changes, parts)
        ))
        .into());
    }
    let mut plan = MergePlan { parts, ..MergePlan::new(spec, rounds) };
    if !args.steps.is_empty() {
        let known: Vec<&str> = plan.arms.iter().filter(|(arm, _)| arm.is_step()).map(|(arm, _)| arm.name()).collect();
        if let Some(unknown) = args.steps.iter().find(|s| !known.contains(&s.as_str())) {
            return Err(
                invalid(format!("--steps: unknown step `{unknown}`: the steps are {}", known.join(", "))).into()
            );
        }
        plan.arms.retain(|(arm, _)| !arm.is_step() || args.steps.iter().any(|s| s == arm.name()));
    }
    let dir = rundir::create(args.out.as_deref(), "merge", "latest-merge")?;
    eprintln!(
        "merging {} changes × {} arms × 2 imports × {rounds} rounds into {}",
        spec.rows * spec.columns as u64,
        plan.arms.len(),
        dir.display()
    );
    let trace_path = merge_run::run(&plan, &dir, rundir::metadata(), rundir::show_progress())?;
    // Streamed: one block in memory at a time.
    let trace =
        AbTrace::read_file(&trace_path).with_context(|| format!("cannot read back {}", trace_path.display()))?;
    let result = merge::analyze(&trace, hopscope_analyze::BOOTSTRAP_SEED);
    let mut written = hopscope_reports::write_merge(&dir, &result)?;
    written.push("trace", trace_path);
    println!("{:<20} {:>12} {:>12}", "arm", "cold µs/chg", "again µs/chg");
    for (arm, phases) in &result.arms {
        let cell = |p: &str| phases.get(p).map_or("–".to_owned(), |f| format!("{:.2}", f.us_per_change.median));
        println!("{arm:<20} {:>12} {:>12}", cell(Phase::Cold.name()), cell(Phase::Again.name()));
    }
    for (phase, ratio) in &result.speedup {
        println!("naive ÷ tuned ({phase}): {ratio:.1}×");
    }
    print!("\n{written}");
    Ok(ExitCode::SUCCESS)
}
