//! One block's marks as a table: a row per operation, a column per hop.

use hopscope_probe::{Block, Hop, Mark};
use rustc_hash::FxHashMap;

/// Sentinel for "hop not seen" in the per-op tick table.
const MISSING: u64 = u64::MAX;
/// Sentinel for "hop not marked by this lane" in the hop → column map.
const NO_COLUMN: usize = usize::MAX;

/// Per-op ticks of one block: `rows × columns`, one column per hop of
/// `hops` (a mark of any other hop is ignored).
///
/// A row is an operation, or a *shared interval* when links name it
/// ([`hopscope_probe::Mark::serves`]): its marks are then copied into the
/// row of every operation it serves, which waits for all of it, and the
/// row itself is no operation.
pub(super) struct Table {
    columns: usize,
    pub(super) rows: usize,
    ticks: Vec<u64>,
    cpus: Vec<u16>,
    /// Marks that landed in each row: a row is complete when it holds
    /// exactly one per column and none is missing.
    marks: Vec<u32>,
    /// Per cell, the row its mark came from: its own, or the shared
    /// interval's that serves it. Empty when the block holds no link.
    source: Vec<u32>,
    /// Per row, the operations it serves (0 for an operation). Empty when
    /// the block holds no link.
    served: Vec<u32>,
    /// `(member, shared interval)` rows of every link resolved, ascending.
    links: Vec<(usize, usize)>,
    /// Members a sampling capture left out (see
    /// [`hopscope_probe::Mark::serves_unsampled`]) that an interval of the
    /// block served, each counted once: they size their interval and are
    /// no operation, so they get no row.
    left_out: u64,
}

/// Operation id → table row. A thread numbers its operations one after
/// another, so a block's ids mostly sit in a short run above the first one
/// seen: those rows live in a plain array; any other id (another thread's
/// tag, a stray) in a hash map. Which of the two holds an id depends on the
/// id alone, so one id never gets two rows.
struct RowIndex {
    base: Option<u64>,
    dense: Vec<u32>,
    sparse: FxHashMap<u64, u32>,
}

impl RowIndex {
    const EMPTY: u32 = u32::MAX;

    fn new(expected_rows: usize) -> RowIndex {
        RowIndex { base: None, dense: vec![Self::EMPTY; expected_rows * 2 + 64], sparse: FxHashMap::default() }
    }

    /// The row of `op`, if it has one.
    fn find(&self, op: u64) -> Option<usize> {
        let base = self.base?;
        let dense = op.checked_sub(base).and_then(|o| usize::try_from(o).ok()).and_then(|o| self.dense.get(o));
        let slot = match dense {
            Some(slot) => *slot,
            None => *self.sparse.get(&op)?,
        };
        (slot != Self::EMPTY).then_some(slot as usize)
    }

    /// The row of `op`, giving it `next` if it has none yet.
    fn row(&mut self, op: u64, next: usize) -> usize {
        let base = *self.base.get_or_insert(op);
        let next = u32::try_from(next).unwrap_or(Self::EMPTY - 1);
        let dense = op.checked_sub(base).and_then(|o| usize::try_from(o).ok()).and_then(|o| self.dense.get_mut(o));
        let slot = match dense {
            Some(slot) => slot,
            None => self.sparse.entry(op).or_insert(Self::EMPTY),
        };
        if *slot == Self::EMPTY {
            *slot = next;
        }
        *slot as usize
    }
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
        let mut index = RowIndex::new(expected_rows);
        let mut ticks: Vec<u64> = Vec::with_capacity(expected_rows * columns);
        let mut cpus: Vec<u16> = Vec::with_capacity(expected_rows * columns);
        let mut counts: Vec<u32> = Vec::with_capacity(expected_rows);
        // (member's row, shared interval's op id), as the links come.
        let mut links: Vec<(usize, u64)> = Vec::new();
        // (member's op id, shared interval's op id) of members a sampling
        // capture left out: most links of a sampled capture, so no row.
        let mut left_out: Vec<(u64, u64)> = Vec::new();
        for stream in &block.streams {
            // A thread marks one operation's hops back to back (the caller
            // its whole call, the writer its whole turn), so the previous
            // mark's row is usually this one's: one comparison instead of
            // a hash lookup for most marks.
            let mut last: Option<(u64, usize)> = None;
            for mark in &stream.marks {
                let c = column.get(usize::from(mark.hop.0)).copied().unwrap_or(NO_COLUMN);
                if c == NO_COLUMN {
                    match mark.link() {
                        Some(shared) if mark.is_unsampled_link() => left_out.push((mark.op.0, shared.0)),
                        Some(shared) => {
                            let row = index.row(mark.op.0, counts.len());
                            add_row(row, columns, &mut ticks, &mut cpus, &mut counts);
                            links.push((row, shared.0));
                        }
                        None => {}
                    }
                    continue;
                }
                let row = match last {
                    Some((op, row)) if op == mark.op.0 => row,
                    _ => {
                        let row = index.row(mark.op.0, counts.len());
                        last = Some((mark.op.0, row));
                        row
                    }
                };
                add_row(row, columns, &mut ticks, &mut cpus, &mut counts);
                // A blind store, no read of the cell first (a cache miss on
                // a large block): a repeated hop overwrites its first mark,
                // but its row then counts more marks than columns and is
                // excluded whole.
                ticks[row * columns + c] = mark.ticks.0;
                cpus[row * columns + c] = mark.cpu;
                counts[row] = counts[row].saturating_add(1);
            }
        }
        let mut table = Table {
            columns,
            rows: counts.len(),
            ticks,
            cpus,
            marks: counts,
            source: Vec::new(),
            served: Vec::new(),
            links: Vec::new(),
            left_out: 0,
        };
        if !links.is_empty() || !left_out.is_empty() {
            table.share(&index, links);
            table.count_left_out(&index, left_out);
        }
        table
    }

    /// Count the members a sampling capture left out into the size of the
    /// interval that served each (one that served them twice, or a link to
    /// no interval of the block, or to one that is itself served, counts
    /// nothing), and how many there were.
    fn count_left_out(&mut self, index: &RowIndex, mut left_out: Vec<(u64, u64)>) {
        left_out.sort_unstable();
        left_out.dedup();
        let mut is_member = vec![false; self.rows];
        for &(member, _) in &self.links {
            is_member[member] = true;
        }
        let mut last_member = None;
        for (member, shared) in left_out {
            let Some(row) = index.find(shared).filter(|&row| !is_member[row]) else { continue };
            self.served[row] = self.served[row].saturating_add(1);
            if last_member != Some(member) {
                self.left_out += 1;
                last_member = Some(member);
            }
        }
    }

    /// Members a sampling capture left out that the block's intervals
    /// served, each counted once.
    pub(super) fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Copy each shared interval's marks into the rows of the operations
    /// it serves. A link to an interval with no marks in the block (cut off
    /// at a block's edge, or never marked) leaves its operation incomplete;
    /// an interval that is itself served by another is not followed (one
    /// level of sharing), and an operation linked twice to one interval
    /// counts once.
    fn share(&mut self, index: &RowIndex, mut links: Vec<(usize, u64)>) {
        links.sort_unstable();
        links.dedup();
        let mut resolved = Vec::with_capacity(links.len());
        let mut shared_rows = vec![false; self.rows];
        for (member, shared) in links {
            match index.find(shared).filter(|&row| row != member) {
                Some(row) => {
                    shared_rows[row] = true;
                    resolved.push((member, row));
                }
                // No such interval here: the operation cannot be whole.
                None => self.marks[member] = u32::MAX,
            }
        }
        resolved.retain(|&(member, _)| !shared_rows[member]);
        self.served = vec![0; self.rows];
        for &(_, row) in &resolved {
            self.served[row] = self.served[row].saturating_add(1);
        }
        self.source = (0..self.rows).flat_map(|row| std::iter::repeat_n(row as u32, self.columns)).collect();
        for &(member, row) in &resolved {
            for c in 0..self.columns {
                let from = row * self.columns + c;
                if self.ticks[from] == MISSING {
                    continue;
                }
                let to = member * self.columns + c;
                self.ticks[to] = self.ticks[from];
                self.cpus[to] = self.cpus[from];
                self.source[to] = row as u32;
                self.marks[member] = self.marks[member].saturating_add(1);
            }
        }
        self.links = resolved;
    }

    /// Every `(member, shared interval)` pair of rows linked in the block.
    pub(super) fn links(&self) -> &[(usize, usize)] {
        &self.links
    }

    /// The tick in `row`'s `column`, as marked there (not copied from a
    /// shared interval), if any.
    pub(super) fn own_tick(&self, row: usize, column: usize) -> Option<u64> {
        let tick = *self.ticks.get(row * self.columns + column)?;
        (tick != MISSING && self.source(row, column) == row).then_some(tick)
    }

    /// The tick in `row`'s `column`, its own or its interval's, if any.
    pub(super) fn tick(&self, row: usize, column: usize) -> Option<u64> {
        self.ticks.get(row * self.columns + column).copied().filter(|&t| t != MISSING)
    }

    /// The block's columns.
    pub(super) fn columns(&self) -> usize {
        self.columns
    }

    /// Whether `row` is an operation (not a shared interval serving
    /// others).
    pub(super) fn is_operation(&self, row: usize) -> bool {
        self.served.get(row).is_none_or(|&n| n == 0)
    }

    /// Whether the block holds shared intervals.
    pub(super) fn has_shared(&self) -> bool {
        !self.served.is_empty()
    }

    /// The operations shared interval `row` serves (0 for an operation).
    pub(super) fn served(&self, row: usize) -> u32 {
        self.served.get(row).copied().unwrap_or(0)
    }

    /// The row `row`'s mark in column `column` came from: its own, or the
    /// shared interval's that serves it.
    pub(super) fn source(&self, row: usize, column: usize) -> usize {
        self.source.get(row * self.columns + column).map_or(row, |&r| r as usize)
    }

    /// The CPUs of `row`'s marks, in column order.
    pub(super) fn row_cpus(&self, row: usize) -> &[u16] {
        &self.cpus[row * self.columns..(row + 1) * self.columns]
    }

    /// Operation rows holding exactly one mark per column: every complete
    /// row, and rarely one with a hop repeated and another missing.
    pub(super) fn full_rows(&self) -> usize {
        (0..self.rows)
            .filter(|&row| self.is_operation(row) && usize::try_from(self.marks[row]).is_ok_and(|n| n == self.columns))
            .count()
    }

    /// `row`'s ticks when it is an operation with every hop exactly once.
    pub(super) fn complete_row(&self, row: usize) -> Option<&[u64]> {
        let ticks = &self.ticks[row * self.columns..(row + 1) * self.columns];
        let one_each = usize::try_from(self.marks[row]).is_ok_and(|n| n == self.columns);
        (one_each && self.is_operation(row) && !ticks.contains(&MISSING)).then_some(ticks)
    }
}

/// Give `row` its cells when it is the next new one (`counts.len()`).
#[inline]
fn add_row(row: usize, columns: usize, ticks: &mut Vec<u64>, cpus: &mut Vec<u16>, counts: &mut Vec<u32>) {
    if row == counts.len() {
        ticks.resize(ticks.len() + columns, MISSING);
        cpus.resize(cpus.len() + columns, Mark::UNKNOWN_CPU);
        counts.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_keeps_its_row_whether_it_falls_in_the_dense_run_or_not() {
        let mut index = RowIndex::new(4);
        let ids = [1_000, 1_001, 5, u64::MAX, 1_000 + 70, 1_003, 1_001, 5, u64::MAX, 1_000];
        let mut next = 0;
        let mut rows = Vec::new();
        for id in ids {
            let row = index.row(id, next);
            if row == next {
                next += 1;
            }
            rows.push(row);
        }
        // Below the base, far above it and in its run: each id its own row,
        // the same row every time it comes back.
        assert_eq!(rows, [0, 1, 2, 3, 4, 5, 1, 2, 3, 0]);
    }
}
