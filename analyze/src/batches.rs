//! Batch sizes: how many operations each shared interval served (a group
//! commit's transaction, a drain), over a lane and block by block.
//!
//! A writer that batches changes with its load: the same program batched
//! ~8 requests per transaction with its threads on one core and ~2 with
//! them free. Every figure of such a lane is conditioned on its batch
//! sizes, so a result states them beside the figures.

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
        median: sizes.quantile(0.5)?,
        p10: sizes.quantile(0.1)?,
        p90: sizes.quantile(0.9)?,
        largest: ops.batches.largest,
        block_mean: if low.is_finite() { [median, low, high] } else { [mean; 3] },
        sizes: sizes.counts.clone(),
    })
}

/// The least throughput a step to larger batches must buy, percent, for
/// the step to count: past the first step that buys less, batching costs
/// each write latency for little ([`BatchSweep::knee`]).
pub const KNEE_GAIN_PCT: f64 = 5.0;

/// One setting of a batch sweep: a lane that batched, the throughput it
/// reached and what each of its writes waited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The probed lane (its marks give the batches and the latency).
    pub lane: String,
    /// The lane whose wall time gives the throughput: the clean build when
    /// the run has one (no marks' cost in it), else the probed lane.
    pub throughput_lane: String,
    /// Operations per shared interval, mean.
    pub batch_mean: f64,
    /// And its 90th percentile: how large the large batches ran (absent in
    /// results written before it was recorded).
    #[serde(default)]
    pub batch_p90: u64,
    /// Wall time per operation, µs: the mean over the throughput lane's
    /// blocks (its whole time over its operations, a block with a WAL
    /// checkpoint counted as it ran). With several callers at once, the
    /// inverse of the throughput.
    pub us_per_op: f64,
    /// Operations per second (10⁶ ÷ `us_per_op`).
    pub ops_per_s: f64,
    /// What one operation waited, first mark to last: median, µs.
    pub latency_p50_us: f64,
    /// And its 99th percentile, µs.
    pub latency_p99_us: f64,
    /// Callers at once: no batch can serve more (absent in results
    /// written before it was recorded).
    #[serde(default)]
    pub callers: u32,
}

impl SweepPoint {
    /// Whether its batches were as large as its callers allow (a tenth of
    /// them or more served every caller): a larger cap cannot make them
    /// larger, only more callers at once can.
    pub fn capped_by_callers(&self) -> bool {
        self.callers > 1 && self.batch_p90 >= u64::from(self.callers)
    }
}

/// Batch sizes against latency and throughput: the settings of a run's
/// batching lanes (`decompose --group-lanes 1,8,64`), smallest batches
/// first, and the knee past which larger batches buy little.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchSweep {
    /// Each setting, in the order the run declared them (`--group-lanes`:
    /// the sizes ascending).
    pub points: Vec<SweepPoint>,
    /// Index into [`Self::points`] of the knee: the last setting whose step
    /// up bought at least [`KNEE_GAIN_PCT`] of throughput (the first, when
    /// even it did not); `None` when every step did (larger batches might
    /// buy more still).
    pub knee: Option<usize>,
    /// [`KNEE_GAIN_PCT`], as the sweep was judged.
    pub knee_gain_pct: f64,
}

/// The batch sweep of a run: every probed lane of `header` that batched,
/// smaller batches first (by their 90th percentile: a mean moves with a
/// run's noise where a cap binds; the run's declaration breaking ties),
/// with the
/// throughput of its clean build (`clean_of`), when there are two or more.
pub fn sweep(
    lanes: &std::collections::BTreeMap<String, crate::LaneResult>,
    header: &hopscope_probe::TraceHeader,
    clean_of: impl Fn(&str) -> Option<String>,
) -> Option<BatchSweep> {
    use hopscope_probe::{LaneFact, RunFact, RunFacts};
    // A placement twin is another placement's point, not the sweep's.
    let twin = |name: &String| header.run.fact(&RunFact::Lane(name.clone(), LaneFact::TwinOf)).is_some();
    let mut points: Vec<SweepPoint> = header
        .lanes
        .iter()
        .filter(|name| !twin(name))
        .filter_map(|name| {
            let lane = lanes.get(name)?;
            let (batch_mean, batch_p90) = lane.batches.as_ref().map(|b| (b.mean, b.p90))?;
            let q = &lane.op_latency_quantiles_us;
            let (latency_p50_us, latency_p99_us) = (*q.get(50)?, *q.get(99)?);
            let throughput_lane = clean_of(name).filter(|c| lanes.get(c).is_some_and(|l| !l.blocks_us.is_empty()));
            let throughput_lane = throughput_lane.unwrap_or_else(|| name.clone());
            let us_per_op = lanes.get(&throughput_lane)?.mean_us_per_op()?;
            Some(SweepPoint {
                lane: name.clone(),
                throughput_lane,
                batch_mean,
                batch_p90,
                us_per_op,
                ops_per_s: 1e6 / us_per_op,
                latency_p50_us,
                latency_p99_us,
                callers: crate::contention::lane_callers(header, name),
            })
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    points.sort_by_key(|p| p.batch_p90);
    let knee = knee(&points);
    Some(BatchSweep { points, knee, knee_gain_pct: KNEE_GAIN_PCT })
}

/// The knee of `points` ([`BatchSweep::knee`]): the first setting whose
/// step to the next bought less than [`KNEE_GAIN_PCT`] of throughput.
fn knee(points: &[SweepPoint]) -> Option<usize> {
    points.windows(2).position(|w| (w[1].ops_per_s / w[0].ops_per_s - 1.0) * 100.0 < KNEE_GAIN_PCT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(ops_per_s: f64) -> SweepPoint {
        SweepPoint {
            lane: format!("{ops_per_s}"),
            throughput_lane: String::new(),
            batch_mean: 1.0,
            batch_p90: 1,
            us_per_op: 1e6 / ops_per_s,
            ops_per_s,
            latency_p50_us: 1.0,
            latency_p99_us: 2.0,
            callers: 8,
        }
    }

    #[test]
    fn the_knee_is_the_last_setting_before_a_step_that_buys_little() {
        let points: Vec<SweepPoint> = [40_000.0, 100_000.0, 118_000.0, 120_000.0].map(point).into();
        assert_eq!(knee(&points), Some(2), "+150 %, +18 %, then +1.7 %");
        let growing: Vec<SweepPoint> = [10_000.0, 20_000.0, 40_000.0].map(point).into();
        assert_eq!(knee(&growing), None, "every step bought more");
        let flat: Vec<SweepPoint> = [50_000.0, 50_500.0].map(point).into();
        assert_eq!(knee(&flat), Some(0), "batching bought nothing from the start");
    }
}
