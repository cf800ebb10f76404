//! Run directories: where a run's files go, and the facts about the run
//! recorded in its trace.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::error::RunError;

/// Parent of the default run directories, relative to the working directory.
pub const RUNS_DIR: &str = "target/hopscope";

/// Create the run directory: `out` if given, else a new timestamped one
/// `target/hopscope/<kind>-<ms>`, with `target/hopscope/latest` pointing at it.
pub fn create(out: Option<&Path>, kind: &str) -> Result<PathBuf, RunError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| RunError::Io { what: "cannot create run directory", path, source }
    };
    if let Some(out) = out {
        std::fs::create_dir_all(out).map_err(io(out))?;
        return Ok(out.to_owned());
    }
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let runs = PathBuf::from(RUNS_DIR);
    let dir = runs.join(format!("{kind}-{stamp}"));
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let latest = runs.join("latest");
    let _ = std::fs::remove_file(&latest);
    #[cfg(unix)]
    {
        // Best effort: a missing `latest` link never fails a run.
        let _ = std::os::unix::fs::symlink(dir.file_name().unwrap_or_default(), &latest);
    }
    Ok(dir)
}

/// Facts a receipt needs about how the run was started: the command line,
/// hopscope's version, the build profile and the working tree's commit.
pub fn metadata() -> BTreeMap<String, String> {
    let mut meta = BTreeMap::new();
    meta.insert("command".to_owned(), std::env::args().collect::<Vec<_>>().join(" "));
    meta.insert("hopscope_version".to_owned(), env!("CARGO_PKG_VERSION").to_owned());
    meta.insert("build".to_owned(), if cfg!(debug_assertions) { "debug" } else { "release" }.to_owned());
    if let Some(commit) = git(&["rev-parse", "HEAD"]) {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        meta.insert("commit".to_owned(), if dirty { format!("{commit}-dirty") } else { commit });
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
