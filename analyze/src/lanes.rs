//! Lane figures: µs per operation per lane from block wall times, CPU per
//! operation, and differences between lanes paired by round.
//!
//! A block's figure is its wall time divided by its operation count (this
//! works for clean lanes, which have no marks). A lane's figure is the
//! median over its blocks. Two lanes are compared round by round: the runner
//! runs every lane once per (pass, sample), so the blocks of one round ran
//! back to back under the same conditions; the difference's CI is the sign
//! test's interval for the median of those paired rounds: distribution-free,
//! deterministic and one sort, where a bootstrap over thousands of rounds
//! cost a second per comparison.

use std::collections::BTreeMap;

use hopscope_probe::{
    Block, EdgeCosts, ReadingKey, SliceKind, SpanEvents, SpanMachinery, SpanSequence, ThreadFigure, Trace, TraceHeader,
};
use serde::{Deserialize, Serialize};

use crate::stats::{Samples, Summary, median_ci95_order_statistics, median_of_unsorted};

/// Nanoseconds per microsecond.
const NS_PER_US: f64 = 1_000.0;

/// One lane's measured blocks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaneBlocks {
    /// Lane name.
    pub name: String,
    /// µs per op of each block, keyed by (pass, sample).
    pub us_per_op: BTreeMap<(u32, u32), f64>,
    /// Wall ns per op of each block in trace order, as the readings'
    /// vectors are (a reading's share of its block's time).
    pub wall_ns_per_op: Vec<f64>,
    /// Operations across all blocks.
    pub ops: u64,
    /// Per-op value of each reading (CPU ns, counter counts), per block, by
    /// reading key.
    pub cpu_ns_per_op: BTreeMap<ReadingKey, Vec<f64>>,
    /// The span machinery measured after each block (ns, not per op), by
    /// slice kind: runs with span lanes record it for their probed builds.
    pub span_machinery_ns: BTreeMap<SliceKind, Vec<f64>>,
    /// The machinery taken apart ([`EdgeCosts`]), measured after each
    /// block, ns, by reading name.
    pub span_edges_ns: BTreeMap<String, Vec<f64>>,
    /// The span events between each pair of consecutive marks on one
    /// thread, over every block of the lane.
    pub span_sequences: SpanSequences,
    /// WAL checkpoints the process finished in each block, keyed by
    /// (pass, sample): how many and their summed length, ns. Empty when
    /// the run recorded none (none seen is not zero).
    pub checkpoints: BTreeMap<(u32, u32), (u64, f64)>,
}

/// Per pair of consecutive marks on one thread (`from` hop, `to` hop),
/// the span events between them and whether they varied (between passes
/// or blocks).
pub type SpanSequences = BTreeMap<(u16, u16), (SpanEvents, bool)>;

/// Collect every lane's block figures.
pub fn lane_blocks(trace: &Trace) -> Vec<LaneBlocks> {
    let mut lanes = empty_lanes(&trace.header);
    for block in &trace.blocks {
        add_block(&mut lanes, &trace.header, block);
    }
    lanes
}

/// One empty [`LaneBlocks`] per lane `header` declares, to fill with
/// [`add_block`] one block at a time.
pub fn empty_lanes(header: &TraceHeader) -> Vec<LaneBlocks> {
    header
        .lanes
        .iter()
        .map(|name| LaneBlocks {
            name: name.clone(),
            us_per_op: BTreeMap::new(),
            wall_ns_per_op: Vec::new(),
            ops: 0,
            cpu_ns_per_op: BTreeMap::new(),
            span_machinery_ns: BTreeMap::new(),
            span_edges_ns: BTreeMap::new(),
            span_sequences: BTreeMap::new(),
            checkpoints: BTreeMap::new(),
        })
        .collect()
}

/// Add `block`'s figures to its lane.
pub fn add_block(lanes: &mut [LaneBlocks], header: &TraceHeader, block: &Block) {
    if block.op_count == 0 {
        return;
    }
    let Some(lane) = lanes.get_mut(usize::from(block.lane)) else { return };
    let ns = block.end.since(block.start) as f64 * header.clock.ns_per_tick;
    lane.us_per_op.insert((block.pass, block.sample), ns / block.op_count as f64 / NS_PER_US);
    lane.wall_ns_per_op.push(ns / block.op_count as f64);
    lane.ops = lane.ops.saturating_add(block.op_count);
    for reading in &block.readings {
        let Some(name) = header.readings.get(usize::from(reading.key)) else { continue };
        match ReadingKey::named(name) {
            ReadingKey::SpanSequence => {
                let seen = SpanSequence::from_reading(reading.value);
                let entry = lane.span_sequences.entry((seen.from.0, seen.to.0)).or_insert((seen.events, seen.varied));
                entry.1 |= seen.varied || entry.0 != seen.events;
            }
            ReadingKey::SpanEdge(_) => {
                lane.span_edges_ns.entry(name.clone()).or_default().push(reading.value as f64 / 1_000.0);
            }
            ReadingKey::SpanKind(kind) => {
                lane.span_machinery_ns.entry(kind).or_default().push(reading.value as f64 / 1_000.0);
            }
            ReadingKey::Checkpoints => {
                lane.checkpoints.entry((block.pass, block.sample)).or_default().0 = reading.value
            }
            ReadingKey::CheckpointNs => {
                lane.checkpoints.entry((block.pass, block.sample)).or_default().1 = reading.value as f64;
            }
            // A capture's window readings: its windows sum them.
            ReadingKey::Live(_) => {}
            key => lane.cpu_ns_per_op.entry(key).or_default().push(reading.value as f64 / block.op_count as f64),
        }
    }
}

/// The span machinery stated beside `lane`'s slices: the run's measurement
/// before it (`header`), each kind replaced by the median of the
/// measurements taken after the lane's blocks when the run took them, so
/// the figure follows the host through the run as the blocks did.
pub fn span_machinery(header: &TraceHeader, lane: &LaneBlocks) -> Option<SpanMachinery> {
    let mut machinery = header.span_machinery.clone()?;
    for (kind, values) in &lane.span_machinery_ns {
        if let Ok(samples) = Samples::new(values.clone()) {
            machinery = machinery.with_share(*kind, samples.median());
        }
    }
    let medians: Option<Vec<f64>> = EdgeCosts::READINGS
        .iter()
        .map(|key| lane.span_edges_ns.get(*key).and_then(|v| Samples::new(v.clone()).ok()).map(|s| s.median()))
        .collect();
    if let Some(values) = medians.and_then(|v| <[f64; 7]>::try_from(v).ok()) {
        machinery.edges = Some(EdgeCosts::from_values(values));
    }
    Some(machinery)
}

/// A lane's headline figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneFigures {
    /// µs per operation over blocks (median, CI, spread).
    pub us_per_op: Summary,
    /// Measured blocks.
    pub blocks: usize,
    /// Measured operations.
    pub ops: u64,
    /// Coefficient of variation of block figures, per pass.
    pub cv_by_pass: Vec<f64>,
    /// Median CPU µs per operation by reading (`caller`, `writer`, `process`).
    pub cpu_us_per_op: BTreeMap<String, f64>,
    /// Median perf-event counts per operation: counter name → thread role
    /// (`caller`, `writer`) → count.
    pub counters_per_op: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Figures of `lane`, or `None` if it has no measured operations.
pub fn figures(lane: &LaneBlocks, seed: u64) -> Option<LaneFigures> {
    let values: Vec<f64> = lane.us_per_op.values().copied().collect();
    let samples = Samples::new(values).ok()?;
    let mut passes: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (&(pass, _), &v) in &lane.us_per_op {
        passes.entry(pass).or_default().push(v);
    }
    let cv_by_pass = passes.into_values().filter_map(|v| Samples::new(v).ok()).map(|s| s.cv()).collect();
    let median = |values: &Vec<f64>| Samples::new(values.clone()).ok().map(|s| s.median());
    let mut cpu_us_per_op = BTreeMap::new();
    let mut counters_per_op: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for (key, values) in &lane.cpu_ns_per_op {
        let Some(m) = median(values) else { continue };
        match key {
            ReadingKey::Thread(role, ThreadFigure::CpuNs) => {
                cpu_us_per_op.insert(role.to_string(), m / NS_PER_US);
            }
            ReadingKey::Thread(role, figure) => {
                counters_per_op.entry(figure.name().to_owned()).or_default().insert(role.to_string(), m);
            }
            ReadingKey::Counter(role, counter) => {
                counters_per_op.entry(counter.name().to_owned()).or_default().insert(role.to_string(), m);
            }
            // A newer build's reading: kept by its name, as `role.what`.
            ReadingKey::Other(name) => {
                if let Some((role, what)) = name.split_once('.') {
                    counters_per_op.entry(what.to_owned()).or_default().insert(role.to_owned(), m);
                }
            }
            ReadingKey::SpanKind(_)
            | ReadingKey::SpanEdge(_)
            | ReadingKey::SpanSequence
            | ReadingKey::Checkpoints
            | ReadingKey::CheckpointNs
            | ReadingKey::Live(_) => {}
        }
    }
    Some(LaneFigures {
        us_per_op: samples.summary(seed),
        blocks: samples.len(),
        ops: lane.ops,
        cv_by_pass,
        cpu_us_per_op,
        counters_per_op,
    })
}

/// A difference between two lanes, paired by round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Median of the per-round differences, µs per op.
    pub median: f64,
    /// 95% CI of that median (the sign test's order statistics).
    pub ci95: [f64; 2],
    /// Rounds paired.
    pub rounds: usize,
}

/// `a − b`, paired by (pass, sample); `None` if no round has both lanes.
pub fn difference(a: &LaneBlocks, b: &LaneBlocks) -> Option<Difference> {
    combination(a, &[b])
}

/// `a − b₁ − b₂ − …`, paired by (pass, sample): each round's figure from
/// the lanes' blocks of that round, so the machine's drift during the run
/// cancels as it does in a difference; `None` if no round has every lane.
pub fn combination(a: &LaneBlocks, minus: &[&LaneBlocks]) -> Option<Difference> {
    let minus: Vec<&BTreeMap<(u32, u32), f64>> = minus.iter().map(|b| &b.us_per_op).collect();
    Difference::of(per_round(&a.us_per_op, &minus))
}

impl Difference {
    /// The median of per-round figures and its sign-test 95% CI; `None`
    /// when there are none.
    pub fn of(mut figures: Vec<f64>) -> Option<Difference> {
        if figures.is_empty() {
            return None;
        }
        let (lo, hi) = median_ci95_order_statistics(&mut figures);
        Some(Difference { median: median_of_unsorted(&mut figures), ci95: [lo, hi], rounds: figures.len() })
    }
}

/// Per round `(pass, sample)`, `x − y₁ − y₂ − …` over the rounds every
/// lane ran, in round order.
pub(crate) fn per_round(x: &BTreeMap<(u32, u32), f64>, minus: &[&BTreeMap<(u32, u32), f64>]) -> Vec<f64> {
    x.iter().filter_map(|(round, a)| minus.iter().try_fold(*a, |acc, y| y.get(round).map(|b| acc - b))).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A lane with these block figures and nothing else.
    pub(crate) fn lane(name: &str, figures: &[((u32, u32), f64)]) -> LaneBlocks {
        LaneBlocks { name: name.to_owned(), us_per_op: figures.iter().copied().collect(), ..LaneBlocks::default() }
    }

    #[test]
    fn differences_pair_rounds_and_ignore_unpaired_ones() {
        let a = lane("a", &[((0, 0), 10.0), ((0, 1), 12.0), ((1, 0), 11.0), ((1, 1), 99.0)]);
        let b = lane("b", &[((0, 0), 7.0), ((0, 1), 9.0), ((1, 0), 8.0)]);
        let d = difference(&a, &b).expect("paired");
        assert_eq!(d.rounds, 3);
        assert_eq!(d.median, 3.0);
        assert_eq!(d.ci95, [3.0, 3.0]);
        assert!(difference(&a, &lane("empty", &[])).is_none());
    }

    #[test]
    fn combinations_take_every_lane_off_in_rounds_all_of_them_ran() {
        let a = lane("a", &[((0, 0), 10.0), ((0, 1), 12.0), ((1, 0), 11.0)]);
        let b = lane("b", &[((0, 0), 7.0), ((0, 1), 9.0), ((1, 0), 8.0)]);
        let c = lane("c", &[((0, 0), 1.0), ((1, 0), 2.0)]);
        let d = combination(&a, &[&b, &c]).expect("paired");
        assert_eq!(d.rounds, 2, "round (0, 1) lacks c");
        assert_eq!(d.median, 1.5);
        assert_eq!(d.ci95, [1.0, 2.0]);
        // Alone, a lane's own rounds with their CI.
        assert_eq!(combination(&c, &[]).map(|d| d.median), Some(1.5));
    }
}
