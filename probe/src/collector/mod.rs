//! The collector: marks handed from the threads that make them (span
//! callbacks, SQLite's statement hook) to whoever drains them, without a
//! lock on the marking side.
//!
//! A thread's first mark for a collector gives it a fixed-capacity ring (a
//! wait-free single-producer, single-consumer queue, `rtrb`) and registers
//! the ring's reading end with the collector; that first mark allocates and
//! takes the collector's lock once, every later mark only writes into the
//! ring. [`Collector::drain`] empties every ring from any thread, so marks
//! reach a block without the marking thread running any code for it. A full
//! ring drops the mark and counts it, per thread, exactly; a mark made
//! while the thread is tearing down its thread-locals is counted too.
//!
//! A live capture's collector also keeps one operation in N
//! ([`Sampling`]), is woken by a ring half full, and lets a full ring grow
//! up to a cap ([`Collector::growing`]); the harness's never grows, so a
//! block's marks cost what they always did.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{Thread, ThreadId};

mod pending;
mod ring;
pub(crate) mod route;
mod sampling;
mod tally;

use ring::{Reader, Rings, Writer};
pub use sampling::{MAX_SAMPLE_EVERY, Sampling};
#[cfg(feature = "tracing")]
pub(crate) use tally::TALLIES;
use tally::{Tally, tallies};

use crate::hop::{Hop, Mark, OpId};

/// Marks each thread's ring holds between two drains by default: 1.5 MiB
/// per marking thread.
pub const DEFAULT_RING_MARKS: usize = 1 << 16;

/// Largest ring a thread may be given: 384 MiB of marks.
pub const MAX_RING_MARKS: usize = 1 << 24;

/// What the collector calls a thread the program did not name, before
/// its number (`thread-3`).
const UNNAMED: &str = "thread-";

/// Whether `name` is one the collector gave a thread the program did not
/// name (`thread-N`), not one the program chose.
pub fn is_unnamed(name: &str) -> bool {
    name.strip_prefix(UNNAMED).is_some_and(|n| n.parse::<u64>().is_ok())
}

/// Where marks made on threads hopscope does not run (span callbacks,
/// SQLite's statement hook, a live capture's `hop!` marks) gather; cloning
/// shares the same rings.
#[derive(Debug, Clone)]
pub struct Collector {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    rings: Arc<Rings>,
    /// Marks lost without a ring to count them in: the thread's
    /// thread-locals were gone, or a mark re-entered a push on its thread.
    dropped_elsewhere: AtomicU64,
    /// Tallies of threads whose rings are gone, and of closes made without
    /// a ring.
    retired: Box<[Tally]>,
}

thread_local! {
    // One writing end per collector this thread marks for; usually one.
    static WRITERS: RefCell<Vec<Writer>> = const { RefCell::new(Vec::new()) };
}

static COLLECTORS: AtomicU64 = AtomicU64::new(1);

/// The marks one thread made since the previous drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMarks {
    /// The thread that made them.
    pub thread: ThreadId,
    /// Its name (`std::thread::Thread::name`), or `thread-N` for an
    /// unnamed one, N its order of registration.
    pub name: String,
    /// Its place in the order threads first marked for the collector,
    /// from 1.
    pub order: u64,
    /// Marks in the order the thread handed them over.
    pub marks: Vec<Mark>,
    /// Marks it dropped because its ring was full.
    pub dropped: u64,
}

/// Everything one drain took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drained {
    /// Per thread that ever marked for the collector and still had marks or
    /// drops, in the order threads first marked.
    pub threads: Vec<ThreadMarks>,
    /// Marks dropped with no thread to charge them to (see the module doc).
    pub dropped_elsewhere: u64,
    /// Threads that exited: their rings are forgotten, their last marks
    /// are in this drain or an earlier one.
    pub exited: Vec<ThreadExit>,
}

/// A thread that stopped marking for a collector (it exited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadExit {
    /// The thread.
    pub thread: ThreadId,
    /// Threads registered by the time it stopped: one whose
    /// [`ThreadMarks::order`] is larger began marking after it ended.
    pub registered_by_then: u64,
}

impl Drained {
    /// All marks dropped in this drain.
    pub fn dropped(&self) -> u64 {
        self.threads.iter().map(|t| t.dropped).sum::<u64>() + self.dropped_elsewhere
    }

    /// All marks taken in this drain.
    pub fn marks(&self) -> usize {
        self.threads.iter().map(|t| t.marks.len()).sum()
    }

    /// The entry of `thread`, added empty if it has none yet.
    fn entry(&mut self, info: &ring::RingInfo) -> &mut ThreadMarks {
        let at = match self.threads.iter().position(|t| t.thread == info.thread) {
            Some(at) => at,
            None => {
                let (name, order) = (info.name.clone(), info.order);
                self.threads.push(ThreadMarks { thread: info.thread, name, order, marks: Vec::new(), dropped: 0 });
                self.threads.len() - 1
            }
        };
        &mut self.threads[at]
    }
}

impl Collector {
    /// A collector whose threads get rings of `ring_marks` marks (clamped
    /// to 1 ..= [`MAX_RING_MARKS`]) that never grow, keeping every mark.
    pub fn new(ring_marks: usize) -> Collector {
        Collector::growing(ring_marks, ring_marks, Sampling::ALL)
    }

    /// A collector whose threads start with rings of `ring_marks` marks
    /// and, when one fills before a drain, move on to rings twice the size
    /// up to `ring_cap` (both clamped to 1 ..= [`MAX_RING_MARKS`]); it
    /// keeps the operations `sampling` keeps.
    pub fn growing(ring_marks: usize, ring_cap: usize, sampling: Sampling) -> Collector {
        let ring_marks = ring_marks.clamp(1, MAX_RING_MARKS);
        Collector {
            inner: Arc::new(Inner {
                rings: Arc::new(Rings {
                    id: COLLECTORS.fetch_add(1, Ordering::Relaxed),
                    ring_marks,
                    ring_cap: ring_cap.clamp(ring_marks, MAX_RING_MARKS),
                    sampling,
                    waker: Arc::new(OnceLock::new()),
                    readers: Mutex::new(Vec::new()),
                    registered: AtomicU64::new(0),
                }),
                dropped_elsewhere: AtomicU64::new(0),
                retired: tallies(),
            }),
        }
    }

    /// Whether `other` is a clone of this collector (shares its rings).
    pub fn same(&self, other: &Collector) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Marks per thread's ring.
    pub fn ring_marks(&self) -> usize {
        self.inner.rings.ring_marks
    }

    /// The largest ring a thread's may grow to.
    pub fn ring_cap(&self) -> usize {
        self.inner.rings.ring_cap
    }

    /// Which operations it keeps.
    pub fn sampling(&self) -> Sampling {
        self.inner.rings.sampling
    }

    /// Have marking threads wake `drain` (unpark it) when their ring is
    /// half full or full. Set once; later calls are ignored.
    pub fn wake(&self, drain: Thread) {
        let _ = self.inner.rings.waker.set(drain);
    }

    /// Hand `mark` to the collector from the current thread. Wait-free after
    /// the thread's first mark; never blocks.
    #[inline]
    pub fn push(&self, mark: Mark) {
        self.push_all(&[mark]);
    }

    /// [`Collector::push`] several marks with one look-up of the thread's
    /// ring (a closing span hands over its enter and its exit together).
    #[inline]
    pub fn push_all(&self, marks: &[Mark]) {
        if !self.with_writer(|writer| writer.push(marks)) {
            self.inner.dropped_elsewhere.fetch_add(marks.len() as u64, Ordering::Relaxed);
        }
    }

    /// Mark that `op` passed `hop` now, reading the clock only when the
    /// sampling keeps `op`.
    #[inline]
    pub fn offer(&self, op: OpId, hop: Hop) {
        if !self.with_writer(|writer| writer.offer(op, hop)) {
            self.inner.dropped_elsewhere.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A closing span of watch `watch`, entered `enters` times, handing
    /// over `marks`: the marks into this thread's ring, the close into its
    /// tally (`with_op` false: a span that never got an operation id, which
    /// marks nothing). One look-up of the thread's ring for both.
    #[cfg(feature = "tracing")]
    #[inline]
    pub(crate) fn close(&self, watch: usize, enters: u64, marks: &[Mark], with_op: bool) {
        let counted = if with_op { [1, enters, 0] } else { [0, 0, 1] };
        let done = self.with_writer(|writer| {
            writer.push(marks);
            if let Some(tally) = writer.info.tallies.get(watch) {
                tally.add_own(counted);
            }
        });
        if !done {
            self.inner.dropped_elsewhere.fetch_add(marks.len() as u64, Ordering::Relaxed);
            if let Some(tally) = self.inner.retired.get(watch) {
                tally.add_shared(counted);
            }
        }
    }

    /// `[closed, enters, without_op]` of watch `watch`'s spans so far, over
    /// every thread.
    #[cfg(feature = "tracing")]
    pub(crate) fn tally(&self, watch: usize) -> [u64; 3] {
        let rings = self.inner.rings.readers.lock().unwrap_or_else(PoisonError::into_inner);
        let of = |tallies: &[Tally]| tallies.get(watch).map_or([0; 3], Tally::read);
        let mut seen: Vec<*const ring::RingInfo> = Vec::new();
        let mut sum = of(&self.inner.retired);
        // A thread whose ring grew has two readers of one tally.
        for r in rings.iter() {
            if !seen.contains(&Arc::as_ptr(&r.info)) {
                seen.push(Arc::as_ptr(&r.info));
                let t = of(&r.info.tallies);
                sum = std::array::from_fn(|i| sum[i] + t[i]);
            }
        }
        sum
    }

    /// Run `f` on this thread's writer for this collector (registering it
    /// on its first use); false when the thread has none to give (its
    /// thread-locals are gone, or `f` would re-enter a push on it).
    #[inline]
    fn with_writer(&self, f: impl FnOnce(&mut Writer)) -> bool {
        with_writer_of(self.inner.rings.id, || Some(self.clone()), f)
    }

    /// Take every mark handed over so far, from every thread, and the drop
    /// counts since the previous drain. Rings of threads that have exited
    /// are emptied and then forgotten, as is the full ring a thread moved
    /// on from.
    pub fn drain(&self) -> Drained {
        let mut rings = self.inner.rings.readers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut drained = Drained::default();
        for reader in rings.iter_mut() {
            // Read `dropped` first: a drop counted after this read belongs to
            // the next drain, as does any mark pushed after the chunk below.
            let dropped = reader.info.dropped.swap(0, Ordering::Relaxed);
            let available = reader.ring.slots();
            if available == 0 && dropped == 0 {
                continue;
            }
            let thread = drained.entry(&reader.info);
            thread.dropped += dropped;
            if let Ok(chunk) = reader.ring.read_chunk(available) {
                let (first, second) = chunk.as_slices();
                thread.marks.reserve(first.len() + second.len());
                thread.marks.extend_from_slice(first);
                thread.marks.extend_from_slice(second);
                chunk.commit_all();
            }
        }
        rings.retain(|r| self.keeps_ring(r, &mut drained));
        drained.threads.retain(|t| !t.marks.is_empty() || t.dropped > 0);
        drained.dropped_elsewhere = self.inner.dropped_elsewhere.swap(0, Ordering::Relaxed);
        drained
    }

    /// Whether a drained ring stays registered. One whose writer is gone
    /// (its thread exited, or moved on to a larger ring) is forgotten once
    /// empty; the last of a thread's says it exited. The last reader of a thread hands its tallies to the
    /// collector's own, and any drops counted since the drain read them
    /// (the thread found its ring full while this drain emptied it, then
    /// exited) go into this drain: forgotten with the ring, they had been
    /// lost (once in about a hundred runs of a test).
    fn keeps_ring(&self, r: &Reader, drained: &mut Drained) -> bool {
        let gone = r.ring.is_abandoned() && r.ring.is_empty();
        if gone && Arc::strong_count(&r.info) == 1 {
            for (retired, tally) in self.inner.retired.iter().zip(r.info.tallies.iter()) {
                retired.add_shared(tally.read());
            }
            let late = r.info.dropped.swap(0, Ordering::Relaxed);
            if late > 0 {
                drained.entry(&r.info).dropped += late;
            }
            // A writer dropped without its collector (never here: the
            // collector is alive) would leave 0; the ring's own order is
            // the safe floor.
            let ended = r.info.ended_after.load(Ordering::Relaxed).max(r.info.order);
            drained.exited.push(ThreadExit { thread: r.info.thread, registered_by_then: ended });
        }
        !gone
    }

    /// Threads that hold a ring of this collector now.
    pub fn threads(&self) -> usize {
        let rings = self.inner.rings.readers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen: Vec<ThreadId> = Vec::new();
        for r in rings.iter() {
            if !seen.contains(&r.info.thread) {
                seen.push(r.info.thread);
            }
        }
        seen.len()
    }

    /// The largest ring each thread that holds one has had, by name.
    pub fn ring_sizes(&self) -> Vec<(String, usize)> {
        let rings = self.inner.rings.readers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut sizes: Vec<(String, usize)> = Vec::new();
        for r in rings.iter() {
            let size = r.info.ring_marks.load(Ordering::Relaxed);
            if !sizes.iter().any(|(name, _)| *name == r.info.name) {
                sizes.push((r.info.name.clone(), size));
            }
        }
        sizes
    }
}

/// Run `f` on this thread's writer for collector `id`, registering one
/// with the collector `get` gives on first use (`None`: the collector is
/// gone, nothing runs). False when nothing ran.
#[inline]
fn with_writer_of(id: u64, get: impl FnOnce() -> Option<Collector>, f: impl FnOnce(&mut Writer)) -> bool {
    WRITERS
        .try_with(|writers| {
            // A failed borrow is a push re-entering itself on this thread
            // (a signal handler, a registration that marks).
            let Ok(mut writers) = writers.try_borrow_mut() else { return false };
            let writer = match writers.iter_mut().position(|w| w.collector == id) {
                Some(at) => &mut writers[at],
                None => match get() {
                    Some(collector) => register(&collector, &mut writers),
                    None => return false,
                },
            };
            f(writer);
            true
        })
        .unwrap_or(false)
}

/// Give the current thread a ring of `collector`: the one allocation and
/// lock of its life as a marking thread. Writers of collectors that are
/// gone are pruned here, so a thread that outlives many collectors keeps a
/// short list.
#[cold]
#[inline(never)]
fn register<'a>(collector: &Collector, writers: &'a mut Vec<Writer>) -> &'a mut Writer {
    writers.retain(|w| !w.is_stale());
    writers.push(Writer::register(&collector.inner.rings, |n| format!("{UNNAMED}{n}")));
    let last = writers.len() - 1;
    &mut writers[last]
}

#[cfg(test)]
mod tests;
