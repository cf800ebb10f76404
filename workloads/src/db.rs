//! Opening a lane's database: the same pragmas and schema for every lane.
//!
//! Each lane owns its own file, so lanes never contend for SQLite's write
//! lock and a lane's table growth never slows another lane.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use rusqlite::Connection;

use crate::error::ParseError;

/// SQLite `journal_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalMode {
    /// Write-ahead log (the default here, as in most writer-thread libraries).
    Wal,
    /// Rollback journal, deleted at commit.
    Delete,
    /// No journal on disk.
    Memory,
}

/// SQLite `synchronous`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// No fsync.
    Off,
    /// fsync at checkpoints in WAL mode (the default here).
    Normal,
    /// fsync at every commit.
    Full,
}

/// The pragmas every lane's connection gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbConfig {
    /// Journal mode.
    pub journal_mode: JournalMode,
    /// Durability level.
    pub synchronous: Synchronous,
}

impl Default for DbConfig {
    fn default() -> Self {
        DbConfig { journal_mode: JournalMode::Wal, synchronous: Synchronous::Normal }
    }
}

impl fmt::Display for DbConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "journal_mode={} synchronous={}", self.journal_mode.pragma(), self.synchronous.pragma())
    }
}

impl JournalMode {
    /// The value SQLite's `journal_mode` pragma takes.
    pub fn pragma(self) -> &'static str {
        match self {
            JournalMode::Wal => "WAL",
            JournalMode::Delete => "DELETE",
            JournalMode::Memory => "MEMORY",
        }
    }
}

impl Synchronous {
    /// The value SQLite's `synchronous` pragma takes.
    pub fn pragma(self) -> &'static str {
        match self {
            Synchronous::Off => "OFF",
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

impl FromStr for JournalMode {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.to_ascii_lowercase().as_str() {
            "wal" => Ok(JournalMode::Wal),
            "delete" => Ok(JournalMode::Delete),
            "memory" => Ok(JournalMode::Memory),
            other => Err(ParseError::new("journal mode", other, "wal, delete or memory")),
        }
    }
}

impl FromStr for Synchronous {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.to_ascii_lowercase().as_str() {
            "off" => Ok(Synchronous::Off),
            "normal" => Ok(Synchronous::Normal),
            "full" => Ok(Synchronous::Full),
            other => Err(ParseError::new("synchronous level", other, "off, normal or full")),
        }
    }
}

/// How long a connection waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Tables every lane writes: `items` for inserts and updates, `blobs` for
/// blob inserts. No triggers or indexes beyond the primary keys, so the
/// execute slice is SQLite's bare insert path.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, data BLOB NOT NULL);
";

/// Open (creating if needed) the database at `path` with `config` applied.
pub fn open(path: &Path, config: DbConfig) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn, config)?;
    Ok(conn)
}

/// Apply `config` (and the busy timeout every lane uses) to an open
/// connection: how peers that open their own connections get the same
/// pragmas as every other lane.
pub fn configure(conn: &Connection, config: DbConfig) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // journal_mode returns a row; query it rather than execute.
    let _: String =
        conn.query_row(&format!("PRAGMA journal_mode = {}", config.journal_mode.pragma()), [], |r| r.get(0))?;
    conn.execute_batch(&format!("PRAGMA synchronous = {};", config.synchronous.pragma()))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Create the schema on `conn`.
pub fn create_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)
}

/// Rows in `table` of the database at `path`, read on a fresh connection.
pub fn count_rows(path: &Path, table: &str) -> rusqlite::Result<u64> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.query_row(&format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\"\"")), [], |r| r.get(0))
}

/// The directory a run keeps its databases in, `dir/db`, created.
pub(crate) fn run_dir(dir: &Path) -> Result<std::path::PathBuf, crate::error::RunError> {
    let db_dir = dir.join("db");
    std::fs::create_dir_all(&db_dir).map_err(|source| hopscope_harness::RunError::Io {
        what: "cannot create",
        path: db_dir.clone(),
        source,
    })?;
    Ok(db_dir)
}

/// Remove the database at `path` with its WAL and shared-memory files, so
/// a run starts from an empty file; a file that is not there is fine.
pub(crate) fn remove(path: &Path) -> Result<(), crate::error::RunError> {
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                let io = hopscope_harness::RunError::Io { what: "cannot remove old database", path: file, source };
                return Err(io.into());
            }
        }
    }
    Ok(())
}
