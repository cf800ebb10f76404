//! The in-situ instrument of a decomposition: the sliced lane's slices,
//! the probed floor's, and their cross-check against the lane arithmetic.

use hopscope_probe::{Role, TraceHeader, Variant};

use super::Derived;
use crate::join::LaneOps;
use crate::roles::Roles;
use crate::slices::{self, CrossCheck, SliceFigures};

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
    pub(super) peers: Vec<LaneSlices>,
}

/// One lane's slices, beside the sliced lane's: a probed peer's.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LaneSlices {
    /// The probed lane.
    pub lane: String,
    /// Its slices, in hop order, shares of its own operation.
    pub slices: Vec<SliceFigures>,
    /// Whether it is the peers' reference (the subject marked as they are).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reference: bool,
    /// Each slice it shares with the reference: this lane's minus the
    /// reference's, paired by round (empty for the reference, or without
    /// one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versus_reference: Vec<SliceDifference>,
    /// What its marks cost an operation: this probed lane minus its clean
    /// build (the reference's is the subject's), paired by round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer_effect: Option<ObserverFigure>,
}

/// A probed lane's observer effect: against which clean lane, how much.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ObserverFigure {
    /// The clean lane it is paired with.
    pub clean: String,
    /// Probed minus clean, µs per operation, paired by round.
    pub difference: crate::lanes::Difference,
}

/// A slice's paired difference between two lanes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SliceDifference {
    /// The slice (`from→to`).
    pub name: String,
    /// This lane's block median minus the other's, round by round, µs.
    pub difference: crate::lanes::Difference,
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
    warnings: &mut Vec<String>,
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
    let machinery =
        sliced.and_then(|o| blocks.get(usize::from(o.lane))).and_then(|l| crate::lanes::span_machinery(header, l));
    let coverage = sliced.and_then(|o| {
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
        warnings.push(
            "no probed floor lane: the in-situ library figure includes the channel sends any writer pays".to_owned(),
        );
    }
    let crosscheck = match (derived.and_then(|d| d.library_us.as_ref()), slices.is_empty()) {
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
        warnings.push(format!(
            "the two instruments disagree about the library's cost by more than the fixed {:.1} µs",
            slices::CROSSCHECK_TOLERANCE_US
        ));
    }
    let peers = peer_slices(header, blocks, joined, roles, seed);
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

/// Each probed peer's slices, the peers' reference first, and every other
/// peer's slices paired against the reference's, round by round.
fn peer_slices(
    header: &TraceHeader,
    blocks: &[crate::lanes::LaneBlocks],
    joined: &[LaneOps],
    roles: &Roles,
    seed: u64,
) -> Vec<LaneSlices> {
    let is_reference = |o: &LaneOps| roles.info(usize::from(o.lane)).is_some_and(|i| i.reference);
    let mut probed: Vec<&LaneOps> = joined
        .iter()
        .filter(|o| {
            o.complete > 0
                && roles.info(usize::from(o.lane)).is_some_and(|i| i.role == Role::Peer)
                && roles.variant(usize::from(o.lane)) == Some(Variant::Probed)
        })
        .collect();
    // The reference first (a stable sort keeps the run's order otherwise).
    probed.sort_by_key(|o| !is_reference(o));
    let reference = probed.first().copied().filter(|o| is_reference(o));
    probed
        .iter()
        .enumerate()
        .filter_map(|(k, o)| {
            let lane = header.lanes.get(usize::from(o.lane))?.clone();
            let mut figures = slices::slice_figures(o, seed.wrapping_add(60 + k as u64));
            slices::mark_grain(&mut figures, header.clock.grain_ns());
            let coverage = blocks
                .get(usize::from(o.lane))
                .and_then(|l| crate::coverage::coverage(l, o, seed.wrapping_add(80 + k as u64)));
            if let Some(c) = &coverage {
                slices::share_of(&mut figures, c.op_mean_us);
            }
            let versus_reference = match reference {
                Some(r) if !std::ptr::eq(r, *o) => paired_slices(o, r),
                _ => Vec::new(),
            };
            let observer_effect = observer_effect(header, blocks, roles, o, is_reference(o));
            Some(LaneSlices { lane, slices: figures, reference: is_reference(o), versus_reference, observer_effect })
        })
        .collect()
}

/// Every slice `ops` shares with `reference` (by name), `ops − reference`
/// paired by round from the two lanes' block medians.
fn paired_slices(ops: &LaneOps, reference: &LaneOps) -> Vec<SliceDifference> {
    let by_round = |o: &LaneOps, name: &str| -> std::collections::BTreeMap<(u32, u32), f64> {
        let Some(s) = o.slices.iter().position(|d| d.name == name) else { return Default::default() };
        o.blocks
            .iter()
            .filter_map(|b| Some(((b.pass, b.sample), b.slice_median_ns.get(s).copied().flatten()? / 1_000.0)))
            .collect()
    };
    ops.slices
        .iter()
        .filter(|d| reference.slices.iter().any(|r| r.name == d.name))
        .filter_map(|d| {
            let (mine, theirs) = (by_round(ops, &d.name), by_round(reference, &d.name));
            let difference = crate::lanes::Difference::of(crate::lanes::per_round(&mine, &[&theirs]))?;
            Some(SliceDifference { name: d.name.clone(), difference })
        })
        .collect()
}

/// Probed lane `ops` minus its clean build, paired by round: the lane of
/// the same code built clean, or, for the peers' reference, the subject's
/// clean build (the same code, marked another way).
fn observer_effect(
    header: &TraceHeader,
    blocks: &[crate::lanes::LaneBlocks],
    roles: &Roles,
    ops: &LaneOps,
    reference: bool,
) -> Option<ObserverFigure> {
    let code = &roles.info(usize::from(ops.lane))?.code;
    let clean = if reference {
        roles.find(Role::Subject, Variant::Clean)?
    } else {
        (0..header.lanes.len())
            .find(|&i| roles.info(i).is_some_and(|c| &c.code == code) && roles.variant(i) == Some(Variant::Clean))?
    };
    let difference = crate::lanes::difference(blocks.get(usize::from(ops.lane))?, blocks.get(clean)?)?;
    Some(ObserverFigure { clean: header.lanes.get(clean)?.clone(), difference })
}
