//! `hopscope ab SPEC`: run a pre-registered A/B experiment and give its
//! verdict; `hopscope ab SPEC --analyze DIR` re-judges an earlier run under
//! the rule it recorded, and says if the spec was edited since.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::experiment::{self, Experiment};
use hopscope_probe::Trace;
use hopscope_workloads::runner;

use crate::spec::{self, Spec};
use crate::{report, rundir};

/// Flags of `hopscope ab`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The experiment spec (TOML), e.g. experiments/reply-persistent.toml.
    spec: PathBuf,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not run: re-judge the trace in this run directory.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    analyze: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Parse before anything else: a bad spec must fail before measuring.
    let spec = Spec::load(&args.spec)?;
    let (dir, experiment) = match &args.analyze {
        Some(dir) => (dir.clone(), reanalyze(&spec, dir)?),
        None => measure(&spec, args.out.as_deref())?,
    };
    let written = write(&dir, &experiment)?;
    println!("{}: {}", experiment.name, experiment.outcome.verdict);
    for p in &experiment.outcome.passes {
        println!(
            "  pass {} ({}): Δ {:+.3} µs ({:+.2}%), CI {:+.3}…{:+.3}, control {}",
            p.pass,
            p.order,
            p.delta_us.median,
            p.delta_pct,
            p.delta_us.ci95[0],
            p.delta_us.ci95[1],
            p.control_pct.map_or("–".to_owned(), |c| format!("{c:+.2}%"))
        );
    }
    for reason in &experiment.outcome.reasons {
        println!("  · {reason}");
    }
    for warning in &experiment.warnings {
        println!("warning: {warning}");
    }
    println!("\nab:      {}", written.display());
    println!("receipt: {}", dir.join("receipt.md").display());
    let rendered = hopscope_reports::render_experiment(&experiment, &dir)
        .with_context(|| format!("cannot render the report in {}", dir.display()))?;
    report::print_rendered(&rendered);
    Ok(ExitCode::SUCCESS)
}

fn measure(spec: &Spec, out: Option<&Path>) -> anyhow::Result<(PathBuf, Experiment)> {
    let dir = rundir::create(out, &format!("ab-{}", spec.name))?;
    let mut meta = rundir::metadata();
    meta.extend(spec.meta());
    eprintln!(
        "{}: {} blocks of {} on {} (spec sha256 {})",
        spec.name,
        spec.plan.passes * spec.plan.samples * spec.plan.lanes.len() as u32,
        spec.plan.ops_per_block,
        spec.plan.shape,
        &spec.sha256[..12]
    );
    let summary = runner::run(&spec.plan, &dir, meta, rundir::show_progress())?;
    let trace = Trace::read(&summary.trace).with_context(|| format!("cannot read back {}", summary.trace.display()))?;
    Ok((dir, experiment::judge(&trace, &spec.rule)))
}

/// Judge an existing run under the rule its trace recorded; warn if the
/// spec on disk no longer matches it.
fn reanalyze(current: &Spec, dir: &Path) -> anyhow::Result<Experiment> {
    let path = dir.join("trace.hop");
    let trace = Trace::read(&path).with_context(|| format!("cannot analyze {}", path.display()))?;
    let recorded_text = trace
        .header
        .run
        .get("spec.text")
        .with_context(|| format!("{} is not an A/B trace (it records no spec)", path.display()))?;
    let recorded = Spec::parse(&current.path, recorded_text).context("the spec recorded in the trace")?;
    let mut experiment = experiment::judge(&trace, &recorded.rule);
    if spec::sha256_hex(recorded_text) != current.sha256 {
        experiment.warnings.push(format!(
            "the spec was edited after the run: recorded sha256 {}, {} now has {}; the verdict uses the recorded rule",
            &recorded.sha256[..12],
            current.path.display(),
            &current.sha256[..12]
        ));
    }
    Ok(experiment)
}

fn write(dir: &Path, e: &Experiment) -> anyhow::Result<PathBuf> {
    let json = dir.join("ab.json");
    std::fs::write(&json, serde_json::to_string_pretty(e)? + "\n")
        .with_context(|| format!("cannot write {}", json.display()))?;
    let receipt = dir.join("receipt.md");
    std::fs::write(&receipt, experiment::markdown(e)).with_context(|| format!("cannot write {}", receipt.display()))?;
    Ok(json)
}
