//! What a lane runs: the [`Workload`] trait, the operations of a block
//! ([`Op`], [`Ops`]) and what a lane is told when it opens ([`Setup`]).
//!
//! The harness calls a workload only from its own caller threads, never from
//! the thread that drives the run, so a workload that panics, fails or
//! blocks stops the run with a clear error instead of taking it down.

use std::fmt;
use std::path::{Path, PathBuf};

use hopscope_probe::{OpId, Variant};

use crate::cpu::Gap;
use crate::hand_in::HandIn;
use crate::placement::{Pin, Placement};

/// An error from a lane's own code (its set-up, an operation, a reset, a
/// count), carried to the run's error with the lane and block named.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// One operation of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Op {
    index: u64,
}

impl Op {
    /// The operation's number: unique within a run (numbered across every
    /// lane and block from 0), so it can key a row or name an input.
    #[inline]
    pub fn index(self) -> u64 {
        self.index
    }

    /// The id its marks carry: marks with the same id on any thread of the
    /// block join into this operation's slices.
    #[inline]
    pub fn id(self) -> OpId {
        OpId(self.index)
    }
}

/// The operations one caller runs in a block, in order. Iterating waits the
/// run's caller gap (its own work between writes, usually none) before
/// yielding each operation.
#[derive(Debug, Clone)]
pub struct Ops {
    next: u64,
    step: u64,
    remaining: u64,
    gap: Gap,
    /// A lane probed through SQLite's trace hook
    /// ([`crate::Lane::probed_by_sqlite`]): each operation is announced
    /// to the probe and marked `enter` when it is handed out, `done` when
    /// the next one is asked for.
    #[cfg(feature = "sqlite")]
    marks: Option<hopscope_probe::sqlite::SqliteProbe>,
    /// The operation handed out last, not yet marked `done`.
    #[cfg(feature = "sqlite")]
    pending: Option<u64>,
}

impl Ops {
    pub(crate) fn new(first: u64, step: u64, count: u64, gap: Gap) -> Ops {
        Ops {
            next: first,
            step: step.max(1),
            remaining: count,
            gap,
            #[cfg(feature = "sqlite")]
            marks: None,
            #[cfg(feature = "sqlite")]
            pending: None,
        }
    }

    /// The same operations with `gap` before each.
    pub(crate) fn with_gap(self, gap: Gap) -> Ops {
        Ops { gap, ..self }
    }

    /// The same operations, each announced to `probe` and marked on the
    /// caller's thread as it is handed out and when the next is asked for.
    #[cfg(feature = "sqlite")]
    pub(crate) fn marked_by(self, probe: hopscope_probe::sqlite::SqliteProbe) -> Ops {
        Ops { marks: Some(probe), ..self }
    }

    /// `done` for the operation handed out last, and `enter` (after
    /// announcing it) for `op`, if the operations are marked.
    #[cfg(feature = "sqlite")]
    #[inline]
    fn mark(&mut self, op: Option<u64>) {
        let Some(probe) = &self.marks else { return };
        if let Some(done) = self.pending.take() {
            hopscope_probe::local::record(OpId(done), hopscope_probe::Hop::DONE);
        }
        if let Some(op) = op {
            probe.announce(OpId(op));
            hopscope_probe::local::record_on_cpu(OpId(op), hopscope_probe::Hop::ENTER);
            self.pending = Some(op);
        }
    }
}

impl Iterator for Ops {
    type Item = Op;

    #[inline]
    fn next(&mut self) -> Option<Op> {
        if self.remaining == 0 {
            #[cfg(feature = "sqlite")]
            self.mark(None);
            return None;
        }
        self.remaining -= 1;
        // The previous operation is done before the caller's own work.
        #[cfg(feature = "sqlite")]
        self.mark(None);
        self.gap.wait();
        let op = Op { index: self.next };
        #[cfg(feature = "sqlite")]
        self.mark(Some(op.index));
        self.next = self.next.wrapping_add(self.step);
        Some(op)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Ops {}

/// Which block of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockId {
    /// An unrecorded warm-up block.
    Warmup {
        /// Warm-up round, from 0.
        round: u32,
    },
    /// A measured block.
    Measured {
        /// Pass, from 0.
        pass: u32,
        /// Sample within the pass, from 0.
        sample: u32,
    },
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockId::Warmup { round } => write!(f, "warm-up block {round}"),
            BlockId::Measured { pass, sample } => write!(f, "block pass {pass}, sample {sample}"),
        }
    }
}

/// What a block will run, given to [`Workload::before_block`] so a lane can
/// reset its store and build its inputs outside the measured region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockInfo {
    /// Which block.
    pub id: BlockId,
    /// Index of the block's first operation.
    pub first_op: u64,
    /// Operations in the block, over all callers.
    pub ops: u64,
    /// Caller threads sharing the block.
    pub callers: usize,
}

impl BlockInfo {
    /// The operations caller `caller` will run, in order (without the gap):
    /// caller `c` of `n` runs operations `first + c`, `first + c + n`, ...
    pub fn ops_of(&self, caller: usize) -> Ops {
        let callers = self.callers.max(1) as u64;
        let caller = caller as u64;
        let count = self.ops / callers + u64::from(caller < self.ops % callers);
        Ops::new(self.first_op.wrapping_add(caller), callers, count, Gap::default())
    }
}

/// A lane opened for a run: the harness alternates it with the other lanes,
/// block by block. Every method runs on one of the harness's caller threads
/// (never inside another block); only [`Workload::run`] is timed.
///
/// Implement it for code that needs more than the closures of
/// [`crate::Lane::subject`] (several caller threads sharing one instance,
/// inputs built before each block); hopscope's own reference lanes do.
pub trait Workload: Send + Sync + 'static {
    /// Before a block, outside its measured region: reset the lane's store
    /// (empty its table), build the block's inputs.
    fn before_block(&self, block: &BlockInfo) -> Result<(), BoxError> {
        let _ = block;
        Ok(())
    }

    /// Run caller `caller`'s share of a block: every operation of `ops`, in
    /// order, on the calling thread. Returns what the operations report
    /// they did (rows changed, or one per operation), which the harness
    /// checks against [`Workload::count`].
    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError>;

    /// After a block (and once before it, to discard stale marks): have
    /// each of the lane's own threads call [`HandIn::collect`] with its
    /// role, so their marks and CPU time reach the block. Lanes without
    /// threads of their own keep the default.
    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        let _ = hand_in;
        Ok(())
    }

    /// After a block: what the lane's store holds since the last reset
    /// (rows in its table), or `None` to skip the check. A count that
    /// differs from what the block's operations reported stops the run.
    fn count(&self) -> Result<Option<u64>, BoxError> {
        Ok(None)
    }
}

/// What an operation returns to say what it did: `()` counts one
/// operation, a number counts that many (rows changed, for example
/// `rusqlite`'s `execute`).
pub trait Reported {
    /// How many this result stands for.
    fn reported(&self) -> u64;
}

impl Reported for () {
    #[inline]
    fn reported(&self) -> u64 {
        1
    }
}

impl Reported for u64 {
    #[inline]
    fn reported(&self) -> u64 {
        *self
    }
}

impl Reported for usize {
    #[inline]
    fn reported(&self) -> u64 {
        *self as u64
    }
}

/// What a lane is told when it opens: its own directory, its variant and
/// placement, and how to prepare threads of its own.
#[derive(Debug, Clone)]
pub struct Setup {
    pub(crate) dir: PathBuf,
    pub(crate) lane: String,
    pub(crate) variant: Option<Variant>,
    pub(crate) placement: Placement,
    pub(crate) thread: ThreadInit,
    /// The probe of a build probed through SQLite's trace hook.
    #[cfg(feature = "sqlite")]
    pub(crate) sqlite: Option<hopscope_probe::sqlite::SqliteProbe>,
}

impl Setup {
    /// In the probed build of a lane probed through SQLite's trace hook
    /// ([`crate::Lane::probed_by_sqlite`]), the probe to attach to the
    /// connection the lane's writer uses (`None` in its clean build, which
    /// must stay unprobed).
    #[cfg(feature = "sqlite")]
    pub fn sqlite_probe(&self) -> Option<&hopscope_probe::sqlite::SqliteProbe> {
        self.sqlite.as_ref()
    }

    /// The lane's own directory, empty when the lane opens: each lane (and
    /// each of its variants) gets one, so no two lanes share a database.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `file` inside [`Setup::dir`].
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// The trace lane being opened (`writer`, `writer-probed`, ...).
    pub fn lane(&self) -> &str {
        &self.lane
    }

    /// Which build is being opened; `None` for a lane with one build only.
    pub fn variant(&self) -> Option<Variant> {
        self.variant
    }

    /// Where the lane's threads run.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// What a thread of the lane's own (its writer) must run first, on that
    /// thread: see [`ThreadInit::enter`].
    pub fn thread_init(&self) -> ThreadInit {
        self.thread.clone()
    }
}

/// Prepares one of a lane's own threads: a mark buffer, its place, and (for
/// lanes probed by a `tracing` dispatcher) the variant's dispatcher.
#[derive(Clone)]
pub struct ThreadInit {
    pub(crate) capacity: usize,
    pub(crate) placement: Placement,
    #[cfg(feature = "tracing")]
    pub(crate) dispatch: Option<tracing::Dispatch>,
}

impl fmt::Debug for ThreadInit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadInit").field("capacity", &self.capacity).field("placement", &self.placement).finish()
    }
}

impl ThreadInit {
    /// Run once on the thread, before it marks: gives it a mark buffer
    /// sized for a block, pins it where the lane's placement puts its own
    /// thread, and makes the variant's dispatcher its default for the rest
    /// of its life.
    pub fn enter(&self) {
        hopscope_probe::local::attach(self.capacity);
        self.placement.place_worker();
        #[cfg(feature = "tracing")]
        if let Some(dispatch) = &self.dispatch {
            // The guard would restore the previous default when dropped; the
            // thread keeps this one until it ends.
            std::mem::forget(tracing::dispatcher::set_default(dispatch));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_share_a_block_s_operations_without_overlap() {
        let block = BlockInfo { id: BlockId::Warmup { round: 0 }, first_op: 100, ops: 10, callers: 3 };
        let mut all: Vec<u64> = (0..3).flat_map(|c| block.ops_of(c).map(Op::index)).collect();
        assert_eq!(block.ops_of(0).map(Op::index).collect::<Vec<_>>(), [100, 103, 106, 109]);
        all.sort_unstable();
        assert_eq!(all, (100..110).collect::<Vec<_>>());
    }

    #[test]
    fn ops_count_exactly_and_carry_their_index_as_id() {
        let ops = Ops::new(7, 1, 3, Gap::default());
        assert_eq!(ops.len(), 3);
        let ids: Vec<OpId> = ops.map(Op::id).collect();
        assert_eq!(ids, [OpId(7), OpId(8), OpId(9)]);
    }

    #[test]
    fn every_result_reports_what_it_stands_for() {
        assert_eq!(().reported(), 1);
        assert_eq!(3usize.reported(), 3);
        assert_eq!(0u64.reported(), 0);
    }
}
