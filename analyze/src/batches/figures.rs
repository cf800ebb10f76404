//! A lane's batch sizes from its joined operations: the shared intervals
//! it ran and how many operations each served.

use serde::{Deserialize, Serialize};

use crate::join::LaneOps;
use crate::stats::median_of_unsorted;

/// A lane's batch sizes: the shared intervals it ran and the operations
/// each served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchFigures {
    /// Shared intervals that served at least one operation.
    pub intervals: u64,
    /// Operations they served (an operation served by two intervals
    /// counts in each).
    pub served: u64,
    /// Operations served, each counted once: fewer than [`Self::served`]
    /// when a batch marked more than one shared interval (its BEGIN and
    /// its COMMIT apart).
    #[serde(default)]
    pub operations: u64,
    /// Operations per interval, over the lane.
    pub mean: f64,
    /// For a capture that kept one operation in N: the mean over every
    /// interval the program ran, estimated ([`crate::join::BatchSizes::mean_over_all`]);
    /// [`Self::mean`] is over the intervals it kept, which favour large ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_mean: Option<f64>,
    /// Size of the median interval.
    pub median: u64,
    /// 10th percentile of the sizes.
    pub p10: u64,
    /// 90th percentile of the sizes.
    pub p90: u64,
    /// The most operations one interval served.
    pub largest: u64,
    /// Each block's mean size: its median, lowest and highest over the
    /// lane's blocks (a load that changed during the run shows here).
    pub block_mean: [f64; 3],
    /// `(size, intervals)`, ascending by size: the whole distribution
    /// (sizes past [`crate::join::BatchSizes::CAP`] counted as it).
    pub sizes: Vec<(u64, u64)>,
}

/// The batch sizes of `ops`, when its operations shared intervals.
pub fn batch_figures(ops: &LaneOps) -> Option<BatchFigures> {
    let mean = ops.batches.mean()?;
    let sizes = &ops.batch_sizes;
    let mut block_means: Vec<f64> = ops.blocks.iter().filter_map(|b| b.batches.mean()).collect();
    let low = block_means.iter().copied().fold(f64::INFINITY, f64::min);
    let high = block_means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let median = if block_means.is_empty() { mean } else { median_of_unsorted(&mut block_means) };
    Some(BatchFigures {
        intervals: ops.batches.intervals,
        served: ops.batches.served,
        operations: ops.batches.operations,
        mean,
        all_mean: None,
        median: sizes.quantile(0.5)?,
        p10: sizes.quantile(0.1)?,
        p90: sizes.quantile(0.9)?,
        largest: ops.batches.largest,
        block_mean: if low.is_finite() { [median, low, high] } else { [mean; 3] },
        sizes: sizes.counts.clone(),
    })
}
