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

mod convert;
mod marks;
mod rows;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hopscope_analyze::Decomposition;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::record::RecordWriter;

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
    let mut ids = BTreeSet::new();
    for run in runs {
        let id = run.run_id();
        if marks && !run.dir.join("trace.hop").is_file() {
            return Err(TableError::NoTrace { run: id, path: run.dir.join("trace.hop") });
        }
        if !ids.insert(id.clone()) {
            return Err(TableError::DuplicateRun(id));
        }
    }
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

/// A whole table in one row group.
fn write_table<R>(out: &Path, name: &'static str, rows: &[R]) -> Result<Table, TableError>
where
    for<'a> &'a [R]: RecordWriter<R>,
{
    let mut file = TableFile::create(&out.join(format!("{name}.parquet")), name)?;
    file.write(rows)?;
    file.finish()
}

/// One Parquet file being written, a row group per [`TableFile::write`].
struct TableFile<R> {
    writer: SerializedFileWriter<BufWriter<File>>,
    name: &'static str,
    path: PathBuf,
    rows: u64,
    _row: std::marker::PhantomData<R>,
}

impl<R> TableFile<R>
where
    for<'a> &'a [R]: RecordWriter<R>,
{
    fn create(path: &Path, name: &'static str) -> Result<TableFile<R>, TableError> {
        let failed = |source| TableError::Parquet { path: path.to_owned(), source };
        let empty: &[R] = &[];
        let schema = empty.schema().map_err(failed)?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("hopscope {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("hopscope.schema".to_owned(), SCHEMA.to_owned()),
                KeyValue::new("hopscope.table".to_owned(), name.to_owned()),
            ]))
            .build();
        let file = File::create(path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
        let writer = SerializedFileWriter::new(BufWriter::new(file), schema, Arc::new(properties)).map_err(failed)?;
        Ok(TableFile { writer, name, path: path.to_owned(), rows: 0, _row: std::marker::PhantomData })
    }

    /// Append `rows` as one row group (none when empty).
    fn write(&mut self, rows: &[R]) -> Result<(), TableError> {
        if rows.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let failed = |source| TableError::Parquet { path: path.clone(), source };
        let mut group = self.writer.next_row_group().map_err(failed)?;
        rows.write_to_row_group(&mut group).map_err(failed)?;
        group.close().map_err(failed)?;
        self.rows += rows.len() as u64;
        Ok(())
    }

    fn finish(self) -> Result<Table, TableError> {
        let path = self.path;
        self.writer.close().map_err(|source| TableError::Parquet { path: path.clone(), source })?;
        Ok(Table { name: self.name, path, rows: self.rows })
    }
}
