//! The store under hopscope's harness: the same write inline (the
//! baseline), through a bare writer thread (the floor: the same channel,
//! condvar and spans, one reused slot, nothing else), through
//! [`KvWriter`] (the subject) and through a crossbeam variant of it (a
//! peer). Every lane but the baseline runs clean and probed by a
//! `HopLayer` over the same two spans, so their slices compare like with
//! like.
//!
//! `KV_WRITER_SLOWDOWN_NS=N` in the environment makes the subject's writer
//! busy N ns inside each `execute` span: a change of known size, for
//! trying `--baseline NAME --fail-on regression` on a real change.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use hopscope_harness::{BoxError, ClosureLane, Harness, Lane, Setup};
use hopscope_probe::HopLayer;
use rusqlite::Connection;

use crate::{Error, KvWriter, Slot, open_db, put, value};

/// The two spans as hops: `insert` on the caller, `execute` (the SQLite
/// statement) on the writer thread, declared as the database's time.
pub fn layer() -> HopLayer {
    HopLayer::new().caller("insert").database("execute")
}

/// Rows in the kv table of `db`, on a connection of its own.
fn rows(db: &Path) -> Result<u64, BoxError> {
    Ok(Connection::open(db)?.query_row("SELECT count(*) FROM kv", [], |row| row.get(0))?)
}

fn empty(db: &Path) -> Result<(), BoxError> {
    Ok(Connection::open(db)?.execute_batch("DELETE FROM kv")?)
}

/// A writer handle and its database file, for the row checks.
pub struct Opened<W> {
    /// The writer.
    pub writer: W,
    /// Its database.
    pub db: PathBuf,
}

impl<W> Opened<W> {
    fn new(s: &Setup, open: fn(&Path) -> Result<W, Error>) -> Result<Opened<W>, BoxError> {
        let db = s.path("kv.db");
        Ok(Opened { writer: open(&db)?, db })
    }
}

/// The baseline: the same statement on the calling thread.
pub fn inline() -> Lane {
    Lane::baseline(
        "inline",
        |s| Ok::<_, BoxError>(open_db(&s.path("kv.db"))?),
        |db: &mut Connection, op| put(db, op.index() as i64, &value(op.index())).map(drop),
    )
    .reset(|db| db.execute_batch("DELETE FROM kv"))
    .count(|db| db.query_row("SELECT count(*) FROM kv", [], |row| row.get::<_, u64>(0)))
    .describe("the same statement on the calling thread (rusqlite, WAL, synchronous=NORMAL)")
    .into()
}

/// The floor, clean only (no probed build): for checking that a floor
/// the marks cannot compare is refused.
pub fn floor_clean() -> ClosureLane<Opened<Floor>> {
    Lane::floor(
        "floor",
        |s| Opened::new(s, Floor::open),
        |f: &mut Opened<Floor>, op| f.writer.insert(op.index() as i64, value(op.index())).map(drop),
    )
    .reset(|o| empty(&o.db))
    .count(|o| rows(&o.db))
    .describe("std mpsc to a bare rusqlite thread, one reused Mutex + Condvar slot, the same spans")
}

/// The floor, clean and probed by `layer`.
pub fn floor(layer: HopLayer) -> Lane {
    floor_clean().probed_by_spans(layer)
}

/// The subject's slowdown, from `KV_WRITER_SLOWDOWN_NS` (zero when unset
/// or not a number).
fn slowdown() -> std::time::Duration {
    let ns = std::env::var("KV_WRITER_SLOWDOWN_NS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    std::time::Duration::from_nanos(ns)
}

/// The subject: [`KvWriter`], clean and probed by `layer`.
pub fn subject(layer: HopLayer) -> Lane {
    Lane::subject(
        "kv-writer",
        |s| Opened::new(s, |path| KvWriter::open_slowed(path, slowdown())),
        |w: &mut Opened<KvWriter>, op| w.writer.insert(op.index() as i64, value(op.index())).map(drop),
    )
    .reset(|o| empty(&o.db))
    .count(|o| rows(&o.db))
    .describe("std mpsc to a rusqlite thread, a Mutex + Condvar reply slot per request")
    .probed_by_spans(layer)
}

/// The peer: the same writer over crossbeam channels, clean and probed by
/// `layer`.
pub fn peer(layer: HopLayer) -> Lane {
    Lane::peer(
        "crossbeam",
        |s| Opened::new(s, Crossbeam::open),
        |w: &mut Opened<Crossbeam>, op| w.writer.insert(op.index() as i64, value(op.index())).map(drop),
    )
    .reset(|o| empty(&o.db))
    .count(|o| rows(&o.db))
    .describe("crossbeam channel to a rusqlite thread, a one-slot crossbeam reply channel per request")
    .probed_by_spans(layer)
}

/// `harness` with the four lanes declared.
pub fn lanes(harness: Harness) -> Harness {
    harness.lane(inline()).lane(floor(layer())).lane(subject(layer())).lane(peer(layer()))
}

/// The floor: a writer thread with nothing but the channel, the statement
/// and one reply slot reused by every request.
pub struct Floor {
    tx: Option<Sender<(u64, i64, String)>>,
    slot: Arc<Slot>,
    thread: Option<JoinHandle<()>>,
    next_op: u64,
}

impl Floor {
    /// Open the database at `path` and start the floor's thread.
    pub fn open(path: &Path) -> Result<Floor, Error> {
        let conn = open_db(path)?;
        let (tx, rx) = mpsc::channel::<(u64, i64, String)>();
        let slot = Arc::new(Slot::default());
        let reply = Arc::clone(&slot);
        let thread = std::thread::Builder::new()
            .name("kv-floor".to_owned())
            .spawn(move || {
                for (op, key, value) in rx {
                    let result = tracing::info_span!("execute", op).in_scope(|| put(&conn, key, &value));
                    reply.fill(result);
                }
            })
            .map_err(|_| Error::Stopped)?;
        Ok(Floor { tx: Some(tx), slot, thread: Some(thread), next_op: 0 })
    }

    /// One write, as [`KvWriter::insert`] makes it.
    pub fn insert(&mut self, key: i64, value: String) -> Result<i64, Error> {
        let op = self.next_op;
        self.next_op += 1;
        let _span = tracing::info_span!("insert", op).entered();
        self.tx.as_ref().ok_or(Error::Stopped)?.send((op, key, value)).map_err(|_| Error::Stopped)?;
        self.slot.take()
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One write on its way to the peer's thread: op id, key, value, and
/// where its result goes.
type CrossbeamRequest = (u64, i64, String, crossbeam_channel::Sender<Result<i64, Error>>);

/// The peer: [`KvWriter`]'s design over crossbeam's channels.
pub struct Crossbeam {
    tx: Option<crossbeam_channel::Sender<CrossbeamRequest>>,
    thread: Option<JoinHandle<()>>,
    next_op: u64,
}

impl Crossbeam {
    /// Open the database at `path` and start the peer's thread.
    pub fn open(path: &Path) -> Result<Crossbeam, Error> {
        let conn = open_db(path)?;
        let (tx, rx) = crossbeam_channel::unbounded::<CrossbeamRequest>();
        let thread = std::thread::Builder::new()
            .name("kv-crossbeam".to_owned())
            .spawn(move || {
                for (op, key, value, reply) in rx {
                    let result = tracing::info_span!("execute", op).in_scope(|| put(&conn, key, &value));
                    let _ = reply.send(result);
                }
            })
            .map_err(|_| Error::Stopped)?;
        Ok(Crossbeam { tx: Some(tx), thread: Some(thread), next_op: 0 })
    }

    /// One write.
    pub fn insert(&mut self, key: i64, value: String) -> Result<i64, Error> {
        let op = self.next_op;
        self.next_op += 1;
        let _span = tracing::info_span!("insert", op).entered();
        let (reply, result) = crossbeam_channel::bounded(1);
        self.tx.as_ref().ok_or(Error::Stopped)?.send((op, key, value, reply)).map_err(|_| Error::Stopped)?;
        result.recv().map_err(|_| Error::Stopped)?
    }
}

impl Drop for Crossbeam {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
