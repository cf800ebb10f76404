//! The span events each thread runs between two of its consecutive marks:
//! what a slice holds besides its two edges, seen where it runs.
//!
//! A slice between two span edges holds whatever span callbacks ran on its
//! thread between them: a span closed, the next created, an enter mapped to
//! no hop, a span the layer does not watch. Which ones depends on the
//! program's own code (a sibling's whole life, a child closed before its
//! parent's exit), so the layer counts them as they happen instead of
//! guessing them from the hop order: each thread keeps a cursor (the hop of
//! its last mark and the events since, one `Cell` in a thread-local, no
//! atomics), and at its next mark the pair and its events go into the
//! layer's table, one cell per pair of hops, written only when it changes.
//! A pair whose events differ from one pass to the next is kept as
//! *varied*. A run reads and clears the table after each block
//! ([`super::HopLayer::take_sequences`]); each figure is then the measured
//! cost of those events ([`crate::SpanMachinery::share_of`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::hop::Hop;
use crate::machinery::{SpanEvents, SpanSequence};

/// Hops whose pairs are kept: a table's first 64 (hopscope's own hops and
/// the spans of a layer; a pair past them is not recorded, and its slice is
/// stated as unknown).
const HOPS: usize = 64;

/// A cell holds a pair seen at least once.
const SEEN: u64 = 1 << 63;

/// A cell's pair held different events on different passes.
const VARIED: u64 = 1 << 31;

/// The cursor's "no mark yet".
const NO_HOP: u16 = u16::MAX;

/// A span callback, as it counts inside a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A watched span created inside another.
    Create,
    /// A watched span with a parent closed.
    Close,
    /// A watched span created with no parent.
    CreateRoot,
    /// A watched span with no parent closed.
    CloseRoot,
    /// A watched span's first enter, mapped to no hop.
    Enter,
    /// A watched span's exit, mapped to no hop.
    Exit,
    /// A watched span entered again.
    Reenter,
    /// Any callback of a span the layer does not watch.
    Unwatched,
}

impl Event {
    /// Add this event to packed events `bits` (counts stop at their
    /// largest value).
    fn add_to(self, bits: u32) -> u32 {
        // The layout of [`SpanEvents::pack`].
        let at = match self {
            Event::Create => 0,
            Event::Close => 4,
            Event::Enter => 8,
            Event::Exit => 12,
            Event::Unwatched => 16,
            Event::CreateRoot => 20,
            Event::CloseRoot => 24,
            Event::Reenter => return bits | 1 << 28,
        };
        if (bits >> at) & 0xf < u32::from(SpanEvents::MAX) { bits + (1 << at) } else { bits }
    }
}

#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// The table it counts for (a thread marks for one layer at a time).
    table: u64,
    /// The hop of the thread's last mark.
    from: u16,
    /// Packed [`SpanEvents`] since.
    events: u32,
}

thread_local! {
    static CURSOR: Cell<Cursor> = const { Cell::new(Cursor { table: 0, from: NO_HOP, events: 0 }) };
}

static TABLES: AtomicU64 = AtomicU64::new(1);

/// One layer's pairs of consecutive marks and the events between them.
#[derive(Debug)]
pub(crate) struct EventTable {
    id: u64,
    cells: Box<[AtomicU64]>,
}

impl Default for EventTable {
    fn default() -> Self {
        EventTable {
            id: TABLES.fetch_add(1, Ordering::Relaxed),
            cells: (0..HOPS * HOPS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl EventTable {
    /// This thread's cursor for this table, reset when it last counted for
    /// another.
    #[inline]
    fn with_cursor(&self, f: impl FnOnce(&mut Cursor)) {
        let _ = CURSOR.try_with(|cell| {
            let mut cursor = cell.get();
            if cursor.table != self.id {
                cursor = Cursor { table: self.id, from: NO_HOP, events: 0 };
            }
            f(&mut cursor);
            cell.set(cursor);
        });
    }

    /// Count `event` on the calling thread.
    #[inline]
    pub(crate) fn note(&self, event: Event) {
        self.with_cursor(|cursor| cursor.events = event.add_to(cursor.events));
    }

    /// A mark of `hop` on the calling thread: the pair from its last mark
    /// is recorded with the events since, and a new one starts.
    #[inline]
    pub(crate) fn marked(&self, hop: Hop) {
        self.with_cursor(|cursor| {
            if cursor.from != NO_HOP {
                self.record(cursor.from, hop.0, cursor.events);
            }
            *cursor = Cursor { table: self.id, from: hop.0, events: 0 };
        });
    }

    #[inline]
    fn record(&self, from: u16, to: u16, events: u32) {
        let (from, to) = (usize::from(from), usize::from(to));
        if from >= HOPS || to >= HOPS {
            return;
        }
        let cell = &self.cells[from * HOPS + to];
        let seen = SEEN | u64::from(events);
        let held = cell.load(Ordering::Relaxed);
        // Written only when it changes: a pair's cell stays in the cache of
        // the thread that marks it.
        if held & !VARIED == seen {
            return;
        }
        let next = if held == 0 { seen } else { held | VARIED };
        if next != held {
            cell.store(next, Ordering::Relaxed);
        }
    }

    /// Every pair recorded since the last call, and clear them.
    pub(crate) fn take(&self) -> Vec<SpanSequence> {
        self.cells
            .iter()
            .enumerate()
            .filter(|(_, cell)| cell.load(Ordering::Relaxed) != 0)
            .map(|(i, cell)| {
                let value = cell.swap(0, Ordering::Relaxed);
                SpanSequence {
                    from: Hop((i / HOPS) as u16),
                    to: Hop((i % HOPS) as u16),
                    events: SpanEvents::unpack(value as u32),
                    varied: value & VARIED != 0,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_records_the_events_between_its_own_marks() {
        let table = EventTable::default();
        table.marked(Hop(3));
        table.note(Event::Close);
        table.note(Event::Create);
        table.note(Event::Enter);
        table.marked(Hop(5));
        table.marked(Hop(6));
        std::thread::scope(|s| {
            s.spawn(|| {
                // Another thread's marks pair among themselves only.
                table.note(Event::Create);
                table.marked(Hop(7));
                table.note(Event::Unwatched);
                table.marked(Hop(8));
            });
        });
        let mut pairs = table.take();
        pairs.sort_by_key(|p| (p.from.0, p.to.0));
        let found: Vec<(u16, u16, SpanEvents, bool)> =
            pairs.iter().map(|p| (p.from.0, p.to.0, p.events, p.varied)).collect();
        let events = |creates, closes, enters, unwatched| SpanEvents {
            creates,
            closes,
            enters,
            unwatched,
            ..SpanEvents::default()
        };
        assert_eq!(
            found,
            [
                (3, 5, events(1, 1, 1, 0), false),
                (5, 6, SpanEvents::default(), false),
                (7, 8, events(0, 0, 0, 1), false)
            ]
        );
        assert!(table.take().is_empty(), "taken once");
    }

    #[test]
    fn a_pair_seen_with_different_events_is_varied_and_counts_stop_at_their_largest() {
        let table = EventTable::default();
        for round in 0..3 {
            table.marked(Hop(1));
            if round == 1 {
                table.note(Event::Exit);
            }
            table.marked(Hop(2));
        }
        table.marked(Hop(1));
        for _ in 0..100 {
            table.note(Event::Close);
        }
        table.note(Event::Reenter);
        table.marked(Hop(9));
        let pairs = table.take();
        let one_two = pairs.iter().find(|p| (p.from, p.to) == (Hop(1), Hop(2))).expect("1→2");
        assert!(one_two.varied);
        let one_nine = pairs.iter().find(|p| (p.from, p.to) == (Hop(1), Hop(9))).expect("1→9");
        assert_eq!(one_nine.events.closes, SpanEvents::MAX);
        assert!(one_nine.events.reentered);
        assert!(one_nine.events.unknown().is_some());
        // Hops past the table's reach are not recorded.
        table.marked(Hop(200));
        table.marked(Hop(2));
        assert!(table.take().iter().all(|p| p.from != Hop(200)));
    }
}
