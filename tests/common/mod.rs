//! What the command-line tests share: a fresh directory per test, the
//! binary under test (with or without a run index of the test's own), and
//! the small real run most of them start from.
// Each test binary compiles this module and uses its own part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh, empty directory for `name`, unique to this test binary
/// (`CARGO_CRATE_NAME` is the binary compiling this module) and process.
/// The first call also removes what earlier runs of this binary left
/// (directories named for a process no longer alive): a failed test keeps
/// its directory to be looked at, until the next run.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_dead_runs);
    let dir = std::env::temp_dir().join(format!("hopscope-{}-{}-{name}", env!("CARGO_CRATE_NAME"), std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Remove this binary's test directories whose process is gone
/// (`/proc/PID` absent).
fn sweep_dead_runs() {
    // Without /proc no process can be told gone: nothing is removed.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!("hopscope-{}-", env!("CARGO_CRATE_NAME"));
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(&prefix).and_then(|rest| rest.split('-').next()) else { continue };
        let alive = pid.parse::<u32>().map(|pid| Path::new("/proc").join(pid.to_string()).exists());
        if alive == Ok(false) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The tests' runs take turns: each measures the machine, and two at once
/// on a small machine measure each other (a run then says another process
/// held its CPUs, leaves those rounds out and draws no verdict).
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This test binary's turn to run `hopscope`, held until dropped.
pub(crate) fn one_run() -> std::sync::MutexGuard<'static, ()> {
    ONE_RUN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The `hopscope` binary with `args`, run to completion (in its turn).
pub(crate) fn hopscope(args: &[&str]) -> Output {
    let _turn = one_run();
    Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .args(args)
        .output()
        .expect("hopscope runs")
}

/// As [`hopscope`], with its run index in `root` rather than the shared
/// `target/hopscope/index.jsonl`, so `latest`, baselines and history
/// are this test's alone.
pub(crate) fn hopscope_indexed(root: &Path, args: &[&str]) -> Output {
    let _turn = one_run();
    Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .env("HOPSCOPE_INDEX", root.join("index.jsonl"))
        .args(args)
        .output()
        .expect("hopscope runs")
}

/// `decompose` at the smallest sizes that still give every figure a CI:
/// 20 ops × 3 samples × 2 passes after one warm-up block.
pub(crate) const SMALL_DECOMPOSE: [&str; 10] =
    ["decompose", "--quick", "--ops", "20", "--samples", "3", "--passes", "2", "--warmup", "1"];

/// [`SMALL_DECOMPOSE`] with `extra` flags, into `out`.
pub(crate) fn small_decompose_args<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = SMALL_DECOMPOSE.to_vec();
    args.extend_from_slice(extra);
    args.extend(["--out", out.to_str().expect("utf-8 path")]);
    args
}

/// stdout of a run that must succeed (its stderr in the failure message).
pub(crate) fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// Whether a run that judges (`ab`, `--baseline`) finished: with success,
/// or with the status that refuses a verdict because another process held
/// its CPUs (5, said in its output). A test of what the run builds, names
/// or writes passes either way: the host's moment is not the code's fault,
/// and the refusal itself is tested where it is the point
/// (`tests/contention.rs`).
pub(crate) fn finished(out: &Output) -> bool {
    out.status.success() || (out.status.code() == Some(5) && hopscope_testkit::crowded(out))
}

/// How many rounds a run's `result.json` left out of every figure because
/// another process held their CPUs (0 when none were).
pub(crate) fn rounds_left_out(result: &serde_json::Value) -> u64 {
    let contention = &result["contention"];
    if contention["dropped_rounds"] == true { contention["contended_rounds"].as_u64().unwrap_or(0) } else { 0 }
}
