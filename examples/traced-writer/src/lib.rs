//! A small writer-thread library of the kind hopscope decomposes, written
//! the way an application would write it: a crossbeam channel to a thread
//! that owns a rusqlite connection, a one-shot reply per call, and `tracing`
//! spans as its only instrumentation. Nothing here knows about hopscope.
//!
//! The spans carry the operation id in the field `op`, so a layer can join
//! the caller's spans with the writer thread's into one operation:
//!
//! | span | thread | covers |
//! |---|---|---|
//! | `write` | caller | the whole call |
//! | `send` | caller | building and sending the request |
//! | `execute` | writer | running the statement |
//! | `reply` | writer | sending the result back |
//! | `wait` | caller | waiting for the result |

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use rusqlite::Connection;

/// The statement every write runs.
pub const INSERT: &str = "INSERT INTO notes (k, body) VALUES (?1, ?2)";

/// Why a write failed.
#[derive(Debug)]
pub enum Error {
    /// SQLite refused the statement.
    Sqlite(rusqlite::Error),
    /// The writer thread is gone.
    Stopped,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Sqlite(e) => write!(f, "SQLite: {e}"),
            Error::Stopped => f.write_str("the writer thread has stopped"),
        }
    }
}

impl std::error::Error for Error {}

/// What travels to the writer thread: one insert and where its result goes.
struct Message {
    op: u64,
    k: i64,
    body: String,
    reply: Sender<Result<i64, Error>>,
}

/// A handle to the writer thread; dropping it lets the thread finish.
pub struct Writer {
    tx: Option<Sender<Message>>,
    thread: Option<JoinHandle<()>>,
    next_op: AtomicU64,
}

impl Writer {
    /// Open `path` (WAL, synchronous=NORMAL), create the table, and start
    /// the writer thread on it.
    pub fn open(path: &Path) -> Result<Writer, Error> {
        let conn = open_db(path)?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new()
            .name("traced-writer".to_owned())
            .spawn(move || serve(&conn, &rx))
            .map_err(|_| Error::Stopped)?;
        Ok(Writer { tx: Some(tx), thread: Some(thread), next_op: AtomicU64::new(0) })
    }

    /// Insert one note; returns its rowid.
    pub fn insert(&self, k: i64, body: String) -> Result<i64, Error> {
        let op = self.next_op.fetch_add(1, Ordering::Relaxed);
        let _write = tracing::info_span!("write", op).entered();
        let tx = self.tx.as_ref().ok_or(Error::Stopped)?;
        let (reply, result) = crossbeam_channel::bounded(1);
        tracing::info_span!("send", op)
            .in_scope(|| tx.send(Message { op, k, body, reply }))
            .map_err(|_| Error::Stopped)?;
        tracing::info_span!("wait", op).in_scope(|| result.recv()).map_err(|_| Error::Stopped)?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Open the database at `path` as the writer does: WAL, synchronous=NORMAL,
/// the notes table.
pub fn open_db(path: &Path) -> Result<Connection, Error> {
    let conn = Connection::open(path).map_err(Error::Sqlite)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, body TEXT NOT NULL);",
    )
    .map_err(Error::Sqlite)?;
    Ok(conn)
}

/// The note the example inserts as operation `index`.
pub fn note(index: u64) -> String {
    format!("note {index}")
}

/// Insert one note on `conn`, on the calling thread: the statement the
/// writer thread runs. Returns its rowid.
pub fn insert_on(conn: &Connection, k: i64, body: &str) -> Result<i64, Error> {
    conn.prepare_cached(INSERT)
        .and_then(|mut statement| statement.execute((k, body)))
        .map(|_| conn.last_insert_rowid())
        .map_err(Error::Sqlite)
}

fn serve(conn: &Connection, rx: &Receiver<Message>) {
    for Message { op, k, body, reply } in rx {
        let result = tracing::info_span!("execute", op).in_scope(|| insert_on(conn, k, &body));
        tracing::info_span!("reply", op).in_scope(|| {
            let _ = reply.send(result);
        });
    }
}

/// The writer decomposed by hopscope's harness (feature `hopscope`).
#[cfg(feature = "hopscope")]
pub mod decompose;
