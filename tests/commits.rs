//! `hopscope ab --commits`: revisions resolved and refused in one line,
//! builds made in worktrees that never outlive them, cached by commit and
//! command, and the two programs judged in lockstep.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{finished, temp_dir};

/// A git repository with two commits, `first` and `second` tagged.
fn repository(name: &str) -> PathBuf {
    let dir = temp_dir(name).join("project");
    std::fs::create_dir_all(&dir).expect("dir");
    let git = |args: &[&str]| {
        let out = Command::new("git").arg("-C").arg(&dir).args(args).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    for (n, tag) in [(1, "first"), (2, "second")] {
        std::fs::write(dir.join("Cargo.toml"), format!("[package]\nname = \"hopscope\"\nversion = \"0.{n}.0\"\n"))
            .expect("manifest");
        git(&["add", "Cargo.toml"]);
        // The test's name in the message: each test's commits are its own.
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", &format!("{tag} of {name}")]);
        git(&["tag", tag]);
    }
    dir
}

/// `hopscope ab --commits ...` in `project`, its cache under the project's
/// own target directory.
fn commits(project: &Path, args: &[&str]) -> Output {
    let _turn = common::one_run();
    // Its runs and cache under the temporary project's target directory.
    Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .current_dir(project)
        .env("CARGO_TARGET_DIR", project.join("target"))
        .env("HOPSCOPE_BIN", env!("CARGO_BIN_EXE_hopscope"))
        .arg("ab")
        .arg("--commits")
        .args(args)
        .output()
        .expect("hopscope runs")
}

/// The worktrees git lists for `project` beyond the project itself.
fn extra_worktrees(project: &Path) -> usize {
    let out = Command::new("git").arg("-C").arg(project).args(["worktree", "list", "--porcelain"]).output();
    let list = String::from_utf8_lossy(&out.expect("git runs").stdout).into_owned();
    list.lines().filter(|l| l.starts_with("worktree ")).count() - 1
}

/// The commit `rev` names in `project`.
fn commit_of(project: &Path, rev: &str) -> String {
    let out = Command::new("git").arg("-C").arg(project).args(["rev-parse", rev]).output().expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A spec of four passes of 20 operations, written into `project`.
fn small_spec(project: &Path) -> PathBuf {
    let spec = project.join("small.toml");
    std::fs::write(
        &spec,
        "name = \"commits\"\nhypothesis = \"no change\"\n[run]\nops = 20\nsamples = 1\npairs = 2\nwarmup = 0\n\
         placement = \"same-core\"\nprobed = true\n[a]\n[b]\n[rule]\nmin_effect_pct = 0.0\nmin_effect_us = 0.02\n\
         both_orders = true\nmax_control_drift_pct = 2.0\nmax_spread_ratio = 4.0\n",
    )
    .expect("spec");
    spec
}

/// A build that copies hopscope itself: each worktree's program is a real
/// follower, and `hopscope` follows as `hopscope decompose`.
const COPY_BUILD: &str = "mkdir -p \"$CARGO_TARGET_DIR/release\" && cp \"$HOPSCOPE_BIN\" \
                          \"$CARGO_TARGET_DIR/release/hopscope\" && git log -1 --format=%s > \"$CARGO_TARGET_DIR/built-from\"";

#[test]
fn one_commit_built_two_ways_is_two_builds_named_by_b_s_command() {
    let project = repository("build-b");
    let spec = small_spec(&project);
    // Another command for B alone: what a compiler flag or profile setting is.
    let build_b = format!("{COPY_BUILD} && echo built-the-other-way");
    let out_dir = project.join("ab-run");
    let args = [
        "first",
        "first",
        "--build",
        COPY_BUILD,
        "--build-b",
        &build_b,
        spec.to_str().expect("utf-8"),
        "--out",
        out_dir.to_str().expect("utf-8"),
    ];
    let out = commits(&project, &args);
    let err = stderr(&out);
    assert!(finished(&out), "{err}");
    assert!(
        err.contains(&format!("build a: first ({}) with `{COPY_BUILD}`", &commit_of(&project, "first")[..12])),
        "{err}"
    );
    assert!(err.contains(&format!(", built by `{build_b}` against first (")), "b is named by its command: {err}");
    let slots = std::fs::read_dir(project.join("target/hopscope/builds"))
        .expect("cache")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("hopscope").is_file())
        .count();
    assert_eq!(slots, 2, "one commit, two commands: two cached builds");
    let receipt = std::fs::read_to_string(out_dir.join("receipt.md")).expect("an A/B receipt");
    assert!(receipt.contains("built-the-other-way"), "the receipt names b's command: {receipt}");
    // A build flag beside --builds is refused, not ignored.
    for flag in ["--build", "--build-b", "--bin", "--layouts"] {
        let value = if flag == "--layouts" { "2" } else { "x" };
        let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
            .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
            .args(["ab", "--builds", "a", "b", flag, value])
            .output()
            .expect("hopscope runs");
        assert_ne!(out.status.code(), Some(0));
        assert!(stderr(&out).contains(&format!("{flag} is for --commits")), "{}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(project.parent().expect("the test's own directory"));
}

#[test]
fn a_revision_that_names_no_commit_is_refused_before_anything_is_built() {
    let project = repository("no-such-rev");
    let out = commits(&project, &["first", "no-such-branch", "--build", "touch built-something"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--commits: `no-such-branch` is not a commit in"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!project.join("target/hopscope/builds").exists(), "nothing was built or cached");
    assert_eq!(extra_worktrees(&project), 0);
    // A build directory per test (the layouts test's is a gigabyte): gone once it passed.
    let _ = std::fs::remove_dir_all(project.parent().expect("the test's own directory"));
}

#[test]
fn a_build_that_fails_says_so_in_one_line_and_leaves_no_worktree() {
    let project = repository("failing-build");
    let out = commits(&project, &["first", "second", "--build", "echo compiling; echo 'error: it broke' >&2; exit 7"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("build a: first (") && last.contains("failed (exit 7): error: it broke"), "{err}");
    assert!(last.contains("build.log"), "names the whole log: {err}");
    assert_eq!(extra_worktrees(&project), 0, "the worktree is removed after a failed build");
    let worktrees = std::env::temp_dir().join("hopscope-worktrees");
    let first = commit_of(&project, "first");
    let left = std::fs::read_dir(&worktrees)
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with(&first[..12])).count())
        .unwrap_or(0);
    assert_eq!(left, 0, "no checkout left in {}", worktrees.display());
    // A build that succeeds but makes no program names where it looked.
    let out = commits(&project, &["first", "second", "--build", "true"]);
    assert!(stderr(&out).contains("made no program at"), "{}", stderr(&out));
    assert_eq!(extra_worktrees(&project), 0);
    // A build directory per test (the layouts test's is a gigabyte): gone once it passed.
    let _ = std::fs::remove_dir_all(project.parent().expect("the test's own directory"));
}

#[test]
fn two_revisions_are_built_once_and_judged_in_lockstep() {
    let project = repository("judged");
    let spec = small_spec(&project);
    let build = COPY_BUILD;
    let spec_arg = spec.to_str().expect("utf-8");
    let out_dir = project.join("ab-run");
    let args = ["first", "second", "--build", build, spec_arg, "--out", out_dir.to_str().expect("utf-8")];
    let out = commits(&project, &args);
    let err = stderr(&out);
    assert!(finished(&out), "{err}\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("build a: first (") && err.contains("build b: second ("), "{err}");
    assert!(err.contains("second (") && err.contains("against first ("), "lines name the revisions: {err}");
    assert_eq!(extra_worktrees(&project), 0);
    let receipt = std::fs::read_to_string(out_dir.join("receipt.md")).expect("an A/B receipt");
    assert!(receipt.contains("Effect across passes"), "{receipt}");
    for (arm, rev) in [("a", "first"), ("b", "second")] {
        let line = format!("(built from commit {} by ", commit_of(&project, rev));
        assert!(receipt.lines().any(|l| l.starts_with(&format!("- build {arm}:")) && l.contains(&line)), "{receipt}");
    }
    assert!(receipt.contains("20 ops per block · 1 samples × 4 passes"), "the lockstep plan's sizes: {receipt}");
    // Each slot holds the program of its commit.
    let slots: Vec<_> = std::fs::read_dir(project.join("target/hopscope/builds"))
        .expect("cache")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("hopscope").is_file())
        .collect();
    assert_eq!(slots.len(), 2, "one cached program per commit");
    // Judged again: both programs come from the cache, nothing is built.
    let out = commits(&project, &args);
    let err = stderr(&out);
    assert!(finished(&out), "{err}");
    assert_eq!(err.matches("from the cache").count(), 2, "{err}");
    assert!(!err.contains(" with `"), "nothing rebuilt: {err}");
    // Re-judged from its directory alone, under the spec the trace recorded.
    let out = Command::new(env!("CARGO_BIN_EXE_hopscope"))
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .args(["ab", "--analyze", out_dir.to_str().expect("utf-8")])
        .output()
        .expect("hopscope runs");
    assert!(finished(&out), "{}", stderr(&out));
    let receipt = std::fs::read_to_string(out_dir.join("receipt.md")).expect("the receipt rewritten");
    assert!(receipt.contains("Effect across passes"), "judged across passes again: {receipt}");
    // A build directory per test (the layouts test's is a gigabyte): gone once it passed.
    let _ = std::fs::remove_dir_all(project.parent().expect("the test's own directory"));
}

#[test]
fn layouts_build_each_revision_in_shuffled_link_orders_and_state_their_spread() {
    let project = repository("layouts");
    // Refused before anything is built: one layout is no spread, nine too many.
    for n in ["1", "9", "x"] {
        let out = commits(&project, &["first", "second", "--build", "true", "--layouts", n]);
        assert!(!out.status.success(), "--layouts {n}");
        assert!(stderr(&out).contains("--layouts"), "{}", stderr(&out));
        assert!(!project.join("target/hopscope/builds").exists(), "nothing built for --layouts {n}");
    }
    let spec = project.join("small.toml");
    std::fs::write(
        &spec,
        "name = \"layouts\"\nhypothesis = \"no change\"\n[run]\nops = 20\nsamples = 1\npairs = 1\nwarmup = 0\n\
         placement = \"same-core\"\nprobed = true\n[a]\n[b]\n[rule]\nmin_effect_pct = 0.0\nmin_effect_us = 0.02\n\
         both_orders = true\nmax_control_drift_pct = 50.0\nmax_spread_ratio = 4.0\n",
    )
    .expect("spec");
    // The build shows what the linker would be given: the flags and the
    // response file's words.
    let build = "echo \"flags: $CARGO_ENCODED_RUSTFLAGS\" | tr '\\037' ' '; \
                 for f in \"$CARGO_TARGET_DIR\"/hopscope-layout.args; do echo \"args: $(cat \"$f\")\"; done; \
                 mkdir -p \"$CARGO_TARGET_DIR/release\" && cp \"$HOPSCOPE_BIN\" \"$CARGO_TARGET_DIR/release/hopscope\"";
    let out_dir = project.join("ab-run");
    let args = [
        "first",
        "second",
        "--build",
        build,
        "--layouts",
        "2",
        spec.to_str().expect("utf-8"),
        "--out",
        out_dir.to_str().expect("utf-8"),
    ];
    let out = commits(&project, &args);
    let err = stderr(&out);
    assert!(finished(&out), "{err}\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("first (") && err.contains(", layout 2 with `"), "each layout built and named: {err}");
    assert_eq!(extra_worktrees(&project), 0);
    // Four builds, each linked with its own seed through the response file.
    let mut seeds = Vec::new();
    for entry in std::fs::read_dir(project.join("target/hopscope/builds")).expect("cache").flatten() {
        let Ok(log) = std::fs::read_to_string(entry.path().join("build.log")) else { continue };
        assert!(log.contains("link-arg=@") && log.contains("hopscope-layout.args"), "{log}");
        let seed = log.lines().find_map(|l| l.strip_prefix("args: -Wl,--shuffle-sections=.text*=")).expect("a seed");
        assert!(entry.path().join("hopscope").is_file());
        seeds.push(seed.trim().to_owned());
    }
    seeds.sort();
    assert_eq!(seeds, ["1", "1", "2", "2"], "two layouts of each revision");
    // Every layout ran in both orders (passes rounded up to 2 × layouts),
    // and the receipt states the spread between builds of one commit.
    let receipt = std::fs::read_to_string(out_dir.join("receipt.md")).expect("an A/B receipt");
    assert!(receipt.contains("1 samples × 4 passes"), "{receipt}");
    assert!(receipt.contains("- layouts: 2 builds of each side, functions in a shuffled link order"), "{receipt}");
    assert!(receipt.contains("## Builds of one commit (2 layouts of each side)"), "{receipt}");
    assert!(receipt.contains("| layout 2 − layout 1 |") && receipt.contains("| layout 1 − layout 2 |"), "{receipt}");
    assert!(receipt.contains("Layout spread: "), "{receipt}");
    let followers = std::fs::read_dir(out_dir.join("followers")).expect("followers").count();
    assert_eq!(followers, 4, "one set of processes per pass");
    // A build directory per test (the layouts test's is a gigabyte): gone once it passed.
    let _ = std::fs::remove_dir_all(project.parent().expect("the test's own directory"));
}
