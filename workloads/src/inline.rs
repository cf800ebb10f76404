//! The inline lane: the identical statement on the calling thread, pricing
//! SQLite itself.

use std::path::Path;

use hopscope_probe::{Hop, OpId, Probe, local};
use rusqlite::Connection;

use crate::db::{self, DbConfig};
use crate::error::WriteError;
use crate::value::{Sql, Value};

/// A connection used directly by its caller, with the same pragmas, schema
/// and cached statement as the writer lanes.
#[derive(Debug)]
pub struct Inline<P: Probe> {
    conn: Connection,
    sql: &'static str,
    probe: P,
}

impl<P: Probe> Inline<P> {
    /// Open `path`, create the schema, and prepare `sql`.
    pub fn open(path: &Path, config: DbConfig, sql: &'static str, probe: P) -> Result<Inline<P>, rusqlite::Error> {
        let conn = db::open(path, config)?;
        db::create_schema(&conn)?;
        conn.prepare_cached(sql)?;
        Ok(Inline { conn, sql, probe })
    }

    /// Run the lane's statement with `params` on this thread; returns the
    /// number of rows changed.
    #[inline]
    pub fn execute(&self, params: &[Value]) -> Result<u64, WriteError> {
        let op = if P::RECORDS { local::next_op() } else { OpId(0) };
        self.probe.mark_on_cpu(op, Hop::ENTER);
        let changes = self
            .conn
            .prepare_cached(self.sql)
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(params.iter())))
            .map_err(|source| WriteError::Sqlite { sql: Sql::Static(self.sql), source })?;
        self.probe.mark(op, Hop::EXECUTED);
        self.probe.mark(op, Hop::DONE);
        Ok(changes as u64)
    }

    /// Run `statements` in one transaction on this thread.
    pub fn batch(&self, rows: &[Vec<Value>]) -> Result<u64, WriteError> {
        let fail = |source| WriteError::Sqlite { sql: Sql::Static(self.sql), source };
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
        let mut changes = 0;
        for params in rows {
            match self.execute(params) {
                Ok(n) => changes += n,
                Err(err) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(err);
                }
            }
        }
        self.conn.execute_batch("COMMIT").map_err(fail)?;
        Ok(changes)
    }

    /// The connection, for set-up and checks outside measured blocks.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}
