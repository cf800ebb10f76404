//! What a join counts over a block or a lane beside its durations: the
//! shared intervals and how many operations each served (batch sizes), and
//! how often an operation's marks changed CPU.

use serde::{Deserialize, Serialize};

/// Shared intervals of a block (or a lane): how many, and how many
/// operations they served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batches {
    /// Intervals that served at least one operation.
    pub intervals: u64,
    /// Operations they served, summed over intervals (an operation served
    /// by two intervals counts in each).
    pub served: u64,
    /// The most operations one interval served.
    pub largest: u64,
    /// Operations served by at least one interval, each counted once (an
    /// operation whose batch marked a BEGIN and a COMMIT apart is in two).
    #[serde(default)]
    pub operations: u64,
}

impl Batches {
    /// Operations served per interval, when there were intervals.
    pub fn mean(&self) -> Option<f64> {
        (self.intervals > 0).then(|| self.served as f64 / self.intervals as f64)
    }

    /// Add another block's.
    pub fn add(&mut self, other: &Batches) {
        self.intervals = self.intervals.saturating_add(other.intervals);
        self.served = self.served.saturating_add(other.served);
        self.largest = self.largest.max(other.largest);
        self.operations = self.operations.saturating_add(other.operations);
    }
}

/// How many shared intervals served each number of operations, over a
/// lane: its batch sizes. Sizes past [`BatchSizes::CAP`] share one count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSizes {
    /// `(size, intervals)`, ascending by size.
    pub counts: Vec<(u64, u64)>,
}

impl BatchSizes {
    /// Largest size counted on its own; larger ones count as this.
    pub const CAP: u64 = 65_536;

    /// Count one interval that served `size` operations.
    pub fn add(&mut self, size: u64) {
        self.add_many(size, 1);
    }

    /// Count `intervals` intervals that served `size` operations each.
    pub fn add_many(&mut self, size: u64, intervals: u64) {
        let size = size.min(Self::CAP);
        match self.counts.binary_search_by_key(&size, |&(s, _)| s) {
            Ok(i) => self.counts[i].1 = self.counts[i].1.saturating_add(intervals),
            Err(i) => self.counts.insert(i, (size, intervals)),
        }
    }

    /// The mean size over every interval the program ran, when a capture
    /// kept one operation in `sample_every` and so kept an interval only
    /// when one of its operations was kept: an interval of `s` is kept
    /// with chance 1 − (1 − 1/N)^s, so large ones are kept more often, and
    /// each kept one stands for 1 ÷ that chance of them.
    pub fn mean_over_all(&self, sample_every: u32) -> Option<f64> {
        let n = f64::from(sample_every.max(1));
        let (mut weight, mut sized) = (0.0, 0.0);
        for &(size, count) in &self.counts {
            let kept = 1.0 - (1.0 - 1.0 / n).powf(size as f64);
            if kept > 0.0 {
                weight += count as f64 / kept;
                sized += size as f64 * count as f64 / kept;
            }
        }
        (weight > 0.0).then(|| sized / weight)
    }

    /// Intervals counted.
    pub fn intervals(&self) -> u64 {
        self.counts.iter().fold(0u64, |n, &(_, c)| n.saturating_add(c))
    }

    /// The size at quantile `q` (0 to 1) of the intervals, if any.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.intervals();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        self.counts
            .iter()
            .find(|&&(_, c)| {
                seen = seen.saturating_add(c);
                seen >= rank
            })
            .map(|&(size, _)| size)
    }
}

/// How often operations' marks were taken on different CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreChanges {
    /// Complete operations with at least one mark that carries its CPU.
    pub ops: u64,
    /// CPU changes between consecutive CPU-sampled marks, over those ops.
    pub changes: u64,
    /// Those ops with at least one change.
    pub ops_changed: u64,
}
