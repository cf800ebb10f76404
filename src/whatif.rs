//! `hopscope what-if`: what would a faster slice of the reference writer
//! (or the floor, or a peer probed through SQLite's hook) buy it, on any
//! shape: a causal profile ([`hopscope_harness::whatif`]).

use std::process::ExitCode;

use hopscope_harness::{Harness, RunArgs};
use hopscope_workloads::{LaneName, LaneSpec, Shape};

use crate::knob_args::{DbArgs, KnobArgs};

/// Flags of `hopscope what-if`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    run: RunArgs,
    /// What the lane writes (see `hopscope run --help`): e.g.
    /// `concurrent-insert:4` for four callers sharing the writer.
    #[arg(long, default_value = "single-insert")]
    shape: Shape,
    /// The lane whose probed build is changed: writer, floor, writer-hook,
    /// or a peer probed through SQLite's hook.
    #[arg(long, default_value = "writer")]
    lane: String,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    knobs: KnobArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let plan = args.run.plan()?;
    let knobs = args.knobs.knobs(plan.placement)?;
    let lane = args.lane.parse::<LaneName>()?.probed_build()?;
    let mut run = args.run.clone();
    run.what_if.what_if = Some(lane.lane.name().to_owned());
    let db = args.db.config();
    let mut harness = Harness::with_args("what-if", run);
    for (key, value) in hopscope_workloads::run_facts(args.shape, db) {
        harness = harness.meta(&key.to_string(), value);
    }
    let specs = LaneSpec::of(&[lane], knobs);
    if let Some(hops) = LaneSpec::hops_for(&specs) {
        harness = harness.hops(hops);
    }
    for spec in specs {
        harness = harness.lane(spec.lane(args.shape, db)?);
    }
    Ok(harness.run()?.exit_code())
}
