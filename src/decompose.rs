//! `hopscope decompose`: run inline, floor, clean writer and probed writer
//! side by side, analyze, and write the receipt.

use std::process::ExitCode;

use anyhow::Context;
use hopscope_probe::Trace;
use hopscope_reports::ChartOptions;
use hopscope_workloads::knobs::Placement;
use hopscope_workloads::{LaneSpec, Peer, Plan, Shape, runner};

use crate::knob_args::{KnobArgs, PlanArgs};
use crate::{output, report, rundir};

/// The lanes of a decomposition: SQLite alone, the bare boundary clean (for
/// the arithmetic) and probed (its own slices, subtracted in the
/// cross-check), the writer clean (for the arithmetic) and probed (for the
/// slices and the observer effect).
const LANES: [&str; 5] = ["inline", "floor", "floor-probed", "writer", "writer-probed"];

/// Flags of `hopscope decompose`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Short run (under a minute) instead of the careful default.
    #[arg(long)]
    quick: bool,
    /// Run directory (default: a new one under target/hopscope/, linked
    /// from target/hopscope/latest).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// What every lane writes (see `hopscope run --help`).
    #[arg(long, default_value = "single-insert")]
    shape: Shape,
    /// Also run published crates' writer threads as lanes (tokio-rusqlite,
    /// async-sqlite async and blocking, sqlx-sqlite, deadpool-sqlite), each
    /// compared with inline, floor and the reference writer.
    #[arg(long)]
    peers: bool,
    #[command(flatten)]
    plan: PlanArgs,
    #[command(flatten)]
    knobs: KnobArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Same-core by default: on VMs, waking a thread on a halted vCPU costs
    // tens of µs and which lanes pay it depends on where the scheduler put
    // each lane's thread, which can fake a library cost of tens of µs.
    let knobs = args.knobs.knobs_placed(Placement::SameCore)?;
    if args.peers && !hopscope_workloads::peers::BUILT {
        anyhow::bail!("this build has no peer lanes: rebuild with the `peers` cargo feature (on by default)");
    }
    let peers = Peer::ALL.iter().filter(|_| args.peers).map(|p| p.name());
    let lanes = LANES
        .iter()
        .copied()
        .chain(peers)
        .map(|n| LaneSpec::standard(n, knobs))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let base = if args.quick { Plan::quick(lanes, args.shape) } else { Plan::new(lanes, args.shape) };
    let plan = args.plan.apply(base);
    let dir = rundir::create(args.out.as_deref(), "decompose")?;
    eprintln!("measuring {} lanes on {} into {}", plan.lanes.len(), plan.shape, dir.display());
    let summary = runner::run(&plan, &dir, rundir::metadata(), rundir::show_progress())?;
    let trace = Trace::read(&summary.trace).with_context(|| format!("cannot read back {}", summary.trace.display()))?;
    let decomposition =
        hopscope_analyze::decompose(&trace).with_context(|| format!("cannot analyze {}", summary.trace.display()))?;
    let written = output::write(&dir, &decomposition)?;
    let rendered = report::render(&decomposition, &dir, ChartOptions::default())?;
    output::print_summary(&decomposition, &written);
    println!("trace:   {}", summary.trace.display());
    report::print_rendered(&rendered);
    Ok(ExitCode::SUCCESS)
}
