//! One block's marks as a table: a row per operation, a column per hop.

use hopscope_probe::{Block, Hop, Mark};
use rustc_hash::FxHashMap;

/// Sentinel for "hop not seen" in the per-op tick table.
const MISSING: u64 = u64::MAX;
/// Sentinel for "hop not marked by this lane" in the hop → column map.
const NO_COLUMN: usize = usize::MAX;

/// Per-op ticks of one block: `rows × columns`, one column per hop of
/// `hops` (a mark of any other hop is ignored).
pub(super) struct Table {
    columns: usize,
    pub(super) rows: usize,
    ticks: Vec<u64>,
    cpus: Vec<u16>,
    repeated: Vec<bool>,
}

impl Table {
    /// Index `block`'s marks by operation; `hop_count` is the header's.
    pub(super) fn build(block: &Block, hops: &[Hop], hop_count: usize) -> Table {
        let mut column = vec![NO_COLUMN; hop_count];
        for (c, h) in hops.iter().enumerate() {
            if let Some(slot) = column.get_mut(usize::from(h.0)) {
                *slot = c;
            }
        }
        let columns = hops.len().max(1);
        let marks: usize = block.streams.iter().map(|s| s.marks.len()).sum();
        let expected_rows = marks / columns + 1;
        let mut index: FxHashMap<u64, u32> = FxHashMap::default();
        index.reserve(expected_rows);
        let mut ticks: Vec<u64> = Vec::with_capacity(expected_rows * columns);
        let mut cpus: Vec<u16> = Vec::with_capacity(expected_rows * columns);
        let mut repeated: Vec<bool> = Vec::with_capacity(expected_rows);
        for stream in &block.streams {
            for mark in &stream.marks {
                let c = column.get(usize::from(mark.hop.0)).copied().unwrap_or(NO_COLUMN);
                if c == NO_COLUMN {
                    continue;
                }
                let rows = repeated.len() as u32;
                let row = *index.entry(mark.op.0).or_insert(rows) as usize;
                if row == repeated.len() {
                    ticks.resize(ticks.len() + columns, MISSING);
                    cpus.resize(cpus.len() + columns, Mark::UNKNOWN_CPU);
                    repeated.push(false);
                }
                let cell = &mut ticks[row * columns + c];
                if *cell == MISSING {
                    *cell = mark.ticks.0;
                    cpus[row * columns + c] = mark.cpu;
                } else {
                    repeated[row] = true;
                }
            }
        }
        Table { columns, rows: repeated.len(), ticks, cpus, repeated }
    }

    /// The CPUs of `row`'s marks, in column order.
    pub(super) fn row_cpus(&self, row: usize) -> &[u16] {
        &self.cpus[row * self.columns..(row + 1) * self.columns]
    }

    /// `row`'s ticks when the operation has every hop exactly once.
    pub(super) fn complete_row(&self, row: usize) -> Option<&[u64]> {
        let ticks = &self.ticks[row * self.columns..(row + 1) * self.columns];
        (!self.repeated[row] && !ticks.contains(&MISSING)).then_some(ticks)
    }
}
