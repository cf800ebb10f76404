//! `hopscope decompose`: the reference lanes — inline, the floor and the
//! writer, each clean and probed where that means something — declared on
//! the public harness and run as any user's lanes are.

use std::process::ExitCode;

use hopscope_harness::{Harness, Role, RunArgs};
use hopscope_workloads::knobs::GroupCommit;
use hopscope_workloads::{Builds, DbConfig, Knobs, LaneKind, LaneName, LaneSpec, Peer, Shape, StandardLane};

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
    group: GroupArgs,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    knobs: KnobArgs,
}

/// Group-commit lanes beside the reference writer.
#[derive(Debug, clap::Args)]
struct GroupArgs {
    /// Add a lane of the reference writer with group commit for each size
    /// (requests per transaction, e.g. `64`, or `1,8,64` for a sweep), run
    /// by `--group-callers` callers at once, clean and probed, beside the
    /// other lanes: what batching does to one write (its wait, its share
    /// of each COMMIT), and with several sizes the latency against the
    /// throughput they reach.
    #[arg(long, value_name = "SIZES", value_delimiter = ',')]
    group_lanes: Vec<GroupCommit>,
    /// Callers at once of each `--group-lanes` lane (a group needs several
    /// requests queued).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(2..=256))]
    group_callers: u16,
}

/// Most sizes one run compares.
const MAX_GROUP_LANES: usize = 8;

impl GroupArgs {
    /// The group-commit lanes, each the writer with `knobs` and one size,
    /// as peers of the reference writer; refused in one line past
    /// [`MAX_GROUP_LANES`] sizes or with a size given twice.
    fn specs(&self, knobs: Knobs) -> anyhow::Result<Vec<LaneSpec>> {
        let mut sizes = self.group_lanes.clone();
        if sizes.len() > MAX_GROUP_LANES {
            anyhow::bail!("--group-lanes: {} sizes (at most {MAX_GROUP_LANES} in one run)", sizes.len());
        }
        sizes.sort_by_key(|g| g.size());
        if sizes.windows(2).any(|w| w[0] == w[1]) {
            anyhow::bail!("--group-lanes: a size given twice");
        }
        Ok(sizes
            .into_iter()
            .map(|group| {
                let knobs = Knobs { group_commit: group, ..knobs };
                LaneSpec::new(&format!("group-commit-{}", group.size()), LaneKind::Writer(knobs), Builds::Both)
            })
            .collect())
    }

    /// The shape the group lanes run: `shape`'s statement, by the group
    /// lanes' callers.
    fn shape(&self, shape: Shape) -> anyhow::Result<Shape> {
        match shape {
            Shape::SingleInsert | Shape::ConcurrentInsert { .. } => {
                Ok(Shape::ConcurrentInsert { callers: usize::from(self.group_callers) })
            }
            other => anyhow::bail!("--group-lanes: group commit runs single inserts by several callers, not {other}"),
        }
    }
}

/// The program lanes (the writer, its group-commit lanes, the peers)
/// again under each placement after the first (`--placement
/// same-core,unpinned`). Their specs pin their own threads and pick their
/// waits by placement, so each twin is made from its placement's knobs,
/// not copied by the harness.
fn placement_twins(
    args: &Args,
    names: &[LaneName],
    group_shape: Option<Shape>,
    db: DbConfig,
) -> anyhow::Result<Vec<hopscope_harness::Lane>> {
    let mut lanes = Vec::new();
    for &placement in args.run.twin_placements() {
        let knobs = args.knobs.knobs(placement)?;
        let program = LaneSpec::of(names, knobs)
            .into_iter()
            .filter(|s| matches!(s.kind, LaneKind::Writer(_) | LaneKind::Peer(_)))
            .map(|s| (s, args.shape));
        let groups = match group_shape {
            Some(shape) => args.group.specs(knobs)?.into_iter().map(|s| (s, shape)).collect(),
            None => Vec::new(),
        };
        for (mut spec, shape) in program.chain(groups) {
            let twin = hopscope_harness::twins::name(&spec.name, placement);
            let lane = std::mem::replace(&mut spec.name, twin);
            lanes.push(spec.lane(shape, db)?.placement_twin_of(&lane));
        }
    }
    Ok(lanes)
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
    let groups = args.group.specs(knobs)?;
    let group_shape = if groups.is_empty() { None } else { Some(args.group.shape(args.shape)?) };
    let all: Vec<LaneSpec> = specs.iter().chain(&groups).cloned().collect();
    if let Some(hops) = LaneSpec::hops_for(&all) {
        harness = harness.hops(hops);
    }
    for spec in specs {
        harness = harness.lane(spec.lane(args.shape, db)?);
    }
    if let Some(shape) = group_shape {
        for spec in groups {
            // Another way to do the subject's job: compared with it, as a
            // peer is.
            harness = harness.lane(spec.lane(shape, db)?.with_role(Role::Peer));
        }
    }
    for lane in placement_twins(args, &names, group_shape, db)? {
        harness = harness.lane(lane);
    }
    // The harness records the run in the index, saves and compares
    // baselines, prints `--json` and sets the exit status, as it does for
    // any harness program.
    Ok(harness.run()?.exit_code())
}
