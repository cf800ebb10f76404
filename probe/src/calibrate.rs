//! How much the instrument itself costs: a bare clock read against one mark.
//!
//! Both are timed in the same run, in alternating rounds (clock first on even
//! rounds, marks first on odd ones), so drift on a noisy host lands on both.
//! Each round times a batch of calls between two clock reads and divides by
//! the batch size; the figure reported is the median over rounds, with its
//! median absolute deviation.

use std::hint::black_box;

use serde::Serialize;

use crate::clock::{self, ClockInfo, Ticks};
use crate::counters::CounterSupport;
use crate::hop::{Hop, OpId};
use crate::host::HostInfo;
use crate::local;
use crate::machinery::SpanMachinery;

/// The probe's contract: a mark may cost at most this many bare clock
/// reads.
pub const MAX_MARK_TO_CLOCK_RATIO: f64 = 1.5;

/// What `hopscope calibrate` measured on this host: the clock, a mark
/// against a bare clock read, the counters the host can count, and the
/// span machinery. Serialized as schema `hopscope.calibration/1` (its
/// headline figures at the top level, for scripts).
#[derive(Debug, Clone, PartialEq)]
pub struct HostCalibration {
    /// The clock marks are read from.
    pub clock: ClockInfo,
    /// The machine.
    pub host: HostInfo,
    /// A mark against a bare clock read.
    pub costs: Costs,
    /// Each counter and whether the host can count it.
    pub counters: Vec<CounterSupport>,
    /// What `tracing` spans cost and leave inside slices.
    pub span_machinery: SpanMachinery,
}

impl HostCalibration {
    /// The schema name of the JSON form.
    pub const SCHEMA: &'static str = "hopscope.calibration/1";

    /// Whether a mark costs no more than the contract allows.
    pub fn mark_within_contract(&self) -> bool {
        self.costs.mark_to_clock_ratio <= MAX_MARK_TO_CLOCK_RATIO
    }
}

impl Serialize for HostCalibration {
    /// Keys in name order (the order the document always had).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(Serialize)]
        struct Spread {
            clock_read_mad_ns: f64,
            mark_mad_ns: f64,
            rounds: usize,
        }
        let counters: std::collections::BTreeMap<&str, String> =
            self.counters.iter().map(|c| (c.counter.name(), c.support.to_string())).collect();
        let costs = &self.costs;
        let spread = Spread {
            clock_read_mad_ns: costs.clock_read.mad_ns,
            mark_mad_ns: costs.mark.mad_ns,
            rounds: costs.mark.rounds,
        };
        let mut map = serializer.serialize_map(Some(12))?;
        map.serialize_entry("clock", &self.clock)?;
        map.serialize_entry("clock_grain_ns", &self.clock.grain_ns())?;
        map.serialize_entry("clock_read_ns", &costs.clock_read.median_ns)?;
        map.serialize_entry("clock_source", &self.clock.source.to_string())?;
        map.serialize_entry("counters", &counters)?;
        map.serialize_entry("host", &self.host)?;
        map.serialize_entry("mark_ns", &costs.mark.median_ns)?;
        map.serialize_entry("mark_to_clock_ratio", &costs.mark_to_clock_ratio)?;
        map.serialize_entry("mark_to_clock_target", &MAX_MARK_TO_CLOCK_RATIO)?;
        map.serialize_entry("schema", HostCalibration::SCHEMA)?;
        map.serialize_entry("span_machinery", &self.span_machinery)?;
        map.serialize_entry("spread", &spread)?;
        map.end()
    }
}

/// How many calls and rounds to time.
#[derive(Debug, Clone, Copy)]
pub struct CostPlan {
    /// Calls per timed batch. Large enough that the two bracketing clock
    /// reads are noise, small enough that a batch of marks fits one buffer.
    pub batch: usize,
    /// Timed rounds per instrument; the median is taken over these.
    pub rounds: usize,
    /// Untimed rounds first, to fault in the buffer and warm the caches.
    pub warmup_rounds: usize,
}

impl Default for CostPlan {
    fn default() -> Self {
        CostPlan { batch: 1_000, rounds: 301, warmup_rounds: 20 }
    }
}

/// A per-call cost: median and spread over rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cost {
    /// Median nanoseconds per call.
    pub median_ns: f64,
    /// Median absolute deviation of the per-round figures, nanoseconds.
    pub mad_ns: f64,
    /// Rounds the median is taken over.
    pub rounds: usize,
}

/// The instrument's own costs, measured side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Costs {
    /// A bare `quanta::Clock::raw` read.
    pub clock_read: Cost,
    /// One [`local::record`]: clock read plus the store into the buffer.
    pub mark: Cost,
    /// `mark / clock_read` medians.
    pub mark_to_clock_ratio: f64,
}

/// Time a bare clock read and a probe mark on the calling thread.
///
/// Attaches (and afterwards drains) a buffer of `plan.batch` marks on the
/// calling thread: do not call it between the marks of a measured block.
pub fn measure_costs(plan: CostPlan) -> Costs {
    let batch = plan.batch.max(1);
    let info = ClockInfo::measure();
    let clock = clock::clock();
    local::attach(batch);
    let mut clock_ns = Vec::with_capacity(plan.rounds);
    let mut mark_ns = Vec::with_capacity(plan.rounds);
    for round in 0..plan.warmup_rounds + plan.rounds {
        let (c, m) = if round % 2 == 0 {
            let c = time_clock_reads(clock, batch);
            (c, time_marks(batch))
        } else {
            let m = time_marks(batch);
            (time_clock_reads(clock, batch), m)
        };
        if round >= plan.warmup_rounds {
            clock_ns.push(info.to_ns(c) / batch as f64);
            mark_ns.push(info.to_ns(m) / batch as f64);
        }
    }
    let clock_read = summarize(&mut clock_ns);
    let mark = summarize(&mut mark_ns);
    Costs { clock_read, mark, mark_to_clock_ratio: mark.median_ns / clock_read.median_ns }
}

fn time_clock_reads(clock: &quanta::Clock, batch: usize) -> u64 {
    let start = Ticks(clock.raw());
    for _ in 0..batch {
        black_box(clock.raw());
    }
    Ticks(clock.raw()).since(start)
}

fn time_marks(batch: usize) -> u64 {
    let start = clock::now();
    for i in 0..batch {
        local::record(black_box(OpId(i as u64)), black_box(Hop::SENT));
    }
    let elapsed = clock::now().since(start);
    let drained = local::drain_into(&mut Vec::new());
    debug_assert_eq!(drained, 0, "calibration batch overflowed its buffer");
    elapsed
}

/// Median and MAD of `values` (sorted in place). `values` is never empty
/// when called from here; an empty slice yields NaN rather than a panic.
fn summarize(values: &mut [f64]) -> Cost {
    let median = median(values);
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
    Cost { median_ns: median, mad_ns: self::median(&mut deviations), rounds: values.len() }
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_mad_of_known_values() {
        let cost = summarize(&mut [5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(cost.median_ns, 3.0);
        assert_eq!(cost.mad_ns, 1.0);
        assert_eq!(cost.rounds, 5);
        assert_eq!(median(&mut [1.0, 2.0, 3.0, 10.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn measuring_costs_gives_positive_figures_and_leaves_no_marks_behind() {
        let costs = std::thread::spawn(|| {
            let costs = measure_costs(CostPlan { batch: 100, rounds: 5, warmup_rounds: 1 });
            (costs, local::drain())
        })
        .join()
        .expect("calibration thread");
        let (costs, left) = costs;
        assert!(costs.clock_read.median_ns > 0.0);
        assert!(costs.mark.median_ns > 0.0);
        assert!(costs.mark_to_clock_ratio.is_finite());
        assert_eq!(costs.clock_read.rounds, 5);
        assert!(left.marks.is_empty());
        assert_eq!(left.dropped, 0);
    }
}
