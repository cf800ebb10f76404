//! `hopscope run`: run lanes side by side and write the raw trace.

use std::process::ExitCode;

use hopscope_workloads::{LaneSpec, Plan, Shape, runner};

use crate::knob_args::KnobArgs;
use crate::rundir;

/// Flags of `hopscope run`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Lanes to alternate: inline, floor, writer, each optionally `-probed`.
    #[arg(long, value_delimiter = ',', default_value = "inline,floor,writer,writer-probed")]
    lanes: Vec<String>,
    /// What every lane writes: single-insert, concurrent-insert:N, batch:K,
    /// blob:SIZE[:copy|move|shared], noop-update, point-update.
    #[arg(long, default_value = "single-insert")]
    shape: Shape,
    /// Short run for a smoke test (fewer, smaller blocks).
    #[arg(long)]
    quick: bool,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    #[command(flatten)]
    plan: crate::knob_args::PlanArgs,
    #[command(flatten)]
    knobs: KnobArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let knobs = args.knobs.knobs()?;
    let lanes = args
        .lanes
        .iter()
        .map(|name| LaneSpec::standard(name, knobs))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let base = if args.quick { Plan::quick(lanes, args.shape) } else { Plan::new(lanes, args.shape) };
    let plan = args.plan.apply(base);
    let dir = rundir::create(args.out.as_deref(), "run")?;
    let summary = runner::run(&plan, &dir, rundir::metadata(), rundir::show_progress())?;
    println!("{} blocks, {} marks dropped", summary.blocks, summary.dropped);
    for (lane, ops) in &summary.ops {
        println!("  {lane:<16} {ops} ops");
    }
    println!("trace: {}", summary.trace.display());
    Ok(ExitCode::SUCCESS)
}
