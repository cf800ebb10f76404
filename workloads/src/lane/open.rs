//! The reference lanes opened: one [`Workload`] over a [`Shape`] (its
//! table emptied before every block, its inputs built, its rows counted
//! after) around the code of the lane — the inline statement, the floor
//! writer, the reference writer or a peer — behind [`Target`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hopscope_harness::{BlockId, BlockInfo, BoxError, HandIn, Ops, Placement, Setup, Workload};
use hopscope_probe::{Hop, NoProbe, Probe, Recording, local};
use rusqlite::Connection;

use super::{LaneKind, LaneSpec};
use crate::db::{self, DbConfig};
use crate::error::{RunError, WriteError};
use crate::floor::{Floor, FloorClient, FloorOptions};
use crate::inline::Inline;
use crate::knobs::{BlobHandover, Knobs};
use crate::peers::Peer;
use crate::shape::{OpInput, Shape};
use crate::value::{Value, ValueRef};
use crate::writer::Writer;

/// What runs a block's inputs: the code of one reference lane.
pub(crate) trait Target: Send + Sync + 'static {
    /// Run `inputs` on the calling thread as caller `caller` (`ops` pace
    /// them with the run's gap); returns the rows changed.
    fn run(&self, caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError>;

    /// Before a block, outside its measured region (an injected delay's
    /// schedule flips here).
    fn before_block(&self, block: &BlockInfo) {
        let _ = block;
    }

    /// Have the lane's own thread hand its marks in.
    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        let _ = hand_in;
        Ok(())
    }
}

/// A reference lane opened on its database: its code, a second connection
/// for resets and counts outside blocks, and the block's inputs.
pub(super) struct ShapeWorkload {
    target: Box<dyn Target>,
    shape: Shape,
    path: PathBuf,
    admin: Mutex<Connection>,
    blob: Arc<[u8]>,
    /// Each caller's inputs for the coming block, built before it.
    inputs: Mutex<Vec<Vec<OpInput>>>,
}

impl Workload for ShapeWorkload {
    fn before_block(&self, block: &BlockInfo) -> Result<(), BoxError> {
        self.target.before_block(block);
        if self.shape.inserts() {
            let admin = self.admin.lock().unwrap_or_else(PoisonError::into_inner);
            admin.execute_batch(&format!("DELETE FROM {}", self.shape.table()))?;
        }
        let inputs =
            (0..block.callers).map(|c| block.ops_of(c).map(|op| self.shape.input(op.index(), &self.blob)).collect());
        *self.inputs.lock().unwrap_or_else(PoisonError::into_inner) = inputs.collect();
        Ok(())
    }

    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let inputs = self.inputs.lock().unwrap_or_else(PoisonError::into_inner).get_mut(caller).map(std::mem::take);
        Ok(self.target.run(caller, inputs.unwrap_or_default(), ops)?)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        Ok(self.target.hand_in(hand_in)?)
    }

    fn count(&self) -> Result<Option<u64>, BoxError> {
        let rows = db::count_rows(&self.path, self.shape.table())?;
        if self.shape.inserts() {
            return Ok(Some(rows));
        }
        // Updates change rows in place: the seeded rows must all be there.
        if rows != self.shape.seed_rows() {
            return Err(format!("the table holds {rows} rows, {} were seeded", self.shape.seed_rows()).into());
        }
        Ok(None)
    }
}

/// Open one build of `spec` in `setup`'s directory.
pub(super) fn open(
    spec: &LaneSpec,
    setup: &Setup,
    shape: Shape,
    db: DbConfig,
    probed: bool,
) -> Result<ShapeWorkload, BoxError> {
    // A lane name may hold `/` (a placement twin's `unpinned/writer`): the
    // file takes it as one word.
    let path = setup.path(&format!("{}.db", spec.name.replace('/', "-")));
    let fail = |source| RunError::Database { path: path.clone(), source };
    let target: Box<dyn Target> = match (spec.kind, probed) {
        (LaneKind::Inline, false) => {
            Box::new(InlineLane(Mutex::new(Inline::open(&path, db, shape.sql(), NoProbe).map_err(fail)?)))
        }
        (LaneKind::Inline, true) => {
            Box::new(InlineLane(Mutex::new(Inline::open(&path, db, shape.sql(), Recording).map_err(fail)?)))
        }
        (LaneKind::Floor, false) => Box::new(FloorLane::open(spec, &path, db, shape, NoProbe)?),
        (LaneKind::Floor, true) => Box::new(FloorLane::open(spec, &path, db, shape, Recording)?),
        (LaneKind::Writer(knobs), probed) => {
            let knobs = Knobs { placement: spec.placement, ..knobs };
            if probed {
                Box::new(WriterLane::open(&path, db, shape, knobs, Recording).map_err(fail)?)
            } else {
                Box::new(WriterLane::open(&path, db, shape, knobs, NoProbe).map_err(fail)?)
            }
        }
        (LaneKind::WriterHook(knobs), false) => {
            let knobs = Knobs { placement: spec.placement, ..knobs };
            Box::new(WriterLane::open(&path, db, shape, knobs, NoProbe).map_err(fail)?)
        }
        (LaneKind::WriterHook(knobs), true) => {
            Box::new(super::hook::HookedWriter::open(&path, db, shape, Knobs { placement: spec.placement, ..knobs })?)
        }
        (LaneKind::InlineHook, false) => {
            Box::new(InlineLane(Mutex::new(Inline::open(&path, db, shape.sql(), NoProbe).map_err(fail)?)))
        }
        (LaneKind::InlineHook, true) => Box::new(super::hook::HookedInline::open(&path, db, shape)?),
        (LaneKind::Peer(peer), probed) => open_peer(peer, &path, db, shape, spec.placement, probed)?,
        // Opened by `LaneSpec::lane` without a database.
        (LaneKind::Handoff, _) => {
            return Err(RunError::Plan(format!("lane `{}`: a handoff lane has no database", spec.name)).into());
        }
    };
    let admin = db::open(&path, db).map_err(fail)?;
    seed(&admin, shape).map_err(fail)?;
    Ok(ShapeWorkload {
        target,
        shape,
        path: path.clone(),
        admin: Mutex::new(admin),
        blob: shape.blob_source(),
        inputs: Mutex::new(Vec::new()),
    })
}

/// Empty the shape's table and insert the rows update shapes need.
fn seed(admin: &Connection, shape: Shape) -> rusqlite::Result<()> {
    admin.execute_batch(&format!("DELETE FROM {}", shape.table()))?;
    if shape.seed_rows() > 0 {
        admin.execute_batch("BEGIN")?;
        {
            let mut insert = admin.prepare("INSERT INTO items (id, k, v) VALUES (?1, ?1, 'seed')")?;
            for id in 1..=shape.seed_rows() as i64 {
                insert.execute([id])?;
            }
        }
        admin.execute_batch("COMMIT")?;
    }
    Ok(())
}

#[cfg(feature = "peers")]
fn open_peer(
    peer: Peer,
    path: &Path,
    db: DbConfig,
    shape: Shape,
    placement: Placement,
    probed: bool,
) -> Result<Box<dyn Target>, RunError> {
    crate::peers::open(peer, path, db, shape, placement, probed)
}

#[cfg(not(feature = "peers"))]
fn open_peer(
    peer: Peer,
    _path: &Path,
    _db: DbConfig,
    _shape: Shape,
    _placement: Placement,
    _probed: bool,
) -> Result<Box<dyn Target>, RunError> {
    Err(crate::peers::not_built(&peer.to_string()))
}

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

struct FloorLane<P: Probe> {
    // Declared before `floor` so the clients' channels close first.
    clients: Vec<FloorClient<P>>,
    floor: Floor<P>,
    handover: Option<BlobHandover>,
    probe: P,
}

impl<P: Probe> FloorLane<P> {
    fn open(spec: &LaneSpec, path: &Path, db: DbConfig, shape: Shape, probe: P) -> Result<Self, RunError> {
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

pub(super) struct WriterLane<P: Probe> {
    writer: Writer<P>,
    probe: P,
    sql: &'static str,
    copy_blobs: bool,
}

impl<P: Probe> WriterLane<P> {
    fn open(path: &Path, db: DbConfig, shape: Shape, knobs: Knobs, probe: P) -> rusqlite::Result<Self> {
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
