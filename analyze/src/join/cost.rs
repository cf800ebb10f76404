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

use super::slice_def::{SliceDef, SliceSide};
use super::table::Table;

/// Each shared interval's marks on each thread side, with those of the
/// operations it serves: the batch's steps in time order.
///
/// Laid out flat (one allocation per block, not one per batch): `ticks`
/// holds every interval's caller-side ticks then its writer-side ticks,
/// each run ascending, and `starts` where each (interval, side) run
/// begins; a dense row → interval index finds a row's runs without a hash.
pub(super) struct Timelines {
    /// Table row → its index among the shared intervals, or `NONE`.
    interval_of: Vec<u32>,
    /// Where run `2 × interval + side` begins in `ticks`; one past the last
    /// run at the end.
    starts: Vec<usize>,
    ticks: Vec<u64>,
}

impl Timelines {
    const NONE: u32 = u32::MAX;

    /// The timelines of `table`'s shared intervals; `writer[c]` says
    /// whether column `c`'s hop is the writer's.
    pub(super) fn build(table: &Table, writer: &[bool]) -> Timelines {
        let mut interval_of = vec![Self::NONE; table.rows];
        let mut intervals = 0u32;
        for &(_, interval) in table.links() {
            if let Some(slot) = interval_of.get_mut(interval).filter(|slot| **slot == Self::NONE) {
                *slot = intervals;
                intervals += 1;
            }
        }
        let side = |column: usize| usize::from(writer.get(column).copied().unwrap_or(false));
        // Each run's own ticks and its members': the interval's row, then
        // every member's row, counted first, then placed.
        let rows = || {
            let own = interval_of.iter().enumerate().filter(|(_, i)| **i != Self::NONE).map(|(row, i)| (row, *i));
            let members = table.links().iter().filter_map(|&(member, interval)| {
                interval_of.get(interval).filter(|i| **i != Self::NONE).map(|i| (member, *i))
            });
            own.chain(members)
        };
        let mut starts = vec![0usize; 2 * intervals as usize + 1];
        for (row, interval) in rows() {
            for column in 0..table.columns() {
                if table.own_tick(row, column).is_some() {
                    starts[2 * interval as usize + side(column) + 1] += 1;
                }
            }
        }
        for run in 1..starts.len() {
            starts[run] += starts[run - 1];
        }
        let mut next = starts.clone();
        let mut ticks = vec![0u64; starts.last().copied().unwrap_or(0)];
        for (row, interval) in rows() {
            for column in 0..table.columns() {
                if let Some(tick) = table.own_tick(row, column) {
                    let run = 2 * interval as usize + side(column);
                    ticks[next[run]] = tick;
                    next[run] += 1;
                }
            }
        }
        for run in starts.windows(2) {
            ticks[run[0]..run[1]].sort_unstable();
        }
        Timelines { interval_of, starts, ticks }
    }

    /// The step of `interval`'s batch that ends at `tick` on one side: from
    /// the batch's latest mark before it, ticks.
    fn step_to(&self, interval: usize, writer: bool, tick: u64) -> Option<u64> {
        let index = *self.interval_of.get(interval).filter(|i| **i != Self::NONE)? as usize;
        let run = 2 * index + usize::from(writer);
        let line = &self.ticks[self.starts[run]..self.starts[run + 1]];
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
