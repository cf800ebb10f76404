//! The run index: every decomposition run on this checkout, in an embedded
//! SQLite file under the output root (`target/hopscope/index.sqlite`, or
//! `$HOPSCOPE_INDEX`), so `compare`, `--baseline` and `history` find runs
//! by a name, a commit, a date or `latest` instead of a path.
//!
//! A row holds what identifies a run (id, time, directory, commit, host,
//! command) and its headline figures; the figures themselves stay in the
//! run directory's `result.json` and trace, which `compare` reads.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hopscope_analyze::Decomposition;
use rusqlite::{Connection, OptionalExtension, params};

/// Where the index lives unless `$HOPSCOPE_INDEX` says otherwise.
const DEFAULT: &str = "target/hopscope/index.sqlite";

/// The headline figures a row keeps, in `history`'s column order.
pub(crate) const FIGURES: [&str; 4] = ["subject", "hop", "boundary", "library"];

/// One indexed run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRow {
    /// Row id: `#id` names the run.
    pub(crate) id: i64,
    /// When the run was made, ms since the epoch.
    pub(crate) created_unix_ms: i64,
    /// The run directory (absolute).
    pub(crate) dir: PathBuf,
    /// The commit it was built from, if it knew.
    pub(crate) commit: Option<String>,
    /// The host's name.
    pub(crate) host: String,
    /// Headline figures, µs, in [`FIGURES`] order.
    pub(crate) figures: [Option<f64>; 4],
}

/// The open index.
pub(crate) struct RunIndex {
    conn: Connection,
    path: PathBuf,
}

impl RunIndex {
    /// Open (creating) the index.
    pub(crate) fn open() -> anyhow::Result<RunIndex> {
        let path = std::env::var_os("HOPSCOPE_INDEX").map_or_else(|| PathBuf::from(DEFAULT), PathBuf::from);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let cannot = || format!("cannot open the run index {}", path.display());
        let conn = Connection::open(&path).with_context(cannot)?;
        // Runs started side by side (a test suite, two terminals) share it.
        conn.busy_timeout(std::time::Duration::from_secs(10)).with_context(cannot)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS runs (
                id INTEGER PRIMARY KEY,
                created_unix_ms INTEGER NOT NULL,
                dir TEXT NOT NULL UNIQUE,
                commit_id TEXT,
                host TEXT NOT NULL,
                command TEXT NOT NULL,
                subject_us REAL, hop_us REAL, boundary_us REAL, library_us REAL
            );
            CREATE TABLE IF NOT EXISTS baselines (
                name TEXT PRIMARY KEY,
                run_id INTEGER NOT NULL REFERENCES runs(id),
                saved_unix_ms INTEGER NOT NULL
            );",
        )
        .with_context(cannot)?;
        Ok(RunIndex { conn, path })
    }

    /// Where the index is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Record the run in `dir` (a rerun into the same directory replaces
    /// its row); its id.
    pub(crate) fn record(&self, dir: &Path, d: &Decomposition) -> anyhow::Result<i64> {
        let dir = std::fs::canonicalize(dir).with_context(|| format!("cannot find {}", dir.display()))?;
        let derived = d.derived.as_ref();
        let subject = derived
            .and_then(|x| x.lane(hopscope_analyze::Role::Subject))
            .and_then(|lane| d.lanes.get(lane))
            .and_then(|lane| lane.us_per_op.as_ref())
            .map(|s| s.median);
        let meta = &d.run.meta;
        self.conn
            .execute(
                "INSERT INTO runs (created_unix_ms, dir, commit_id, host, command, subject_us, hop_us, boundary_us, library_us)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT(dir) DO UPDATE SET created_unix_ms = ?1, commit_id = ?3, host = ?4, command = ?5,
                   subject_us = ?6, hop_us = ?7, boundary_us = ?8, library_us = ?9",
                params![
                    i64::try_from(d.run.created_unix_ms).unwrap_or(i64::MAX),
                    dir.to_string_lossy(),
                    meta.get("commit"),
                    d.host.hostname,
                    meta.get("command").map_or("", String::as_str),
                    subject,
                    derived.map(|x| x.hop_us.median),
                    derived.and_then(|x| x.boundary_us.map(|b| b.median)),
                    derived.and_then(|x| x.library_us.map(|b| b.median)),
                ],
            )
            .context("cannot record the run in the index")?;
        let id = self
            .conn
            .query_row("SELECT id FROM runs WHERE dir = ?1", [dir.to_string_lossy()], |r| r.get(0))
            .context("cannot read the run index")?;
        Ok(id)
    }

    /// Name run `id` as baseline `name` (replacing what it named).
    pub(crate) fn save_baseline(&self, name: &str, id: i64) -> anyhow::Result<()> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        self.conn
            .execute(
                "INSERT INTO baselines (name, run_id, saved_unix_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET run_id = ?2, saved_unix_ms = ?3",
                params![name, id, i64::try_from(now).unwrap_or(i64::MAX)],
            )
            .context("cannot save the baseline")?;
        Ok(())
    }

    fn row(&self, sql: &str, key: &dyn rusqlite::ToSql) -> anyhow::Result<Option<RunRow>> {
        let columns = "id, created_unix_ms, dir, commit_id, host, subject_us, hop_us, boundary_us, library_us";
        let sql = sql.replace("{columns}", columns);
        self.conn.query_row(&sql, [key], read_row).optional().context("cannot read the run index")
    }

    /// The run `key` names: a run directory, a baseline's name, `latest`,
    /// `#ID`, a date (`YYYY-MM-DD`: that day's newest run) or a commit
    /// (or its prefix: the newest run built from it).
    pub(crate) fn find(&self, key: &str) -> anyhow::Result<RunRow> {
        let path = Path::new(key);
        if path.join("result.json").is_file() {
            let dir = std::fs::canonicalize(path).with_context(|| format!("cannot find {key}"))?;
            return Ok(self.row("SELECT {columns} FROM runs WHERE dir = ?1", &dir.to_string_lossy())?.unwrap_or(
                RunRow { id: 0, created_unix_ms: 0, dir, commit: None, host: String::new(), figures: [None; 4] },
            ));
        }
        // The readings of `key`, tried in this order; the first that names
        // a run wins.
        let id = key.strip_prefix('#').and_then(|n| n.parse::<i64>().ok());
        let is_date = key.len() == 10
            && key.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 { c == '-' } else { c.is_ascii_digit() });
        let is_commit = key.len() >= 4 && key.chars().all(|c| c.is_ascii_hexdigit());
        let newest = "ORDER BY created_unix_ms DESC, id DESC LIMIT 1";
        let readings: [(bool, String, &dyn rusqlite::ToSql); 5] = [
            (true, "id = (SELECT run_id FROM baselines WHERE name = ?1)".to_owned(), &key),
            (key == "latest", format!("?1 {newest}"), &1),
            (id.is_some(), "id = ?1".to_owned(), &id),
            (is_date, format!("date(created_unix_ms / 1000, 'unixepoch') = ?1 {newest}"), &key),
            (is_commit, format!("commit_id LIKE ?1 || '%' {newest}"), &key),
        ];
        for (applies, condition, value) in readings {
            if !applies {
                continue;
            }
            if let Some(row) = self.row(&format!("SELECT {{columns}} FROM runs WHERE {condition}"), value)? {
                return Ok(row);
            }
        }
        bail!(
            "no run {key:?}: not a run directory, and the index {} has no baseline, date, commit or #id of that name",
            self.path.display()
        )
    }

    /// The newest `limit` runs, oldest first.
    pub(crate) fn history(&self, limit: usize) -> anyhow::Result<Vec<RunRow>> {
        let mut statement = self
            .conn
            .prepare(
                "SELECT id, created_unix_ms, dir, commit_id, host, subject_us, hop_us, boundary_us, library_us
                 FROM runs ORDER BY created_unix_ms DESC, id DESC LIMIT ?1",
            )
            .context("cannot read the run index")?;
        let rows = statement
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], read_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .context("cannot read the run index")?;
        Ok(rows.into_iter().rev().collect())
    }

    /// Baseline names pointing at run `id`.
    pub(crate) fn names_of(&self, id: i64) -> anyhow::Result<Vec<String>> {
        let mut statement =
            self.conn.prepare("SELECT name FROM baselines WHERE run_id = ?1 ORDER BY name").context("index")?;
        let names = statement
            .query_map([id], |r| r.get(0))
            .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
            .context("cannot read the run index")?;
        Ok(names)
    }
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        created_unix_ms: r.get(1)?,
        dir: PathBuf::from(r.get::<_, String>(2)?),
        commit: r.get(3)?,
        host: r.get(4)?,
        figures: [r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?],
    })
}
