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

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use crate::hop::Mark;

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
/// SQLite's statement hook) gather; cloning shares the same rings.
#[derive(Debug, Clone)]
pub struct Collector {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Tells this collector's rings apart in a thread's list of producers.
    id: u64,
    ring_marks: usize,
    rings: Mutex<Vec<Reader>>,
    /// Marks lost without a ring to count them in: the thread's
    /// thread-locals were gone, or a mark re-entered a push on its thread.
    dropped_elsewhere: AtomicU64,
    /// Tallies of threads whose rings are gone, and of closes made without
    /// a ring.
    retired: Box<[Tally]>,
}

/// Span watches a thread's tallies cover (a layer watches at most this
/// many spans).
pub(crate) const TALLIES: usize = 256;

/// What the closing spans of one watch did on one thread. Each thread
/// writes only its own (a load and a store, no read-modify-write shared
/// between threads: the counters of a span shared by the caller's and
/// the writer's threads no longer bounce between their cores); any thread
/// reads them.
#[derive(Debug, Default)]
struct Tally {
    closed: AtomicU64,
    enters: AtomicU64,
    without_op: AtomicU64,
}

impl Tally {
    /// Add to a tally this thread alone writes.
    #[cfg(feature = "tracing")]
    #[inline]
    fn add_own(&self, [closed, enters, without_op]: [u64; 3]) {
        for (counter, n) in [(&self.closed, closed), (&self.enters, enters), (&self.without_op, without_op)] {
            if n > 0 {
                counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
            }
        }
    }

    /// Add to a tally several threads may write (the collector's own).
    fn add_shared(&self, [closed, enters, without_op]: [u64; 3]) {
        self.closed.fetch_add(closed, Ordering::Relaxed);
        self.enters.fetch_add(enters, Ordering::Relaxed);
        self.without_op.fetch_add(without_op, Ordering::Relaxed);
    }

    fn read(&self) -> [u64; 3] {
        [&self.closed, &self.enters, &self.without_op].map(|c| c.load(Ordering::Relaxed))
    }
}

/// A tally per watch.
fn tallies() -> Box<[Tally]> {
    (0..TALLIES).map(|_| Tally::default()).collect()
}

/// What a ring's two ends share.
#[derive(Debug)]
struct RingInfo {
    thread: ThreadId,
    name: String,
    dropped: AtomicU64,
    /// This thread's closing spans, per watch.
    tallies: Box<[Tally]>,
}

#[derive(Debug)]
struct Reader {
    ring: rtrb::Consumer<Mark>,
    info: Arc<RingInfo>,
}

struct Writer {
    collector: u64,
    ring: rtrb::Producer<Mark>,
    info: Arc<RingInfo>,
}

impl Writer {
    /// `marks` into the ring; those that find it full are counted.
    #[inline]
    fn push(&mut self, marks: &[Mark]) {
        for mark in marks {
            if self.ring.push(*mark).is_err() {
                self.info.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
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
}

impl Collector {
    /// A collector whose threads get rings of `ring_marks` marks (clamped
    /// to 1 ..= [`MAX_RING_MARKS`]).
    pub fn new(ring_marks: usize) -> Collector {
        Collector {
            inner: Arc::new(Inner {
                id: COLLECTORS.fetch_add(1, Ordering::Relaxed),
                ring_marks: ring_marks.clamp(1, MAX_RING_MARKS),
                rings: Mutex::new(Vec::new()),
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
        self.inner.ring_marks
    }

    /// Hand `mark` to the collector from the current thread. Wait-free after
    /// the thread's first mark; never blocks, never grows a ring.
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
        let rings = self.inner.rings.lock().unwrap_or_else(PoisonError::into_inner);
        let of = |tallies: &[Tally]| tallies.get(watch).map_or([0; 3], Tally::read);
        rings
            .iter()
            .map(|r| of(&r.info.tallies))
            .fold(of(&self.inner.retired), |a, b| std::array::from_fn(|i| a[i] + b[i]))
    }

    /// Run `f` on this thread's writer for this collector (registering it
    /// on its first use); false when the thread has none to give (its
    /// thread-locals are gone, or `f` would re-enter a push on it).
    #[inline]
    fn with_writer(&self, f: impl FnOnce(&mut Writer)) -> bool {
        WRITERS
            .try_with(|writers| {
                // A failed borrow is a push re-entering itself on this thread
                // (a signal handler, a registration that marks).
                let Ok(mut writers) = writers.try_borrow_mut() else { return false };
                let writer = match writers.iter_mut().position(|w| w.collector == self.inner.id) {
                    Some(at) => &mut writers[at],
                    None => match self.register(&mut writers) {
                        Some(writer) => writer,
                        None => return false,
                    },
                };
                f(writer);
                true
            })
            .unwrap_or(false)
    }

    /// Give the current thread a ring: the one allocation and lock of its
    /// life as a marking thread. Writers of collectors that are gone are
    /// pruned here, so a thread that outlives many collectors keeps a short
    /// list.
    #[cold]
    #[inline(never)]
    fn register<'a>(&self, writers: &'a mut Vec<Writer>) -> Option<&'a mut Writer> {
        writers.retain(|w| !w.ring.is_abandoned());
        let (ring, reader) = rtrb::RingBuffer::new(self.inner.ring_marks);
        let mut rings = self.inner.rings.lock().unwrap_or_else(PoisonError::into_inner);
        let current = std::thread::current();
        let name = current.name().map_or_else(|| format!("{UNNAMED}{}", rings.len() + 1), str::to_owned);
        let info = Arc::new(RingInfo { thread: current.id(), name, dropped: AtomicU64::new(0), tallies: tallies() });
        rings.push(Reader { ring: reader, info: info.clone() });
        drop(rings);
        writers.push(Writer { collector: self.inner.id, ring, info });
        writers.last_mut()
    }

    /// Take every mark handed over so far, from every thread, and the drop
    /// counts since the previous drain. Rings of threads that have exited
    /// are emptied and then forgotten.
    pub fn drain(&self) -> Drained {
        let mut rings = self.inner.rings.lock().unwrap_or_else(PoisonError::into_inner);
        let mut drained = Drained::default();
        for reader in rings.iter_mut() {
            // Read `dropped` first: a drop counted after this read belongs to
            // the next drain, as does any mark pushed after the chunk below.
            let dropped = reader.info.dropped.swap(0, Ordering::Relaxed);
            let available = reader.ring.slots();
            let mut marks = Vec::with_capacity(available);
            if let Ok(chunk) = reader.ring.read_chunk(available) {
                let (first, second) = chunk.as_slices();
                marks.extend_from_slice(first);
                marks.extend_from_slice(second);
                chunk.commit_all();
            }
            if !marks.is_empty() || dropped > 0 {
                drained.threads.push(ThreadMarks {
                    thread: reader.info.thread,
                    name: reader.info.name.clone(),
                    marks,
                    dropped,
                });
            }
        }
        // A ring forgotten keeps its thread's tallies: they move to the
        // collector's own. Its drops counted since the read above (the
        // thread found its ring full while this drain emptied it, then
        // exited) go into this drain: forgotten with the ring, they had
        // been lost (once in about a hundred runs of the test below).
        rings.retain(|r| {
            let gone = r.ring.is_abandoned() && r.ring.is_empty();
            if gone {
                for (retired, tally) in self.inner.retired.iter().zip(r.info.tallies.iter()) {
                    retired.add_shared(tally.read());
                }
                let late = r.info.dropped.swap(0, Ordering::Relaxed);
                if late > 0 {
                    match drained.threads.iter_mut().find(|t| t.thread == r.info.thread) {
                        Some(thread) => thread.dropped += late,
                        None => drained.threads.push(ThreadMarks {
                            thread: r.info.thread,
                            name: r.info.name.clone(),
                            marks: Vec::new(),
                            dropped: late,
                        }),
                    }
                }
            }
            !gone
        });
        drained.dropped_elsewhere = self.inner.dropped_elsewhere.swap(0, Ordering::Relaxed);
        drained
    }

    /// Threads that hold a ring of this collector now.
    pub fn threads(&self) -> usize {
        self.inner.rings.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop::{Hop, OpId};

    fn mark(op: u64) -> Mark {
        Mark::new(OpId(op), Hop::SENT, crate::clock::Ticks(op))
    }

    #[cfg(feature = "tracing")]
    #[test]
    fn closes_are_tallied_per_thread_and_kept_when_a_thread_is_gone() {
        let collector = Collector::new(1_024);
        let threads: Vec<_> = (0..3u64)
            .map(|t| {
                let collector = collector.clone();
                std::thread::spawn(move || {
                    for i in 0..1_000 {
                        collector.close(5, 2, &[mark(t * 10_000 + i)], true);
                        collector.close(5, 0, &[], false);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        // Exact, though three threads closed spans of one watch at once.
        assert_eq!(collector.tally(5), [3_000, 6_000, 3_000]);
        assert_eq!(collector.tally(4), [0; 3]);
        // The threads are gone: their rings are emptied and forgotten,
        // their tallies kept.
        assert_eq!(collector.drain().marks(), 3_000);
        assert_eq!(collector.threads(), 0);
        assert_eq!(collector.tally(5), [3_000, 6_000, 3_000]);
    }

    #[test]
    fn marks_from_threads_that_never_hand_in_reach_the_drain() {
        let collector = Collector::new(64);
        let threads: Vec<_> = (0..3u64)
            .map(|t| {
                let collector = collector.clone();
                std::thread::Builder::new()
                    .name(format!("marker-{t}"))
                    .spawn(move || {
                        for i in 0..10 {
                            collector.push(mark(t * 100 + i));
                        }
                    })
                    .expect("spawn")
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let drained = collector.drain();
        assert_eq!(drained.marks(), 30);
        assert_eq!(drained.dropped(), 0);
        let mut names: Vec<_> = drained.threads.iter().map(|t| t.name.clone()).collect();
        names.sort();
        assert_eq!(names, ["marker-0", "marker-1", "marker-2"]);
        for t in &drained.threads {
            let base = t.marks[0].op.0;
            let ops: Vec<u64> = t.marks.iter().map(|m| m.op.0).collect();
            assert_eq!(ops, (base..base + 10).collect::<Vec<_>>(), "each thread's marks in its order");
        }
        assert_eq!(collector.threads(), 0, "rings of exited threads are forgotten once empty");
        assert_eq!(collector.drain(), Drained::default());
    }

    #[test]
    fn a_full_ring_counts_every_drop_and_a_drain_makes_room() {
        let collector = Collector::new(8);
        for i in 0..13 {
            collector.push(mark(i));
        }
        let first = collector.drain();
        assert_eq!((first.marks(), first.dropped()), (8, 5));
        let ops: Vec<u64> = first.threads[0].marks.iter().map(|m| m.op.0).collect();
        assert_eq!(ops, (0..8).collect::<Vec<_>>(), "the first marks are kept");
        for i in 0..8 {
            collector.push(mark(i));
        }
        let second = collector.drain();
        assert_eq!((second.marks(), second.dropped()), (8, 0), "drops are counted once");
    }

    #[test]
    fn a_drain_while_a_thread_marks_loses_nothing() {
        let collector = Collector::new(1 << 10);
        let marker = {
            let collector = collector.clone();
            std::thread::spawn(move || {
                for i in 0..200_000u64 {
                    collector.push(mark(i));
                    if i % 512 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut seen = 0u64;
        let mut dropped = 0u64;
        while !marker.is_finished() {
            let d = collector.drain();
            seen += d.marks() as u64;
            dropped += d.dropped();
        }
        marker.join().expect("marker");
        let d = collector.drain();
        seen += d.marks() as u64;
        dropped += d.dropped();
        assert_eq!(seen + dropped, 200_000, "every mark is either drained or counted");
    }

    #[test]
    fn two_collectors_on_one_thread_keep_their_marks_apart() {
        let (a, b) = (Collector::new(4), Collector::new(4));
        a.push(mark(1));
        b.push(mark(2));
        b.push(mark(3));
        assert_eq!(a.drain().marks(), 1);
        assert_eq!(b.drain().marks(), 2);
    }
}
