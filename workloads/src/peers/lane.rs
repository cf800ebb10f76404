//! The peer lanes (feature `peers`): each peer crate opened on its own
//! database and driven the way its documentation shows, from the runner's
//! caller threads.
//!
//! Async peers run on a current-thread tokio runtime that the caller thread
//! drives with `block_on` for the whole block, as an async program awaiting
//! each write in turn would. Runtimes are built when the lane opens (one per
//! caller of the shape), so no block pays for one.
//!
//! A probed build marks the caller around each call (`enter`, `done`) and
//! the statement where the peer runs it, through SQLite's own trace hook
//! ([`SqliteProbe`]): its start as `woke` (the peer's thread has woken and
//! run its own dispatch up to the statement), its end as `executed`. The
//! operation reaches the statement inside the closure the peer runs on its
//! thread ([`with_op`]); sqlx runs no closure of ours on its worker, so
//! each call announces its operation under the lock that serialises calls
//! into the connection, and the probe gives it to the next statement the
//! worker starts ([`SqliteProbe::in_order`]).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use hopscope_harness::{HandIn, HookedStatements, Ops, Placement, placement};
use hopscope_probe::collector::{Collector, DEFAULT_RING_MARKS};
use hopscope_probe::sqlite::{SqliteProbe, with_op};
use hopscope_probe::{Hop, OpId, Probe, Recording};
use tokio::runtime::Runtime;

use crate::db::{self, DbConfig, JournalMode, Synchronous};
use crate::error::{RunError, WriteError};
use crate::lane::{Target, unpaired};
use crate::peers::peer::Peer;
use crate::shape::{OpInput, Shape};
use crate::value::Value;
use crate::worker::WRITER_ROLE;

/// Open `peer` on the database at `path` for `shape`.
pub(crate) fn open(
    peer: Peer,
    path: &Path,
    db: DbConfig,
    shape: Shape,
    placement: Placement,
    probed: bool,
) -> Result<Box<dyn Target>, RunError> {
    if !shape.single_statement() {
        return Err(RunError::Plan(format!("lane `{peer}`: peers run single statements, not {shape}")));
    }
    let fail = |message: String| RunError::Plan(format!("lane `{peer}`: cannot open {}: {message}", path.display()));
    // The schema (and WAL, which the file keeps) first, on a plain
    // connection; each peer then sets the per-connection pragmas itself.
    let conn = db::open(path, db).map_err(|source| RunError::Database { path: PathBuf::from(path), source })?;
    db::create_schema(&conn).map_err(|source| RunError::Database { path: PathBuf::from(path), source })?;
    drop(conn);
    let runtimes = (0..shape.callers()).map(|_| runtime()).collect::<Result<Vec<_>, _>>().map_err(fail)?;
    let core = placement.worker_core();
    let opener = runtimes.first().ok_or_else(|| fail("no caller".to_owned()))?;
    let probe = probed.then(|| {
        let collector = Collector::new(DEFAULT_RING_MARKS);
        match peer {
            Peer::Sqlx => SqliteProbe::in_order(collector, Hop::WOKE, Hop::EXECUTED),
            _ => SqliteProbe::new(collector, Hop::WOKE, Hop::EXECUTED),
        }
    });
    let client = opener.block_on(Client::open(peer, path, db, core, probe.clone())).map_err(fail)?;
    let statements = probe.map(HookedStatements::new);
    Ok(Box::new(PeerLane { peer, client, sql: shape.sql(), runtimes: Mutex::new(runtimes), statements }))
}

fn runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())
}

/// One open peer.
enum Client {
    TokioRusqlite(tokio_rusqlite::Connection),
    AsyncSqlite(async_sqlite::Client),
    /// One connection shared by the callers, taken in turn.
    Sqlx(tokio::sync::Mutex<sqlx::SqliteConnection>),
    /// The pool, and the core its blocking threads go to.
    Deadpool(Deadpool, Option<usize>),
}

/// deadpool's pool, dropped inside a runtime: closing its connection spawns
/// a blocking task, which needs one.
struct Deadpool {
    pool: Option<deadpool_sqlite::Pool>,
    runtime: tokio::runtime::Handle,
}

impl Drop for Deadpool {
    fn drop(&mut self) {
        let _inside = self.runtime.enter();
        self.pool.take();
    }
}

impl Client {
    /// `peer` opened on `path` with `db`'s pragmas, its own thread placed on
    /// `core` and, in a probed build, `probe` attached after the pragmas.
    async fn open(
        peer: Peer,
        path: &Path,
        db: DbConfig,
        core: Option<usize>,
        probe: Option<SqliteProbe>,
    ) -> Result<Client, String> {
        let error = |e: &dyn std::fmt::Display| e.to_string();
        // Configured, then probed: the pragmas are no operation's.
        let attach = probe.clone();
        let configure = move |conn: &rusqlite::Connection| -> rusqlite::Result<()> {
            db::configure(conn, db)?;
            if let Some(probe) = &attach {
                probe.attach(conn).map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?;
            }
            Ok(())
        };
        // Threads a peer starts inherit the opener's CPU mask; each peer's
        // own thread is placed where the lane's placement says.
        let place = move || placement::place_worker(core);
        match peer {
            Peer::TokioRusqlite => {
                let conn = tokio_rusqlite::Connection::open(path).await.map_err(|e| error(&e))?;
                conn.call(move |conn| {
                    place();
                    configure(conn)
                })
                .await
                .map_err(|e| error(&e))?;
                Ok(Client::TokioRusqlite(conn))
            }
            Peer::AsyncSqlite | Peer::AsyncSqliteBlocking => {
                let client = async_sqlite::ClientBuilder::new().path(path).open().await.map_err(|e| error(&e))?;
                client
                    .conn(move |conn| {
                        place();
                        configure(conn)
                    })
                    .await
                    .map_err(|e| error(&e))?;
                Ok(Client::AsyncSqlite(client))
            }
            Peer::Sqlx => Client::open_sqlx(path, db, core, probe.as_ref()).await,
            Peer::Deadpool => Client::open_deadpool(path, configure, core).await,
        }
    }

    /// sqlx's connection with `db`'s pragmas, its worker thread placed on
    /// `core` and, in a probed build, `probe` attached to it.
    async fn open_sqlx(
        path: &Path,
        db: DbConfig,
        core: Option<usize>,
        probe: Option<&SqliteProbe>,
    ) -> Result<Client, String> {
        use sqlx::ConnectOptions;
        let error = |e: &dyn std::fmt::Display| e.to_string();
        // sqlx offers no hook on its worker thread: the thread ids that
        // appear while it connects are its.
        let before = placement::task_ids();
        let mut conn = sqlx_options(path, db).connect().await.map_err(|e| error(&e))?;
        for tid in placement::task_ids().into_iter().filter(|t| !before.contains(t)) {
            placement::place_task(tid, core);
        }
        if let Some(probe) = probe {
            let mut handle = conn.lock_handle().await.map_err(|e| error(&e))?;
            // SAFETY: the handle is the open connection sqlx holds locked
            // for us; SQLite's close releases the probe.
            unsafe { probe.attach_raw(handle.as_raw_handle().as_ptr()) }.map_err(|e| error(&e))?;
        }
        Ok(Client::Sqlx(tokio::sync::Mutex::new(conn)))
    }

    /// deadpool's pool of one connection, set up by `configure` on it, its
    /// blocking threads bound for `core`.
    async fn open_deadpool(
        path: &Path,
        configure: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<()> + Send + 'static,
        core: Option<usize>,
    ) -> Result<Client, String> {
        let error = |e: &dyn std::fmt::Display| e.to_string();
        let pool = deadpool_sqlite::Config::new(path)
            .builder(deadpool_sqlite::Runtime::Tokio1)
            .map_err(|e| error(&e))?
            .max_size(1)
            .build()
            .map_err(|e| error(&e))?;
        let conn = pool.get().await.map_err(|e| error(&e))?;
        conn.interact(move |conn| configure(conn)).await.map_err(|e| error(&e))?.map_err(|e| error(&e))?;
        let runtime = tokio::runtime::Handle::current();
        Ok(Client::Deadpool(Deadpool { pool: Some(pool), runtime }, core))
    }
}

/// `db`'s pragmas as sqlx's connect options for the database at `path`.
fn sqlx_options(path: &Path, db: DbConfig) -> sqlx::sqlite::SqliteConnectOptions {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
    let journal = match db.journal_mode {
        JournalMode::Wal => SqliteJournalMode::Wal,
        JournalMode::Delete => SqliteJournalMode::Delete,
        JournalMode::Memory => SqliteJournalMode::Memory,
    };
    let synchronous = match db.synchronous {
        Synchronous::Off => SqliteSynchronous::Off,
        Synchronous::Normal => SqliteSynchronous::Normal,
        Synchronous::Full => SqliteSynchronous::Full,
    };
    SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(journal)
        .synchronous(synchronous)
        .busy_timeout(std::time::Duration::from_secs(5))
}

struct PeerLane {
    peer: Peer,
    client: Client,
    sql: &'static str,
    /// One current-thread runtime per caller, lent to it for a block.
    runtimes: Mutex<Vec<Runtime>>,
    /// The probed build's statement marks.
    statements: Option<HookedStatements>,
}

impl PeerLane {
    fn failed(&self, error: impl std::fmt::Display) -> WriteError {
        WriteError::Peer { peer: self.peer.name().to_owned(), message: error.to_string() }
    }

    /// Run one statement; returns the rows it changed.
    async fn execute(&self, params: Vec<Value>, op: OpId) -> Result<u64, WriteError> {
        let op = self.statements.is_some().then_some(op);
        // Counted by every probe (so a block whose statements it never saw
        // is told from one that ran nothing); queued for sqlx's below.
        if let (Some(statements), Some(op), false) = (&self.statements, op, matches!(self.client, Client::Sqlx(_))) {
            statements.probe().announce(op);
        }
        match &self.client {
            Client::TokioRusqlite(conn) => {
                let run = statement(self.sql, params, op);
                conn.call(move |conn| run(conn)).await.map_err(|e| self.failed(e))
            }
            Client::AsyncSqlite(client) => {
                client.conn(statement(self.sql, params, op)).await.map_err(|e| self.failed(e))
            }
            Client::Sqlx(conn) => {
                let mut conn = conn.lock().await;
                // Under the lock: the worker's next statement is this call's.
                if let (Some(statements), Some(op)) = (&self.statements, op) {
                    statements.probe().announce(op);
                }
                self.sqlx_execute(&mut conn, params).await
            }
            Client::Deadpool(Deadpool { pool: Some(pool), .. }, core) => {
                let (core, run) = (*core, statement(self.sql, params, op));
                let conn = pool.get().await.map_err(|e| self.failed(e))?;
                conn.interact(move |conn| {
                    place_blocking_thread(core);
                    run(conn)
                })
                .await
                .map_err(|e| self.failed(e))?
                .map_err(|e| self.failed(e))
            }
            Client::Deadpool(Deadpool { pool: None, .. }, _) => Err(self.failed("the pool is closed")),
        }
    }

    async fn sqlx_execute(&self, conn: &mut sqlx::SqliteConnection, params: Vec<Value>) -> Result<u64, WriteError> {
        let mut query = sqlx::query(self.sql);
        for value in params {
            query = match value {
                Value::Null => query.bind(None::<i64>),
                Value::Integer(v) => query.bind(v),
                Value::Real(v) => query.bind(v),
                Value::Text(v) => query.bind(v),
                Value::Blob(v) => query.bind(v),
                Value::SharedBlob(v) => query.bind(v.to_vec()),
            };
        }
        query.execute(conn).await.map(|done| done.rows_affected()).map_err(|e| self.failed(e))
    }

    async fn run_block(&self, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        let mut changes = 0;
        for (input, op) in inputs.into_iter().zip(ops) {
            let params = one_statement(input)?;
            self.mark_on_cpu(op.id(), Hop::ENTER);
            changes += self.execute(params, op.id()).await?;
            self.mark(op.id(), Hop::DONE);
        }
        Ok(changes)
    }

    /// A caller's mark, in the probed build.
    #[inline]
    fn mark(&self, op: OpId, hop: Hop) {
        if self.statements.is_some() {
            Recording.mark(op, hop);
        }
    }

    #[inline]
    fn mark_on_cpu(&self, op: OpId, hop: Hop) {
        if self.statements.is_some() {
            Recording.mark_on_cpu(op, hop);
        }
    }
}

/// The statement every rusqlite-based peer runs on its own thread: the
/// lane's SQL, cached, with `params`; returns the rows it changed. In a
/// probed build it runs as operation `op`, for the statement's marks.
fn statement(
    sql: &'static str,
    params: Vec<Value>,
    op: Option<OpId>,
) -> impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<u64> + Send + 'static {
    move |conn| {
        let run = || {
            let mut statement = conn.prepare_cached(sql)?;
            statement.execute(rusqlite::params_from_iter(params.iter())).map(|n| n as u64)
        };
        match op {
            Some(op) => with_op(op, run),
            None => run(),
        }
    }
}

fn one_statement(input: OpInput) -> Result<Vec<Value>, WriteError> {
    match input {
        OpInput::One(params) => Ok(params),
        OpInput::Many(_) => Err(WriteError::Build { reason: "peers run single statements".to_owned() }),
    }
}

thread_local! {
    static PLACED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Place a tokio blocking-pool thread once, the first time it runs a call.
fn place_blocking_thread(core: Option<usize>) {
    if !PLACED.replace(true) {
        placement::place_worker(core);
    }
}

impl Target for PeerLane {
    fn run(&self, _caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError> {
        if self.peer == Peer::AsyncSqliteBlocking
            && let Client::AsyncSqlite(client) = &self.client
        {
            let mut changes = 0;
            for (input, op) in inputs.into_iter().zip(ops) {
                let run = statement(self.sql, one_statement(input)?, self.statements.is_some().then_some(op.id()));
                self.mark_on_cpu(op.id(), Hop::ENTER);
                changes += client.conn_blocking(run).map_err(|e| self.failed(e))?;
                self.mark(op.id(), Hop::DONE);
            }
            return Ok(changes);
        }
        self.block_on(self.run_block(inputs, ops))?
    }

    fn before_block(&self, _block: &hopscope_harness::BlockInfo) {
        // Marks of statements outside blocks (none are expected) are not
        // the block's.
        if let Some(statements) = &self.statements {
            statements.begin();
        }
    }

    /// The peer's thread samples its CPU time where it runs the lane's
    /// closures; the statements' marks, from whatever thread of the peer
    /// ran them, are handed in as the lane's writer thread.
    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        let on_thread = {
            let hand_in = hand_in.clone();
            move |_: &rusqlite::Connection| {
                hand_in.collect(WRITER_ROLE);
                Ok::<u64, rusqlite::Error>(0)
            }
        };
        match &self.client {
            Client::AsyncSqlite(client) => {
                client.conn_blocking(on_thread).map_err(|e| self.failed(e))?;
            }
            Client::TokioRusqlite(conn) => {
                self.block_on(conn.call(move |conn| on_thread(conn)))?.map_err(|e| self.failed(e))?;
            }
            Client::Deadpool(Deadpool { pool: Some(pool), .. }, _) => {
                let conn = self.block_on(pool.get())?.map_err(|e| self.failed(e))?;
                self.block_on(conn.interact(move |conn| on_thread(conn)))?
                    .map_err(|e| self.failed(e))?
                    .map_err(|e| self.failed(e))?;
            }
            // No closure of ours runs on sqlx's worker (its statements'
            // marks follow); a closed pool has no thread.
            Client::Sqlx(_) | Client::Deadpool(Deadpool { pool: None, .. }, _) => {
                hand_in.give(WRITER_ROLE, Vec::new(), 0);
            }
        }
        match &self.statements {
            Some(statements) => statements.end(hand_in, WRITER_ROLE).map_err(|e| unpaired(self.peer.name(), e)),
            None => Ok(()),
        }
    }
}

impl PeerLane {
    /// Run `future` to its end on one of the lane's runtimes (a block on
    /// its caller thread, a hand-in between blocks).
    fn block_on<F: std::future::Future>(&self, future: F) -> Result<F::Output, WriteError> {
        let lent = self.runtimes.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let runtime = match lent {
            Some(runtime) => runtime,
            // More callers than the shape declared: pay for a runtime once.
            None => runtime().map_err(|e| self.failed(e))?,
        };
        let output = runtime.block_on(future);
        self.runtimes.lock().unwrap_or_else(PoisonError::into_inner).push(runtime);
        Ok(output)
    }
}
