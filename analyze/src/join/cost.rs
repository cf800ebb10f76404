//! The cost view of a block whose operations share intervals.
//!
//! An operation served by a shared interval (a batch's BEGIN, its COMMIT)
//! waits for all of it: that is its latency. What the interval *costs* it
//! is the interval's length over the operations it served. A slice with one
//! mark of the operation's own and one of the interval's holds the writer
//! serving the others: of it, the operation's cost is only the writer's
//! last step before its own mark (binding its statement, handing its reply
//! over), or, before the interval's mark, its share of the writer's last
//! step there. Every step of the writer's batch is then counted once,
//! split among the operations it served: an operation's costs add up to
//! the writer's time per operation, where its latencies add up to its
//! wait.

use rustc_hash::FxHashMap;

use super::slice_def::{SliceDef, SliceSide};
use super::table::Table;

/// Each shared interval's marks on each thread side, with those of the
/// operations it serves: the batch's steps in time order.
pub(super) struct Timelines {
    /// Shared row → (its batch's caller-side ticks, writer-side ticks),
    /// each ascending.
    by_interval: FxHashMap<usize, [Vec<u64>; 2]>,
}

impl Timelines {
    /// The timelines of `table`'s shared intervals; `writer[c]` says
    /// whether column `c`'s hop is the writer's.
    pub(super) fn build(table: &Table, writer: &[bool]) -> Timelines {
        let mut by_interval: FxHashMap<usize, [Vec<u64>; 2]> = FxHashMap::default();
        let mut add = |interval: usize, row: usize| {
            let lines = by_interval.entry(interval).or_default();
            for column in 0..table.columns() {
                if let Some(tick) = table.own_tick(row, column) {
                    lines[usize::from(writer.get(column).copied().unwrap_or(false))].push(tick);
                }
            }
        };
        let mut intervals: Vec<usize> = table.links().iter().map(|&(_, interval)| interval).collect();
        intervals.sort_unstable();
        intervals.dedup();
        for interval in intervals {
            add(interval, interval);
        }
        for &(member, interval) in table.links() {
            add(interval, member);
        }
        for lines in by_interval.values_mut() {
            lines[0].sort_unstable();
            lines[1].sort_unstable();
        }
        Timelines { by_interval }
    }

    /// The step of `interval`'s batch that ends at `tick` on one side: from
    /// the batch's latest mark before it, ticks.
    fn step_to(&self, interval: usize, writer: bool, tick: u64) -> Option<u64> {
        let line = &self.by_interval.get(&interval)?[usize::from(writer)];
        let before = line.partition_point(|&t| t < tick);
        before.checked_sub(1).map(|i| tick - line[i])
    }
}

/// What the slice `def` of operation `row` costs it, ticks, given its
/// `length` in ticks (see the module's account).
pub(super) fn cost_of(table: &Table, timelines: &Timelines, row: usize, def: &SliceDef, length: i64) -> f64 {
    let (from, to) = (table.source(row, def.columns.0), table.source(row, def.columns.1));
    let length = length as f64;
    if from == row && to == row {
        return length;
    }
    if from == to {
        return length / f64::from(table.served(from).max(1));
    }
    // One mark its own, one an interval's. Across threads it is the
    // operation's own hand-off (a wake after the writer's batch is done).
    let writer = match def.side {
        SliceSide::Writer => true,
        SliceSide::Caller => false,
        SliceSide::Cross => return length,
    };
    let interval = if to == row { from } else { to };
    let Some(tick) = table.tick(row, def.columns.1) else { return length };
    let step = timelines.step_to(interval, writer, tick).map_or(length, |t| (t as f64).min(length));
    if to == row { step } else { step / f64::from(table.served(to).max(1)) }
}
