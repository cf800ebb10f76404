//! Errors of the lanes and the runner.

use std::path::PathBuf;

use crate::value::Sql;

/// Why one write failed. The writer keeps serving after every variant except
/// [`WriteError::WriterStopped`] and [`WriteError::WriterPanicked`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// SQLite refused the statement (syntax, constraint, parameter count, ...).
    #[error("SQLite error on `{sql}`: {source}", sql = sql.as_str())]
    Sqlite {
        /// The statement.
        sql: Sql,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The request could not be built on the caller side; nothing was sent.
    #[error("request not sent: {reason}")]
    Build {
        /// What is wrong with it.
        reason: String,
    },
    /// The writer thread has stopped (its handle was dropped or it could not
    /// start); the request was not executed.
    #[error("the writer thread has stopped")]
    WriterStopped,
    /// The floor writer's statement failed (the floor replies with an
    /// integer only, so it cannot say why).
    #[error("the floor writer's statement failed")]
    FloorFailed,
    /// A peer crate's call failed (peer lanes only).
    #[error("{peer}: {message}")]
    Peer {
        /// The peer's lane name.
        peer: String,
        /// Its error, as it displays it.
        message: String,
    },
    /// The transaction a group of requests shared failed (its BEGIN or its
    /// COMMIT): none of the group's statements was applied.
    #[error("the group's transaction failed: {reason}")]
    Group {
        /// The statement's error, as it displays it.
        reason: String,
    },
    /// The writer thread panicked; this and every later request fail.
    #[error("the writer thread panicked: {message}")]
    WriterPanicked {
        /// The panic message.
        message: String,
    },
}

/// Why a run could not be carried out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A lane's database could not be opened or prepared.
    #[error("cannot prepare database {path}: {source}")]
    Database {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A write failed during a measured block; a measurement with failed
    /// writes would price the wrong thing, so the run stops.
    #[error("lane `{lane}` failed a write: {source}")]
    Write {
        /// The lane.
        lane: String,
        /// The failure.
        source: WriteError,
    },
    /// The plan is not runnable (no lanes, zero ops, ...).
    #[error("invalid run plan: {0}")]
    Plan(String),
    /// The harness could not carry the run out, or a lane stopped it.
    #[error(transparent)]
    Harness(#[from] hopscope_harness::RunError),
    /// Writing the trace or the run directory failed.
    #[error("cannot write the trace: {0}")]
    Trace(#[from] hopscope_probe::TraceError),
}

/// A word on a command line or in a spec that names nothing hopscope knows:
/// a lane, a shape, a knob's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{found}`: {expected}")]
pub struct ParseError {
    /// What was being parsed (`lane`, `shape`, `reply mode`, ...).
    pub what: &'static str,
    /// The text given.
    pub found: String,
    /// What would have been accepted.
    pub expected: String,
}

impl ParseError {
    /// `found` is not a valid `what`; `expected` says what is.
    pub fn new(what: &'static str, found: &str, expected: impl Into<String>) -> ParseError {
        ParseError { what, found: found.to_owned(), expected: expected.into() }
    }
}
