//! What the table writer's parts share and its callers see: the tables and
//! their schema version, one run to export and its key, a table written,
//! what a call wrote, and why it could not.

use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;

/// Written into every file's key-value metadata (`hopscope.schema`): the
/// version of the columns. A reader that finds another refuses or adapts.
pub const SCHEMA: &str = "hopscope.tables/1";

/// The tables, in the order they are written.
pub const TABLES: [&str; 6] = ["runs", "lanes", "figures", "blocks", "slices", "marks"];

/// One run to export: its decomposition and the directory it came from
/// (where `trace.hop` is, for `marks`).
#[derive(Debug, Clone, Copy)]
pub struct RunSource<'a> {
    /// The run's `result.json`, read.
    pub decomposition: &'a Decomposition,
    /// The run directory.
    pub dir: &'a Path,
}

impl RunSource<'_> {
    /// The key of this run's rows in every table: `<hostname>@<created_unix_ms>`,
    /// unique across hosts without a central registry.
    pub fn run_id(&self) -> String {
        run_id(self.decomposition)
    }
}

/// The key of `d`'s rows in every table (see [`RunSource::run_id`]).
pub(super) fn run_id(d: &Decomposition) -> String {
    format!("{}@{}", d.host.hostname, d.run.created_unix_ms)
}

/// One table file written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name (one of [`TABLES`]).
    pub name: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Rows written.
    pub rows: u64,
}

/// What [`write_tables`](super::write_tables) wrote, and what a reader
/// must know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The files, in [`TABLES`] order.
    pub tables: Vec<Table>,
    /// Traces that ended early: their marks stop at the last complete
    /// block (one sentence each).
    pub partial: Vec<String>,
}

/// Why the tables could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// This build has no Parquet writer.
    #[error("this build has no Parquet export (it is opt-in: build hopscope with `--features parquet`)")]
    NotBuilt,
    /// Two runs would share a key (the same run given twice, or two runs
    /// of one host started in the same millisecond).
    #[error("two runs have the id {0}: give each run once")]
    DuplicateRun(String),
    /// `marks` was asked for but a run kept no trace.
    #[error("run {run} kept no trace ({path} is missing): export it without marks")]
    NoTrace {
        /// The run's id.
        run: String,
        /// Where the trace should be.
        path: PathBuf,
    },
    /// The trace could not be opened.
    #[error("cannot read {path}: {source}")]
    Trace {
        /// The trace.
        path: PathBuf,
        /// The reader's error.
        source: hopscope_probe::TraceError,
    },
    /// A figure does not fit its column (a count past `i64::MAX`).
    #[error("{what} {value} does not fit a Parquet INT64 column")]
    Range {
        /// Which figure.
        what: &'static str,
        /// Its value.
        value: u128,
    },
    /// The Parquet writer failed.
    #[cfg(feature = "parquet")]
    #[error("cannot write {path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The writer's error.
        source: parquet::errors::ParquetError,
    },
    /// A file or directory could not be created.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}
