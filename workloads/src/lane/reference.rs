//! The reference lanes' code behind [`Target`]: the inline statement, the
//! floor writer and the reference writer, each running a caller's inputs
//! and closing its cycle (`returned`) after each call.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use hopscope_harness::{BlockId, BlockInfo, HandIn, Ops};
use hopscope_probe::{Hop, Probe, local};
use rusqlite::Connection;

use super::spec::LaneSpec;
use super::target::Target;
use crate::db::{self, DbConfig};
use crate::error::{RunError, WriteError};
use crate::floor::{Floor, FloorClient, FloorOptions};
use crate::inline::Inline;
use crate::knobs::{BlobHandover, Knobs};
use crate::shape::{OpInput, Shape};
use crate::value::{Value, ValueRef};
use crate::writer::Writer;

/// The inline statement. One connection: concurrent callers take turns
/// per operation, as they would on a shared connection.
pub(super) struct InlineLane<P: Probe>(pub(super) Mutex<Inline<P>>);

impl<P: Probe> Target for InlineLane<P> {
    fn run(&self, _caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        let mut changes = 0;
        for (input, _op) in inputs.into_iter().zip(ops) {
            let inline = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            changes += match &input {
                OpInput::One(params) => inline.execute(params)?,
                OpInput::Many(rows) => inline.batch(rows)?,
            };
        }
        Ok(changes)
    }
}

/// The floor writer, one client per caller of the shape.
pub(super) struct FloorLane<P: Probe> {
    // Declared before `floor` so the clients' channels close first.
    clients: Vec<FloorClient<P>>,
    floor: Floor<P>,
    handover: Option<BlobHandover>,
    probe: P,
}

impl<P: Probe> FloorLane<P> {
    /// The floor writer opened on `path` as `spec` places it and waits.
    pub(super) fn open(spec: &LaneSpec, path: &Path, db: DbConfig, shape: Shape, probe: P) -> Result<Self, RunError> {
        let options = FloorOptions {
            pin: spec.placement.worker_core(),
            floor_wait: spec.waits.0.on(spec.placement),
            client_wait: spec.waits.1.on(spec.placement),
        };
        let floor = Floor::open_with(path, db, shape.sql(), probe, options)
            .map_err(|source| RunError::Database { path: PathBuf::from(path), source })?;
        let clients = (0..shape.callers())
            .map(|_| floor.client())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| RunError::Write { lane: spec.name.clone(), source })?;
        let handover = match shape {
            Shape::BlobInsert { handover, .. } => Some(handover),
            _ => None,
        };
        Ok(FloorLane { clients, floor, handover, probe })
    }
}

impl<P: Probe> Target for FloorLane<P> {
    fn run(&self, caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        let client = &self.clients[caller % self.clients.len()];
        let mut changes = 0;
        for (input, _op) in inputs.into_iter().zip(ops) {
            let OpInput::One(mut params) = input else {
                return Err(WriteError::Build { reason: "the floor writer runs single statements".to_owned() });
            };
            if self.handover == Some(BlobHandover::Copy) {
                copy_shared_blobs(&mut params);
            }
            changes += client.execute(params)?;
            returned(self.probe);
        }
        Ok(changes)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        self.floor.hand_in(hand_in)
    }
}

/// Close the caller's cycle: mark `returned` for the operation the call
/// just made, once its result has been used and dropped.
#[inline]
fn returned<P: Probe>(probe: P) {
    if P::RECORDS
        && let Some(op) = local::last_op()
    {
        probe.mark(op, Hop::RETURNED);
    }
}

/// The floor's "copy" hand-over: the caller copies the bytes it lends.
fn copy_shared_blobs(params: &mut [Value]) {
    for p in params {
        if let Value::SharedBlob(shared) = p {
            *p = Value::Blob(shared.to_vec());
        }
    }
}

/// The reference writer, shared by the callers, running the shape's
/// statement.
pub(super) struct WriterLane<P: Probe> {
    writer: Writer<P>,
    probe: P,
    sql: &'static str,
    copy_blobs: bool,
}

impl<P: Probe> WriterLane<P> {
    /// The writer thread started on a new connection to `path`, its schema
    /// created.
    pub(super) fn open(path: &Path, db: DbConfig, shape: Shape, knobs: Knobs, probe: P) -> rusqlite::Result<Self> {
        let conn = db::open(path, db)?;
        db::create_schema(&conn)?;
        Ok(WriterLane::spawn(conn, shape, knobs, probe))
    }

    /// The writer thread started on `conn`, opened and set up already.
    pub(super) fn spawn(conn: Connection, shape: Shape, knobs: Knobs, probe: P) -> Self {
        let copy_blobs = matches!(shape, Shape::BlobInsert { handover: BlobHandover::Copy, .. });
        WriterLane { writer: Writer::spawn(conn, knobs, probe), probe, sql: shape.sql(), copy_blobs }
    }
}

/// Parameters per statement the copy path can lend without allocating.
const MAX_BORROWED_PARAMS: usize = 8;

impl<P: Probe> Target for WriterLane<P> {
    fn before_block(&self, block: &BlockInfo) {
        let pass = match block.id {
            BlockId::Measured { pass, .. } => Some(pass),
            BlockId::Warmup { .. } => None,
        };
        self.writer.before_block(pass);
    }

    fn run(&self, _caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        let mut changes = 0;
        for (input, _op) in inputs.into_iter().zip(ops) {
            changes += match input {
                OpInput::One(params) if self.copy_blobs && params.len() <= MAX_BORROWED_PARAMS => {
                    // The "copy" hand-over: lend the bytes, the writer copies
                    // them into its request.
                    let mut lent = [ValueRef::Null; MAX_BORROWED_PARAMS];
                    for (slot, p) in lent.iter_mut().zip(&params) {
                        *slot = p.as_value_ref();
                    }
                    self.writer.execute(self.sql, &lent[..params.len()])?.changes
                }
                OpInput::One(params) => self.writer.execute_owned(self.sql, params)?.changes,
                OpInput::Many(rows) => {
                    let statements = rows.into_iter().map(|p| (self.sql.into(), p)).collect();
                    self.writer.batch(statements)?.iter().map(|o| o.changes).sum()
                }
            };
            returned(self.probe);
        }
        Ok(changes)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        self.writer.hand_in(hand_in)
    }
}
