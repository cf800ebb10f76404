//! Segments of a live-span table, each owned by one thread: how the
//! profiling subscriber claims a slot for a new span without a
//! compare-and-swap.
//!
//! Only a segment's owner writes a span's key into its slots (any thread
//! may free one: a span closes wherever its last handle drops), so a claim
//! is a load that finds a free slot and a store, as fastrace keeps a span's
//! record in storage its thread alone fills. A thread takes a segment on
//! its first claim in a table (one compare-and-swap per thread and table),
//! another when its segments are full, and gives them back when it ends.
//! The last quarter of a table is never owned: a thread that finds no free
//! segment claims there by compare-and-swap.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Slots per segment.
pub(crate) const SEGMENT: usize = 64;

/// Which segments of one table are owned.
#[derive(Debug)]
pub(crate) struct Owners {
    /// Tells tables apart in a thread's list of segments.
    table: u64,
    owned: Arc<[AtomicBool]>,
}

static TABLES: AtomicU64 = AtomicU64::new(1);

/// A segment this thread owns, given back when the thread ends.
struct Held {
    owned: Arc<[AtomicBool]>,
    segment: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(flag) = self.owned.get(self.segment) {
            flag.store(false, Ordering::Release);
        }
    }
}

thread_local! {
    /// The segment this thread claimed in last, and its table: the one
    /// look-up of a claim.
    static LAST: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

impl Owners {
    /// `segments` segments, none owned.
    pub(crate) fn new(segments: usize) -> Owners {
        Owners {
            table: TABLES.fetch_add(1, Ordering::Relaxed),
            owned: (0..segments).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// The segment the calling thread last claimed in, taking one on its
    /// first claim; `None` when every segment is owned.
    #[inline]
    pub(crate) fn current(&self) -> Option<usize> {
        match LAST.try_with(Cell::get) {
            Ok((table, segment)) if table == self.table => Some(segment),
            _ => self.take_another(),
        }
    }

    /// Take a segment no thread owns for the calling thread (its others
    /// are full, or it has none yet) and make it the current one.
    #[cold]
    pub(crate) fn take_another(&self) -> Option<usize> {
        let segment = self
            .owned
            .iter()
            .position(|flag| flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok())?;
        let held = Held { owned: self.owned.clone(), segment };
        // A thread whose thread-locals are gone keeps no record: the
        // segment is given back at once, and the claim goes to the shared
        // quarter.
        HELD.try_with(|list| list.borrow_mut().push(held)).ok()?;
        let _ = LAST.try_with(|last| last.set((self.table, segment)));
        Some(segment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_segment_and_gives_it_back_when_it_ends() {
        let owners = Arc::new(Owners::new(3));
        let mine = owners.current().expect("a segment");
        assert_eq!(owners.current(), Some(mine), "the same one, until it asks for another");
        let theirs = std::thread::scope(|s| s.spawn(|| owners.current()).join().expect("thread"));
        assert!(theirs.is_some_and(|t| t != mine));
        // The other thread ended: its segment is free again.
        let again = std::thread::scope(|s| s.spawn(|| owners.current()).join().expect("thread"));
        assert_eq!(again, theirs);
        let second = owners.take_another().expect("a second");
        assert_ne!(second, mine);
        assert_eq!(owners.current(), Some(second), "the new one is current");
        assert!(owners.take_another().is_some(), "the third");
        assert_eq!(owners.take_another(), None, "three in all");
    }
}
