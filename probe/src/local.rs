//! The hot path: a preallocated, fixed-capacity mark buffer per thread.
//!
//! [`attach`] allocates a thread's buffer once, outside any measured region.
//! [`record`] then reads the clock and writes one [`Mark`] into it: no lock,
//! no allocation, no syscall, no formatting. A full buffer never grows and
//! never blocks: the mark is dropped and the drop counted exactly. [`drain`]
//! empties the buffer at a block boundary and hands back the marks and the
//! drop count.
//!
//! The buffer is owned by its thread and only that thread touches it, so
//! draining a writer thread's marks means asking the writer thread to drain
//! (the lanes do this with a control message between blocks).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::{self, Ticks};
use crate::hop::{Hop, Mark, OpId};

struct Local {
    marks: RefCell<Vec<Mark>>,
    // The capacity asked for in `attach`. Compared explicitly rather than
    // trusting `Vec::capacity`, which an allocator may round up.
    limit: Cell<usize>,
    dropped: Cell<u64>,
}

thread_local! {
    // `const` initialisation: no lazy-init check on each access.
    static LOCAL: Local = const {
        Local { marks: RefCell::new(Vec::new()), limit: Cell::new(0), dropped: Cell::new(0) }
    };
}

/// Marks that arrived after their thread's buffer was destroyed (thread
/// exit). Counted here, process-wide, so no drop goes unreported.
static DROPPED_AFTER_EXIT: AtomicU64 = AtomicU64::new(0);

/// Give the current thread a mark buffer holding up to `capacity` marks, and
/// calibrate the clock if that has not happened yet. Call it before the
/// measured region; calling it again resizes the buffer and keeps pending
/// marks that fit (the others are counted as drops).
pub fn attach(capacity: usize) {
    let _ = clock::clock();
    LOCAL.with(|local| {
        let mut marks = local.marks.borrow_mut();
        if marks.len() > capacity {
            let excess = (marks.len() - capacity) as u64;
            marks.truncate(capacity);
            local.dropped.set(local.dropped.get() + excess);
        }
        let additional = capacity - marks.len();
        marks.shrink_to(capacity);
        marks.reserve_exact(additional);
        local.limit.set(capacity);
    });
}

/// Record that `op` passed `hop` now.
///
/// Cost: one clock read plus a thread-local bounds-checked store (measured
/// by `hopscope calibrate` and `cargo bench -p hopscope-probe`). Never
/// allocates: a thread with a full buffer drops the mark and counts it. A
/// thread without a buffer ([`attach`] not called) hands the mark to the
/// running live capture ([`crate::Capture::live`]), which keeps the
/// operations its sampling keeps, or, with none running, counts it as
/// dropped.
#[inline]
pub fn record(op: OpId, hop: Hop) {
    #[cfg(feature = "what-if")]
    crate::whatif::on_mark(op, hop);
    let stored = LOCAL.try_with(|local| {
        if local.limit.get() == 0 {
            if !crate::collector::route::offer(op, hop) {
                local.dropped.set(local.dropped.get() + 1);
            }
            return;
        }
        store(local, Mark::new(op, hop, clock::now()));
    });
    if stored.is_err() {
        DROPPED_AFTER_EXIT.fetch_add(1, Ordering::Relaxed);
    }
}

/// [`record`], and sample the CPU the thread runs on into the mark. On TSC
/// hosts one `rdtscp` gives both, but it costs about twice a plain read on
/// VMs, so callers sample once per operation per thread (its first mark
/// there), not at every hop.
#[inline]
pub fn record_on_cpu(op: OpId, hop: Hop) {
    #[cfg(feature = "what-if")]
    crate::whatif::on_mark(op, hop);
    let (ticks, cpu) = clock::now_on_cpu();
    push(Mark { op, hop, cpu, ticks });
}

/// Record that the shared interval `shared` serves the operation `member`
/// (a batch's transaction serving each request drained into it): one
/// store of a link ([`Mark::serves`]), no clock read. Mark the interval's
/// own hops once, under `shared`'s id; each member then waits for all of
/// it in the analysis, and its cost is divided among the members. Same
/// guarantees as [`record`]; under a live capture's sampling, link an
/// interval to its members before marking its hops (see
/// [`crate::collector::Sampling`]).
#[inline]
pub fn serves(shared: OpId, member: OpId) {
    push(Mark::serves(shared, member));
}

/// Store an already timestamped mark (used by layers that read the clock
/// themselves). Same guarantees as [`record`].
#[inline]
pub fn push(mark: Mark) {
    let stored = LOCAL.try_with(|local| {
        if local.limit.get() == 0 {
            if !crate::collector::route::push(mark) {
                local.dropped.set(local.dropped.get() + 1);
            }
            return;
        }
        store(local, mark);
    });
    if stored.is_err() {
        DROPPED_AFTER_EXIT.fetch_add(1, Ordering::Relaxed);
    }
}

/// `mark` into an attached thread's buffer, or counted as dropped.
#[inline]
fn store(local: &Local, mark: Mark) {
    // A failed borrow means re-entry (a mark taken inside a drain on the
    // same thread, e.g. from a signal handler): drop and count it.
    let Ok(mut marks) = local.marks.try_borrow_mut() else {
        local.dropped.set(local.dropped.get() + 1);
        return;
    };
    // `limit <= capacity`, so `len < limit` guarantees `push` does not
    // reallocate.
    if marks.len() < local.limit.get() {
        marks.push(mark);
    } else {
        local.dropped.set(local.dropped.get() + 1);
    }
}

thread_local! {
    static NEXT_OP: Cell<u64> = const { Cell::new(0) };
    static THREAD_TAG: Cell<u64> = const { Cell::new(0) };
}

/// Source of per-thread tags for [`next_op`]; 0 means "not yet assigned".
static THREAD_TAGS: AtomicU64 = AtomicU64::new(1);

/// Bits of an op id that count operations within one thread.
const OP_SEQUENCE_BITS: u32 = 40;

/// A fresh operation id, unique in the process: a per-thread tag in the high
/// bits, a per-thread counter in the low 40. No shared counter is touched
/// after a thread's first call.
#[inline]
pub fn next_op() -> OpId {
    let tag = THREAD_TAG.with(|tag| {
        if tag.get() == 0 {
            tag.set(THREAD_TAGS.fetch_add(1, Ordering::Relaxed));
        }
        tag.get()
    });
    let seq = NEXT_OP.with(|next| {
        let seq = next.get();
        next.set(seq.wrapping_add(1) & ((1 << OP_SEQUENCE_BITS) - 1));
        seq
    });
    OpId((tag << OP_SEQUENCE_BITS) | seq)
}

/// The id [`next_op`] last handed out on this thread, if it handed out one:
/// lets code around a call that allocated its own op id mark the same
/// operation (e.g. [`crate::Hop::RETURNED`] after the call's result is
/// dropped). Reads two thread-locals; no shared state.
#[inline]
pub fn last_op() -> Option<OpId> {
    let tag = THREAD_TAG.with(Cell::get);
    if tag == 0 {
        return None;
    }
    let seq = NEXT_OP.with(|next| next.get().wrapping_sub(1) & ((1 << OP_SEQUENCE_BITS) - 1));
    Some(OpId((tag << OP_SEQUENCE_BITS) | seq))
}

/// Read the clock; the timestamp half of [`record`] for callers that store
/// marks themselves.
#[inline]
pub fn now() -> Ticks {
    clock::now()
}

/// What a thread's buffer held at a block boundary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Drained {
    /// Marks in the order they were recorded.
    pub marks: Vec<Mark>,
    /// Marks dropped since the previous drain (buffer full or not attached).
    pub dropped: u64,
}

/// Move the current thread's marks into `into` (appended) and return the
/// number dropped since the last drain. The buffer keeps its capacity, so
/// the next block records without allocating.
pub fn drain_into(into: &mut Vec<Mark>) -> u64 {
    LOCAL.with(|local| {
        into.extend(local.marks.borrow_mut().drain(..));
        local.dropped.replace(0)
    })
}

/// Empty the current thread's buffer; see [`drain_into`].
pub fn drain() -> Drained {
    let mut marks = Vec::new();
    let dropped = drain_into(&mut marks);
    Drained { marks, dropped }
}

/// Capacity of the current thread's buffer (0 when not attached).
pub fn capacity() -> usize {
    LOCAL.with(|local| local.limit.get())
}

/// Marks lost because their thread had already torn down its buffer.
pub fn dropped_after_exit() -> u64 {
    DROPPED_AFTER_EXIT.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_fresh_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().expect("test thread")
    }

    #[test]
    fn last_op_is_the_id_next_op_just_handed_out_on_this_thread() {
        std::thread::spawn(|| {
            assert_eq!(last_op(), None, "a fresh thread has handed out nothing");
            let a = next_op();
            assert_eq!(last_op(), Some(a));
            let b = next_op();
            assert_eq!(last_op(), Some(b));
            assert_ne!(a, b);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_full_buffer_keeps_capacity_marks_and_counts_exact_drops() {
        for (capacity, extra) in [(1, 0), (8, 3), (1000, 1), (64, 1000)] {
            let drained = on_fresh_thread(move || {
                attach(capacity);
                for i in 0..(capacity + extra) as u64 {
                    record(OpId(i), Hop::SENT);
                }
                drain()
            });
            assert_eq!(drained.marks.len(), capacity);
            assert_eq!(drained.dropped, extra as u64);
            // The kept marks are the first ones, in order.
            let ops: Vec<u64> = drained.marks.iter().map(|m| m.op.0).collect();
            assert_eq!(ops, (0..capacity as u64).collect::<Vec<_>>());
        }
    }

    #[test]
    fn an_unattached_thread_records_nothing_and_counts_every_mark() {
        let drained = on_fresh_thread(|| {
            for _ in 0..5 {
                record(OpId(1), Hop::ENTER);
            }
            drain()
        });
        assert!(drained.marks.is_empty());
        assert_eq!(drained.dropped, 5);
    }

    #[test]
    fn drain_resets_the_count_and_keeps_the_capacity() {
        let (first, second, cap) = on_fresh_thread(|| {
            attach(2);
            for _ in 0..3 {
                record(OpId(0), Hop::ENTER);
            }
            let first = drain();
            record(OpId(1), Hop::DONE);
            let second = drain();
            (first, second, capacity())
        });
        assert_eq!((first.marks.len(), first.dropped), (2, 1));
        assert_eq!((second.marks.len(), second.dropped), (1, 0));
        assert_eq!(cap, 2);
    }

    #[test]
    fn recording_does_not_reallocate_the_buffer() {
        let same = on_fresh_thread(|| {
            attach(16);
            let before = LOCAL.with(|l| l.marks.borrow().as_ptr());
            for i in 0..40 {
                record(OpId(i), Hop::WOKE);
            }
            let after = LOCAL.with(|l| l.marks.borrow().as_ptr());
            before == after
        });
        assert!(same);
    }

    #[test]
    fn marks_are_in_time_order_on_one_thread() {
        let drained = on_fresh_thread(|| {
            attach(100);
            for i in 0..100 {
                record(OpId(i), Hop::EXECUTED);
            }
            drain()
        });
        assert!(drained.marks.windows(2).all(|w| w[0].ticks <= w[1].ticks));
    }

    #[test]
    fn marks_carry_the_cpu_where_rdtscp_gives_it() {
        let drained = on_fresh_thread(|| {
            attach(4);
            record_on_cpu(OpId(1), Hop::ENTER);
            record(OpId(1), Hop::SENT);
            drain()
        });
        assert_eq!(drained.marks[1].cpu, Mark::UNKNOWN_CPU, "plain marks do not sample the CPU");
        let mark = drained.marks[0];
        let tsc = clock::ClockInfo::measure().source == clock::ClockSource::Tsc;
        if tsc && crate::host::cpu_has_flag("rdtscp") && cfg!(target_os = "linux") {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            assert!(usize::from(mark.cpu) < cores.max(64), "cpu {} out of range", mark.cpu);
        } else {
            assert_eq!(mark.cpu, Mark::UNKNOWN_CPU);
        }
    }

    #[test]
    fn op_ids_are_unique_across_threads() {
        let mut ids: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| (0..1000).map(|_| next_op().0).collect::<Vec<_>>()))
            .flat_map(|h| h.join().expect("thread"))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 4000);
    }

    #[test]
    fn shrinking_an_attached_buffer_counts_the_marks_it_loses() {
        let drained = on_fresh_thread(|| {
            attach(10);
            for i in 0..10 {
                record(OpId(i), Hop::BUILT);
            }
            attach(4);
            drain()
        });
        assert_eq!((drained.marks.len(), drained.dropped), (4, 6));
    }
}
