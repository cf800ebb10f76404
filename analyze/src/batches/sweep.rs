//! A batch sweep: lanes that batched at different settings side by side,
//! the throughput each reached and what each write waited, and the knee
//! past which larger batches buy little.

use serde::{Deserialize, Serialize};

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
