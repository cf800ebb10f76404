//! `hopscope decompose`: the reference lanes — inline, the floor and the
//! writer, each clean and probed where that means something — declared on
//! the public harness and run as any user's lanes are.

use std::process::ExitCode;

use hopscope_harness::{Harness, RunArgs};
use hopscope_workloads::{LaneName, LaneSpec, Peer, Shape, StandardLane};

use crate::knob_args::{DbArgs, KnobArgs};

/// The lanes of a decomposition: SQLite alone, the bare switches (a turn
/// passed to a thread and back: the boundary's kernel part), the bare
/// boundary clean (for the arithmetic) and probed (its own slices,
/// subtracted in the cross-check), the writer clean (for the arithmetic)
/// and probed (for the slices and the observer effect).
const LANES: [LaneName; 6] = [
    LaneName::clean(StandardLane::Inline),
    LaneName::clean(StandardLane::Handoff),
    LaneName::clean(StandardLane::Floor),
    LaneName::probed(StandardLane::Floor),
    LaneName::clean(StandardLane::Writer),
    LaneName::probed(StandardLane::Writer),
];

/// [`LANES`] for `shape`: the handoff stands beside one caller's single
/// statements only (a turn is one operation).
fn lanes_for(shape: Shape) -> impl Iterator<Item = LaneName> {
    let handoff = shape.single_statement() && shape.callers() == 1 && shape.rows_per_op() == 1;
    LANES.into_iter().filter(move |name| handoff || name.lane != StandardLane::Handoff)
}

/// Flags of `hopscope decompose`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    run: RunArgs,
    /// What every lane writes (see `hopscope run --help`).
    #[arg(long, default_value = "single-insert")]
    shape: Shape,
    /// Also run published crates' writer threads as lanes (tokio-rusqlite,
    /// async-sqlite async and blocking, sqlx-sqlite, deadpool-sqlite), each
    /// compared with inline, floor and the reference writer.
    #[arg(long)]
    peers: bool,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    knobs: KnobArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if args.peers && !hopscope_workloads::peers::BUILT {
        anyhow::bail!(
            "this build has no peer lanes (they are opt-in): cargo run --release --features peers -- decompose --peers"
        );
    }
    let plan = args.run.plan()?;
    let knobs = args.knobs.knobs(plan.placement)?;
    // Each peer clean and, where the SQLite probe can name its statements'
    // operations, probed: its slices beside the reference writer's.
    let peers = Peer::ALL
        .into_iter()
        .filter(|_| args.peers)
        .flat_map(|p| [LaneName::clean(StandardLane::Peer(p)), LaneName::probed(StandardLane::Peer(p))]);
    let mut names: Vec<LaneName> = lanes_for(args.shape).collect();
    if args.peers {
        // The reference writer marked as the peers are, their slices'
        // reference (its probed build only: the clean one is `writer`).
        names.push(LaneName::probed(StandardLane::WriterHook));
        // The inline statement marked the same way: their baseline,
        // against which each peer's slices add up to its hop.
        names.push(LaneName::probed(StandardLane::InlineHook));
    }
    names.extend(peers);
    let db = args.db.config();
    let mut harness = Harness::with_args("decompose", args.run.clone());
    for (key, value) in hopscope_workloads::run_facts(args.shape, db) {
        harness = harness.meta(&key.to_string(), value);
    }
    let specs = LaneSpec::of(&names, knobs);
    if let Some(hops) = LaneSpec::hops_for(&specs) {
        harness = harness.hops(hops);
    }
    for spec in specs {
        harness = harness.lane(spec.lane(args.shape, db)?);
    }
    // The harness records the run in the index, saves and compares
    // baselines, prints `--json` and sets the exit status, as it does for
    // any harness program.
    Ok(harness.run()?.exit_code())
}
