//! An async notes service of the kind hopscope decomposes, written the way
//! an async application would write it: a tokio runtime, a
//! `tokio_rusqlite::Connection` (which runs every statement on a thread of
//! its own and answers through a one-shot channel), and `tracing` spans as
//! its only instrumentation. Nothing here knows about hopscope.
//!
//! | span | where | covers |
//! |---|---|---|
//! | `insert` | the task (`#[instrument]`), entered on every poll | the whole call |
//! | `execute` | tokio-rusqlite's connection thread | running the statement |
//!
//! `insert` awaits the connection thread's answer, so its future is polled
//! at least twice: once to send the statement, once when the answer has
//! come. The operation id is recorded into the span after it is created.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;

/// The statement every insert runs.
pub const INSERT: &str = "INSERT INTO notes (k, body) VALUES (?1, ?2)";

/// The schema and pragmas, for the service's connection and the inline one.
const SCHEMA: &str = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
     CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, body TEXT NOT NULL);";

/// Why an insert failed.
pub type Error = tokio_rusqlite::Error<rusqlite::Error>;

/// The service: one connection thread, shared by every task.
pub struct Notes {
    conn: tokio_rusqlite::Connection,
    next_op: AtomicU64,
}

impl Notes {
    /// Open `path` (WAL, synchronous=NORMAL) on a connection thread and
    /// create the table.
    pub async fn open(path: &Path) -> Result<Notes, Error> {
        let conn = tokio_rusqlite::Connection::open(path).await.map_err(tokio_rusqlite::Error::Error)?;
        conn.call(|c| c.execute_batch(SCHEMA)).await?;
        Ok(Notes { conn, next_op: AtomicU64::new(0) })
    }

    /// Insert one note; returns its rowid.
    #[tracing::instrument(name = "insert", skip(self, body), fields(op = tracing::field::Empty))]
    pub async fn insert(&self, k: i64, body: String) -> Result<i64, Error> {
        let op = self.next_op.fetch_add(1, Ordering::Relaxed);
        // Known only now that the call runs: recorded into the open span.
        tracing::Span::current().record("op", op);
        self.conn
            .call(move |conn| {
                let _execute = tracing::info_span!("execute", op).entered();
                insert_on(conn, k, &body)
            })
            .await
    }

    /// Rows in the notes table.
    pub async fn count(&self) -> Result<u64, Error> {
        self.conn.call(|c| c.query_row("SELECT count(*) FROM notes", [], |row| row.get(0))).await
    }

    /// Empty the notes table.
    pub async fn clear(&self) -> Result<(), Error> {
        self.conn.call(|c| c.execute_batch("DELETE FROM notes")).await
    }

    /// Run `f` on the connection thread with the connection (set-up,
    /// diagnostics: whatever the service's own calls do not cover).
    pub async fn with_connection<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    ) -> Result<R, Error> {
        self.conn.call(move |c| f(c)).await
    }
}

/// Open `path` on the calling thread as the service does: same pragmas,
/// same table.
pub fn open_db(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

/// Insert one note on `conn`, on the calling thread: the statement the
/// connection thread runs. Returns its rowid.
pub fn insert_on(conn: &Connection, k: i64, body: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached(INSERT)?.execute((k, body))?;
    Ok(conn.last_insert_rowid())
}

/// The note inserted as operation `index`.
pub fn note(index: u64) -> String {
    format!("note {index}")
}

/// The service decomposed by hopscope's harness (feature `hopscope`).
#[cfg(feature = "hopscope")]
pub mod decompose;
