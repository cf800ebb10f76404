//! Lanes: one way of running a shape's operations, behind one interface so
//! the runner can alternate them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use hopscope_probe::{NoProbe, Probe, Recording, Session};

use crate::cpu::Gap;
use crate::db::DbConfig;
use crate::error::{RunError, WriteError};
use crate::floor::{Floor, FloorClient, FloorOptions};
use crate::inline::Inline;
use crate::knobs::{BlobHandover, Knobs, Placement, Wait};
use crate::shape::{OpInput, Shape};
use crate::value::{Value, ValueRef};
use crate::writer::Writer;

/// Which code a lane runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    /// The statement on the calling thread.
    Inline,
    /// The bare floor writer thread.
    Floor,
    /// The reference writer with these knobs.
    Writer(Knobs),
    /// A published crate's writer thread (needs the `peers` feature).
    Peer(crate::peers::Peer),
}

/// A lane to run: its name in the trace, its code, and whether it is
/// probed (marks every hop) or clean (marks compiled out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneSpec {
    /// Name in the trace and the receipt (`inline`, `floor`, `writer`, ...).
    pub name: String,
    /// What runs.
    pub kind: LaneKind,
    /// Marks on (`Recording`) or compiled out (`NoProbe`).
    pub probed: bool,
    /// Where the caller and the lane's own thread run.
    pub placement: Placement,
    /// How the lane's own thread and its callers wait (the floor's; the
    /// writer takes its own from its knobs).
    pub waits: (Wait, Wait),
    /// Blob hand-over this lane uses on blob shapes, overriding the shape's
    /// (so two arms of an experiment can differ in it).
    pub handover: Option<BlobHandover>,
}

impl LaneSpec {
    /// A lane named `name`.
    pub fn new(name: &str, kind: LaneKind, probed: bool) -> LaneSpec {
        let (placement, waits) = match kind {
            LaneKind::Writer(knobs) => (knobs.placement, (knobs.writer_wait, knobs.caller_wait)),
            _ => (Placement::Unpinned, (Wait::Park, Wait::Park)),
        };
        LaneSpec { name: name.to_owned(), kind, probed, placement, waits, handover: None }
    }

    /// The shape this lane runs when the plan says `shape`.
    pub fn shape_for(&self, shape: Shape) -> Shape {
        match (shape, self.handover) {
            (Shape::BlobInsert { bytes, .. }, Some(handover)) => Shape::BlobInsert { bytes, handover },
            _ => shape,
        }
    }

    /// Parse a standard lane name: `inline`, `floor`, `writer` (clean) and
    /// their `-probed` variants; the writer lanes get `knobs`.
    pub fn standard(name: &str, knobs: Knobs) -> Result<LaneSpec, String> {
        let (base, probed) = match name.strip_suffix("-probed") {
            Some(base) => (base, true),
            None => (name, false),
        };
        let kind = match base {
            "inline" => LaneKind::Inline,
            "floor" => LaneKind::Floor,
            "writer" => LaneKind::Writer(knobs),
            other => match other.parse::<crate::peers::Peer>() {
                Ok(peer) if !probed => LaneKind::Peer(peer),
                Ok(peer) => return Err(format!("lane `{name}`: peer `{peer}` has no marks, so no -probed variant")),
                Err(_) => {
                    return Err(format!(
                        "unknown lane `{other}` (inline, floor, writer, each optionally -probed, or a peer: {})",
                        crate::peers::Peer::ALL.map(|p| p.name()).join(", ")
                    ));
                }
            },
        };
        // Every standard lane runs with the writer's placement and waiting
        // strategy, so lanes differ only in the code they run.
        Ok(LaneSpec {
            placement: knobs.placement,
            waits: (knobs.writer_wait, knobs.caller_wait),
            ..LaneSpec::new(name, kind, probed)
        })
    }
}

impl fmt::Display for LaneSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let probe = if self.probed { "probed" } else { "clean" };
        match &self.kind {
            LaneKind::Inline => write!(f, "inline ({probe}; placement={})", self.placement),
            LaneKind::Floor => write!(
                f,
                "floor writer ({probe}; floor-wait={} client-wait={} placement={})",
                self.waits.0, self.waits.1, self.placement
            ),
            LaneKind::Writer(knobs) => write!(f, "reference writer ({probe}; {knobs})"),
            LaneKind::Peer(peer) => {
                write!(f, "peer {} (clean; placement={}; {})", peer.version(), self.placement, peer.waits())
            }
        }
    }
}

/// A lane ready to run blocks.
pub(crate) trait Lane: Sync {
    /// Run `inputs` in order on the calling thread, as caller `caller`,
    /// busy for `gap` after each (the caller's own work between writes);
    /// returns the rows changed.
    fn run(&self, caller: usize, inputs: Vec<OpInput>, gap: Gap) -> Result<u64, WriteError>;

    /// Drain the lane's own thread's marks into `session` as `thread` and
    /// return that thread's CPU time and counters so far; `None` for lanes
    /// without a thread.
    fn flush(&self, session: &Session, thread: u16) -> Result<Option<crate::cpu::ThreadSample>, WriteError>;

    /// Where caller threads should run for this lane.
    fn placement(&self) -> Placement;
}

/// Open the lane described by `spec` on the database file `path`.
pub(crate) fn open(spec: &LaneSpec, path: &Path, db: DbConfig, shape: Shape) -> Result<Box<dyn Lane>, RunError> {
    let fail = |source| RunError::Database { path: PathBuf::from(path), source };
    Ok(match (spec.kind, spec.probed) {
        (LaneKind::Inline, false) => {
            Box::new(InlineLane::open(path, db, shape, NoProbe, spec.placement).map_err(fail)?)
        }
        (LaneKind::Inline, true) => {
            Box::new(InlineLane::open(path, db, shape, Recording, spec.placement).map_err(fail)?)
        }
        (LaneKind::Floor, probed) => {
            if !shape.single_statement() {
                return Err(RunError::Plan(format!(
                    "lane `{}`: the floor writer runs single statements, not {shape}",
                    spec.name
                )));
            }
            if probed {
                Box::new(FloorLane::open(spec, path, db, shape, Recording)?)
            } else {
                Box::new(FloorLane::open(spec, path, db, shape, NoProbe)?)
            }
        }
        (LaneKind::Peer(peer), _) => open_peer(peer, path, db, shape, spec.placement)?,
        (LaneKind::Writer(knobs), probed) => {
            let knobs = Knobs { placement: spec.placement, ..knobs };
            if probed {
                Box::new(WriterLane::open(path, db, shape, knobs, Recording).map_err(fail)?)
            } else {
                Box::new(WriterLane::open(path, db, shape, knobs, NoProbe).map_err(fail)?)
            }
        }
    })
}

#[cfg(feature = "peers")]
fn open_peer(
    peer: crate::peers::Peer,
    path: &Path,
    db: DbConfig,
    shape: Shape,
    placement: Placement,
) -> Result<Box<dyn Lane>, RunError> {
    crate::peers::open(peer, path, db, shape, placement)
}

#[cfg(not(feature = "peers"))]
fn open_peer(
    peer: crate::peers::Peer,
    _path: &Path,
    _db: DbConfig,
    _shape: Shape,
    _placement: Placement,
) -> Result<Box<dyn Lane>, RunError> {
    Err(RunError::Plan(format!("lane `{peer}`: this build has no peer lanes (cargo feature `peers`)")))
}

struct InlineLane<P: Probe> {
    inline: Mutex<Inline<P>>,
    placement: Placement,
}

impl<P: Probe> InlineLane<P> {
    fn open(path: &Path, db: DbConfig, shape: Shape, probe: P, placement: Placement) -> rusqlite::Result<Self> {
        Ok(InlineLane { inline: Mutex::new(Inline::open(path, db, shape.sql(), probe)?), placement })
    }
}

impl<P: Probe> Lane for InlineLane<P> {
    fn run(&self, _caller: usize, inputs: Vec<OpInput>, gap: Gap) -> Result<u64, WriteError> {
        let mut changes = 0;
        for input in inputs {
            gap.wait();
            // One connection: concurrent callers take turns per operation,
            // as they would on a shared connection.
            let inline = self.inline.lock().unwrap_or_else(PoisonError::into_inner);
            changes += match &input {
                OpInput::One(params) => inline.execute(params)?,
                OpInput::Many(rows) => inline.batch(rows)?,
            };
        }
        Ok(changes)
    }

    fn flush(&self, _session: &Session, _thread: u16) -> Result<Option<crate::cpu::ThreadSample>, WriteError> {
        Ok(None)
    }

    fn placement(&self) -> Placement {
        self.placement
    }
}

struct FloorLane<P: Probe> {
    // Declared before `floor` so the clients' channels close first.
    clients: Vec<FloorClient<P>>,
    floor: Floor<P>,
    handover: Option<BlobHandover>,
    placement: Placement,
}

impl<P: Probe> FloorLane<P> {
    fn open(spec: &LaneSpec, path: &Path, db: DbConfig, shape: Shape, probe: P) -> Result<Self, RunError> {
        let options = FloorOptions {
            pin: worker_core(spec.placement),
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
        Ok(FloorLane { clients, floor, handover, placement: spec.placement })
    }
}

impl<P: Probe> Lane for FloorLane<P> {
    fn run(&self, caller: usize, inputs: Vec<OpInput>, gap: Gap) -> Result<u64, WriteError> {
        let client = &self.clients[caller % self.clients.len()];
        let mut changes = 0;
        for input in inputs {
            gap.wait();
            let OpInput::One(mut params) = input else {
                return Err(WriteError::Build { reason: "the floor writer runs single statements".to_owned() });
            };
            if self.handover == Some(BlobHandover::Copy) {
                copy_shared_blobs(&mut params);
            }
            changes += client.execute(params)?;
        }
        Ok(changes)
    }

    fn flush(&self, session: &Session, thread: u16) -> Result<Option<crate::cpu::ThreadSample>, WriteError> {
        self.floor.flush(session, thread).map(Some)
    }

    fn placement(&self) -> Placement {
        self.placement
    }
}

/// The core a lane's own thread is pinned to under `placement` (the caller
/// is pinned to core 0 when placement is not `Unpinned`).
pub(crate) fn worker_core(placement: Placement) -> Option<usize> {
    match placement {
        Placement::Unpinned => None,
        Placement::SameCore => Some(0),
        Placement::DifferentCores => Some(1),
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

struct WriterLane<P: Probe> {
    writer: Writer<P>,
    sql: &'static str,
    copy_blobs: bool,
}

impl<P: Probe> WriterLane<P> {
    fn open(path: &Path, db: DbConfig, shape: Shape, knobs: Knobs, probe: P) -> rusqlite::Result<Self> {
        let copy_blobs = matches!(shape, Shape::BlobInsert { handover: BlobHandover::Copy, .. });
        Ok(WriterLane { writer: Writer::open(path, db, knobs, probe)?, sql: shape.sql(), copy_blobs })
    }
}

/// Parameters per statement the copy path can lend without allocating.
const MAX_BORROWED_PARAMS: usize = 8;

impl<P: Probe> Lane for WriterLane<P> {
    fn run(&self, _caller: usize, inputs: Vec<OpInput>, gap: Gap) -> Result<u64, WriteError> {
        let mut changes = 0;
        for input in inputs {
            gap.wait();
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
        }
        Ok(changes)
    }

    fn flush(&self, session: &Session, thread: u16) -> Result<Option<crate::cpu::ThreadSample>, WriteError> {
        self.writer.flush(session, thread).map(Some)
    }

    fn placement(&self) -> Placement {
        self.writer.knobs().placement
    }
}
