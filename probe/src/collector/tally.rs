//! What the closing spans of each watch did, per thread: counted without a
//! read-modify-write shared between threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Span watches a thread's tallies cover (a layer watches at most this
/// many spans).
pub(crate) const TALLIES: usize = 256;

/// What the closing spans of one watch did on one thread. Each thread
/// writes only its own (a load and a store, no read-modify-write shared
/// between threads: the counters of a span shared by the caller's and
/// the writer's threads no longer bounce between their cores); any thread
/// reads them.
#[derive(Debug, Default)]
pub(super) struct Tally {
    closed: AtomicU64,
    enters: AtomicU64,
    without_op: AtomicU64,
}

impl Tally {
    /// Add to a tally this thread alone writes.
    #[cfg(feature = "tracing")]
    #[inline]
    pub(super) fn add_own(&self, [closed, enters, without_op]: [u64; 3]) {
        for (counter, n) in [(&self.closed, closed), (&self.enters, enters), (&self.without_op, without_op)] {
            if n > 0 {
                counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
            }
        }
    }

    /// Add to a tally several threads may write (the collector's own).
    pub(super) fn add_shared(&self, [closed, enters, without_op]: [u64; 3]) {
        self.closed.fetch_add(closed, Ordering::Relaxed);
        self.enters.fetch_add(enters, Ordering::Relaxed);
        self.without_op.fetch_add(without_op, Ordering::Relaxed);
    }

    pub(super) fn read(&self) -> [u64; 3] {
        [&self.closed, &self.enters, &self.without_op].map(|c| c.load(Ordering::Relaxed))
    }
}

/// A tally per watch.
pub(super) fn tallies() -> Box<[Tally]> {
    (0..TALLIES).map(|_| Tally::default()).collect()
}
