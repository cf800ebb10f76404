//! What placement changed: each placement twin (a program lane run again
//! under another placement, `--placement same-core,unpinned`) beside the
//! lane it repeats, from the same rounds.
//!
//! A placement changes behaviour as well as speed (how large a writer's
//! batches grow, which slice waits), so a twin is read on the figures
//! that show behaviour: wall time per operation paired by round, the
//! operation's latency median, batch sizes, and the slices that moved
//! most.

use std::collections::BTreeMap;

use hopscope_probe::{LaneFact, RunFact, RunFacts, TraceHeader};
use serde::{Deserialize, Serialize};

use super::peers::{SliceDifference, paired_slices};
use super::result::LaneResult;
use crate::join::LaneOps;
use crate::lanes::{Difference, LaneBlocks};

/// How many of a twin's slices the receipt names: the ones that moved most.
pub(super) const MOVED_SLICES: usize = 3;

/// A twin's wall time differs from its lane's when the paired CI clears
/// zero and the ratio is at least this far from 1.
pub(super) const WALL_CHANGE: f64 = 0.05;

/// A twin's batches differ from its lane's when their means are at least
/// this ratio apart (either way).
pub(super) const BATCH_CHANGE: f64 = 1.25;

/// Every twin of a run beside its lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placements {
    /// The run's first placement: its references' and the lanes the twins
    /// repeat.
    pub first: String,
    /// Each twin, in the run's lane order.
    pub twins: Vec<PlacedTwin>,
}

/// One twin beside the lane it repeats; pairs `[lane, twin]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacedTwin {
    /// The lane (`writer-probed`) and its twin (`unpinned/writer-probed`).
    pub lanes: [String; 2],
    /// Where each ran.
    pub placements: [String; 2],
    /// Whether they are the probed build (slices and latency are theirs).
    pub probed: bool,
    /// Caller threads at once: above one, wall time per operation is a
    /// throughput.
    pub callers: u32,
    /// µs per operation, each lane's median of blocks.
    pub us_per_op: [f64; 2],
    /// `twin − lane`, µs per operation, paired by round.
    pub difference: Option<Difference>,
    /// Each one's per-operation latency median (probed builds), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_median_us: Option<[f64; 2]>,
    /// Each one's mean requests per shared interval (batching writers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_mean: Option<[f64; 2]>,
    /// Each one's 90th-percentile batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_p90: Option<[u64; 2]>,
    /// The slices that moved most, `twin − lane` paired by round, largest
    /// first, each with its 95% CI clear of zero (probed builds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<SliceDifference>,
}

impl PlacedTwin {
    /// `twin ÷ lane` wall time per operation, from the paired difference
    /// (`1 + Δ ÷ lane`): the figure the sentence's CI belongs to. The
    /// medians' own ratio can read otherwise when a lane runs at two paces
    /// (a user's ledger: 1.36× by medians, 1.18× paired).
    pub fn ratio(&self) -> Option<f64> {
        let d = self.difference?;
        (self.us_per_op[0] > 0.0).then(|| 1.0 + d.median / self.us_per_op[0])
    }

    /// Whether the twin's wall time differs from its lane's: the paired CI
    /// clears zero and the ratio is [`WALL_CHANGE`] or more from 1.
    pub fn wall_changed(&self) -> bool {
        let cleared = self.difference.is_some_and(|d| d.ci95[0] > 0.0 || d.ci95[1] < 0.0);
        cleared && self.ratio().is_some_and(|r| (r - 1.0).abs() >= WALL_CHANGE)
    }

    /// Whether its batches differ from its lane's by [`BATCH_CHANGE`] or more.
    pub fn batches_changed(&self) -> bool {
        self.batch_mean.is_some_and(|[a, b]| a > 0.0 && b > 0.0 && (b / a >= BATCH_CHANGE || a / b >= BATCH_CHANGE))
    }

    /// Whether placement changed how the lane behaved (its speed or its
    /// batches).
    pub fn changed(&self) -> bool {
        self.wall_changed() || self.batches_changed()
    }
}

/// Each twin in `header` beside its lane; `None` when the run has none.
pub(super) fn placements(
    header: &TraceHeader,
    blocks: &[LaneBlocks],
    joined: &[LaneOps],
    results: &BTreeMap<String, LaneResult>,
) -> Option<Placements> {
    let fact = |lane: &str, fact: LaneFact| header.run.fact(&RunFact::Lane(lane.to_owned(), fact)).map(str::to_owned);
    let twins: Vec<PlacedTwin> = header
        .lanes
        .iter()
        .filter_map(|twin| {
            let lane = fact(twin, LaneFact::TwinOf)?;
            let at = |name: &str| header.lane(name).map(usize::from);
            let (i, j) = (at(&lane)?, at(twin)?);
            let (base, other) = (results.get(&lane)?, results.get(twin)?);
            let ops = |k: usize| joined.iter().find(|o| usize::from(o.lane) == k);
            let placements = [fact(&lane, LaneFact::Placement)?, fact(twin, LaneFact::Placement)?];
            let callers = fact(&lane, LaneFact::Callers).and_then(|c| c.parse().ok()).unwrap_or(1);
            let mut figures = twin_figures([base, other], [blocks.get(i)?, blocks.get(j)?], [ops(i), ops(j)]);
            figures.lanes = [lane, twin.clone()];
            figures.placements = placements;
            figures.callers = callers;
            Some(figures)
        })
        .collect();
    if twins.is_empty() {
        return None;
    }
    Some(Placements { first: header.run.fact(&RunFact::Placement).unwrap_or_default().to_owned(), twins })
}

/// The figures of one twin beside its lane (each pair `[lane, twin]`);
/// names, placements and callers left for the caller to fill.
fn twin_figures(
    [base, twin]: [&LaneResult; 2],
    [base_blocks, twin_blocks]: [&LaneBlocks; 2],
    ops: [Option<&LaneOps>; 2],
) -> PlacedTwin {
    let median = |r: &LaneResult| r.us_per_op.map_or(0.0, |s| s.median);
    let latency = |r: &LaneResult| r.op_latency_quantiles_us.get(50).copied();
    let batches = [base.batches.as_ref(), twin.batches.as_ref()];
    let mut moved = match ops {
        [Some(base), Some(twin)] if base.complete > 0 && twin.complete > 0 => paired_slices(twin, base),
        _ => Vec::new(),
    };
    // Only slices whose paired CI clears zero moved.
    moved.retain(|s| s.difference.ci95[0] > 0.0 || s.difference.ci95[1] < 0.0);
    moved.sort_by(|a, b| b.difference.median.abs().total_cmp(&a.difference.median.abs()));
    moved.truncate(MOVED_SLICES);
    PlacedTwin {
        lanes: Default::default(),
        placements: Default::default(),
        probed: base.probed,
        callers: 1,
        us_per_op: [median(base), median(twin)],
        difference: crate::lanes::difference(twin_blocks, base_blocks),
        latency_median_us: latency(base).zip(latency(twin)).map(|(a, b)| [a, b]),
        batch_mean: match batches {
            [Some(a), Some(b)] => Some([a.mean, b.mean]),
            _ => None,
        },
        batch_p90: match batches {
            [Some(a), Some(b)] => Some([a.p90, b.p90]),
            _ => None,
        },
        moved,
    }
}
