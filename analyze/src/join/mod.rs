//! Join: marks from every thread of a block → per-operation slices.
//!
//! For each lane, the hops it marks are found from the trace itself; an
//! operation is *complete* when it has each of those hops exactly once.
//! Incomplete operations (a mark dropped, a hop missing, a hop twice) are
//! counted and excluded, never mixed into the figures. Slices are the
//! intervals between consecutive hops of the operation's *path* in time
//! order (they add up to the operation's time on the caller's path); a
//! slice whose two marks are on different sides is a cross-thread slice. A
//! *tail* is a slice off the path: a thread's closing work that runs beside
//! the other thread (see [`LaneHops`]).
//!
//! The join reads a trace twice, one block at a time, and never holds more
//! than one block's operations: the first pass ([`HopScan`]) finds each
//! lane's hops and their time order, the second ([`Join`]) reduces each
//! block to its medians and adds every operation to the lane's pooled
//! [`Distribution`]s. Memory is one block's table plus, per lane, a few
//! numbers per block and a bounded sketch per slice.
//!
//! Cost: one hash lookup and one store per mark (FxHash on the op id), then
//! one pass per complete operation.

mod cost;
mod counts;
mod scan;
mod slice_def;
mod table;

use std::collections::BTreeMap;

use hopscope_probe::{Block, Hop, Mark, RunFact, RunFacts, Side, Trace, TraceHeader};

use cost::Timelines;
pub use counts::{BatchSizes, Batches, CoreChanges};
pub use scan::{HopScan, LaneHops};
pub use slice_def::{Sharing, SliceDef, SliceSide, declared_owner};
use table::Table;

use crate::distribution::Distribution;
use crate::stats::median_sorted;

/// One block's operations, reduced to what the analyses use of them.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockOps {
    /// Index of the block in the trace.
    pub block: usize,
    /// Pass of the block.
    pub pass: u32,
    /// Sample of the block.
    pub sample: u32,
    /// Complete operations in the block (at least one).
    pub complete: u64,
    /// Per slice (in [`LaneOps::slices`] order), the median duration of the
    /// block's complete operations, ns; `None` if one is not a finite
    /// number. Cross-thread slices may be slightly negative if the cores'
    /// clocks disagree.
    pub slice_median_ns: Vec<Option<f64>>,
    /// The median first-to-last-mark duration, ns (`None` as above).
    pub total_median_ns: Option<f64>,
    /// Per slice, the mean duration of the block's complete operations,
    /// ns: means add up (the path's slice means sum to the mean path time),
    /// as a lane's wall time per operation does.
    pub slice_mean_ns: Vec<Option<f64>>,
    /// The mean path time (first to last mark on the path), ns.
    pub total_mean_ns: Option<f64>,
    /// Per slice, the interquartile mean of the block's operations (the
    /// mean of the middle half), ns: robust to a rare preempted operation
    /// as a median is, yet not stuck on the clock's grain as a median of
    /// quantised durations is. Per-slice verdicts pair these.
    pub slice_iqm_ns: Vec<Option<f64>>,
    /// The path time of the block's first complete operation (the one
    /// whose path starts earliest), ns: the operation that runs after the
    /// other lanes' blocks, with this lane's code and data gone cold.
    pub first_total_ns: Option<f64>,
    /// Per slice, the mean *cost* to one operation, ns: as
    /// [`Self::slice_mean_ns`] for its own slices, a shared interval's
    /// length over the operations it served, and nothing for the time it
    /// waits on those others ([`Sharing::Siblings`]). Equal to the means
    /// in a block without shared intervals.
    pub slice_cost_mean_ns: Vec<Option<f64>>,
    /// The block's shared intervals and the operations they served.
    pub batches: Batches,
}

/// Every operation of one lane, joined.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneOps {
    /// Lane index in the trace header.
    pub lane: u16,
    /// Hops this lane marks: its path in time order, then any that only
    /// end a tail (empty for a clean lane).
    pub hops: Vec<Hop>,
    /// How many of [`Self::hops`] are on the path.
    pub path_len: usize,
    /// Consecutive pairs of the path, then the tails.
    pub slices: Vec<SliceDef>,
    /// Blocks of this lane with at least one complete operation.
    pub blocks: Vec<BlockOps>,
    /// Per slice, every complete operation's duration, ns.
    pub slice_ns: Vec<Distribution>,
    /// Every complete operation's first-to-last-mark duration, ns.
    pub total_ns: Distribution,
    /// The same per window of a live capture (its blocks' pass), so each
    /// window has its own quantiles; empty for any other run.
    pub window_total_ns: BTreeMap<u32, Distribution>,
    /// CPU changes within operations.
    pub core_changes: CoreChanges,
    /// Operations with every hop exactly once.
    pub complete: u64,
    /// Operations excluded for a missing or repeated hop.
    pub incomplete: u64,
    /// Per hop of [`Self::hops`], the threads whose streams marked it: bit
    /// `t` for thread index `t` of the header (threads past 63 share bit
    /// 63). Lets a check see a hop declared on one side marked on another.
    pub hop_threads: Vec<u64>,
    /// The lane's shared intervals, over every block.
    pub batches: Batches,
    /// How many operations each shared interval served.
    pub batch_sizes: BatchSizes,
}

impl LaneOps {
    /// Add what another join of the same lane (the same scan) took from
    /// other blocks: a parallel join's other thread. Blocks stay in trace
    /// order.
    pub fn merge(&mut self, other: LaneOps) {
        self.blocks.extend(other.blocks);
        self.blocks.sort_by_key(|b| b.block);
        for (mine, theirs) in self.slice_ns.iter_mut().zip(&other.slice_ns) {
            mine.merge(theirs);
        }
        self.total_ns.merge(&other.total_ns);
        for (window, theirs) in &other.window_total_ns {
            self.window_total_ns.entry(*window).or_insert_with(Distribution::for_window).merge(theirs);
        }
        self.core_changes.ops += other.core_changes.ops;
        self.core_changes.changes += other.core_changes.changes;
        self.core_changes.ops_changed += other.core_changes.ops_changed;
        self.complete += other.complete;
        self.incomplete += other.incomplete;
        self.batches.add(&other.batches);
        for &(size, count) in &other.batch_sizes.counts {
            self.batch_sizes.add_many(size, count);
        }
    }

    /// Whether any operation of the lane was served by a shared interval.
    pub fn shares_work(&self) -> bool {
        self.batches.intervals > 0
    }

    /// Whether the lane marks both closing hops, `idle` (the writer's) and
    /// `returned` (the caller's): then its path slices hold each thread's
    /// whole cycle.
    pub fn closes_cycles(&self) -> bool {
        [Hop::IDLE, Hop::RETURNED].iter().all(|h| self.hops.contains(h))
    }
}

/// Join the marks of every lane of `trace`, held in memory.
pub fn join(trace: &Trace) -> Vec<LaneOps> {
    let mut scan = HopScan::new(&trace.header);
    for block in &trace.blocks {
        scan.add(block);
    }
    let mut join = Join::new(&trace.header, &scan);
    for (index, block) in trace.blocks.iter().enumerate() {
        join.add(index, block);
    }
    join.finish()
}

/// The join's second pass, fed block by block after a [`HopScan`] of the
/// same blocks.
#[derive(Debug, Clone)]
pub struct Join {
    lanes: Vec<LaneOps>,
    hop_count: usize,
    ns_per_tick: f64,
    scratch: Scratch,
    /// Per lane, per column of its table: whether the hop is the writer's.
    writer_columns: Vec<Vec<bool>>,
    /// Whether the trace is a capture, whose blocks' passes are windows.
    by_window: bool,
}

/// One block's figures of one slice (or of the path total).
#[derive(Debug, Clone, Copy, Default)]
struct Summary {
    mean: Option<f64>,
    median: Option<f64>,
    iqm: Option<f64>,
}

impl Join {
    /// Start the second pass of a trace with `header`, scanned by `scan`.
    pub fn new(header: &TraceHeader, scan: &HopScan) -> Join {
        let lanes: Vec<LaneOps> = (0..header.lanes.len() as u16)
            .map(|lane| {
                let lane_hops = scan.lane_hops(lane);
                let path_len = lane_hops.path.len();
                let mut hops = lane_hops.path.clone();
                for (_, to) in &lane_hops.tails {
                    if !hops.contains(to) {
                        hops.push(*to);
                    }
                }
                let slices = slice_defs(header, &lane_hops, &hops);
                let hop_threads = hops.iter().map(|h| scan.marking_threads(lane, *h)).collect();
                LaneOps {
                    lane,
                    hop_threads,
                    batches: Batches::default(),
                    batch_sizes: BatchSizes::default(),
                    slice_ns: vec![Distribution::new(); slices.len()],
                    hops,
                    path_len,
                    slices,
                    blocks: Vec::new(),
                    total_ns: Distribution::new(),
                    window_total_ns: BTreeMap::new(),
                    core_changes: CoreChanges::default(),
                    complete: 0,
                    incomplete: 0,
                }
            })
            .collect();
        let writer_columns = lanes
            .iter()
            .map(|lane: &LaneOps| {
                lane.hops.iter().map(|h| header.hops.get(*h).is_some_and(|d| d.side == Side::Writer)).collect()
            })
            .collect();
        Join {
            writer_columns,
            // A capture (`crate::capture::is_capture`, read here as the join
            // sits below it).
            by_window: header.run.fact(&RunFact::Capture).is_some(),
            lanes,
            hop_count: header.hops.len(),
            ns_per_tick: header.clock.ns_per_tick,
            scratch: Scratch::default(),
        }
    }

    /// Join block `index` of the trace.
    pub fn add(&mut self, index: usize, block: &Block) {
        let Some(out) = self.lanes.get_mut(usize::from(block.lane)) else { return };
        if out.path_len < 2 {
            return;
        }
        // The table's columns follow the hops in time order.
        let table = Table::build(block, &out.hops, self.hop_count);
        let batches = count_batches(&table, &mut out.batch_sizes);
        out.batches.add(&batches);
        let writer = self.writer_columns.get(usize::from(block.lane)).map_or(&[][..], Vec::as_slice);
        let filled = self.scratch.fill(out, &table, writer);
        out.complete += filled.complete as u64;
        if filled.complete == 0 {
            return;
        }
        let mut summaries = self.scratch.summarise(out, filled.complete, self.ns_per_tick);
        if self.by_window {
            // The path totals, sorted: the last run summarised.
            out.window_total_ns.entry(block.pass).or_insert_with(Distribution::for_window).add_sorted(&self.scratch.ns);
        }
        let total = summaries.pop().unwrap_or_default();
        let slice_mean_ns: Vec<Option<f64>> = summaries.iter().map(|s| s.mean).collect();
        let slice_cost_mean_ns = if table.has_shared() {
            self.scratch.cost_means(out.slices.len(), filled.complete, self.ns_per_tick)
        } else {
            slice_mean_ns.clone()
        };
        out.blocks.push(BlockOps {
            block: index,
            pass: block.pass,
            sample: block.sample,
            complete: filled.complete as u64,
            slice_median_ns: summaries.iter().map(|s| s.median).collect(),
            total_median_ns: total.median,
            slice_mean_ns,
            total_mean_ns: total.mean,
            slice_iqm_ns: summaries.iter().map(|s| s.iqm).collect(),
            first_total_ns: filled.first.map(|total| total as f64 * self.ns_per_tick).filter(|ns| ns.is_finite()),
            slice_cost_mean_ns,
            batches,
        });
    }

    /// Every lane's joined operations.
    pub fn finish(self) -> Vec<LaneOps> {
        self.lanes
    }

    /// Add another join of the same scan, fed other blocks (a parallel
    /// join's other thread).
    pub fn merge(&mut self, other: Join) {
        for (mine, theirs) in self.lanes.iter_mut().zip(other.lanes) {
            mine.merge(theirs);
        }
    }
}

/// Count `table`'s shared intervals (rows serving operations) into
/// `sizes`; the block's figures.
fn count_batches(table: &Table, sizes: &mut BatchSizes) -> Batches {
    let mut batches = Batches::default();
    if !table.has_shared() {
        return batches;
    }
    for row in 0..table.rows {
        let served = u64::from(table.served(row));
        if served > 0 {
            batches.intervals += 1;
            batches.served = batches.served.saturating_add(served);
            batches.largest = batches.largest.max(served);
            sizes.add(served);
        }
    }
    // Links are sorted by member: each run of one member is one operation.
    let mut last = None;
    for &(member, _) in table.links() {
        if last != Some(member) {
            batches.operations += 1;
            last = Some(member);
        }
    }
    batches.operations += table.left_out();
    batches
}

/// What [`Scratch::fill`] found in a block.
struct Filled {
    /// Complete operations.
    complete: usize,
    /// The path time of the earliest complete operation, ticks.
    first: Option<i64>,
}

/// A join's buffers, reused block after block: no allocation (and no page
/// faults) per block.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// One slice-major buffer for every slice's durations plus the path
    /// total (the last run), `stride` per run. Durations stay in ticks
    /// (integers) until sorted: integers sort faster than floats, and a
    /// positive scale keeps their order.
    ticks: Vec<i64>,
    /// Rows per run of [`Self::ticks`] and [`Self::cost`].
    stride: usize,
    /// One slice's durations in ns, ascending.
    ns: Vec<f64>,
    /// Each operation's cost per slice, ticks (shared intervals divided
    /// among the operations they served), slice-major like `ticks`;
    /// filled only in a block with shared intervals.
    cost: Vec<f64>,
}

impl Scratch {
    /// Every complete operation's slice durations (and costs) into the
    /// buffers; operations that are not complete are counted in `out`.
    /// `writer[c]`: whether the hop of column `c` is the writer's.
    fn fill(&mut self, out: &mut LaneOps, table: &Table, writer: &[bool]) -> Filled {
        let slice_count = out.slices.len();
        // Sized by the rows that can be complete (one mark per column), so
        // a block of many incomplete operations (a damaged or hostile one)
        // cannot make it larger than its marks.
        let stride = table.full_rows();
        self.stride = stride;
        self.ticks.clear();
        self.ticks.resize((slice_count + 1) * stride, 0);
        self.cost.clear();
        let timelines = table.has_shared().then(|| Timelines::build(table, writer));
        if timelines.is_some() {
            self.cost.resize(slice_count * stride, 0.0);
        }
        let mut complete = 0usize;
        // (path start, path time) of the earliest complete operation.
        let mut first: Option<(u64, i64)> = None;
        for row in 0..table.rows {
            if !table.is_operation(row) {
                continue;
            }
            let Some(ticks) = table.complete_row(row).filter(|_| complete < stride) else {
                out.incomplete += 1;
                continue;
            };
            for (s, def) in out.slices.iter().enumerate() {
                let (from, to) = def.columns;
                let length = signed_ticks(ticks[from], ticks[to]);
                self.ticks[s * stride + complete] = length;
                if let Some(timelines) = &timelines {
                    self.cost[s * stride + complete] = cost::cost_of(table, timelines, row, def, length);
                }
            }
            let total = signed_ticks(ticks[0], ticks[out.path_len - 1]);
            self.ticks[slice_count * stride + complete] = total;
            if first.is_none_or(|(start, _)| ticks[0] < start) {
                first = Some((ticks[0], total));
            }
            complete += 1;
            core_changes(table.row_cpus(row), &mut out.core_changes);
        }
        Filled { complete, first: first.map(|(_, total)| total) }
    }

    /// Each slice's (then the path total's) mean, median and interquartile
    /// mean over the `complete` operations filled, each pooled into `out`'s
    /// distributions.
    fn summarise(&mut self, out: &mut LaneOps, complete: usize, ns_per_tick: f64) -> Vec<Summary> {
        let runs = out.slices.len() + 1;
        let mut summaries = Vec::with_capacity(runs);
        for run in 0..runs {
            let ticks = &mut self.ticks[run * self.stride..run * self.stride + complete];
            sorted_ns(ticks, ns_per_tick, &mut self.ns);
            let pooled = out.slice_ns.get_mut(run).unwrap_or(&mut out.total_ns);
            summaries.push(Summary {
                mean: finite_mean(&self.ns),
                median: sorted_median(&self.ns, pooled),
                iqm: interquartile_mean(&self.ns),
            });
        }
        summaries
    }

    /// Each slice's mean cost per operation, ns, over the `complete`
    /// operations filled (a block with shared intervals).
    fn cost_means(&self, slices: usize, complete: usize, ns_per_tick: f64) -> Vec<Option<f64>> {
        (0..slices)
            .map(|s| finite_mean(&self.cost[s * self.stride..s * self.stride + complete]).map(|t| t * ns_per_tick))
            .map(|mean| mean.filter(|ns| ns.is_finite()))
            .collect()
    }
}

/// Pool ascending `values` into `pooled`, and return their median when
/// every one is finite.
fn sorted_median(values: &[f64], pooled: &mut Distribution) -> Option<f64> {
    let median = median_sorted(values);
    pooled.add_sorted(values);
    (!values.is_empty() && values.iter().all(|v| v.is_finite())).then_some(median)
}

/// The mean of the middle half of `sorted` (all of it below four values),
/// when finite.
fn interquartile_mean(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    let cut = if n >= 4 { n / 4 } else { 0 };
    finite_mean(&sorted[cut..n - cut])
}

/// The mean of `values` when every one is finite.
fn finite_mean(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    (!values.is_empty() && sum.is_finite()).then(|| sum / values.len() as f64)
}

/// The slices of a lane: consecutive pairs of its path, then its tails;
/// `hops` gives the table's columns.
fn slice_defs(header: &TraceHeader, lane: &LaneHops, hops: &[Hop]) -> Vec<SliceDef> {
    let column = |h: Hop| hops.iter().position(|x| *x == h).unwrap_or(0);
    let define = |from: Hop, to: Hop, on_path: bool| {
        let side = |h: Hop| header.hops.get(h).map_or(Side::Caller, |d| d.side);
        let name = |h: Hop| header.hops.get(h).map_or_else(|| format!("hop{}", h.0), |d| d.name.clone());
        let side = match (side(from), side(to)) {
            (Side::Caller, Side::Caller) => SliceSide::Caller,
            (Side::Writer, Side::Writer) => SliceSide::Writer,
            _ => SliceSide::Cross,
        };
        SliceDef {
            name: hopscope_probe::SliceName::new(name(from), name(to)).to_string(),
            from,
            to,
            side,
            on_path,
            owner: declared_owner(header, side, to),
            sharing: match (lane.shared.contains(&from), lane.shared.contains(&to)) {
                (false, false) => Sharing::Own,
                (true, true) => Sharing::Shared,
                _ if side == SliceSide::Cross => Sharing::Own,
                _ => Sharing::Siblings,
            },
            columns: (column(from), column(to)),
        }
    };
    let path = lane.path.windows(2).map(|pair| define(pair[0], pair[1], true));
    path.chain(lane.tails.iter().map(|(from, to)| define(*from, *to, false))).collect()
}

/// `to − from` in ticks, saturating (a difference past ±2^63 ticks is
/// centuries, and no longer a slice).
fn signed_ticks(from: u64, to: u64) -> i64 {
    if to >= from {
        i64::try_from(to - from).unwrap_or(i64::MAX)
    } else {
        i64::try_from(from - to).map_or(i64::MIN, |d| -d)
    }
}

/// Sort `ticks` and scale them to ns, ascending, into `ns`.
fn sorted_ns(ticks: &mut [i64], ns_per_tick: f64, ns: &mut Vec<f64>) {
    // Measured against `radsort` (LSD radix, skipping shared bytes): no
    // faster on the join bench, so the standard library's pdqsort stays.
    ticks.sort_unstable();
    ns.clear();
    ns.extend(ticks.iter().map(|&t| t as f64 * ns_per_tick));
    // A scale that is not a positive number (never, from a valid header)
    // would not keep the order: sort what it made.
    if ns_per_tick.is_nan() || ns_per_tick <= 0.0 {
        ns.sort_unstable_by(f64::total_cmp);
    }
}

/// Count how often one operation's marks changed CPU (`cpus` in column
/// order, unknown CPUs skipped).
fn core_changes(cpus: &[u16], into: &mut CoreChanges) {
    let mut known = cpus.iter().copied().filter(|c| *c != Mark::UNKNOWN_CPU);
    let Some(mut previous) = known.next() else { return };
    let mut changes = 0u64;
    for cpu in known {
        changes += u64::from(cpu != previous);
        previous = cpu;
    }
    into.ops += 1;
    into.changes += changes;
    into.ops_changed += u64::from(changes > 0);
}

#[cfg(test)]
mod tests {
    use hopscope_probe::{OpId, Stream, Ticks};

    use super::*;

    #[test]
    fn a_sampled_capture_weighs_each_kept_batch_by_its_chance() {
        // Batches of 1 and 4 alike; at 1 in 4, a batch of 4 is kept with
        // chance 1 − 0.75⁴ ≈ 0.68 and one of 1 with 0.25: kept ones read
        // 1 : 2.7, and weighted back they read 1 : 1 again.
        let mut sizes = BatchSizes::default();
        sizes.add_many(1, 250);
        sizes.add_many(4, 684);
        let all = sizes.mean_over_all(4).expect("a mean");
        assert!((all - 2.5).abs() < 0.01, "{all}");
        assert!((sizes.mean_over_all(1).expect("a mean") - (250.0 + 4.0 * 684.0) / 934.0).abs() < 1e-9);
    }

    #[test]
    fn incomplete_operations_cost_the_join_no_buffer_space() {
        let header = TraceHeader::for_this_host(&["writer-probed"], &["caller", "writer"]);
        let (mut caller, mut writer) = (Vec::new(), Vec::new());
        let mut t = 0;
        // One complete operation...
        for (hop, _, side) in Hop::STANDARD {
            t += 100;
            let mark = Mark { op: OpId(1), hop, cpu: 0, ticks: Ticks(t) };
            match side {
                Side::Caller => caller.push(mark),
                Side::Writer => writer.push(mark),
            }
        }
        // ...and 100,000 that only entered (a damaged or hostile block).
        let incomplete = 100_000u64;
        for op in 2..2 + incomplete {
            t += 100;
            caller.push(Mark { op: OpId(op), hop: Hop::ENTER, cpu: 0, ticks: Ticks(t) });
        }
        let block = Block {
            lane: 0,
            pass: 0,
            sample: 0,
            op_count: incomplete + 1,
            start: Ticks(0),
            end: Ticks(t),
            streams: vec![
                Stream { thread: 0, dropped: 0, marks: caller },
                Stream { thread: 1, dropped: 0, marks: writer },
            ],
            readings: Vec::new(),
        };
        let mut scan = HopScan::new(&header);
        scan.add(&block);
        let mut join = Join::new(&header, &scan);
        join.add(0, &block);
        // The duration buffer holds the complete operation's slices, not a
        // row for every operation the block names.
        assert!(join.scratch.ticks.capacity() < 1_000, "{} ticks held", join.scratch.ticks.capacity());
        let lane = &join.finish()[0];
        assert_eq!((lane.complete, lane.incomplete), (1, incomplete));
        assert_eq!(lane.blocks.len(), 1);
        assert!(lane.blocks[0].slice_median_ns.iter().all(|m| *m == Some(100.0 * header.clock.ns_per_tick)));
    }
}
