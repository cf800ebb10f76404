//! The join's first pass: which hops each lane marks, and in what order in
//! time, from one block at a time.
//!
//! A lane's hops are every hop any of its blocks marks. Their time order
//! comes from the first [`SAMPLE_OPS`] operations that carry every one of
//! them. Only a block that marks the lane's whole set can hold such an
//! operation, so the scan keeps order sums per set of hops a block marks
//! and, at the end, uses those of the lane's whole set: the same
//! operations, in the same order, as a join holding every block would use.

use hopscope_probe::{Block, Hop, Side, TraceHeader};
use rustc_hash::{FxHashMap, FxHashSet};

use super::table::Table;

/// Complete operations whose mark offsets place the hops in time.
const SAMPLE_OPS: usize = 10_000;

/// Offsets of each hop from its operation's first mark, summed.
#[derive(Debug, Clone, Default)]
struct OrderSums {
    sums: Vec<f64>,
    seen: usize,
}

/// One lane's scan so far.
#[derive(Debug, Clone, Default)]
struct LaneScan {
    /// Whether any block of the lane marks each hop (by hop id).
    present: Vec<bool>,
    /// Order sums by the set of hops a block marks (ascending hop ids).
    orders: FxHashMap<Vec<Hop>, OrderSums>,
    /// Per hop id, the threads that marked it (bit per thread index).
    threads: Vec<u64>,
    /// Per hop id, (marks under a shared interval's id, marks under an
    /// operation's) in blocks that hold links.
    sharing: Vec<(u64, u64)>,
}

/// `hop`'s place in [`Hop::DOCUMENTED_ORDER`], if it is a standard or
/// closing hop declared under its own name.
fn documented_position(hop: Hop, name: &str) -> Option<usize> {
    let named = Hop::STANDARD.iter().chain(&Hop::CLOSING).any(|(h, n, _)| *h == hop && *n == name);
    named.then(|| Hop::DOCUMENTED_ORDER.iter().position(|h| *h == hop)).flatten()
}

/// The first pass of a join, fed block by block.
#[derive(Debug, Clone)]
pub struct HopScan {
    hop_count: usize,
    /// Per hop id, its place in [`Hop::DOCUMENTED_ORDER`] when the trace
    /// declares it under its documented name (a trace from before the
    /// closing hops may use their ids for hops of its own).
    documented: Vec<Option<usize>>,
    /// Per hop id, whether the writer marks it.
    writer_side: Vec<bool>,
    lanes: Vec<LaneScan>,
    /// Per hop id, whether the current block marks it (reused).
    in_block: Vec<bool>,
}

impl HopScan {
    /// A scan of a trace with `header`.
    pub fn new(header: &TraceHeader) -> HopScan {
        let hop_count = header.hops.len();
        let lane = LaneScan {
            present: vec![false; hop_count],
            orders: FxHashMap::default(),
            threads: vec![0; hop_count],
            sharing: vec![(0, 0); hop_count],
        };
        let documented = header.hops.iter().map(|(hop, def)| documented_position(hop, &def.name)).collect();
        let writer_side = header.hops.iter().map(|(_, def)| def.side == Side::Writer).collect();
        HopScan {
            hop_count,
            documented,
            writer_side,
            lanes: vec![lane; header.lanes.len()],
            in_block: vec![false; hop_count],
        }
    }

    /// Scan one block.
    pub fn add(&mut self, block: &Block) {
        let Some(lane) = self.lanes.get_mut(usize::from(block.lane)) else { return };
        self.in_block.fill(false);
        for stream in &block.streams {
            let bit = 1u64 << stream.thread.min(63);
            for mark in &stream.marks {
                let hop = usize::from(mark.hop.0);
                if let (Some(seen), Some(threads)) = (self.in_block.get_mut(hop), lane.threads.get_mut(hop)) {
                    *seen = true;
                    *threads |= bit;
                }
            }
        }
        count_sharing(block, &mut lane.sharing);
        let hops: Vec<Hop> = (0..self.hop_count).filter(|&h| self.in_block[h]).map(|h| Hop(h as u16)).collect();
        for hop in &hops {
            lane.present[usize::from(hop.0)] = true;
        }
        if hops.len() < 2 {
            return;
        }
        if lane.orders.get(&hops).is_some_and(|o| o.seen >= SAMPLE_OPS) {
            return;
        }
        let table = Table::build(block, &hops, self.hop_count);
        let columns = hops.len();
        let order = lane.orders.entry(hops).or_insert_with(|| OrderSums { sums: vec![0.0; columns], seen: 0 });
        for row in 0..table.rows {
            if let Some(ticks) = table.complete_row(row) {
                let first = ticks.iter().copied().min().unwrap_or(0);
                for (c, t) in ticks.iter().enumerate() {
                    order.sums[c] += (t - first) as f64;
                }
                order.seen += 1;
                if order.seen >= SAMPLE_OPS {
                    break;
                }
            }
        }
    }

    /// Lane `lane`'s hops: the path in time order, and the tails off it
    /// (empty when it marks fewer than two).
    pub fn lane_hops(&self, lane: u16) -> LaneHops {
        let Some(scan) = self.lanes.get(usize::from(lane)) else { return LaneHops::default() };
        let hops: Vec<Hop> = (0..self.hop_count).filter(|&h| scan.present[h]).map(|h| Hop(h as u16)).collect();
        if hops.len() < 2 {
            return LaneHops::default();
        }
        let zeros = vec![0.0; hops.len()];
        let sums = scan.orders.get(&hops).map_or(&zeros, |o| &o.sums);
        let documented: Vec<Option<usize>> = hops.iter().map(|h| self.documented[usize::from(h.0)]).collect();
        let order = time_order(sums, &documented);
        let mut lane_hops =
            split_tail(order.into_iter().map(|c| (hops[c], sums[c], documented[c])).collect(), &self.writer_side);
        lane_hops.shared = hops
            .iter()
            .copied()
            .filter(|h| scan.sharing.get(usize::from(h.0)).is_some_and(|&(shared, own)| shared > own))
            .collect();
        lane_hops
    }

    /// The threads that marked `hop` in lane `lane`'s blocks: bit `t` for
    /// thread index `t` (threads past 63 share bit 63).
    pub fn marking_threads(&self, lane: u16, hop: Hop) -> u64 {
        self.lanes.get(usize::from(lane)).and_then(|l| l.threads.get(usize::from(hop.0))).copied().unwrap_or(0)
    }

    /// Lane `lane`'s hops on its path, in time order.
    pub fn hops_in_time_order(&self, lane: u16) -> Vec<Hop> {
        self.lane_hops(lane).path
    }
}

/// A lane's hops as the join uses them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneHops {
    /// The hops on the caller's path, in time order: consecutive pairs are
    /// slices that add up to the operation's time.
    pub path: Vec<Hop>,
    /// Slices off the path, `(from, to)`: a thread's closing work that runs
    /// beside the other thread's (the writer's `replied→idle` when the
    /// caller is already running by the time the writer goes idle).
    pub tails: Vec<(Hop, Hop)>,
    /// Hops marked once per shared interval (a batch's `commit`), under the
    /// interval's id, rather than per operation: mostly so, in the blocks
    /// that hold links.
    pub shared: Vec<Hop>,
}

/// Count, per hop, the marks `block` made under a shared interval's id
/// (one a link names) and under an operation's, when it holds links.
fn count_sharing(block: &Block, sharing: &mut [(u64, u64)]) {
    let shared: FxHashSet<u64> =
        block.streams.iter().flat_map(|s| &s.marks).filter_map(|m| m.link()).map(|id| id.0).collect();
    if shared.is_empty() {
        return;
    }
    for mark in block.streams.iter().flat_map(|s| &s.marks).filter(|m| !m.is_link()) {
        if let Some(count) = sharing.get_mut(usize::from(mark.hop.0)) {
            if shared.contains(&mark.op.0) {
                count.0 += 1;
            } else {
                count.1 += 1;
            }
        }
    }
}

/// Take the writer's `idle` off the path when it comes, on average, after
/// the caller's `received`: the writer then finishes its cycle beside the
/// caller, and `replied→idle` is a tail, not a step of the path. On a
/// shared core it comes before, and `idle→received` is the switch to the
/// caller.
fn split_tail(ordered: Vec<(Hop, f64, Option<usize>)>, writer_side: &[bool]) -> LaneHops {
    let idle_position = Hop::DOCUMENTED_ORDER.iter().position(|h| *h == Hop::IDLE);
    let received_position = Hop::DOCUMENTED_ORDER.iter().position(|h| *h == Hop::RECEIVED);
    let find = |position: Option<usize>| ordered.iter().position(|(_, _, d)| d.is_some() && *d == position);
    let (Some(idle), Some(received)) = (find(idle_position), find(received_position)) else {
        return LaneHops { path: ordered.iter().map(|(h, _, _)| *h).collect(), ..LaneHops::default() };
    };
    if ordered[idle].1 <= ordered[received].1 {
        return LaneHops { path: ordered.iter().map(|(h, _, _)| *h).collect(), ..LaneHops::default() };
    }
    let idle_hop = ordered[idle].0;
    let path: Vec<Hop> = ordered.iter().map(|(h, _, _)| *h).filter(|h| *h != idle_hop).collect();
    // The tail starts at the writer's last mark before it on the path.
    let from =
        ordered[..idle].iter().rev().find(|(h, _, _)| writer_side.get(usize::from(h.0)).copied().unwrap_or(false));
    let tails = from.map(|(h, _, _)| vec![(*h, idle_hop)]).unwrap_or_default();
    LaneHops { path, tails, shared: Vec::new() }
}

/// Column order: the documented hops keep their documented order (so every
/// receipt lists the same slices, even when two threads' marks land out of
/// their documented order, as cross-core clocks or a user's own marks can
/// make them); extra
/// hops a workload declares are placed by their mean offset from each
/// complete op's earliest mark (`sums`, per column). `documented` gives,
/// per column, the hop's place in [`Hop::DOCUMENTED_ORDER`].
fn time_order(sums: &[f64], documented: &[Option<usize>]) -> Vec<usize> {
    let columns = sums.len();
    let mut order: Vec<usize> = (0..columns).filter(|&c| documented[c].is_some()).collect();
    order.sort_by_key(|&c| documented[c]);
    let mut extras: Vec<usize> = (0..columns).filter(|&c| documented[c].is_none()).collect();
    extras.sort_by(|&a, &b| sums[a].total_cmp(&sums[b]).then(a.cmp(&b)));
    for extra in extras {
        // Before the first documented hop that comes later on average.
        let at = order.iter().position(|&c| documented[c].is_some() && sums[c] > sums[extra]).unwrap_or(order.len());
        order.insert(at, extra);
    }
    order
}
