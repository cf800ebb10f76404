//! Run directories: where a run's files go, and the facts about the run
//! recorded in its trace.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Read, Seek, Write};
use std::path::{Path, PathBuf};

use hopscope_probe::{RunFact, RunFacts};

use crate::error::RunError;

/// The output root's name under the target directory.
pub const RUNS_SUBDIR: &str = "hopscope";

/// The link to the newest decomposition under the output root; other
/// kinds of run (A/B, sweeps) link `latest-<kind>` instead, so `latest`
/// always names a decomposition.
pub const LATEST: &str = "latest";

/// The environment variable that names the output root outright (a
/// test that starts a program of its own points it at
/// [`runs_dir`]'s answer for tests, so the program's runs stay out of the
/// project's index too).
pub const RUNS_ENV: &str = "HOPSCOPE_RUNS";

/// The directory under a run's directory that holds each lane's own
/// directory ([`Setup::dir`](crate::Setup::dir)), removed when the run ends.
pub const LANES_DIR: &str = "lanes";

/// The output root of a Cargo test or bench binary (one in a target
/// directory's `deps/`): a shared folder under the system's temporary
/// directory, so a project's `cargo test` adds no run to its index and
/// moves none of its `latest` links (a fresh clone's tests had left 34
/// runs in `hopscope history`, most in folders since deleted).
fn tests_root() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    cargo_deps(exe.parent()?).then(|| std::env::temp_dir().join("hopscope-test-runs"))
}

/// Whether `dir` is the `deps/` of a Cargo profile directory: beside
/// Cargo's `.fingerprint/`, or under the `CACHEDIR.TAG` Cargo writes in a
/// target directory it made (a target directory made beforehand, or a link
/// to one, has no tag: a newcomer's tests then wrote into the project).
fn cargo_deps(dir: &Path) -> bool {
    dir.file_name().is_some_and(|name| name == "deps")
        && (dir.parent().is_some_and(|profile| profile.join(".fingerprint").is_dir())
            || dir.ancestors().any(|d| d.join("CACHEDIR.TAG").is_file()))
}

/// Where run directories go by default: `$HOPSCOPE_RUNS` when set; for a
/// Cargo test or bench binary, a folder of the system's temporary
/// directory (tests touch nothing of the project's); else `hopscope/`
/// under the target
/// directory Cargo builds into — `$CARGO_TARGET_DIR` when set; else
/// `target/` of the working directory or of the nearest directory above it
/// when Cargo made it (it holds Cargo's `CACHEDIR.TAG`: the project you run
/// in, so `hopscope history` run anywhere inside it reads that project's
/// runs, as `cargo` finds its workspace); else the nearest directory above the
/// executable that Cargo marked so (a program run from elsewhere, a
/// workspace member's directory, a `target-dir` set in Cargo's config);
/// else `target/` of the working directory (an installed binary).
pub fn runs_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNS_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(root) = tests_root() {
        return root;
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join(RUNS_SUBDIR);
    }
    let here = Path::new("target");
    if here.join("CACHEDIR.TAG").is_file() {
        return here.join(RUNS_SUBDIR);
    }
    let above = std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.ancestors().skip(1).map(|d| d.join("target")).find(|t| t.join("CACHEDIR.TAG").is_file()));
    if let Some(target) = above {
        return target.join(RUNS_SUBDIR);
    }
    let built_in = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().skip(1).find(|dir| dir.join("CACHEDIR.TAG").is_file()).map(Path::to_owned));
    built_in.unwrap_or_else(|| PathBuf::from("target")).join(RUNS_SUBDIR)
}

/// Create the run directory: `out` if given, else a new timestamped one
/// `<output root>/<kind>-<ms>` ([`runs_dir`]), with the link `link`
/// ([`LATEST`] for a decomposition) beside it pointing at it. An `out`
/// another run holds is refused here, before the caller says it is about
/// to measure into it (the runner locks it for the run itself).
pub fn create(out: Option<&Path>, kind: &str, link: &str) -> Result<PathBuf, RunError> {
    let dir = create_unlinked(out, kind)?;
    link_to(&dir, link);
    Ok(dir)
}

/// [`create`] without the link: for a run whose flags can only be checked
/// once it has measured (a what-if run's slice names), linked by
/// [`link_to`] when it has written its results, so a refused run leaves
/// the link on the last one that answered.
pub fn create_unlinked(out: Option<&Path>, kind: &str) -> Result<PathBuf, RunError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| RunError::Io { what: "cannot create run directory", path, source }
    };
    if let Some(out) = out {
        std::fs::create_dir_all(out).map_err(io(out))?;
        drop(lock(out)?);
        return Ok(out.to_owned());
    }
    let runs = runs_dir();
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    sweep_stale(&runs);
    let dir = runs.join(format!("{kind}-{stamp}"));
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    Ok(dir)
}

/// Point the output root's link `link` at the run directory `dir`: by its
/// name when it sits in the output root, else (an `--out` elsewhere) by its
/// full path, as the index's `latest` follows the newest run wherever it
/// went. Best effort, as relinking `latest` is.
pub fn link_to(dir: &Path, link: &str) {
    let runs = runs_dir();
    let inside = dir.parent().is_some_and(|parent| parent == runs);
    match (inside, dir.file_name()) {
        (true, Some(name)) => relink(&runs, link, Path::new(name)),
        _ => {
            if let Ok(full) = std::fs::canonicalize(dir) {
                relink(&runs, link, &full);
            }
        }
    }
}

/// Point `runs/link` at `target` (relative to `runs`, or absolute). Best
/// effort: a missing link never fails a run, and a run whose output root
/// does not exist yet creates none.
fn relink(runs: &Path, link: &str, target: &Path) {
    if !runs.is_dir() {
        return;
    }
    let at = runs.join(link);
    let _ = std::fs::remove_file(&at);
    #[cfg(unix)]
    {
        let _ = std::os::unix::fs::symlink(target, &at);
    }
    #[cfg(not(unix))]
    let _ = target;
}

/// Remove the lane databases a killed run left in its directory under
/// `runs`: a run directory with a `lanes/` directory and no live run
/// holding its lock. (A run that ends, however it ends short of SIGKILL,
/// removes its own.)
pub fn sweep_stale(runs: &Path) {
    let Ok(entries) = std::fs::read_dir(runs) else { return };
    for entry in entries.flatten() {
        let dir = entry.path();
        let lanes = dir.join(LANES_DIR);
        if entry.file_type().is_ok_and(|t| t.is_dir()) && lanes.is_dir() && dir.join(LOCK_FILE).exists() {
            // Holding the lock proves no run is using the directory.
            if let Ok(_held) = lock(&dir) {
                let _ = std::fs::remove_dir_all(&lanes);
            }
        }
    }
}

/// This process's command line as a shell would take it back: each word
/// quoted where it needs to be (`--build "cargo build …"` stays one word).
pub fn command_line() -> String {
    let words: Vec<String> = std::env::args().collect();
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

/// Facts a receipt needs about how the run was started: the command line,
/// hopscope's version, the build profile and the working tree's commit.
pub fn metadata() -> BTreeMap<String, String> {
    let mut meta = BTreeMap::new();
    meta.record(RunFact::Command, command_line());
    meta.record(RunFact::HopscopeVersion, env!("CARGO_PKG_VERSION"));
    meta.record(RunFact::Build, if cfg!(debug_assertions) { "debug" } else { "release" });
    if let Some(commit) = git(&["rev-parse", "HEAD"]) {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        meta.record(RunFact::Commit, if dirty { format!("{commit}-dirty") } else { commit });
    }
    meta
}

fn git(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Draw a progress bar only for a person at a terminal.
pub fn show_progress() -> bool {
    std::io::stderr().is_terminal()
}

/// The lock file in a run directory.
pub const LOCK_FILE: &str = ".hopscope.lock";

/// How many 5 ms waits [`lock`] gives a lock its own process holds (1 s).
const OWN_LOCK_WAITS: u32 = 200;

/// An advisory lock on a run directory, held while a run writes into it;
/// released when dropped (or when the process dies, even killed).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Lock `dir` for one run, or refuse in one line naming the run that holds
/// it. Creates `dir` if needed.
pub fn lock(dir: &Path) -> Result<DirLock, RunError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| RunError::Io { what, path, source }
    };
    std::fs::create_dir_all(dir).map_err(io("cannot create run directory", dir))?;
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io("cannot open the lock file", &path))?;
    // A lock this process dropped can still be held for a moment by a child
    // another thread is forking (`git` for the metadata, a user's own
    // commands): the child shares the open file until it execs. Our own pid
    // as the holder means that window, so it is waited out, up to a bound.
    let own = std::process::id().to_string();
    let mut waits = 0u32;
    while let Err(err) = file.try_lock() {
        if let std::fs::TryLockError::Error(source) = err {
            return Err(RunError::Io { what: "cannot lock", path, source });
        }
        let mut holder = String::new();
        let _ = file.rewind().and_then(|()| file.read_to_string(&mut holder));
        let holder = holder.trim();
        if holder == own && waits < OWN_LOCK_WAITS {
            waits += 1;
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        return Err(RunError::Busy {
            dir: dir.to_owned(),
            holder: if holder.is_empty() { "another run".to_owned() } else { format!("pid {holder}") },
        });
    }
    // Record who holds it, for the next run's refusal.
    let _ = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| write!(file, "{}", std::process::id()));
    Ok(DirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_binary_keeps_its_runs_out_of_the_project() {
        // This binary is a Cargo test binary: its runs, index and links go
        // to the temporary directory, not the project's target/hopscope.
        match std::env::var_os(RUNS_ENV).filter(|d| !d.is_empty()) {
            Some(dir) => assert_eq!(runs_dir(), PathBuf::from(dir)),
            None => assert_eq!(runs_dir(), std::env::temp_dir().join("hopscope-test-runs")),
        }
        assert!(tests_root().is_some(), "a binary in a target directory's deps/ is a test's");
    }

    #[test]
    fn a_deps_folder_is_cargo_s_by_its_fingerprints_or_its_tag() {
        let root = std::env::temp_dir().join(format!("hopscope-rundir-deps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // A target directory made beforehand: no tag, Cargo's fingerprints.
        let premade = root.join("premade/debug");
        std::fs::create_dir_all(premade.join("deps")).expect("deps");
        assert!(!cargo_deps(&premade.join("deps")), "a deps/ alone is anyone's");
        std::fs::create_dir_all(premade.join(".fingerprint")).expect("fingerprints");
        assert!(cargo_deps(&premade.join("deps")));
        // A target directory Cargo made: its tag above.
        let tagged = root.join("tagged");
        std::fs::create_dir_all(tagged.join("debug/deps")).expect("deps");
        std::fs::write(tagged.join("CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55").expect("tag");
        assert!(cargo_deps(&tagged.join("debug/deps")));
        assert!(!cargo_deps(&tagged.join("debug")), "not a deps/");
        let _ = std::fs::remove_dir_all(&root);
        if std::env::var_os("HOPSCOPE_INDEX").is_none() {
            let index = crate::index::RunIndex::located();
            assert_eq!(index.path(), runs_dir().join(crate::index::INDEX_FILE), "the index goes with the runs");
        }
    }
}
