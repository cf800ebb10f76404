//! The join's first pass: which hops each lane marks, and in what order in
//! time, from one block at a time.
//!
//! A lane's hops are every hop any of its blocks marks. Their time order
//! comes from the first [`SAMPLE_OPS`] operations that carry every one of
//! them. Only a block that marks the lane's whole set can hold such an
//! operation, so the scan keeps order sums per set of hops a block marks
//! and, at the end, uses those of the lane's whole set: the same
//! operations, in the same order, as a join holding every block would use.

use hopscope_probe::{Block, Hop, TraceHeader};
use rustc_hash::FxHashMap;

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
}

/// The first pass of a join, fed block by block.
#[derive(Debug, Clone)]
pub struct HopScan {
    hop_count: usize,
    lanes: Vec<LaneScan>,
    /// Per hop id, whether the current block marks it (reused).
    in_block: Vec<bool>,
}

impl HopScan {
    /// A scan of a trace with `header`.
    pub fn new(header: &TraceHeader) -> HopScan {
        let hop_count = header.hops.len();
        let lane = LaneScan { present: vec![false; hop_count], orders: FxHashMap::default() };
        HopScan { hop_count, lanes: vec![lane; header.lanes.len()], in_block: vec![false; hop_count] }
    }

    /// Scan one block.
    pub fn add(&mut self, block: &Block) {
        let Some(lane) = self.lanes.get_mut(usize::from(block.lane)) else { return };
        self.in_block.fill(false);
        for mark in block.streams.iter().flat_map(|s| &s.marks) {
            if let Some(seen) = self.in_block.get_mut(usize::from(mark.hop.0)) {
                *seen = true;
            }
        }
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

    /// Lane `lane`'s hops in time order (empty when it marks fewer than
    /// two).
    pub fn hops_in_time_order(&self, lane: u16) -> Vec<Hop> {
        let Some(scan) = self.lanes.get(usize::from(lane)) else { return Vec::new() };
        let hops: Vec<Hop> = (0..self.hop_count).filter(|&h| scan.present[h]).map(|h| Hop(h as u16)).collect();
        if hops.len() < 2 {
            return Vec::new();
        }
        let zeros = vec![0.0; hops.len()];
        let sums = scan.orders.get(&hops).map_or(&zeros, |o| &o.sums);
        time_order(sums, &hops).into_iter().map(|c| hops[c]).collect()
    }
}

/// Column order: the standard hops keep their documented order (so every
/// receipt lists the same slices, even when a mark like `replied`, taken
/// after a send returns, lands after the caller has already woken); extra
/// hops a workload declares are placed by their mean offset from each
/// complete op's earliest mark (`sums`, per column of `hops`).
fn time_order(sums: &[f64], hops: &[Hop]) -> Vec<usize> {
    let columns = hops.len();
    let standard = |c: usize| usize::from(hops[c].0) < Hop::STANDARD.len();
    let mut order: Vec<usize> = (0..columns).filter(|&c| standard(c)).collect();
    let mut extras: Vec<usize> = (0..columns).filter(|&c| !standard(c)).collect();
    extras.sort_by(|&a, &b| sums[a].total_cmp(&sums[b]).then(a.cmp(&b)));
    for extra in extras {
        // Before the first standard hop that comes later on average.
        let at = order.iter().position(|&c| standard(c) && sums[c] > sums[extra]).unwrap_or(order.len());
        order.insert(at, extra);
    }
    order
}
