//! The probe's cost per statement, measured in the calling process
//! ([`measure`]): what a run states beside the slices the probe marks.

use std::time::Instant;

use rusqlite::Connection;

use super::{SqliteProbe, SqliteProbeError, set_op};
use crate::collector::Collector;
use crate::hook_cost::HookCost;
use crate::hop::{Hop, OpId};

/// Why the cost could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    /// SQLite refused the in-memory connections or the statement.
    #[error("measuring the SQLite probe's cost: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The probe did not attach.
    #[error("measuring the SQLite probe's cost: {0}")]
    Probe(#[from] SqliteProbeError),
    /// Nothing was timed (no rounds, or empty chunks).
    #[error("measuring the SQLite probe's cost: no rounds to time")]
    Empty,
}

/// The statement timed: as small as a statement gets, so the figure is the
/// probe's and SQLite's per-statement work, not the statement's.
pub const SQL: &str = "SELECT ?1";

/// Time [`SQL`] bare and probed, `chunk` statements at a time, alternating
/// which goes first each of `rounds` rounds, and SQLite's own clock read.
pub fn measure(rounds: u32, chunk: u32) -> Result<HookCost, CostError> {
    if rounds == 0 || chunk == 0 {
        return Err(CostError::Empty);
    }
    let (bare, probed) = (Connection::open_in_memory()?, Connection::open_in_memory()?);
    // A ring that holds a chunk's marks; drained after every round.
    let probe = SqliteProbe::new(Collector::new((2 * chunk as usize).next_power_of_two()), Hop(20), Hop(21));
    probe.attach(&probed)?;
    let mut next = 0i64;
    let mut differences = Vec::with_capacity(rounds as usize);
    let mut bares = Vec::with_capacity(rounds as usize);
    for round in 0..rounds {
        let mut time = |conn: &Connection, op: Option<OpId>| {
            set_op(op);
            let ns = timed_chunk(conn, chunk, &mut next);
            set_op(None);
            ns
        };
        let op = Some(OpId(u64::from(round)));
        let (b, p) = if round % 2 == 0 {
            let b = time(&bare, None)?;
            (b, time(&probed, op)?)
        } else {
            let p = time(&probed, op)?;
            (time(&bare, None)?, p)
        };
        let _ = probe.collector().drain();
        bares.push(b);
        differences.push(p - b);
    }
    probe.detach(&probed)?;
    Ok(HookCost {
        sql: SQL.to_owned(),
        ns_per_statement: quantile(&mut differences, 0.5),
        quartiles_ns: [quantile(&mut differences, 0.25), quantile(&mut differences, 0.75)],
        bare_ns: quantile(&mut bares, 0.5),
        sqlite_clock_ns: sqlite_clock_read(rounds, chunk),
        rounds,
        chunk,
    })
}

/// ns per statement of `chunk` runs of [`SQL`] on `conn`.
fn timed_chunk(conn: &Connection, chunk: u32, next: &mut i64) -> Result<f64, rusqlite::Error> {
    let mut statement = conn.prepare_cached(SQL)?;
    let start = Instant::now();
    for _ in 0..chunk {
        *next += 1;
        let mut rows = statement.query([*next])?;
        while rows.next()?.is_some() {}
    }
    Ok(start.elapsed().as_nanos() as f64 / f64::from(chunk))
}

/// ns per read of the clock SQLite reads at a statement's start and end
/// once a trace asks for its duration (the default VFS's
/// `xCurrentTimeInt64`); NaN when the VFS has none.
pub fn sqlite_clock_read(rounds: u32, chunk: u32) -> f64 {
    // SAFETY: the default VFS is registered for the process's life once
    // SQLite is initialised (the caller opened a connection, or `find`
    // initialises it); its clock only writes the i64 it is given.
    unsafe {
        let vfs = rusqlite::ffi::sqlite3_vfs_find(std::ptr::null());
        let Some(read) = vfs.as_ref().and_then(|v| v.xCurrentTimeInt64) else { return f64::NAN };
        let mut reads = Vec::with_capacity(rounds as usize);
        for _ in 0..rounds.max(1) {
            let mut now = 0i64;
            let start = Instant::now();
            for _ in 0..chunk.max(1) {
                read(vfs, &mut now);
            }
            reads.push(start.elapsed().as_nanos() as f64 / f64::from(chunk.max(1)));
        }
        quantile(&mut reads, 0.5)
    }
}

/// The `q` quantile (nearest rank) of non-empty `values`.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len().saturating_sub(1)) as f64 * q).round() as usize]
}
