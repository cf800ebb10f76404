//! Results as Parquet tables, so a query engine (DuckDB, Spark, ClickHouse)
//! can compare decompositions from many hosts and commits: `runs`, `lanes`,
//! `figures`, `blocks`, `slices` and, on request, `marks`, one file each
//! (`<table>.parquet`), every row keyed by `run_id`. The columns are the
//! fields of the row structs in `rows` and are documented in
//! `docs/parquet.md`.
//!
//! Rows come from each run's `result.json` (already read into a
//! [`Decomposition`](hopscope_analyze::Decomposition)) and, for `marks`,
//! from its `trace.hop`, streamed one block at a time into row groups, so
//! a long trace never sits in memory.
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
mod types;

use std::path::Path;

pub use types::{RunSource, SCHEMA, TABLES, Table, TableError, Written};

/// Whether this build writes Parquet (the `parquet` cargo feature).
pub const BUILT: bool = cfg!(feature = "parquet");

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
