//! The run index: every decomposition made under one output root, so
//! `compare`, `--baseline` and `history` find runs by a name, a commit, a
//! date or `latest` instead of a path — hopscope's own runs and every
//! harness program's alike.
//!
//! It is a JSON-lines file (`<output root>/index.jsonl`, or
//! `$HOPSCOPE_INDEX`): one line per recorded run and per saved baseline,
//! appended under an exclusive file lock, read under a shared one, so runs
//! started side by side (a test suite, two terminals) share it. A line for
//! a directory already recorded replaces that run's figures and keeps its
//! id; a baseline's newest line wins. Not SQLite on purpose: the harness is
//! linked into a user's program, which brings its own SQLite crate, and two
//! versions of one C library cannot link into one binary.
//!
//! A read never creates the file: an index that does not exist yet has no
//! runs.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use hopscope_analyze::{Decomposition, Role};
use hopscope_probe::{RunFact, RunFacts};
use serde::{Deserialize, Serialize};

/// The index's file name under the output root.
pub const INDEX_FILE: &str = "index.jsonl";

/// The headline figures a row keeps, in `history`'s column order.
pub const FIGURES: [&str; 4] = ["subject", "hop", "boundary", "library"];

/// Why the index could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The file could not be read or written.
    #[error("cannot {what} the run index {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The index file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of the file is not a record this build reads.
    #[error("the run index {} is damaged at line {line}: {reason}", path.display())]
    Damaged {
        /// The index file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// No run answers to the key.
    #[error(
        "no run {key:?}: not a run directory, and the run index {} has no baseline, date, commit or #id of that name",
        path.display()
    )]
    NoRun {
        /// The key asked for.
        key: String,
        /// The index file.
        path: PathBuf,
    },
    /// A baseline name that cannot be one: what it is and why.
    #[error("baseline name {name:?}: {why}")]
    BadName {
        /// The name asked for.
        name: String,
        /// Why it cannot name a baseline.
        why: &'static str,
    },
}

/// One indexed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// Row id: `#id` names the run.
    pub id: i64,
    /// When the run was made, ms since the epoch.
    pub created_unix_ms: i64,
    /// The run directory (absolute).
    pub dir: PathBuf,
    /// The commit it was built from, if it knew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The host's name.
    pub host: String,
    /// The command line.
    #[serde(default)]
    pub command: String,
    /// The program that made it (`decompose`, or a harness program's name).
    #[serde(default)]
    pub program: String,
    /// Headline figures, µs, in [`FIGURES`] order.
    pub figures: [Option<f64>; 4],
    /// The lane the `subject` figure is of and how it ran (probed or
    /// clean, callers at once): its wall time per operation, the median
    /// over blocks (absent in rows written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<hopscope_analyze::LaneRun>,
    /// What a `--baseline` gate called the run (`regression against main`),
    /// when it was judged against one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// Whether another process held the run's CPUs
    /// ([`hopscope_analyze::contention`]); `None` where the kernel kept no
    /// run-queue delay (or the run predates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended: Option<bool>,
}

/// One line of the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum Record {
    Run(Box<RunRow>),
    Baseline {
        name: String,
        run_id: i64,
        saved_unix_ms: i64,
    },
    /// A gate's verdict on run `run_id` against baseline `against`.
    Change {
        run_id: i64,
        against: String,
        verdict: String,
    },
}

/// Everything the file says, newest line winning.
#[derive(Debug, Default)]
struct Contents {
    runs: Vec<RunRow>,
    baselines: BTreeMap<String, i64>,
}

impl Contents {
    fn next_id(&self) -> i64 {
        self.runs.iter().map(|r| r.id).max().unwrap_or(0) + 1
    }

    fn add(&mut self, record: Record) {
        match record {
            Record::Run(row) => match self.runs.iter_mut().find(|r| r.dir == row.dir) {
                Some(old) => *old = RunRow { id: old.id, ..*row },
                None => self.runs.push(*row),
            },
            Record::Change { run_id, against, verdict } => {
                if let Some(row) = self.runs.iter_mut().find(|r| r.id == run_id) {
                    row.change = Some(format!("{verdict} against {against}"));
                }
            }
            Record::Baseline { name, run_id, .. } => {
                self.baselines.insert(name, run_id);
            }
        }
    }

    /// Runs newest first.
    fn newest_first(&self) -> Vec<&RunRow> {
        let mut runs: Vec<&RunRow> = self.runs.iter().collect();
        runs.sort_by_key(|r| std::cmp::Reverse((r.created_unix_ms, r.id)));
        runs
    }
}

/// The run index at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIndex {
    path: PathBuf,
}

impl RunIndex {
    /// The index this process uses: `$HOPSCOPE_INDEX`, else
    /// [`INDEX_FILE`] under the output root ([`crate::rundir::runs_dir`]).
    pub fn located() -> RunIndex {
        let path = std::env::var_os("HOPSCOPE_INDEX")
            .map_or_else(|| crate::rundir::runs_dir().join(INDEX_FILE), PathBuf::from);
        RunIndex { path }
    }

    /// The index in the file `path`.
    pub fn at(path: &Path) -> RunIndex {
        RunIndex { path: path.to_owned() }
    }

    /// Where the index is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists (a read of one that does not is empty).
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    /// Record the run in `dir` (a rerun into the same directory replaces
    /// its figures and keeps its id); its id. Creates the file.
    pub fn record(&self, dir: &Path, d: &Decomposition) -> Result<i64, IndexError> {
        let dir = std::fs::canonicalize(dir).map_err(|source| self.io("find the run directory for", source))?;
        let derived = d.derived.as_ref();
        let meta = &d.run.meta;
        // The subject the lane arithmetic used, or, in a run without it (a
        // `--lanes` subset), the subject lane that ran: clean before probed.
        let subject_lane = d.role_lane(Role::Subject);
        let subject = subject_lane.and_then(|name| d.lanes.get(name)?.us_per_op.as_ref()).map(|s| s.median);
        let mut row = RunRow {
            id: 0,
            created_unix_ms: i64::try_from(d.run.created_unix_ms).unwrap_or(i64::MAX),
            dir,
            commit: meta.fact(&RunFact::Commit).map(str::to_owned),
            host: d.host.hostname.clone(),
            command: meta.fact(&RunFact::Command).unwrap_or_default().to_owned(),
            program: meta.fact(&RunFact::Harness).unwrap_or_default().to_owned(),
            figures: [
                subject,
                derived.map(|x| x.hop_us.median),
                derived.and_then(|x| x.boundary_us.map(|b| b.median)),
                derived.and_then(|x| x.library_us.map(|b| b.median)),
            ],
            subject: subject_lane.and_then(|name| d.lane_run(name)),
            change: None,
            contended: d.contention.as_ref().map(|c| c.contended),
        };
        self.append(|contents| {
            row.id = contents.runs.iter().find(|r| r.dir == row.dir).map_or_else(|| contents.next_id(), |r| r.id);
            (Record::Run(Box::new(row.clone())), row.id)
        })
    }

    /// Name run `id` as baseline `name`, replacing what it named: the run
    /// it named before, if another.
    pub fn save_baseline(&self, name: &str, id: i64) -> Result<Option<i64>, IndexError> {
        check_name(name)?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let saved_unix_ms = i64::try_from(now).unwrap_or(i64::MAX);
        self.append(|contents| {
            let before = contents.baselines.get(name).copied().filter(|b| *b != id);
            (Record::Baseline { name: name.to_owned(), run_id: id, saved_unix_ms }, before)
        })
    }

    /// Record what a gate called run `id` against baseline `against`
    /// (shown by `history`).
    pub fn record_change(&self, id: i64, against: &str, verdict: &str) -> Result<(), IndexError> {
        self.append(|_| (Record::Change { run_id: id, against: against.to_owned(), verdict: verdict.to_owned() }, ()))
    }

    /// The run `key` names: a run directory, a baseline's name, `latest`
    /// (the newest run), `#ID`, a date (`YYYY-MM-DD`: that day's newest run)
    /// or a commit (or its prefix: the newest run built from it).
    pub fn find(&self, key: &str) -> Result<RunRow, IndexError> {
        let path = Path::new(key);
        let contents = self.read()?;
        if path.join("result.json").is_file() {
            let dir = std::fs::canonicalize(path).map_err(|source| self.io("find the run directory for", source))?;
            let row = contents.runs.iter().find(|r| r.dir == dir).cloned();
            return Ok(row.unwrap_or(RunRow {
                id: 0,
                created_unix_ms: 0,
                dir,
                commit: None,
                host: String::new(),
                command: String::new(),
                program: String::new(),
                figures: [None; 4],
                subject: None,
                change: None,
                contended: None,
            }));
        }
        let newest = contents.newest_first();
        let by_id = |id: i64| newest.iter().find(|r| r.id == id).copied();
        // The readings of `key`, tried in this order; the first that names
        // a run wins.
        let id = key.strip_prefix('#').and_then(|n| n.parse::<i64>().ok());
        let (date, commit) = (is_date(key), is_commit(key));
        let found = contents
            .baselines
            .get(key)
            .and_then(|id| by_id(*id))
            .or_else(|| (key == "latest").then(|| newest.first().copied()).flatten())
            .or_else(|| id.and_then(by_id))
            .or_else(|| date.then(|| newest.iter().find(|r| day(r.created_unix_ms) == key).copied()).flatten())
            .or_else(|| {
                let built_from = |r: &&&RunRow| r.commit.as_deref().is_some_and(|c| c.starts_with(key));
                commit.then(|| newest.iter().find(built_from).copied()).flatten()
            });
        found.cloned().ok_or_else(|| IndexError::NoRun { key: key.to_owned(), path: self.path.clone() })
    }

    /// The newest `limit` runs, oldest first.
    pub fn history(&self, limit: usize) -> Result<Vec<RunRow>, IndexError> {
        let contents = self.read()?;
        let mut rows: Vec<RunRow> = contents.newest_first().into_iter().take(limit).cloned().collect();
        rows.reverse();
        Ok(rows)
    }

    /// Baseline names pointing at run `id`, sorted.
    pub fn names_of(&self, id: i64) -> Result<Vec<String>, IndexError> {
        let contents = self.read()?;
        Ok(contents.baselines.iter().filter(|(_, run)| **run == id).map(|(name, _)| name.clone()).collect())
    }

    fn io(&self, what: &'static str, source: std::io::Error) -> IndexError {
        IndexError::Io { what, path: self.path.clone(), source }
    }

    /// Everything the file holds; nothing, without creating it, when it
    /// does not exist.
    fn read(&self) -> Result<Contents, IndexError> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::default()),
            Err(source) => return Err(self.io("open", source)),
        };
        file.lock_shared().map_err(|source| self.io("lock", source))?;
        self.parse(&file)
    }

    fn parse(&self, file: &File) -> Result<Contents, IndexError> {
        let mut contents = Contents::default();
        let mut lines = BufReader::new(file).lines().enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let line = line.map_err(|source| self.io("read", source))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(&line) {
                Ok(record) => contents.add(record),
                // A last line cut short (a run killed while appending) is
                // what was never written.
                Err(_) if lines.peek().is_none() => {}
                Err(e) => {
                    return Err(IndexError::Damaged { path: self.path.clone(), line: i + 1, reason: e.to_string() });
                }
            }
        }
        Ok(contents)
    }

    /// Append the record `make` builds from what the file holds now, under
    /// the exclusive lock; what `make` returns.
    fn append<T>(&self, make: impl FnOnce(&Contents) -> (Record, T)) -> Result<T, IndexError> {
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| self.io("create the directory of", source))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|source| self.io("open", source))?;
        file.lock().map_err(|source| self.io("lock", source))?;
        let contents = self.parse(&file)?;
        let (record, out) = make(&contents);
        let mut line = serde_json::to_string(&record).map_err(|e| self.io("write", std::io::Error::other(e)))?;
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(|source| self.io("write", source))?;
        file.sync_data().map_err(|source| self.io("write", source))?;
        Ok(out)
    }
}

/// A baseline name: 1 to 64 bytes of letters, digits, `-`, `_`, `.`, `/`,
/// and not a word [`RunIndex::find`] reads as something else (`latest`,
/// `#ID`, a date, a commit): a baseline of that name would hide the run
/// the word names, or be hidden by it. Checked by the flags before a run
/// measures anything, and again when a baseline is saved.
pub fn check_name(name: &str) -> Result<(), IndexError> {
    let bad = |why| Err(IndexError::BadName { name: name.to_owned(), why });
    let spelled = (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if !spelled {
        return bad("use 1 to 64 letters, digits, `-`, `_`, `.` or `/`");
    }
    if name.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        return bad("`/` separates words; `.`, `..` and empty words between slashes are not names");
    }
    if name == "latest" {
        return bad("`latest` always means the newest run; pick another name");
    }
    if is_date(name) {
        return bad("a date (YYYY-MM-DD) names that day's newest run; pick another name");
    }
    if is_commit(name) {
        return bad("four or more hex digits read as a commit; add a letter past `f` or a `-`");
    }
    Ok(())
}

/// Whether `key` reads as a day, `YYYY-MM-DD`.
fn is_date(key: &str) -> bool {
    key.len() == 10
        && key.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 { c == '-' } else { c.is_ascii_digit() })
}

/// Whether `key` reads as a commit or its prefix.
fn is_commit(key: &str) -> bool {
    key.len() >= 4 && key.chars().all(|c| c.is_ascii_hexdigit())
}

/// `ms` since the epoch as its UTC day, `YYYY-MM-DD`.
fn day(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hopscope-index-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn row(index: &RunIndex, dir: &Path, at: i64, commit: &str) -> i64 {
        std::fs::create_dir_all(dir).expect("run dir");
        index
            .append(|c| {
                let id = c.next_id();
                let row = RunRow {
                    id,
                    created_unix_ms: at,
                    dir: dir.to_owned(),
                    commit: Some(commit.to_owned()),
                    host: "h".into(),
                    command: String::new(),
                    program: "p".into(),
                    figures: [Some(1.0), None, None, None],
                    subject: None,
                    change: None,
                    contended: None,
                };
                (Record::Run(Box::new(row)), id)
            })
            .expect("append")
    }

    #[test]
    fn runs_are_found_by_every_kind_of_key_and_a_read_creates_nothing() {
        let root = temp("keys");
        let index = RunIndex::at(&root.join("sub/index.jsonl"));
        assert!(index.history(10).expect("empty").is_empty());
        assert!(matches!(index.find("latest"), Err(IndexError::NoRun { .. })));
        assert!(!index.exists() && !root.join("sub").exists(), "reads made no file and no directory");
        let day_ms = 1_764_806_400_000; // 2025-12-04T00:00:00Z
        let a = row(&index, &root.join("a"), day_ms + 1_000, "abcdef1234");
        let b = row(&index, &root.join("b"), day_ms + 90_000_000, "0123456789");
        assert_eq!((a, b), (1, 2));
        assert_eq!(index.save_baseline("main", a).expect("save"), None);
        assert_eq!(index.find("main").expect("baseline").id, a);
        assert_eq!(index.find("latest").expect("latest").id, b);
        assert_eq!(index.find("#1").expect("id").id, a);
        assert_eq!(index.find("2025-12-04").expect("date").id, a);
        assert_eq!(index.find("2025-12-05").expect("date").id, b);
        assert_eq!(index.find("abcdef").expect("commit").id, a);
        assert_eq!(index.names_of(a).expect("names"), ["main"]);
        assert_eq!(index.save_baseline("main", b).expect("moved"), Some(a), "the run it named before");
        assert_eq!(index.find("main").expect("baseline").id, b, "the newest line wins");
        for refused in ["a b", "latest", "2026-12-04", "beef", "c0ffee", "#3", "", "../x", "a//b", "/x", "x/", "./x"] {
            let err = index.save_baseline(refused, a).expect_err(refused);
            assert!(matches!(err, IndexError::BadName { .. }), "{refused}: {err}");
        }
        for kept in ["main", "v1.2", "release/1", "abc", "beefy", "be-ef"] {
            assert!(check_name(kept).is_ok(), "{kept}");
        }
        let history: Vec<i64> = index.history(10).expect("history").iter().map(|r| r.id).collect();
        assert_eq!(history, [a, b], "oldest first");
        assert_eq!(day(0), "1970-01-01");
    }

    #[test]
    fn a_damaged_line_is_refused_naming_it_and_a_cut_last_line_is_not_read() {
        let root = temp("damage");
        let index = RunIndex::at(&root.join("index.jsonl"));
        let a = row(&index, &root.join("a"), 1, "aaaa");
        let mut text = std::fs::read_to_string(index.path()).expect("index");
        text.push_str("{\"record\":\"run\",\"id\":");
        std::fs::write(index.path(), &text).expect("cut");
        assert_eq!(index.find("latest").expect("the cut line is ignored").id, a);
        text.push_str("\n{\"record\":\"baseline\",\"name\":\"x\",\"run_id\":1,\"saved_unix_ms\":0}\n");
        std::fs::write(index.path(), &text).expect("damage");
        let err = index.find("latest").expect_err("damaged").to_string();
        assert!(err.contains("damaged at line 2"), "{err}");
    }
}
