//! What a causal profile says of one slice: each change tried (a
//! [`Point`], judged against the reference with medians and CIs), kept
//! apart from the profile's inputs so its warnings can read points without
//! reaching back into the profile.

use serde::{Deserialize, Serialize};

use crate::join::SliceSide;
use crate::stats::{self, BOOTSTRAP_RESAMPLES};

/// A median over rounds and its bootstrap 95% CI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Median over rounds.
    pub median: f64,
    /// Bootstrap 95% CI of the median.
    pub ci95: [f64; 2],
}

impl Estimate {
    pub(super) fn of(values: &[f64], seed: u64) -> Estimate {
        let mut sorted = values.to_vec();
        let median = stats::median_of_unsorted(&mut sorted);
        let (low, high) = stats::bootstrap_ci95(values, BOOTSTRAP_RESAMPLES, seed, stats::median_of_unsorted);
        Estimate { median, ci95: [low, high] }
    }

    /// Whether the CI lies wholly on one side of zero.
    pub fn excludes_zero(&self) -> bool {
        self.ci95[0] > 0.0 || self.ci95[1] < 0.0
    }
}

/// One arm judged against the reference, paired by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The change, percent of the slice's median (+ faster, − slower).
    pub change_pct: f64,
    /// The change, ns per pass.
    pub change_ns: f64,
    /// A virtual speedup (else a real slowdown).
    pub virtual_speedup: bool,
    /// The lane's throughput change, percent (+ is more operations per
    /// second).
    pub throughput_pct: Estimate,
    /// Time per operation saved, ns (+ is faster).
    pub saved_ns: Estimate,
    /// The callers' latency change, µs per operation (− is faster): a
    /// closed loop's latency is its callers over its throughput (Little's
    /// law), so this is `callers × −saved`.
    pub latency_us: Estimate,
    /// Time per operation saved over the time taken off the slice (for a
    /// slowdown: lost over added): 1 when all of it reaches the lane, 0
    /// when none does.
    pub reach: f64,
    /// The time taken off (or added to) the slice per operation, ns: the
    /// change per pass times its passes per operation, as the run counted
    /// them (median over rounds). One pass per operation for its own
    /// slice; a shared interval's change is taken once for every
    /// operation it served (a COMMIT shared by eight: an eighth each). 0
    /// in profiles written before it was counted (read them with
    /// [`Point::taken`]).
    #[serde(default)]
    pub taken_ns: f64,
    /// Rounds paired.
    pub rounds: usize,
}

/// A change is not believed to save more than this many times what it took
/// off the slice: a 4 ns change whose CI read +6 % of a 40 µs operation
/// was a round's noise among thirty tried, not a finding.
pub const MAX_CREDIBLE_REACH: f64 = 3.0;

impl Point {
    /// Whether the point tells an effect: its CI excludes zero, and the
    /// least it may have saved (or lost) is within [`MAX_CREDIBLE_REACH`]
    /// times its change. Noise must not rank a 3 ns slice above a real
    /// one, nor name it in a headline.
    pub fn tells_an_effect(&self) -> bool {
        let least = self.saved_ns.ci95[0].abs().min(self.saved_ns.ci95[1].abs());
        self.throughput_pct.excludes_zero() && least <= MAX_CREDIBLE_REACH * self.taken()
    }

    /// Time taken off the slice per operation, ns ([`Point::taken_ns`]; its
    /// change per pass in a profile that did not count passes).
    pub fn taken(&self) -> f64 {
        if self.taken_ns > 0.0 { self.taken_ns } else { self.change_ns }
    }
}

/// One slice's causal profile: its points, slowest to fastest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceProfile {
    /// `from→to`.
    pub name: String,
    /// Caller, writer, or cross-thread.
    pub side: SliceSide,
    /// Its median, ns per operation.
    pub median_ns: f64,
    /// What a change's share is taken of, ns ([`SliceBase::base_ns`](super::SliceBase::base_ns)).
    #[serde(default)]
    pub base_ns: f64,
    /// Every change tried.
    pub points: Vec<Point>,
}

impl SliceProfile {
    /// The speedup ranked by: 10 % if it was tried, else the smallest
    /// speedup tried.
    pub fn ranking_point(&self) -> Option<&Point> {
        let speedups = self.points.iter().filter(|p| p.virtual_speedup);
        speedups
            .clone()
            .find(|p| (p.change_pct - 10.0).abs() < 1e-9)
            .or_else(|| speedups.min_by(|a, b| a.change_pct.total_cmp(&b.change_pct)))
    }
}
