//! `hopscope run`: run any reference lanes side by side on one shape and
//! write the raw trace (no analysis: `hopscope analyze` does that).

use std::process::ExitCode;

use hopscope_harness::{RunArgs, rundir, runner};
use hopscope_workloads::{LaneName, LaneSpec, Shape, StandardLane};

use crate::knob_args::{DbArgs, KnobArgs};
use crate::usage::UsageError;

/// The lanes `run` alternates when `--lanes` is not given.
const DEFAULT_LANES: [LaneName; 4] = [
    LaneName::clean(StandardLane::Inline),
    LaneName::clean(StandardLane::Floor),
    LaneName::clean(StandardLane::Writer),
    LaneName::probed(StandardLane::Writer),
];

/// Flags of `hopscope run`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `--lanes`: lanes to alternate: inline, floor, writer, each
    /// optionally `-probed`, or a peer (default: inline, floor, writer,
    /// writer-probed).
    #[command(flatten)]
    run: RunArgs,
    /// What every lane writes: single-insert, concurrent-insert:N, batch:K,
    /// blob:SIZE[:copy|move|shared], noop-update, point-update.
    #[arg(long, default_value = "single-insert")]
    shape: Shape,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    knobs: KnobArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let mut plan = args.run.plan()?;
    let knobs = args.knobs.knobs(plan.placement)?;
    // A lane name is a keyword like `--shape`'s: a bad one is a usage error
    // (exit 2), refused before any file is made.
    let names: Vec<LaneName> = match args.run.lanes.is_empty() {
        true => DEFAULT_LANES.to_vec(),
        false => args
            .run
            .lanes
            .iter()
            .map(|name| name.parse::<LaneName>())
            .collect::<Result<_, _>>()
            .map_err(|err| UsageError::new("run", clap::error::ErrorKind::InvalidValue, err.to_string()))?,
    };
    let db = args.db.config();
    let specs = LaneSpec::of(&names, knobs);
    if let Some(hops) = LaneSpec::hops_for(&specs) {
        plan.hops = hops;
    }
    let lanes = specs.iter().map(|spec| spec.lane(args.shape, db)).collect::<Result<Vec<_>, _>>()?;
    let dir = rundir::create(args.run.out.as_deref(), "run", "latest-run")?;
    let mut meta = rundir::metadata();
    meta.extend(hopscope_workloads::run_facts(args.shape, db).map(|(k, v)| (k.to_string(), v)));
    let summary = runner::run(&plan, &lanes, &dir, meta, rundir::show_progress())?;
    println!("{} blocks, {} marks dropped", summary.blocks, summary.dropped);
    for (lane, ops) in &summary.ops {
        println!("  {lane:<16} {ops} ops");
    }
    println!("trace: {}", summary.trace.display());
    Ok(ExitCode::SUCCESS)
}
