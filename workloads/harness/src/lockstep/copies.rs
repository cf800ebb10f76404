//! Each pass runs every arm from a fresh copy of its build's program file.
//!
//! A program's code sits in the page cache once per file: every process
//! started from one file runs the same physical pages, and where those
//! pages fall in the physically indexed caches (L2, the last level) stays
//! fixed until the file leaves the cache. Two byte-identical copies of
//! kv-writer, judged against each other in lockstep, measured 164–201 ns
//! per write apart in SQLite's slice in 9 of 9 decisions — larger than the
//! changes a gate is for — while the control, build A's own file again,
//! could not see it. With a fresh copy per pass and arm (the control's
//! included), where the code sits is one more piece of a pass's luck that
//! falls on both builds alike, and the control measures it.

use std::path::{Path, PathBuf};

use super::error::LockstepError;
use super::follower::Launch;

/// What [`RunFact::LockstepFiles`](hopscope_probe::RunFact::LockstepFiles)
/// says of a run whose passes ran from fresh copies.
pub const FRESH_COPY_PER_PASS: &str = "a fresh copy of its build's program file (one per pass and arm)";

/// One pass's copies of its programs; removed when dropped.
#[derive(Debug)]
pub(super) struct PassCopies {
    dir: PathBuf,
    launches: [Launch; 3],
}

impl PassCopies {
    /// Copy each of `launches`' programs into `dir` (one folder per arm,
    /// the file keeping its name, which a follower may read its subcommand
    /// from), in `order`: the order a pass's arms start in, so which
    /// arm's copy takes the pages freed first changes pass by pass.
    pub(super) fn make(launches: &[Launch; 3], order: [usize; 3], dir: &Path) -> Result<PassCopies, LockstepError> {
        let mut copied = launches.clone();
        for arm in order {
            let launch = &launches[arm];
            let fail = |what: String| LockstepError::Follower { build: launch.build.clone(), what };
            let folder = dir.join(&launch.arm);
            std::fs::create_dir_all(&folder).map_err(|e| fail(format!("cannot create {}: {e}", folder.display())))?;
            let name = launch.program.file_name().unwrap_or(launch.arm.as_ref());
            let copy = folder.join(name);
            // `fs::copy` keeps the permission bits: the copy stays executable.
            std::fs::copy(&launch.program, &copy)
                .map_err(|e| fail(format!("cannot copy {} to {}: {e}", launch.program.display(), copy.display())))?;
            copied[arm].program = copy;
        }
        Ok(PassCopies { dir: dir.to_owned(), launches: copied })
    }

    /// The pass's launches, each program replaced by its copy.
    pub(super) fn launches(&self) -> &[Launch; 3] {
        &self.launches
    }
}

impl Drop for PassCopies {
    fn drop(&mut self) {
        // A copy left behind costs disk, not correctness: nothing to report.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An empty folder of this test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hopscope-copies-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn launch(arm: &str, program: &Path) -> Launch {
        Launch { arm: arm.to_owned(), build: format!("build {arm}"), program: program.to_owned(), args: Vec::new() }
    }

    #[test]
    fn each_arm_gets_its_own_executable_copy_removed_after_the_pass() {
        let root = scratch("kept");
        let program = root.join("writer");
        std::fs::write(&program, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let launches = [launch("a", &program), launch("b", &program), launch("control", &program)];
        let dir = root.join("pass-0");
        let copies = PassCopies::make(&launches, [2, 0, 1], &dir).unwrap();
        let programs: Vec<&PathBuf> = copies.launches().iter().map(|l| &l.program).collect();
        for (k, copy) in programs.iter().enumerate() {
            assert_eq!(copy.file_name().unwrap(), "writer", "the copy keeps its name");
            assert_ne!(copy.as_path(), program, "arm {k} runs a copy");
            assert_eq!(std::fs::read(copy).unwrap(), b"#!/bin/sh\n");
            assert_eq!(std::fs::metadata(copy).unwrap().permissions().mode() & 0o111, 0o111);
        }
        assert_ne!(programs[0], programs[2], "the control's copy is not arm a's");
        drop(copies);
        assert!(!dir.exists(), "the pass's copies are removed");
        assert!(program.exists(), "the build itself is kept");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_missing_program_is_named() {
        let root = scratch("missing");
        let gone = root.join("gone");
        let launches = [launch("a", &gone), launch("b", &gone), launch("control", &gone)];
        let err = PassCopies::make(&launches, [0, 1, 2], &root.join("p")).unwrap_err();
        assert!(err.to_string().starts_with("build a: cannot copy"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
