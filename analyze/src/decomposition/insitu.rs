//! The in-situ instrument of a decomposition: the sliced lane's slices,
//! the probed floor's, and their cross-check against the lane arithmetic.

use hopscope_probe::{Role, TraceHeader, Variant};

use super::Derived;
use crate::join::LaneOps;
use crate::roles::Roles;
use crate::slices::{self, CrossCheck, SliceFigures};
use crate::warning::Warning;

/// The in-situ instrument: the sliced lane, its slices, the probed floor's,
/// and their cross-check against the lane arithmetic.
pub(super) struct InSitu {
    /// The span machinery stated beside the slices (the sliced lane's).
    pub(super) machinery: Option<hopscope_probe::SpanMachinery>,
    pub(super) lane: Option<String>,
    pub(super) slices: Vec<SliceFigures>,
    pub(super) floor_slices: Vec<SliceFigures>,
    pub(super) floor_lane: Option<String>,
    pub(super) coverage: Option<crate::coverage::Coverage>,
    pub(super) crosscheck: Option<CrossCheck>,
    /// Each probed peer's slices, in the order the run declared them.
    pub(super) peers: Vec<super::peers::LaneSlices>,
}

/// Slice the subject's probed build, or else the first other lane that
/// carries complete operations (a program's own capture); the probed floor
/// gives the slices subtracted in the cross-check.
#[allow(clippy::too_many_arguments)]
pub(super) fn insitu(
    header: &TraceHeader,
    blocks: &[crate::lanes::LaneBlocks],
    joined: &[LaneOps],
    roles: &Roles,
    derived: Option<&Derived>,
    seed: u64,
    warnings: &mut Vec<Warning>,
) -> InSitu {
    let run = Run { header, blocks, seed };
    let complete =
        |lane: Option<usize>| lane.and_then(|i| joined.iter().find(|o| usize::from(o.lane) == i && o.complete > 0));
    let subject = complete(roles.find(Role::Subject, Variant::Probed));
    let sliced = subject.or_else(|| {
        joined.iter().find(|o| {
            o.complete > 0
                && roles
                    .info(usize::from(o.lane))
                    .is_some_and(|i| !matches!(i.role, Role::Baseline | Role::Floor | Role::Handoff))
        })
    });
    // Several callers at once: each write's slices hold its wait behind
    // the others, while a lane's µs per write is its wall time ÷ writes.
    let callers = sliced
        .and_then(|o| header.lanes.get(usize::from(o.lane)))
        .map(|name| (name, crate::contention::lane_callers(header, name)))
        .filter(|(_, callers)| *callers > 1);
    // A capture's receipt reads its callers' latency and throughput as
    // such; the lanes' µs per write it does not give.
    let capture = crate::capture::is_capture(header);
    if let Some((lane, callers)) = callers.filter(|_| !capture) {
        warnings.push(Warning::SeveralCallers { lane: lane.clone(), callers });
    }
    let machinery =
        sliced.and_then(|o| blocks.get(usize::from(o.lane))).and_then(|l| crate::lanes::span_machinery(header, l));
    // Shares of the lane's µs per write, and the time between marks, need
    // the slices to add up to it: with one caller at a time, and every
    // operation marked (a capture's blocks are stretches of the program's
    // time, sampled, not its operations back to back).
    let coverage = sliced.filter(|_| callers.is_none() && !capture).and_then(|o| {
        let lane = blocks.get(usize::from(o.lane))?;
        crate::coverage::coverage(lane, o, seed.wrapping_add(50))
    });
    let slices = sliced.map(|o| run.lane_slices(o, machinery.as_ref(), coverage.as_ref())).unwrap_or_default();
    let probed_floor = complete(roles.find(Role::Floor, Variant::Probed));
    let floor_slices = probed_floor.map(|o| run.floor_slices(o));
    if subject.is_some() && floor_slices.is_none() && derived.is_some_and(|d| d.library_us.is_some()) {
        warnings.push(Warning::NoProbedFloor);
    }
    // Neither does the cross-check: the lanes' library is of wall time ÷
    // writes, the slices' of each write's latency.
    let crosscheck = match (derived.and_then(|d| d.library_us.as_ref()), slices.is_empty() || callers.is_some()) {
        (Some(library), false) => {
            Some(run.cross_check(&slices, floor_slices.as_deref(), library, subject.zip(probed_floor)))
        }
        _ => None,
    };
    if crosscheck.as_ref().is_some_and(|c| !c.agree) {
        warnings.extend(disagreement(header, subject.zip(probed_floor)));
    }
    let peers = super::peers::peer_slices(header, blocks, joined, roles, seed);
    warnings.extend(peers_outside_marks(&peers));
    InSitu {
        peers,
        machinery,
        lane: sliced.and_then(|o| header.lanes.get(usize::from(o.lane)).cloned()),
        slices,
        floor_slices: floor_slices.unwrap_or_default(),
        floor_lane: probed_floor.and_then(|o| header.lanes.get(usize::from(o.lane)).cloned()),
        coverage,
        crosscheck,
    }
}

/// What every step of the in-situ instrument reads of the run.
struct Run<'a> {
    header: &'a TraceHeader,
    blocks: &'a [crate::lanes::LaneBlocks],
    seed: u64,
}

impl Run<'_> {
    /// The sliced lane's slice figures: the span machinery stated where
    /// the lane's marks are spans, the marks' grain, and shares of the
    /// whole operation where the slices cover it.
    fn lane_slices(
        &self,
        o: &LaneOps,
        machinery: Option<&hopscope_probe::SpanMachinery>,
        coverage: Option<&crate::coverage::Coverage>,
    ) -> Vec<SliceFigures> {
        let mut figures = slices::slice_figures(o, self.seed);
        if let Some(m) = machinery {
            let sequences = self.blocks.get(usize::from(o.lane)).map(|l| &l.span_sequences);
            slices::state_machinery(&mut figures, o, self.header, m, sequences.unwrap_or(&Default::default()));
        }
        slices::mark_grain(&mut figures, self.header.clock.grain_ns());
        if let Some(c) = coverage {
            slices::share_of(&mut figures, c.op_mean_us);
        }
        figures
    }

    /// The probed floor's slice figures, with shares of the floor's whole
    /// operation, as the subject's are of its own, so the two tables'
    /// share columns read alike.
    fn floor_slices(&self, o: &LaneOps) -> Vec<SliceFigures> {
        let mut figures = slices::slice_figures(o, self.seed);
        slices::mark_grain(&mut figures, self.header.clock.grain_ns());
        let floor_coverage = self
            .blocks
            .get(usize::from(o.lane))
            .and_then(|l| crate::coverage::coverage(l, o, self.seed.wrapping_add(51)));
        if let Some(c) = &floor_coverage {
            slices::share_of(&mut figures, c.op_mean_us);
        }
        figures
    }

    /// The library's cost by its slices against the lane arithmetic's, the
    /// full accounting where both the subject and the floor were probed.
    fn cross_check(
        &self,
        slices: &[SliceFigures],
        floor_slices: Option<&[SliceFigures]>,
        library: &crate::lanes::Difference,
        probed: Option<(&LaneOps, &LaneOps)>,
    ) -> CrossCheck {
        let lane_blocks = |o: &LaneOps| self.blocks.get(usize::from(o.lane));
        let probed_lanes = probed
            .and_then(|(w, f)| lane_blocks(w).zip(lane_blocks(f)))
            .and_then(|(w, f)| crate::lanes::difference(w, f));
        let accounting = probed.and_then(|(w, f)| {
            use crate::accounting::Probed;
            crate::accounting::account(
                Probed { ops: w, walls: lane_blocks(w) },
                Probed { ops: f, walls: lane_blocks(f) },
                library,
                probed_lanes,
                self.header.mark_ns,
                self.seed.wrapping_add(40),
            )
        });
        slices::cross_check(slices, floor_slices, library, accounting)
    }
}

/// The warnings of instruments that disagree. The marks' figure prices the
/// subject's extra marks as bare marks; a span's edges cost more, so the
/// spans the floor lacks are named (a new user's floor without `prepare`
/// and `validate` disagreed by 0.39 µs; with empty spans of those names it
/// agreed, −0.02).
fn disagreement(header: &TraceHeader, probed: Option<(&LaneOps, &LaneOps)>) -> Vec<Warning> {
    let mut warnings = vec![Warning::InstrumentsDisagree { tolerance_us: slices::CROSSCHECK_TOLERANCE_US }];
    let spans = probed.map(|(w, f)| spans_only_in(header, w, f)).unwrap_or_default();
    if let (false, Some((_, floor))) = (spans.is_empty(), probed) {
        let floor = header.lanes.get(usize::from(floor.lane)).cloned().unwrap_or_default();
        warnings.push(Warning::FloorLacksSpans { floor, spans });
    }
    warnings
}

/// A warning for each probed peer whose slices and lane figures disagree
/// on the hop they both measure.
fn peers_outside_marks(peers: &[super::peers::LaneSlices]) -> Vec<Warning> {
    let disagree = peers.iter().filter_map(|p| Some((p, p.hop.as_ref()?))).filter(|(_, h)| !h.agree);
    disagree
        .map(|(peer, hop)| Warning::PeerOutsideMarks {
            lane: peer.lane.clone(),
            slices_hop_us: hop.slices.median,
            lanes_hop_us: hop.lanes.median,
            tolerance_us: hop.tolerance_us,
        })
        .collect()
}

/// The spans whose hops `subject` marks on its path and `floor` does not,
/// in path order.
fn spans_only_in(header: &TraceHeader, subject: &LaneOps, floor: &LaneOps) -> Vec<String> {
    let mut spans: Vec<String> = Vec::new();
    for hop in subject.hops.iter().take(subject.path_len).filter(|h| !floor.hops.contains(h)) {
        let Some(edge) = header.hops.get(*hop).and_then(|d| d.span.as_ref()) else { continue };
        if !spans.contains(&edge.span) {
            spans.push(edge.span.clone());
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use hopscope_probe::{Block, Edge, Hop, HopTable, Mark, OpId, Side, SpanEdge, Stream, Ticks};

    use super::*;
    use crate::join::{HopScan, Join};

    #[test]
    fn the_spans_only_the_subject_marks_are_named_in_path_order() {
        let mut header = TraceHeader::for_this_host(&["s-probed", "f-probed"], &["caller"]);
        let mut hops = HopTable::standard();
        let mut span = |name: &str| {
            [Edge::Enter, Edge::Exit].map(|edge| {
                let hop = hops.add(&SpanEdge::of(name, edge).hop_name(), Side::Caller);
                hops.mark_by(hop, SpanEdge::of(name, edge));
                hop
            })
        };
        let (prepare, shared) = (span("prepare"), span("shared"));
        header.hops = hops;
        let block = |lane: u16, path: &[Hop]| {
            let marks = (0..3u64)
                .flat_map(|op| {
                    path.iter().enumerate().map(move |(i, hop)| {
                        Mark::new(OpId(u64::from(lane) * 100 + op + 1), *hop, Ticks(op * 10_000 + i as u64 * 100))
                    })
                })
                .collect();
            Block {
                lane,
                op_count: 3,
                end: Ticks(30_000),
                streams: vec![Stream { thread: 0, dropped: 0, marks }],
                ..Block::default()
            }
        };
        let subject = block(0, &[Hop::ENTER, prepare[0], prepare[1], shared[0], shared[1], Hop::DONE]);
        let floor = block(1, &[Hop::ENTER, shared[0], shared[1], Hop::DONE]);
        let mut scan = HopScan::new(&header);
        scan.add(&subject);
        scan.add(&floor);
        let mut join = Join::new(&header, &scan);
        join.add(0, &subject);
        join.add(1, &floor);
        let ops = join.finish();
        assert_eq!(spans_only_in(&header, &ops[0], &ops[1]), ["prepare"]);
        assert!(spans_only_in(&header, &ops[1], &ops[0]).is_empty(), "the floor marks nothing the subject does not");
    }
}
