//! What travels to the writer: an event with where its reply goes, the
//! roads its marks may take, and the statement that serves it. The writer
//! and each road's marks both read these.

use crossbeam_channel::Sender;
use rusqlite::Connection;

/// How the writer is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Road {
    /// No marks: the clean build.
    Plain,
    /// `hop!` and `serves!` marks (the `hopscope` feature).
    Marks,
    /// `tracing` spans, marked by whatever subscriber is installed.
    Spans,
    /// Each statement named for SQLite's trace hook (the `hopscope`
    /// feature; a probe attached to the connection marks it).
    Hook,
}

/// One event on its way to the writer, with where its reply goes.
pub(crate) struct Request {
    pub(crate) op: u64,
    pub(crate) event: String,
    pub(crate) reply: Sender<Result<i64, String>>,
}

/// A batch's row ids, or why the whole batch failed.
pub(crate) type Outcomes = rusqlite::Result<Vec<rusqlite::Result<i64>>>;

/// One event's statement.
pub(crate) fn insert(conn: &Connection, request: &Request) -> rusqlite::Result<i64> {
    conn.prepare_cached("INSERT INTO events (body) VALUES (?1)")?.insert([&request.event])
}
