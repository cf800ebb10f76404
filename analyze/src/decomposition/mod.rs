//! The decomposition: every figure of a run, as `result.json` holds it
//! (schema `hopscope.decomposition/1`, documented in
//! `docs/decomposition-schema.md`).

mod derived;
mod error;
mod insitu;
pub(crate) mod lane;
mod lane_result;
mod parallel;
mod partial;
mod peers;
mod placements;
mod result;

use derived::References;
use lane::PerLane;
use std::collections::{BTreeMap, BTreeSet};

use hopscope_probe::{Block, Role, RunFact, RunFacts, ThreadRole, Trace, TraceHeader, Variant};

pub use error::AnalyzeError;
pub use partial::{Partial, PartialCause};
pub use peers::{HOP_TOLERANCE_US, HopCheck, LaneSlices, ObserverFigure, SliceDifference};
pub use placements::{PlacedTwin, Placements};
pub use result::{
    BlockFigure, CounterFigure, Decomposition, Derived, DerivedFigure, Drops, InstrumentCost, LaneResult, LaneRun,
    ObserverEffect, PerRole, ResultError, RunInfo, SCHEMA,
};

use crate::change::RunSamples;
use crate::join::{HopScan, Join, LaneOps};
use crate::lanes::{self, LaneBlocks};
use crate::recorded::Recorded;
use crate::roles::Roles;
use crate::source::{BlockSource, TraceFile};
use crate::stats::BOOTSTRAP_RESAMPLES;
use crate::warning::Warning;

/// Seed of every bootstrap in a decomposition; recorded in the result so a
/// reader can reproduce each interval exactly.
pub const BOOTSTRAP_SEED: u64 = 0x0b5e_55ed_5eed_2840;

/// Decompose `trace`. Pure: reads nothing but the trace, writes nothing.
pub fn decompose(trace: &Trace) -> Result<Decomposition, AnalyzeError> {
    decompose_blocks(&mut { trace }).map(|(d, ..)| d)
}

/// Decompose the trace file at `path`, streaming it (two reads, one block
/// in memory at a time: memory grows with the number of blocks, not their
/// size). A file cut short or damaged after its header is salvaged: the
/// result covers every complete, checksum-valid block and is `partial`.
pub fn decompose_file(path: &std::path::Path) -> Result<Decomposition, AnalyzeError> {
    let mut file = TraceFile::open(path)?;
    decompose_source(&mut file, None)
}

/// Join the trace file at `path` (streaming reads, as [`decompose_file`]):
/// its header and every lane's operations, block by block, of the blocks
/// the decomposition reads (rounds another process crowded left out as it
/// leaves them out) — what a comparison of two runs' slices needs, so a run
/// judged again from its files reads what it was judged by.
pub fn join_file(path: &std::path::Path) -> Result<(TraceHeader, Vec<LaneOps>), AnalyzeError> {
    let mut file = TraceFile::open(path)?;
    let header = file.header().clone();
    let kept = kept_blocks(&mut file, &header)?;
    Ok((header, kept.joined))
}

/// [`decompose_partial`] over any [`BlockSource`]; the source's own
/// account of what it left out (a salvaged file) comes first.
pub fn decompose_source(
    source: &mut impl BlockSource,
    partial: Option<Partial>,
) -> Result<Decomposition, AnalyzeError> {
    let (d, held, _) = decompose_blocks(source)?;
    Ok(mark_partial(d, source.header(), held, source.partial().or(partial)))
}

/// [`decompose_source`], and the run's samples as a comparison with
/// another run reads them ([`RunSamples`]: per-block lane figures and the
/// subject's slices), from the same join: a run judged against a baseline
/// reads and joins its trace once.
pub fn decompose_source_with_samples(
    source: &mut impl BlockSource,
    partial: Option<Partial>,
) -> Result<(Decomposition, RunSamples), AnalyzeError> {
    let (d, held, joined) = decompose_blocks(source)?;
    let d = mark_partial(d, source.header(), held, source.partial().or(partial));
    let samples = RunSamples::new(&d, Some((source.header(), &joined)));
    Ok((d, samples))
}

/// What the first pass over the blocks gathers.
struct Scanned {
    blocks: u64,
    dropped: u64,
    /// A capture's windows: drops and readings per pass.
    windows: crate::capture::windows::WindowScan,
    /// Each block's lane, pass and sample, in trace (run) order.
    order: Vec<(u16, u32, u32)>,
    lanes: Vec<LaneBlocks>,
    hops: HopScan,
    /// The run's waits for a CPU, from every block (those left out of the
    /// figures included).
    contention: Option<crate::contention::Contention>,
}

/// Scan `source`'s blocks, leaving out the rounds in `skip`.
fn scan(
    source: &mut impl BlockSource,
    header: &TraceHeader,
    skip: Option<&BTreeSet<(u32, u32)>>,
) -> Result<(Scanned, crate::contention::Rounds), AnalyzeError> {
    let mut scanned = Scanned {
        blocks: 0,
        dropped: 0,
        windows: Default::default(),
        order: Vec::new(),
        lanes: lanes::empty_lanes(header),
        hops: HopScan::new(header),
        contention: None,
    };
    let mut rounds = crate::contention::Rounds::default();
    parallel::replay(source, &mut |_, block: &Block| {
        scanned.blocks += 1;
        rounds.add(header, block);
        if skip.is_some_and(|s| s.contains(&(block.pass, block.sample))) {
            return;
        }
        scanned.order.push((block.lane, block.pass, block.sample));
        scanned.dropped = scanned.dropped.saturating_add(block.dropped());
        scanned.windows.add(header, block);
        lanes::add_block(&mut scanned.lanes, header, block);
        scanned.hops.add(block);
    })?;
    Ok((scanned, rounds))
}

/// Read `source` twice (scan, then join) and decompose it; also returns
/// how many blocks it held, and the join. When a few rounds waited for
/// another process (fewer than half: [`crate::contention`]), a second scan
/// leaves them out and so does the join.
fn decompose_blocks(source: &mut impl BlockSource) -> Result<(Decomposition, u64, Vec<LaneOps>), AnalyzeError> {
    let header = source.header().clone();
    let Kept { mut scanned, all_lanes, joined } = kept_blocks(source, &header)?;
    if scanned.blocks == 0 {
        return Err(match source.partial() {
            Some(p) => AnalyzeError::NothingSalvaged { detail: p.reader_detail().unwrap_or_default().to_owned() },
            None => AnalyzeError::NoBlocks,
        });
    }
    if let Some(c) = scanned.contention.as_mut() {
        c.in_slices = crate::contention::slices::of(all_lanes.as_ref().unwrap_or(&scanned.lanes), &joined, &c.lanes);
    }
    Ok((analyze(&header, &scanned, &joined), scanned.blocks, joined))
}

/// The blocks a decomposition's figures read, joined.
struct Kept {
    /// Every kept block scanned, with the run's waits (from every block).
    scanned: Scanned,
    /// Every block's lanes, those left out included, when rounds were left
    /// out: where the waits sat.
    all_lanes: Option<Vec<LaneBlocks>>,
    /// The kept blocks' operations.
    joined: Vec<LaneOps>,
}

/// Scan `source`, leave out the rounds another process crowded (when the
/// rule drops them), and join the rest. The decomposition and a run judged
/// again from its files (`compare`, a baseline) both read this, so both
/// read the same operations.
fn kept_blocks(source: &mut impl BlockSource, header: &TraceHeader) -> Result<Kept, AnalyzeError> {
    let (mut scanned, rounds) = scan(source, header, None)?;
    let contention = crate::contention::of(header, &scanned.lanes, &rounds);
    let skip = rounds.to_drop();
    // Every block's waits, those left out included, for placing them in
    // the slices.
    let all_lanes = skip.is_some().then(|| scanned.lanes.clone());
    if let Some(skip) = skip {
        scanned = scan(source, header, Some(skip))?.0;
    }
    scanned.contention = contention;
    let join = Join::new(header, &scanned.hops);
    let joined = parallel::join(source, join, skip, scanned.blocks)?;
    Ok(Kept { scanned, all_lanes, joined })
}

/// Every figure of a decomposition, from the scanned and joined blocks.
fn analyze(header: &TraceHeader, scanned: &Scanned, joined: &[LaneOps]) -> Decomposition {
    let seed = BOOTSTRAP_SEED;
    let blocks = &scanned.lanes;
    let roles = Roles::of(header, joined);
    let mut warnings = Vec::new();
    let per_lane = lane::per_lane(header, blocks, joined, seed, &mut warnings);
    let measured = Measured::of(blocks, &roles);
    // A capture is one lane, the program: its receipt says what it is,
    // rather than warn of the lanes it has not.
    if !measured.has_reference() && !crate::capture::is_capture(header) {
        warnings.push(measured.no_reference(header, blocks));
    }
    let (derived, floor_stands) = lane_arithmetic(header, joined, &roles, &measured, &mut warnings);
    let insitu = insitu::insitu(header, blocks, joined, &roles, derived.as_ref(), seed, &mut warnings);
    let sliced = insitu.lane.as_deref().and_then(|name| {
        let lane = header.lane(name)?;
        joined.iter().find(|o| o.lane == lane)
    });
    let baseline_op =
        measured.baseline.and_then(|b| Some((b.name.as_str(), per_lane.results.get(&b.name)?.us_per_op?)));
    attribution_warnings(header, sliced, &insitu.slices, baseline_op, &mut warnings);
    let observer_effect = observer_effect(header, &roles, &measured, sliced, &insitu, &mut warnings);
    let (checkpoints, slow_rounds) = shared_rounds(blocks, &per_lane.results, &mut warnings);
    let carryover = crate::carryover::carryover(header, &scanned.order, blocks);
    if let Some(warning) = carryover.as_ref().and_then(carryover_warning) {
        warnings.push(warning);
    }
    let drops = drops(header, scanned.dropped, joined, &mut warnings);
    let rounds = Rounds {
        cold_start: crate::cold_start::cold_start(header, blocks, joined, &roles, floor_stands),
        carryover,
        drops,
        slow_rounds,
        checkpoints,
        comparison: comparison(header, blocks, &roles, &per_lane, floor_stands),
        batch_sweep: crate::batches::sweep(&per_lane.results, header, |name| clean_twin(header, &roles, name)),
        placements: placements::placements(header, blocks, joined, &per_lane.results),
    };
    let mut d = assemble(header, scanned, per_lane, derived, insitu, observer_effect, rounds, warnings);
    d.capture = crate::capture::figures(
        header,
        d.lanes.values().next().and_then(|l| l.op_latency_quantiles_us.get(50).copied()),
        sliced.and_then(|ops| {
            let every = crate::capture::CaptureFacts::of_header(header).map_or(1, |f| f.sample_every);
            crate::capture::marks_per_op(ops, every)
        }),
    );
    if let (Some(c), Some(ops)) = (d.capture.as_mut(), sliced.or(joined.first())) {
        c.windows = crate::capture::windows::of(&c.facts, ops, &scanned.windows);
        // A sampled capture kept large batches more often than small ones.
        let every = c.facts.sample_every;
        if every > 1
            && let Some(batches) = d.lanes.values_mut().next().and_then(|l| l.batches.as_mut())
        {
            batches.all_mean = ops.batch_sizes.mean_over_all(every);
        }
    }
    d
}

/// The run's measured lanes (at least one operation) by the role each
/// plays, the clean build preferred where both ran.
struct Measured<'a> {
    baseline: Option<&'a LaneBlocks>,
    floor: Option<&'a LaneBlocks>,
    handoff: Option<&'a LaneBlocks>,
    clean: Option<&'a LaneBlocks>,
    probed: Option<&'a LaneBlocks>,
}

impl<'a> Measured<'a> {
    fn of(blocks: &'a [LaneBlocks], roles: &Roles) -> Measured<'a> {
        let measured = |lane: Option<usize>| lane.and_then(|i| blocks.get(i)).filter(|l| l.ops > 0);
        Measured {
            baseline: measured(roles.prefer(Role::Baseline, Variant::Clean)),
            floor: measured(roles.prefer(Role::Floor, Variant::Clean)),
            handoff: measured(roles.prefer(Role::Handoff, Variant::Clean)),
            clean: measured(roles.find(Role::Subject, Variant::Clean)),
            probed: measured(roles.find(Role::Subject, Variant::Probed)),
        }
    }

    /// The subject's lane: its clean build, else its probed one.
    fn subject(&self) -> Option<&'a LaneBlocks> {
        self.clean.or(self.probed)
    }

    /// Whether any reference ran: a program measured alone has none, and
    /// is told so once rather than warned of each figure it cannot have.
    fn has_reference(&self) -> bool {
        self.baseline.is_some() || self.floor.is_some()
    }

    /// What a run without references can give: slices need a probed
    /// build, the observer effect a clean and a probed one of the subject.
    fn no_reference(&self, header: &TraceHeader, blocks: &[LaneBlocks]) -> Warning {
        let probed_any = blocks.iter().enumerate().any(|(i, l)| {
            l.ops > 0 && header.lane_info(i as u16).is_some_and(|info| info.variant == Some(Variant::Probed))
        });
        Warning::NoReference {
            probed: probed_any,
            observer: self.clean.is_some() && self.probed.is_some(),
            subject: self.subject().is_some(),
        }
    }
}

/// The lane arithmetic (subject against baseline, floor and hand-off) and
/// whether the floor stands for the boundary: a refused floor takes every
/// figure drawn against it along, and the boundary is split into bare
/// switches and machinery only where the switches measured no more than
/// it.
fn lane_arithmetic(
    header: &TraceHeader,
    joined: &[LaneOps],
    roles: &Roles,
    m: &Measured<'_>,
    warnings: &mut Vec<Warning>,
) -> (Option<Derived>, bool) {
    let mut derived = match (m.subject(), m.baseline) {
        (Some(subject), Some(baseline)) if callers_apart(header, subject, baseline, warnings) => None,
        (Some(subject), Some(baseline)) => {
            derived::derive(References { subject, baseline, floor: m.floor, handoff: m.handoff })
        }
        _ => {
            if m.has_reference() {
                warnings.push(Warning::NoArithmetic);
            }
            None
        }
    };
    if m.has_reference() && derived.is_some() && m.floor.is_none() {
        warnings.push(Warning::NoFloor);
    }
    let floor_stands = match (m.floor, m.subject()) {
        (Some(floor), Some(subject)) => {
            let refusal = derived::floor_refusal(header, joined, roles, (floor, subject), derived.as_ref());
            if let (Some(why), Some(d)) = (&refusal, &mut derived) {
                d.library_us = None;
                d.boundary_us = None;
                d.machinery_us = None;
                d.floor_refused = Some(Recorded::Typed(why.clone()));
                warnings.push(Warning::FloorRefused(why.clone()));
            }
            refusal.is_none()
        }
        _ => true,
    };
    // A machinery whose CI lies below zero is no part of the boundary
    // (seen in a `--quick` run: 6.04 µs of switches in a 5.23 µs boundary).
    if let Some(d) = &mut derived
        && let (Some(switches), Some(boundary), Some(machinery)) = (d.switches_us, d.boundary_us, d.machinery_us)
        && machinery.ci95[1] < 0.0
    {
        d.machinery_us = None;
        warnings.push(Warning::SwitchesPastBoundary {
            switches_us: switches.median,
            boundary_us: boundary.median,
            machinery,
        });
    }
    (derived, floor_stands)
}

/// What weakens the slices' attribution: slices against the baseline's
/// whole operation, each side's marks, and slices that run backwards.
fn attribution_warnings(
    header: &TraceHeader,
    sliced: Option<&LaneOps>,
    slices: &[crate::slices::SliceFigures],
    baseline_op: Option<(&str, crate::stats::Summary)>,
    warnings: &mut Vec<Warning>,
) {
    if let (Some(ops), Some((name, op))) = (sliced, baseline_op) {
        warnings.extend(crate::attribution::check(header, ops, slices, (name, &op)));
    }
    if let Some(ops) = sliced {
        warnings.extend(crate::attribution::sides(header, ops));
    }
    warnings.extend(crate::attribution::backwards::check(slices));
}

/// The observer effect (probed against clean build of the subject), its
/// marks priced by the instrument where the probed build was sliced.
fn observer_effect(
    header: &TraceHeader,
    roles: &Roles,
    m: &Measured<'_>,
    sliced: Option<&LaneOps>,
    insitu: &insitu::InSitu,
    warnings: &mut Vec<Warning>,
) -> Option<ObserverEffect> {
    match (m.clean, m.probed) {
        (Some(c), Some(p)) => derived::observer(c, p).map(|mut o| {
            let marks = sliced.filter(|o| Some(usize::from(o.lane)) == roles.find(Role::Subject, Variant::Probed));
            o.instrument =
                marks.and_then(|ops| derived::instrument(header, ops, insitu.machinery.as_ref(), o.delta_us));
            o
        }),
        _ => {
            if m.has_reference() {
                warnings.push(Warning::NoObserverEffect);
            }
            None
        }
    }
}

/// The figures drawn over the run's rounds and blocks beside the lanes'.
struct Rounds {
    cold_start: Option<crate::cold_start::ColdStart>,
    carryover: Option<crate::carryover::Carryover>,
    drops: Drops,
    slow_rounds: Option<crate::slow_rounds::SlowRounds>,
    checkpoints: Option<crate::checkpoints::Checkpoints>,
    comparison: Option<crate::comparison::Comparison>,
    batch_sweep: Option<crate::batches::BatchSweep>,
    placements: Option<Placements>,
}

/// The decomposition from its parts.
#[allow(clippy::too_many_arguments)]
fn assemble(
    header: &TraceHeader,
    scanned: &Scanned,
    per_lane: PerLane,
    derived: Option<Derived>,
    insitu: insitu::InSitu,
    observer_effect: Option<ObserverEffect>,
    rounds: Rounds,
    warnings: Vec<Warning>,
) -> Decomposition {
    Decomposition {
        schema: SCHEMA.to_owned(),
        run: RunInfo {
            created_unix_ms: header.created_unix_ms,
            meta: header.run.clone(),
            bootstrap_seed: BOOTSTRAP_SEED,
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        },
        host: header.host.clone(),
        clock: header.clock.clone(),
        counters: header.counters.clone(),
        lane_order: lane_order(header, &per_lane.results),
        capture: None,
        lanes: per_lane.results,
        derived,
        insitu_lane: insitu.lane,
        slices: insitu.slices,
        floor_slices: insitu.floor_slices,
        floor_slices_lane: insitu.floor_lane,
        peer_slices: insitu.peers,
        coverage: insitu.coverage,
        crosscheck: insitu.crosscheck,
        observer_effect,
        cpu_us_per_op: per_lane.cpu,
        ctx_switches_per_op: per_lane.ctx_switches,
        contention: scanned.contention.clone(),
        comparison: rounds.comparison,
        span_machinery: insitu.machinery.or_else(|| header.span_machinery.clone()),
        statement_hook: header.statement_hook.clone(),
        // Lanes taking turns make a block's first operation cold and one
        // lane's figure depend on the lane before: a capture has no turns.
        cold_start: rounds.cold_start.filter(|_| !crate::capture::is_capture(header)),
        carryover: rounds.carryover.filter(|_| !crate::capture::is_capture(header)),
        drops: rounds.drops,
        slow_rounds: rounds.slow_rounds,
        checkpoints: rounds.checkpoints,
        batch_sweep: rounds.batch_sweep,
        placements: rounds.placements,
        partial: None,
        warnings: warnings.into_iter().map(Recorded::Typed).collect(),
    }
}

/// Whether the subject and the baseline ran different numbers of callers
/// at once (then warned of): wall time per operation is a throughput for
/// the one and close to a latency for the other, and their difference is
/// no hop.
fn callers_apart(
    header: &TraceHeader,
    subject: &LaneBlocks,
    baseline: &LaneBlocks,
    warnings: &mut Vec<Warning>,
) -> bool {
    let callers = |lane: &LaneBlocks| crate::contention::lane_callers(header, &lane.name);
    let (s, b) = (callers(subject), callers(baseline));
    if s != b {
        warnings.push(Warning::CallersApart {
            subject: subject.name.clone(),
            subject_callers: s,
            baseline: baseline.name.clone(),
            baseline_callers: b,
        });
    }
    s != b
}

/// The clean build of the lane called `name`: the lane declared with the
/// same code in the other build.
fn clean_twin(header: &TraceHeader, roles: &Roles, name: &str) -> Option<String> {
    let lane = header.lane(name)?;
    let code = &roles.info(usize::from(lane))?.code;
    (0..header.lanes.len())
        .find(|&i| roles.info(i).is_some_and(|l| &l.code == code) && roles.variant(i) == Some(Variant::Clean))
        .and_then(|i| header.lanes.get(i).cloned())
}

/// The lanes in reading order (see [`Decomposition::lane_order`]): by role
/// (baseline, floor, subject, peers, arms, control), a lane's clean build
/// before its probed one, ties in the order the run declared them.
fn lane_order(header: &TraceHeader, lanes: &BTreeMap<String, LaneResult>) -> Vec<String> {
    let infos: Vec<Option<hopscope_probe::LaneInfo>> =
        (0..header.lanes.len()).map(|i| u16::try_from(i).ok().and_then(|i| header.lane_info(i))).collect();
    let mut keyed: Vec<_> = header
        .lanes
        .iter()
        .enumerate()
        .filter(|(_, name)| lanes.contains_key(*name))
        .map(|(i, name)| {
            let info = infos[i].as_ref();
            // Lanes of one declaration (`writer`, `writer-probed`) stay together.
            let first =
                info.and_then(|a| infos.iter().position(|b| b.as_ref().is_some_and(|b| b.code == a.code))).unwrap_or(i);
            let probed = info.is_some_and(|a| a.variant == Some(Variant::Probed));
            ((info.map(|a| a.role), first, probed, i), name.clone())
        })
        .collect();
    // A lane without a role (never, from a header) sorts last.
    keyed.sort_by_key(|((role, first, probed, i), _)| (role.is_none(), *role, *first, *probed, *i));
    keyed.into_iter().map(|(_, name)| name).collect()
}

/// [`decompose`] a trace that may cover only part of its run, saying so:
/// `partial` as the caller knows it (a salvaged trace, a run stopped early)
/// or, failing that, when the trace holds fewer blocks than its run planned
/// (`planned_blocks` in the header). The result then carries `partial`, and
/// its first warning says what was left out.
pub fn decompose_partial(trace: &Trace, partial: Option<Partial>) -> Result<Decomposition, AnalyzeError> {
    decompose_source(&mut { trace }, partial)
}

/// Mark `d` partial as `partial` says or, failing that, when the trace
/// held fewer blocks (`held`) than its run planned.
fn mark_partial(mut d: Decomposition, header: &TraceHeader, held: u64, partial: Option<Partial>) -> Decomposition {
    let planned = header.run.parsed::<u64>(&RunFact::PlannedBlocks);
    let partial = partial.or_else(|| {
        let planned = planned.filter(|p| *p > held)?;
        Some(Partial::ended_early(held, planned))
    });
    if let Some(partial) = partial {
        d.warnings.insert(0, Recorded::Typed(Warning::Partial(partial.clone())));
        d.partial = Some(partial);
    }
    d
}

/// What the instrument lost, warning about dropped marks and counters the
/// host cannot count.
/// The blocks that held a WAL checkpoint, and the rounds in which every
/// lane ran slow (warned of, with how many held one).
fn shared_rounds(
    blocks: &[LaneBlocks],
    lanes: &BTreeMap<String, LaneResult>,
    warnings: &mut Vec<Warning>,
) -> (Option<crate::checkpoints::Checkpoints>, Option<crate::slow_rounds::SlowRounds>) {
    let checkpoints = crate::checkpoints::of(blocks);
    let slow_rounds = crate::slow_rounds::slow_rounds(lanes, checkpoints.as_ref());
    if let Some(slow) = &slow_rounds {
        warnings.push(slow.warning());
    }
    (checkpoints, slow_rounds)
}

fn drops(header: &TraceHeader, dropped: u64, joined: &[LaneOps], warnings: &mut Vec<Warning>) -> Drops {
    let name = |o: &LaneOps| header.lanes.get(usize::from(o.lane)).cloned().unwrap_or_default();
    let drops = Drops {
        marks_dropped: dropped,
        incomplete_ops: joined.iter().map(|o| (name(o), o.incomplete)).collect(),
        complete_ops: joined.iter().map(|o| (name(o), o.complete)).collect(),
    };
    if drops.marks_dropped > 0 {
        warnings.push(Warning::MarksDropped { count: drops.marks_dropped });
    }
    // A road that marks a hop for no operation (a shared span linked to
    // none) leaves every operation incomplete: said, not left to a count.
    for ops in joined.iter().filter(|o| o.incomplete > o.complete) {
        warnings.push(Warning::IncompleteOps { lane: name(ops), incomplete: ops.incomplete, complete: ops.complete });
    }
    let counters: Vec<String> =
        header.counters.iter().filter(|c| !c.support.is_supported()).map(|c| c.counter.name().to_owned()).collect();
    if !counters.is_empty() {
        warnings.push(Warning::CountersUnsupported { counters });
    }
    drops
}

/// The subject beside every peer lane, when there are any.
fn comparison(
    header: &TraceHeader,
    blocks: &[LaneBlocks],
    roles: &Roles,
    per_lane: &PerLane,
    floor_stands: bool,
) -> Option<crate::comparison::Comparison> {
    let summaries = per_lane.results.iter().filter_map(|(k, v)| Some((k.clone(), v.us_per_op?))).collect();
    let process_role = ThreadRole::Process.to_string();
    let process = |map: &BTreeMap<String, BTreeMap<String, f64>>| {
        map.iter().filter_map(|(k, v)| Some((k.clone(), *v.get(&process_role)?))).collect::<BTreeMap<_, _>>()
    };
    let (process_cpu_us, ctx) = (process(&per_lane.cpu), process(&per_lane.ctx_switches));
    let facts = crate::comparison::LaneFacts {
        summaries: &summaries,
        process_cpu_us: &process_cpu_us,
        ctx_switches: &ctx,
        meta: &header.run,
    };
    let shape = header.run.fact(&RunFact::Shape).unwrap_or("this shape");
    crate::comparison::compare(blocks, roles, &facts, shape, floor_stands)
}

/// A warning when the lanes did not run after each other about equally
/// often and some lane's figure depends on the lane before it: the lane
/// differences then carry that neighbour's cost.
fn carryover_warning(c: &crate::carryover::Carryover) -> Option<Warning> {
    if c.balanced {
        return None;
    }
    let (lane, (fast, slow)) = c.lanes.iter().find_map(|l| Some((&l.lane, l.apart()?)))?;
    Some(Warning::Carryover {
        lane: lane.clone(),
        slower_us: slow.median_us - fast.median_us,
        slow_after: slow.lane.clone(),
        fast_after: fast.lane.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_read_baseline_floor_subject_then_peers_clean_before_probed() {
        let declared = ["writer-probed", "peer-x", "inline", "writer", "floor-probed", "floor", "peer-y"];
        let header = TraceHeader::for_this_host(&declared, &["caller"]);
        let lanes: BTreeMap<String, LaneResult> = declared
            .iter()
            .filter(|name| **name != "peer-y")
            .map(|name| {
                let result = LaneResult {
                    ops: 0,
                    blocks: 0,
                    probed: false,
                    us_per_op: None,
                    cv_by_pass: Vec::new(),
                    blocks_us: Vec::new(),
                    counters: BTreeMap::new(),
                    cross_core_hops_per_op: None,
                    ops_crossing_cores: None,
                    op_latency_quantiles_us: Vec::new(),
                    op_latency_p999_us: None,
                    batches: None,
                };
                ((*name).to_owned(), result)
            })
            .collect();
        let order = lane_order(&header, &lanes);
        assert_eq!(order, ["inline", "floor", "floor-probed", "writer", "writer-probed", "peer-x"]);
    }
}
