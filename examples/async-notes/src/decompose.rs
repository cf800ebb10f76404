//! The service under hopscope's harness: an inline baseline (the same
//! insert on the calling thread, same pragmas) beside the service, clean
//! and probed, either by its spans (turned into hop marks by `HopLayer` on
//! the runtime's workers and on tokio-rusqlite's connection thread, none
//! of which runs any code for hopscope) or by SQLite's own trace hook on
//! the connection tokio-rusqlite owns ([`sqlite_lanes`]).

use std::path::Path;
use std::sync::Arc;

use hopscope_harness::{BoxError, Harness, Lane};
use hopscope_probe::collector::{Collector, DEFAULT_RING_MARKS};
use hopscope_probe::sqlite::SqliteProbe;
use hopscope_probe::{Hop, HopLayer};

use crate::{Notes, insert_on, note, open_db};

/// The spans as hops: the task's `insert` on the calling side, `execute`
/// on the connection thread.
pub fn layer() -> HopLayer {
    HopLayer::new().caller("insert").database("execute")
}

/// The service on a runtime of its own with two workers.
struct Service {
    runtime: tokio::runtime::Runtime,
    notes: Arc<Notes>,
}

impl Service {
    fn open(path: &Path) -> Result<Service, BoxError> {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).thread_name("notes-worker").build()?;
        let notes = Arc::new(runtime.block_on(Notes::open(path))?);
        Ok(Service { runtime, notes })
    }

    /// One request, handled as a server handles one: a task spawned on the
    /// runtime (its polls may run on either worker), awaited by the caller.
    fn insert(&self, index: u64) -> Result<i64, BoxError> {
        let notes = self.notes.clone();
        let task = self.runtime.spawn(async move { notes.insert(index as i64, note(index)).await });
        Ok(self.runtime.block_on(task)??)
    }
}

/// `harness` with the inline baseline and the service, probed by `layer`.
pub fn lanes(harness: Harness, layer: HopLayer) -> Harness {
    harness.lane(inline()).lane(service().probed_by_spans(layer))
}

/// `harness` with the inline baseline and the service probed by SQLite's
/// own trace hook alone: its spans unused, tokio-rusqlite untouched. The
/// harness marks each call on the caller and announces it; the probe gives
/// it to the next statement the connection thread starts (one per call).
pub fn sqlite_lanes(harness: Harness) -> Harness {
    let probe = SqliteProbe::in_order(Collector::new(DEFAULT_RING_MARKS), Hop::WOKE, Hop::EXECUTED);
    let service = Lane::subject(
        "async-notes",
        |s| {
            let service = Service::open(&s.path("notes.db"))?;
            // The probed build's setup attaches the probe on the
            // connection thread, after the schema: no call's statement.
            if let Some(probe) = s.sqlite_probe().cloned() {
                let attach = service.notes.with_connection(move |c| {
                    probe.attach(c).map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))
                });
                service.runtime.block_on(attach)?;
            }
            Ok::<_, BoxError>(service)
        },
        |svc: &mut Service, op| svc.insert(op.index()).map(drop),
    )
    .reset(|svc| svc.runtime.block_on(svc.notes.clear()))
    .count(|svc| svc.runtime.block_on(svc.notes.count()))
    .describe("a tokio task per insert awaiting tokio-rusqlite's connection thread; SQLite's trace hook")
    .probed_by_sqlite(probe);
    harness.lane(inline()).lane(service)
}

/// The same insert on the calling thread: the baseline.
fn inline() -> hopscope_harness::ClosureLane<rusqlite::Connection> {
    Lane::baseline(
        "inline",
        |s| open_db(&s.path("notes.db")),
        |db, op| insert_on(db, op.index() as i64, &note(op.index())).map(drop),
    )
    .reset(|db| db.execute_batch("DELETE FROM notes"))
    .count(|db| db.query_row("SELECT count(*) FROM notes", [], |row| row.get::<_, u64>(0)))
    .describe("the same insert on the calling thread (rusqlite, WAL, synchronous=NORMAL)")
}

/// The service, one task per insert.
fn service() -> hopscope_harness::ClosureLane<Service> {
    Lane::subject(
        "async-notes",
        |s| Service::open(&s.path("notes.db")),
        |svc: &mut Service, op| svc.insert(op.index()).map(drop),
    )
    .reset(|svc| svc.runtime.block_on(svc.notes.clear()))
    .count(|svc| svc.runtime.block_on(svc.notes.count()))
    .describe("a tokio task per insert awaiting tokio-rusqlite's connection thread; #[instrument] spans")
}
