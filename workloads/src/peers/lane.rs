//! The peer lanes (feature `peers`): each peer crate opened on its own
//! database and driven the way its documentation shows, from the runner's
//! caller threads.
//!
//! Async peers run on a current-thread tokio runtime that the caller thread
//! drives with `block_on` for the whole block, as an async program awaiting
//! each write in turn would. Runtimes are built when the lane opens (one per
//! caller of the shape), so no block pays for one.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use hopscope_harness::{Ops, Placement, placement};
use tokio::runtime::Runtime;

use crate::db::{self, DbConfig, JournalMode, Synchronous};
use crate::error::{RunError, WriteError};
use crate::lane::Target;
use crate::peers::Peer;
use crate::shape::{OpInput, Shape};
use crate::value::Value;

/// Open `peer` on the database at `path` for `shape`.
pub(crate) fn open(
    peer: Peer,
    path: &Path,
    db: DbConfig,
    shape: Shape,
    placement: Placement,
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
    let client = opener.block_on(Client::open(peer, path, db, core)).map_err(fail)?;
    Ok(Box::new(PeerLane { peer, client, sql: shape.sql(), runtimes: Mutex::new(runtimes) }))
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
    async fn open(peer: Peer, path: &Path, db: DbConfig, core: Option<usize>) -> Result<Client, String> {
        let error = |e: &dyn std::fmt::Display| e.to_string();
        // Threads a peer starts inherit the opener's CPU mask; each peer's
        // own thread is placed where the lane's placement says.
        let place = move || placement::place_worker(core);
        match peer {
            Peer::TokioRusqlite => {
                let conn = tokio_rusqlite::Connection::open(path).await.map_err(|e| error(&e))?;
                conn.call(move |conn| {
                    place();
                    db::configure(conn, db)
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
                        db::configure(conn, db)
                    })
                    .await
                    .map_err(|e| error(&e))?;
                Ok(Client::AsyncSqlite(client))
            }
            Peer::Sqlx => {
                use sqlx::ConnectOptions;
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
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .journal_mode(journal)
                    .synchronous(synchronous)
                    .busy_timeout(std::time::Duration::from_secs(5));
                // sqlx offers no hook on its worker thread: the thread ids
                // that appear while it connects are its.
                let before = placement::task_ids();
                let conn = options.connect().await.map_err(|e| error(&e))?;
                for tid in placement::task_ids().into_iter().filter(|t| !before.contains(t)) {
                    placement::place_task(tid, core);
                }
                Ok(Client::Sqlx(tokio::sync::Mutex::new(conn)))
            }
            Peer::Deadpool => {
                let pool = deadpool_sqlite::Config::new(path)
                    .builder(deadpool_sqlite::Runtime::Tokio1)
                    .map_err(|e| error(&e))?
                    .max_size(1)
                    .build()
                    .map_err(|e| error(&e))?;
                let conn = pool.get().await.map_err(|e| error(&e))?;
                conn.interact(move |conn| db::configure(conn, db))
                    .await
                    .map_err(|e| error(&e))?
                    .map_err(|e| error(&e))?;
                let runtime = tokio::runtime::Handle::current();
                Ok(Client::Deadpool(Deadpool { pool: Some(pool), runtime }, core))
            }
        }
    }
}

struct PeerLane {
    peer: Peer,
    client: Client,
    sql: &'static str,
    /// One current-thread runtime per caller, lent to it for a block.
    runtimes: Mutex<Vec<Runtime>>,
}

impl PeerLane {
    fn failed(&self, error: impl std::fmt::Display) -> WriteError {
        WriteError::Peer { peer: self.peer.name().to_owned(), message: error.to_string() }
    }

    /// Run one statement; returns the rows it changed.
    async fn execute(&self, params: Vec<Value>) -> Result<u64, WriteError> {
        match &self.client {
            Client::TokioRusqlite(conn) => {
                let run = statement(self.sql, params);
                conn.call(move |conn| run(conn)).await.map_err(|e| self.failed(e))
            }
            Client::AsyncSqlite(client) => client.conn(statement(self.sql, params)).await.map_err(|e| self.failed(e)),
            Client::Sqlx(conn) => {
                let mut conn = conn.lock().await;
                self.sqlx_execute(&mut conn, params).await
            }
            Client::Deadpool(Deadpool { pool: Some(pool), .. }, core) => {
                let (core, run) = (*core, statement(self.sql, params));
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
        for (input, _op) in inputs.into_iter().zip(ops) {
            changes += self.execute(one_statement(input)?).await?;
        }
        Ok(changes)
    }
}

/// The statement every rusqlite-based peer runs on its own thread: the
/// lane's SQL, cached, with `params`; returns the rows it changed.
fn statement(
    sql: &'static str,
    params: Vec<Value>,
) -> impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<u64> + Send + 'static {
    move |conn| {
        let mut statement = conn.prepare_cached(sql)?;
        statement.execute(rusqlite::params_from_iter(params.iter())).map(|n| n as u64)
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
            for (input, _op) in inputs.into_iter().zip(ops) {
                let run = statement(self.sql, one_statement(input)?);
                changes += client.conn_blocking(run).map_err(|e| self.failed(e))?;
            }
            return Ok(changes);
        }
        let lent = self.runtimes.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let runtime = match lent {
            Some(runtime) => runtime,
            // More callers than the shape declared: pay for a runtime once.
            None => runtime().map_err(|e| self.failed(e))?,
        };
        let result = runtime.block_on(self.run_block(inputs, ops));
        self.runtimes.lock().unwrap_or_else(PoisonError::into_inner).push(runtime);
        result
    }
}
