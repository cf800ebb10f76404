//! One thread's ring: its writing end, kept in the thread's locals, and its
//! reading end, kept by the collector.
//!
//! The writing end decides which marks it keeps (the collector's
//! [`Sampling`]), wakes the drain when its ring is half full, and, when a
//! ring fills anyway (the drain starved by a busy core, a burst), moves on
//! to a ring twice the size up to the collector's cap: the full one is
//! drained and forgotten, and no mark is lost until the cap is reached.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::thread::{Thread, ThreadId};

use super::pending::PendingLinks;
use super::sampling::{LinkedIntervals, Sampling};
use super::tally::Tally;
use crate::hop::{Hop, Mark, OpId};

/// Pushes between two looks at how full the ring is: a look reads the
/// reading end's position, a line another core writes.
const LOOK_EVERY: u32 = 1 << 10;

/// A collector's rings and how they are made: what its threads' writing
/// ends need of it (its id, its ring sizes and sampling, the drain to
/// wake, where a grown ring's reading end goes).
#[derive(Debug)]
pub(super) struct Rings {
    /// Tells this collector's rings apart in a thread's list of producers.
    pub(super) id: u64,
    pub(super) ring_marks: usize,
    /// The largest ring a thread's may grow to when full.
    pub(super) ring_cap: usize,
    pub(super) sampling: Sampling,
    /// The thread to wake when a ring is half full (a live capture's
    /// drain).
    pub(super) waker: Arc<OnceLock<Thread>>,
    /// The reading ends, in the order threads first marked (a grown
    /// ring's after the full one it replaces).
    pub(super) readers: Mutex<Vec<Reader>>,
    /// Threads registered so far (counted under the `readers` lock).
    pub(super) registered: AtomicU64,
}

/// What a ring's two ends share.
#[derive(Debug)]
pub(super) struct RingInfo {
    pub(super) thread: ThreadId,
    pub(super) name: String,
    /// The thread's place in the order of registration, from 1.
    pub(super) order: u64,
    /// Threads registered when this one stopped marking (its writing end
    /// dropped as it exited); 0 while it marks.
    pub(super) ended_after: AtomicU64,
    pub(super) dropped: AtomicU64,
    /// The largest ring this thread has had, marks.
    pub(super) ring_marks: AtomicUsize,
    /// This thread's closing spans, per watch.
    pub(super) tallies: Box<[Tally]>,
}

/// The collector's end of one ring.
#[derive(Debug)]
pub(super) struct Reader {
    pub(super) ring: rtrb::Consumer<Mark>,
    pub(super) info: Arc<RingInfo>,
}

/// A thread's end of its ring for one collector.
pub(super) struct Writer {
    pub(super) collector: u64,
    ring: rtrb::Producer<Mark>,
    pub(super) info: Arc<RingInfo>,
    sampling: Sampling,
    links: LinkedIntervals,
    /// Left-out members' links to an interval no sampled member has
    /// linked to yet.
    pending: Box<PendingLinks>,
    ring_cap: usize,
    waker: Arc<OnceLock<Thread>>,
    rings: Weak<Rings>,
    pushed: u32,
}

impl Writer {
    /// A writing end for the current thread, its reading end registered
    /// with `inner`.
    pub(super) fn register(inner: &Arc<Rings>, name: impl FnOnce(u64) -> String) -> Writer {
        let (ring, reader) = rtrb::RingBuffer::new(inner.ring_marks);
        let mut rings = inner.readers.lock().unwrap_or_else(PoisonError::into_inner);
        let current = std::thread::current();
        let order = inner.registered.fetch_add(1, Ordering::Relaxed) + 1;
        let name = current.name().map_or_else(|| name(order), str::to_owned);
        let info = Arc::new(RingInfo {
            thread: current.id(),
            name,
            order,
            ended_after: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            ring_marks: AtomicUsize::new(inner.ring_marks),
            tallies: super::tally::tallies(),
        });
        rings.push(Reader { ring: reader, info: info.clone() });
        drop(rings);
        Writer {
            collector: inner.id,
            ring,
            info,
            sampling: inner.sampling,
            links: LinkedIntervals::default(),
            pending: Box::default(),
            ring_cap: inner.ring_cap,
            waker: inner.waker.clone(),
            rings: Arc::downgrade(inner),
            pushed: 0,
        }
    }

    /// Whether the collector this writes for is gone (its reading ends
    /// dropped): a thread prunes such writers when it registers another.
    pub(super) fn is_stale(&self) -> bool {
        self.ring.is_abandoned() || self.rings.strong_count() == 0
    }

    /// `marks` into the ring, those the sampling keeps; any the ring and
    /// its growth cannot take are counted. Every link of a kept interval
    /// is stored, marked as its member's sampling decided
    /// ([`Mark::serves_unsampled`]), so a kept batch's size is known
    /// whatever the sampling; an interval no sampled member links to
    /// leaves no mark at all (see [`PendingLinks`]).
    #[inline]
    pub(super) fn push(&mut self, marks: &[Mark]) {
        for mark in marks {
            if self.sampling.keeps_all() {
                self.store(*mark);
            } else if mark.is_link() {
                self.link(*mark);
            } else {
                self.pending.hop_of(mark.op);
                if self.links.keeps(self.sampling, mark.op) {
                    self.store(*mark);
                }
            }
        }
    }

    /// A link under sampling: stored when its member is sampled (after the
    /// interval's links held so far) or its interval already kept, else
    /// held until the interval is decided.
    #[inline]
    fn link(&mut self, mark: Mark) {
        let shared = mark.ticks.0;
        if self.links.link(self.sampling, shared, mark.op) {
            if self.pending.interval() == Some(shared) {
                self.release_pending();
            }
            self.store(mark);
        } else if self.links.is_kept(shared) {
            self.store(Mark::serves_unsampled(OpId(shared), mark.op));
        } else {
            if !self.pending.can_hold(shared) {
                // Another interval's links (two batches linked in turn),
                // or more than the room: stored as they are.
                self.release_pending();
            }
            self.pending.hold(shared, mark.op);
        }
    }

    /// Store every link held, and hold none.
    fn release_pending(&mut self) {
        for i in 0..self.pending.len() {
            let link = self.pending.link(i);
            self.store(link);
        }
        self.pending.clear();
    }

    /// A mark of `op` at `hop`, its clock read only when the sampling keeps
    /// the operation.
    #[inline]
    pub(super) fn offer(&mut self, op: OpId, hop: Hop) {
        if self.sampling.keeps_all() {
            self.store(Mark::new(op, hop, crate::clock::now()));
            return;
        }
        self.pending.hop_of(op);
        if self.links.keeps(self.sampling, op) {
            self.store(Mark::new(op, hop, crate::clock::now()));
        }
    }

    #[inline]
    fn store(&mut self, mark: Mark) {
        if let Err(rtrb::PushError::Full(mark)) = self.ring.push(mark) {
            self.full(mark);
        }
        self.pushed = self.pushed.wrapping_add(1);
        if self.pushed.is_multiple_of(LOOK_EVERY) {
            self.wake_if_filling();
        }
    }

    /// Wake the drain when the ring is half full: it empties the ring
    /// before it fills, where a drain on its timer alone may come late.
    #[inline]
    fn wake_if_filling(&self) {
        if let Some(drain) = self.waker.get()
            && self.ring.slots() < self.ring.buffer().capacity() / 2
        {
            drain.unpark();
        }
    }

    /// The ring is full: move on to a larger one within the cap, or count
    /// the mark as dropped.
    #[cold]
    #[inline(never)]
    fn full(&mut self, mark: Mark) {
        if let Some(drain) = self.waker.get() {
            drain.unpark();
        }
        if self.grow() && self.ring.push(mark).is_ok() {
            return;
        }
        self.info.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// A ring twice the size of the full one, up to the cap, registered
    /// after it: the drain empties the full one and then forgets it.
    fn grow(&mut self) -> bool {
        let capacity = self.ring.buffer().capacity();
        if capacity >= self.ring_cap {
            return false;
        }
        let Some(inner) = self.rings.upgrade() else { return false };
        let next = capacity.saturating_mul(2).min(self.ring_cap);
        let (ring, reader) = rtrb::RingBuffer::new(next);
        inner
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Reader { ring: reader, info: self.info.clone() });
        self.info.ring_marks.fetch_max(next, Ordering::Relaxed);
        self.ring = ring;
        true
    }
}

impl Drop for Writer {
    /// The thread is exiting (or pruning a writer of a collector that is
    /// gone): note how many threads had registered by now, so a role of
    /// its can pass to a thread that began marking after it ended.
    fn drop(&mut self) {
        if let Some(inner) = self.rings.upgrade() {
            let registered = inner.registered.load(Ordering::Relaxed);
            self.info.ended_after.store(registered.max(1), Ordering::Relaxed);
        }
    }
}
