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
    if let Some((lane, callers)) = callers {
        warnings.push(Warning::SeveralCallers { lane: lane.clone(), callers });
    }
    let machinery =
        sliced.and_then(|o| blocks.get(usize::from(o.lane))).and_then(|l| crate::lanes::span_machinery(header, l));
    // Shares of the lane's µs per write, and the time between marks, need
    // the slices to add up to it: with one caller at a time.
    let coverage = sliced.filter(|_| callers.is_none()).and_then(|o| {
        let lane = blocks.get(usize::from(o.lane))?;
        crate::coverage::coverage(lane, o, seed.wrapping_add(50))
    });
    let slices = sliced
        .map(|o| {
            let mut figures = slices::slice_figures(o, seed);
            if let Some(m) = &machinery {
                let sequences = blocks.get(usize::from(o.lane)).map(|l| &l.span_sequences);
                slices::state_machinery(&mut figures, o, header, m, sequences.unwrap_or(&Default::default()));
            }
            slices::mark_grain(&mut figures, header.clock.grain_ns());
            if let Some(c) = &coverage {
                slices::share_of(&mut figures, c.op_mean_us);
            }
            figures
        })
        .unwrap_or_default();
    let probed_floor = complete(roles.find(Role::Floor, Variant::Probed));
    let floor_slices = probed_floor.map(|o| {
        let mut figures = slices::slice_figures(o, seed);
        slices::mark_grain(&mut figures, header.clock.grain_ns());
        // Shares of the floor's whole operation, as the subject's are of
        // its own, so the two tables' share columns read alike.
        let floor_coverage =
            blocks.get(usize::from(o.lane)).and_then(|l| crate::coverage::coverage(l, o, seed.wrapping_add(51)));
        if let Some(c) = &floor_coverage {
            slices::share_of(&mut figures, c.op_mean_us);
        }
        figures
    });
    if subject.is_some() && floor_slices.is_none() && derived.is_some_and(|d| d.library_us.is_some()) {
        warnings.push(Warning::NoProbedFloor);
    }
    // Neither does the cross-check: the lanes' library is of wall time ÷
    // writes, the slices' of each write's latency.
    let crosscheck = match (derived.and_then(|d| d.library_us.as_ref()), slices.is_empty() || callers.is_some()) {
        (Some(library), false) => {
            let lane_blocks = |o: &LaneOps| blocks.get(usize::from(o.lane));
            let probed_lanes = subject
                .and_then(lane_blocks)
                .zip(probed_floor.and_then(lane_blocks))
                .and_then(|(w, f)| crate::lanes::difference(w, f));
            let accounting = subject.zip(probed_floor).and_then(|(w, f)| {
                use crate::accounting::Probed;
                crate::accounting::account(
                    Probed { ops: w, walls: lane_blocks(w) },
                    Probed { ops: f, walls: lane_blocks(f) },
                    library,
                    probed_lanes,
                    header.mark_ns,
                    seed.wrapping_add(40),
                )
            });
            Some(slices::cross_check(&slices, floor_slices.as_deref(), library, accounting))
        }
        _ => None,
    };
    if crosscheck.as_ref().is_some_and(|c| !c.agree) {
        warnings.push(Warning::InstrumentsDisagree { tolerance_us: slices::CROSSCHECK_TOLERANCE_US });
    }
    let peers = super::peers::peer_slices(header, blocks, joined, roles, seed);
    for (peer, hop) in peers.iter().filter_map(|p| Some((p, p.hop.as_ref()?))).filter(|(_, h)| !h.agree) {
        warnings.push(Warning::PeerOutsideMarks {
            lane: peer.lane.clone(),
            slices_hop_us: hop.slices.median,
            lanes_hop_us: hop.lanes.median,
            tolerance_us: hop.tolerance_us,
        });
    }
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
