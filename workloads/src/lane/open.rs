//! The reference lanes opened: one [`Workload`] over a [`Shape`] (its
//! table emptied before every block, its inputs built, its rows counted
//! after) around the code of the lane — the inline statement, the floor
//! writer, the reference writer or a peer — behind [`Target`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hopscope_harness::{BlockInfo, BoxError, HandIn, Ops, Placement, Setup, Workload};
use hopscope_probe::{NoProbe, Recording};
use rusqlite::Connection;

use super::hook::{HookedInline, HookedWriter};
use super::reference::{FloorLane, InlineLane, WriterLane};
use super::spec::{LaneKind, LaneSpec};
use super::target::Target;
use crate::db::{self, DbConfig};
use crate::error::RunError;
use crate::inline::Inline;
use crate::knobs::Knobs;
use crate::peers::Peer;
use crate::shape::{OpInput, Shape};

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
            Box::new(HookedWriter::open(&path, db, shape, Knobs { placement: spec.placement, ..knobs })?)
        }
        (LaneKind::InlineHook, false) => {
            Box::new(InlineLane(Mutex::new(Inline::open(&path, db, shape.sql(), NoProbe).map_err(fail)?)))
        }
        (LaneKind::InlineHook, true) => Box::new(HookedInline::open(&path, db, shape)?),
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
