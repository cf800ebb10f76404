//! Results as Parquet tables, so a query engine (DuckDB, Spark, ClickHouse)
//! can compare decompositions from many hosts and commits: `runs`, `lanes`,
//! `figures`, `blocks`, `slices` and, on request, `marks`, one file each
//! (`<table>.parquet`), every row keyed by `run_id`. The columns are the
//! fields of the row structs in `rows` and are documented in
//! `docs/parquet.md`.
//!
//! Rows come from each run's `result.json` (already read into a
//! [`Decomposition`]) and, for `marks`, from its `trace.hop`, streamed one
//! block at a time into row groups, so a long trace never sits in memory.
//!
//! The writer is the cargo feature `parquet`; without it the types stay
//! and [`write_tables`] refuses with [`TableError::NotBuilt`] before it
//! reads or writes anything.

#[cfg(feature = "parquet")]
mod convert;
#[cfg(feature = "parquet")]
mod file;
#[cfg(feature = "parquet")]
mod marks;
#[cfg(feature = "parquet")]
mod rows;

use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;

/// Whether this build writes Parquet (the `parquet` cargo feature).
pub const BUILT: bool = cfg!(feature = "parquet");

/// Written into every file's key-value metadata (`hopscope.schema`): the
/// version of the columns. A reader that finds another refuses or adapts.
pub const SCHEMA: &str = "hopscope.tables/1";

/// The tables, in the order they are written.
pub const TABLES: [&str; 6] = ["runs", "lanes", "figures", "blocks", "slices", "marks"];

/// Rows buffered before a row group is written (marks only; the other
/// tables are one row group): bounds memory on a long trace. A buffered
/// row holds four strings (~300 bytes), so 2^17 rows keep the buffer near
/// 40 MB; at 2^20 a careful run's 840,000 marks took 313 MB of resident
/// memory. DuckDB's own row groups are of the same order (122,880 rows).
#[cfg(feature = "parquet")]
const ROW_GROUP_ROWS: usize = 1 << 17;

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

fn run_id(d: &Decomposition) -> String {
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

/// What [`write_tables`] wrote, and what a reader must know.
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

/// Write the tables of `runs` into `out` (created if missing), one
/// `<table>.parquet` per table; `marks` adds `marks.parquet` from each
/// run's trace. Everything is checked before the first file is created.
pub fn write_tables(runs: &[RunSource<'_>], out: &Path, marks: bool) -> Result<Written, TableError> {
    built(BUILT)?;
    let mut ids = std::collections::BTreeSet::new();
    for run in runs {
        let id = run.run_id();
        if marks && !run.dir.join("trace.hop").is_file() {
            return Err(TableError::NoTrace { run: id, path: run.dir.join("trace.hop") });
        }
        if !ids.insert(id.clone()) {
            return Err(TableError::DuplicateRun(id));
        }
    }
    write_checked(runs, out, marks)
}

/// The refusal of a build without the writer, before anything is read or
/// created (a function of the flag, so every build's tests see both).
fn built(built: bool) -> Result<(), TableError> {
    if built { Ok(()) } else { Err(TableError::NotBuilt) }
}

#[cfg(not(feature = "parquet"))]
fn write_checked(_runs: &[RunSource<'_>], _out: &Path, _marks: bool) -> Result<Written, TableError> {
    Err(TableError::NotBuilt)
}

/// The tables of runs already checked.
#[cfg(feature = "parquet")]
fn write_checked(runs: &[RunSource<'_>], out: &Path, marks: bool) -> Result<Written, TableError> {
    use file::{TableFile, write_table};

    let rows = convert::Rows::of(runs)?;
    std::fs::create_dir_all(out).map_err(|source| TableError::Io { path: out.to_owned(), source })?;
    let mut tables = vec![
        write_table(out, "runs", &rows.runs)?,
        write_table(out, "lanes", &rows.lanes)?,
        write_table(out, "figures", &rows.figures)?,
        write_table(out, "blocks", &rows.blocks)?,
        write_table(out, "slices", &rows.slices)?,
    ];
    let mut partial = Vec::new();
    if marks {
        let path = out.join("marks.parquet");
        let mut file = TableFile::create(&path, "marks")?;
        for run in runs {
            if let Some(cut) = marks::stream(run, &mut file)? {
                partial.push(cut);
            }
        }
        tables.push(file.finish()?);
    }
    Ok(Written { tables, partial })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_the_writer_refuses_in_one_line_that_says_how() {
        assert!(built(true).is_ok());
        let err = built(false).unwrap_err();
        assert!(matches!(err, TableError::NotBuilt));
        assert!(err.to_string().contains("--features parquet"), "{err}");
    }
}
