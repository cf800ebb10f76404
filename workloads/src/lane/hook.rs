//! The reference writer and the inline statement marked the way the peers
//! are: the peers' reference and their baseline.
//!
//! A probed peer is marked by the caller around the call and by SQLite's
//! own trace hook around the statement; the reference writer's own marks
//! are finer and sit elsewhere (its `woke` is its thread's wake, before it
//! prepares and binds; a peer's is SQLite's first step, after). Paired slice
//! by slice with a peer, only the same instrument on the same hops says
//! where the peer loses, so this build of the writer keeps the caller's
//! `enter` and `done`, names the operation on the writer thread where its
//! own `woke` would be, and lets [`SqliteProbe`] mark the statement.

use std::path::Path;
use std::sync::Mutex;

use hopscope_harness::{BlockInfo, HandIn, HookedStatements, Ops};
use hopscope_probe::collector::{Collector, DEFAULT_RING_MARKS};
use hopscope_probe::sqlite::{self, SqliteProbe, TransactionHops, Unpaired};
use hopscope_probe::{Hop, OpId, Probe, local};

use super::reference::{InlineLane, WriterLane};
use super::spec::{INLINE_HOOK, WRITER_HOOK};
use super::target::Target;
use crate::db::{self, DbConfig};
use crate::error::{RunError, WriteError};
use crate::inline::Inline;
use crate::knobs::Knobs;
use crate::shape::{OpInput, Shape};
use crate::worker::WRITER_ROLE;

/// The writer's marks as a peer's: `enter` and `done` recorded on the
/// caller, the writer's `woke` turned into the operation its statement
/// serves (ended at `replied`), every other hop dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PeerMarks;

impl Probe for PeerMarks {
    // Operation ids are made and carried to the writer as in a probed build.
    const RECORDS: bool = true;

    #[inline]
    fn mark(&self, op: OpId, hop: Hop) {
        match hop {
            Hop::ENTER | Hop::DONE => local::record(op, hop),
            // A group's requests are taken (`woke`) before any of their
            // statements runs: each statement's own mark names its request.
            Hop::WOKE | crate::GroupHops::EXECUTING => sqlite::set_op(Some(op)),
            Hop::REPLIED => sqlite::set_op(None),
            _ => {}
        }
    }

    #[inline]
    fn mark_on_cpu(&self, op: OpId, hop: Hop) {
        match hop {
            Hop::ENTER | Hop::DONE => local::record_on_cpu(op, hop),
            _ => self.mark(op, hop),
        }
    }

    /// The hook marks one statement per operation: a shared interval
    /// has no statement of its own here.
    #[inline]
    fn serves(&self, _shared: OpId, _member: OpId) {}
}

/// The reference writer, its statements marked by SQLite's trace hook.
pub(super) struct HookedWriter {
    lane: WriterLane<PeerMarks>,
    statements: HookedStatements,
}

impl HookedWriter {
    pub(super) fn open(path: &Path, config: DbConfig, shape: Shape, knobs: Knobs) -> Result<HookedWriter, RunError> {
        let fail = |source| RunError::Database { path: path.to_path_buf(), source };
        let mut probe = SqliteProbe::new(Collector::new(DEFAULT_RING_MARKS), Hop::WOKE, Hop::EXECUTED);
        if knobs.group_commit.is_on() {
            // A group's transaction: one shared interval, its BEGIN and
            // COMMIT marked by the hook at the group hops' ids.
            use crate::GroupHops;
            probe = probe.transactions(TransactionHops {
                begin: GroupHops::BEGIN,
                began: GroupHops::BEGAN,
                commit: GroupHops::COMMIT,
                committed: GroupHops::COMMITTED,
            });
        }
        let conn = db::open(path, config).map_err(fail)?;
        db::create_schema(&conn).map_err(fail)?;
        // Attached before the writer thread takes the connection: the
        // schema's statements ran on no operation, and are not marked.
        probe.attach(&conn).map_err(|e| fail(rusqlite::Error::UserFunctionError(Box::new(e))))?;
        Ok(HookedWriter {
            lane: WriterLane::spawn(conn, shape, knobs, PeerMarks),
            statements: HookedStatements::new(probe),
        })
    }
}

impl Target for HookedWriter {
    fn before_block(&self, block: &BlockInfo) {
        self.lane.before_block(block);
        self.statements.begin();
    }

    fn run(&self, caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        self.lane.run(caller, inputs, ops)
    }

    /// The writer thread hands in (its CPU time; it records no marks of its
    /// own), then the statements' marks go in as its role.
    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        self.lane.hand_in(hand_in)?;
        self.statements.end(hand_in, WRITER_ROLE).map_err(|e| unpaired(WRITER_HOOK, e))
    }
}

/// The inline statement's marks as a peer's: `enter` and `done` recorded
/// on the caller, the operation named for the statement SQLite's hook marks
/// between them (on the same thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct InlineMarks;

impl Probe for InlineMarks {
    const RECORDS: bool = true;

    #[inline]
    fn mark(&self, op: OpId, hop: Hop) {
        match hop {
            Hop::ENTER => {
                local::record(op, hop);
                sqlite::set_op(Some(op));
            }
            Hop::DONE => {
                sqlite::set_op(None);
                local::record(op, hop);
            }
            _ => {}
        }
    }

    #[inline]
    fn mark_on_cpu(&self, op: OpId, hop: Hop) {
        match hop {
            Hop::ENTER => {
                local::record_on_cpu(op, hop);
                sqlite::set_op(Some(op));
            }
            _ => self.mark(op, hop),
        }
    }

    /// The inline statement serves one operation: no shared interval.
    #[inline]
    fn serves(&self, _shared: OpId, _member: OpId) {}
}

/// The inline statement, marked by SQLite's trace hook on the caller: the
/// peers' baseline, the same instrument with no thread to cross.
pub(super) struct HookedInline {
    lane: InlineLane<InlineMarks>,
    statements: HookedStatements,
}

impl HookedInline {
    pub(super) fn open(path: &Path, config: DbConfig, shape: Shape) -> Result<HookedInline, RunError> {
        let fail = |source| RunError::Database { path: path.to_path_buf(), source };
        let probe = SqliteProbe::new(Collector::new(DEFAULT_RING_MARKS), Hop::WOKE, Hop::EXECUTED);
        let inline = Inline::open(path, config, shape.sql(), InlineMarks).map_err(fail)?;
        // After the schema and the statement's preparation: no operation's.
        probe.attach(inline.connection()).map_err(|e| fail(rusqlite::Error::UserFunctionError(Box::new(e))))?;
        Ok(HookedInline { lane: InlineLane(Mutex::new(inline)), statements: HookedStatements::new(probe) })
    }
}

impl Target for HookedInline {
    fn before_block(&self, _block: &BlockInfo) {
        self.statements.begin();
    }

    fn run(&self, caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        self.lane.run(caller, inputs, ops)
    }

    /// The statements' marks, made on the callers, go in as their own role.
    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        self.statements.end(hand_in, hopscope_harness::SQLITE_ROLE).map_err(|e| unpaired(INLINE_HOOK, e))
    }
}

/// A hooked lane's block whose statements did not pair with its operations.
pub(crate) fn unpaired(lane: &str, error: Unpaired) -> WriteError {
    WriteError::Peer { peer: lane.to_owned(), message: error.to_string() }
}
