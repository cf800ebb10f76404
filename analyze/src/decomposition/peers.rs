//! The peers' slices: each probed peer beside the peers' reference (the
//! subject marked as they are), slice by slice, and its slices summed into
//! its hop against the peers' baseline (the inline statement marked as
//! they are), checked against the hop its clean lane pays.

use hopscope_probe::{Role, TraceHeader, Variant};

use crate::join::LaneOps;
use crate::roles::Roles;
use crate::slices::{self, SliceFigures};

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
    /// Whether it is the peers' baseline (the inline statement marked as
    /// they are).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
    /// Its slices summed into its hop against the baseline's, beside the
    /// hop its clean lane pays (absent for the baseline, or without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<HopCheck>,
}

/// Do a peer's slices add up to what it costs? Two instruments on its hop
/// (`peer − inline`, µs per operation):
///
/// - the lanes: its clean lane's wall time per operation minus the inline
///   lane's, paired by round;
/// - the marks: its path (the mean of its slices summed) minus the peers'
///   baseline's, each net of what its marks cost (its probed lane minus
///   its clean one, the same round).
///
/// Round by round their difference is the baseline's time outside its
/// marks minus the peer's: it is zero when the peer's marks hold its whole
/// operation as the inline statement's hold the inline one, and grows with
/// whatever the peer does that no slice sees (a runtime's work after the
/// reply, a pool's checkout before the call).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HopCheck {
    /// The peers' baseline lane the path is taken against.
    pub baseline: String,
    /// The clean lanes the hop is taken from (the peer's, the inline one).
    pub clean: [String; 2],
    /// The clean lanes' hop, paired by round.
    pub lanes: crate::lanes::Difference,
    /// The hop from the slices, net of both lanes' marking costs.
    pub slices: crate::lanes::Difference,
    /// `slices − lanes`, paired by round.
    pub difference: crate::lanes::Difference,
    /// The bar: the two agree when `|difference| ≤ tolerance`.
    pub tolerance_us: f64,
    /// Whether they agree.
    pub agree: bool,
}

/// A peer's slices add up to its clean hop when the two lie within this
/// many µs of each other.
pub const HOP_TOLERANCE_US: f64 = 0.2;

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

/// Each probed peer's slices, the peers' reference first, and every other
/// peer's slices paired against the reference's, round by round.
pub(super) fn peer_slices(
    header: &TraceHeader,
    blocks: &[crate::lanes::LaneBlocks],
    joined: &[LaneOps],
    roles: &Roles,
    seed: u64,
) -> Vec<LaneSlices> {
    let is_reference = |o: &LaneOps| roles.info(usize::from(o.lane)).is_some_and(|i| i.reference);
    let is_baseline = |o: &LaneOps| roles.info(usize::from(o.lane)).is_some_and(|i| i.baseline);
    let mut probed: Vec<&LaneOps> = joined
        .iter()
        .filter(|o| {
            o.complete > 0
                && roles.info(usize::from(o.lane)).is_some_and(|i| i.role == Role::Peer)
                && !roles.is_twin(usize::from(o.lane))
                && roles.variant(usize::from(o.lane)) == Some(Variant::Probed)
        })
        .collect();
    // The reference first (a stable sort keeps the run's order otherwise).
    probed.sort_by_key(|o| !is_reference(o));
    let reference = probed.first().copied().filter(|o| is_reference(o));
    let baseline = probed.iter().copied().find(|o| is_baseline(o));
    let clean = |o: &LaneOps| clean_build(header, roles, o);
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
            let observer_effect = clean(o).and_then(|c| {
                let difference = crate::lanes::difference(blocks.get(usize::from(o.lane))?, blocks.get(c)?)?;
                Some(ObserverFigure { clean: header.lanes.get(c)?.clone(), difference })
            });
            let hop = match baseline {
                Some(b) if !std::ptr::eq(b, *o) => hop_check(header, blocks, (o, clean(o)?), (b, clean(b)?)),
                _ => None,
            };
            Some(LaneSlices {
                lane,
                slices: figures,
                reference: is_reference(o),
                versus_reference,
                observer_effect,
                baseline: is_baseline(o),
                hop,
            })
        })
        .collect()
}

/// Every slice `ops` shares with `reference` (by name), `ops − reference`
/// paired by round from the two lanes' block medians.
pub(super) fn paired_slices(ops: &LaneOps, reference: &LaneOps) -> Vec<SliceDifference> {
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

/// The clean build of probed lane `ops`: the lane of the same code built
/// clean, or, for the peers' reference and baseline, the subject's and the
/// inline lane's clean builds (the same code, marked another way).
fn clean_build(header: &TraceHeader, roles: &Roles, ops: &LaneOps) -> Option<usize> {
    let info = roles.info(usize::from(ops.lane))?;
    if info.reference {
        roles.find(Role::Subject, Variant::Clean)
    } else if info.baseline {
        roles.find(Role::Baseline, Variant::Clean)
    } else {
        (0..header.lanes.len())
            .find(|&i| roles.info(i).is_some_and(|c| c.code == info.code) && roles.variant(i) == Some(Variant::Clean))
    }
}

/// Peer `(ops, its clean lane)` against the baseline `(ops, its clean
/// lane)`: the hop from the lanes and from the slices, round by round.
fn hop_check(
    header: &TraceHeader,
    blocks: &[crate::lanes::LaneBlocks],
    (peer, peer_clean): (&LaneOps, usize),
    (base, base_clean): (&LaneOps, usize),
) -> Option<HopCheck> {
    let walls = |lane: usize| blocks.get(lane).map(|b| &b.us_per_op);
    let path = |o: &LaneOps| -> std::collections::BTreeMap<(u32, u32), f64> {
        o.blocks.iter().filter_map(|b| Some(((b.pass, b.sample), b.total_mean_ns? / 1_000.0))).collect()
    };
    let (peer_path, base_path) = (path(peer), path(base));
    let (peer_probed, base_probed) = (walls(usize::from(peer.lane))?, walls(usize::from(base.lane))?);
    let (peer_clean_walls, base_clean_walls) = (walls(peer_clean)?, walls(base_clean)?);
    let mut lanes = Vec::new();
    let mut from_slices = Vec::new();
    let mut difference = Vec::new();
    for (round, clean) in peer_clean_walls {
        let at = |m: &std::collections::BTreeMap<(u32, u32), f64>| m.get(round).copied();
        let (Some(base_clean), Some(peer_probed), Some(base_probed), Some(peer_path), Some(base_path)) =
            (at(base_clean_walls), at(peer_probed), at(base_probed), at(&peer_path), at(&base_path))
        else {
            continue;
        };
        let hop = clean - base_clean;
        // Each path net of its lane's marking cost this round.
        let marked = (peer_path - (peer_probed - clean)) - (base_path - (base_probed - base_clean));
        lanes.push(hop);
        from_slices.push(marked);
        difference.push(marked - hop);
    }
    let difference = crate::lanes::Difference::of(difference)?;
    Some(HopCheck {
        baseline: header.lanes.get(usize::from(base.lane))?.clone(),
        clean: [header.lanes.get(peer_clean)?.clone(), header.lanes.get(base_clean)?.clone()],
        lanes: crate::lanes::Difference::of(lanes)?,
        slices: crate::lanes::Difference::of(from_slices)?,
        agree: difference.median.abs() <= HOP_TOLERANCE_US,
        difference,
        tolerance_us: HOP_TOLERANCE_US,
    })
}
