//! One replica: a database with the model's schema, local writes that tick
//! its clocks, the changes it has made since a version, and a snapshot of
//! its state in terms every replica shares (pk text and site ids, never
//! local keys or ordinals) for convergence checks.

use std::path::Path;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params};

use crate::merge::change::{COLUMNS, Change, SiteId, TABLE};

/// The schema of one replica.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY NOT NULL, a, b, c, d);
CREATE TABLE IF NOT EXISTS items__pks (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS items__clock (
    key INTEGER NOT NULL,
    col TEXT NOT NULL,
    col_version INTEGER NOT NULL,
    db_version INTEGER NOT NULL,
    site INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (key, col)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items__clock_dbv ON items__clock (db_version);
CREATE TABLE IF NOT EXISTS sites (ordinal INTEGER PRIMARY KEY, site_id BLOB NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS local (one INTEGER PRIMARY KEY CHECK (one = 1), site_id BLOB NOT NULL, db_version INTEGER NOT NULL);
";

/// A replica's database connection and identity.
#[derive(Debug)]
pub struct Replica {
    conn: Connection,
    site: SiteId,
}

/// A replica's state as any replica would describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Data rows: (pk, values of [`COLUMNS`]), by pk.
    pub rows: Vec<(String, Vec<SqlValue>)>,
    /// Clock rows: (pk, column, col_version, site id), by pk and column.
    pub clocks: Vec<(String, String, i64, SiteId)>,
}

impl Replica {
    /// Open (creating) the replica at `path` as site `site`.
    pub fn open(path: &Path, site: SiteId) -> rusqlite::Result<Replica> {
        Replica::with(Connection::open(path)?, site)
    }

    /// A replica in memory.
    pub fn in_memory(site: SiteId) -> rusqlite::Result<Replica> {
        Replica::with(Connection::open_in_memory()?, site)
    }

    fn with(conn: Connection, site: SiteId) -> rusqlite::Result<Replica> {
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")?;
        conn.execute_batch(SCHEMA)?;
        conn.execute("INSERT OR IGNORE INTO local (one, site_id, db_version) VALUES (1, ?1, 0)", params![&site[..]])?;
        Ok(Replica { conn, site })
    }

    /// The connection (merges run on it).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// This replica's site id.
    pub fn site(&self) -> SiteId {
        self.site
    }

    /// Write cells locally in one transaction, as an application would:
    /// each cell's version grows by one and the writes share one new
    /// database version.
    pub fn write(&mut self, cells: &[(&str, &str, SqlValue)]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        let db_version: i64 =
            tx.query_row("UPDATE local SET db_version = db_version + 1 RETURNING db_version", [], |r| r.get(0))?;
        let site: i64 = ordinal(&tx, &self.site)?;
        for (seq, (pk, column, value)) in cells.iter().enumerate() {
            if !COLUMNS.contains(column) {
                return Err(rusqlite::Error::InvalidColumnName((*column).to_owned()));
            }
            tx.execute(
                &format!(
                    "INSERT INTO {TABLE} (id, {column}) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET {column} = ?2"
                ),
                params![pk, value],
            )?;
            tx.execute("INSERT OR IGNORE INTO items__pks (id) VALUES (?1)", params![pk])?;
            let key: i64 = tx.query_row("SELECT key FROM items__pks WHERE id = ?1", params![pk], |r| r.get(0))?;
            tx.execute(
                "INSERT INTO items__clock (key, col, col_version, db_version, site, seq) VALUES (?1, ?2, 1, ?3, ?4, ?5)
                 ON CONFLICT (key, col) DO UPDATE SET col_version = col_version + 1, db_version = ?3, site = ?4, seq = ?5",
                params![key, column, db_version, site, seq as i64],
            )?;
        }
        tx.commit()
    }

    /// Every cell change this replica holds with a database version above
    /// `since` (its own and merged ones, as cr-sqlite's `crsql_changes`),
    /// ordered by (db_version, seq).
    pub fn changes_since(&self, since: i64) -> rusqlite::Result<Vec<Change>> {
        let mut statement = self.conn.prepare(
            "SELECT p.id, c.col, c.col_version, c.db_version, s.site_id, c.seq
             FROM items__clock c JOIN items__pks p ON p.key = c.key JOIN sites s ON s.ordinal = c.site
             WHERE c.db_version > ?1 ORDER BY c.db_version, c.seq, p.id, c.col",
        )?;
        let cells = statement
            .query_map(params![since], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get::<_, Vec<u8>>(4)?,
                    r.get(5)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<(String, String, i64, i64, Vec<u8>, i64)>>>()?;
        cells
            .into_iter()
            .map(|(pk, column, col_version, db_version, site, seq)| {
                let value =
                    self.conn.query_row(&format!("SELECT {column} FROM {TABLE} WHERE id = ?1"), params![pk], |r| {
                        r.get::<_, SqlValue>(0)
                    })?;
                Ok(Change {
                    table: TABLE.to_owned(),
                    pk: vec![SqlValue::Text(pk)],
                    column,
                    value,
                    col_version,
                    db_version,
                    site: site_id(&site),
                    seq,
                })
            })
            .collect()
    }

    /// The replica's state in shared terms.
    pub fn snapshot(&self) -> rusqlite::Result<Snapshot> {
        let columns = COLUMNS.join(", ");
        let mut rows = self.conn.prepare(&format!("SELECT id, {columns} FROM {TABLE} ORDER BY id"))?;
        let rows = rows
            .query_map([], |r| {
                let values =
                    (1..=COLUMNS.len()).map(|i| r.get::<_, SqlValue>(i)).collect::<rusqlite::Result<Vec<_>>>()?;
                Ok((r.get::<_, String>(0)?, values))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut clocks = self.conn.prepare(
            "SELECT p.id, c.col, c.col_version, s.site_id FROM items__clock c
             JOIN items__pks p ON p.key = c.key JOIN sites s ON s.ordinal = c.site ORDER BY p.id, c.col",
        )?;
        let clocks = clocks
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, site_id(&r.get::<_, Vec<u8>>(3)?))))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Snapshot { rows, clocks })
    }
}

/// The ordinal of `site` on `conn`, created if new.
fn ordinal(conn: &Connection, site: &SiteId) -> rusqlite::Result<i64> {
    let found =
        conn.query_row("SELECT ordinal FROM sites WHERE site_id = ?1", params![&site[..]], |r| r.get(0)).optional()?;
    match found {
        Some(ordinal) => Ok(ordinal),
        None => {
            conn.execute("INSERT INTO sites (site_id) VALUES (?1)", params![&site[..]])?;
            Ok(conn.last_insert_rowid())
        }
    }
}

fn site_id(bytes: &[u8]) -> SiteId {
    let mut site = [0u8; 16];
    let n = bytes.len().min(16);
    site[..n].copy_from_slice(&bytes[..n]);
    site
}

/// A merger can own its replica ([`super::Merger`] over a `Replica`), so
/// one import can span several blocks of a run.
impl std::borrow::Borrow<Connection> for Replica {
    fn borrow(&self) -> &Connection {
        &self.conn
    }
}
