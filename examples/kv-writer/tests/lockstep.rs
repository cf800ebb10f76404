//! kv-writer's own binary as a follower: the protocol spoken by a test
//! coordinator written here from its documentation, and a small lockstep
//! run of two builds (the same binary twice) judged across passes.

#![cfg(all(feature = "hopscope", unix))]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hopscope_harness::lockstep::{self, Launch, Lockstep, LockstepError};
use hopscope_probe::{Role, Trace, TraceReader};

const PROGRAM: &str = env!("CARGO_BIN_EXE_kv-writer");

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-lockstep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// kv-writer following on `socket`, its inline lane only, 20 ops a block.
fn follower(socket: &Path, out: &Path) -> Child {
    Command::new(PROGRAM)
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .args(["--ops", "20", "--lanes", "inline", "--follow"])
        .arg(socket)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kv-writer starts")
}

#[test]
fn a_follower_sends_its_header_then_one_block_per_command_and_ends_on_stop() {
    let dir = dir("protocol");
    let socket = dir.join("s.sock");
    let listener = UnixListener::bind(&socket).expect("listens");
    let mut child = follower(&socket, &dir.join("out"));
    let (stream, _) = listener.accept().expect("the follower connects");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("a timeout");
    let mut commands = stream.try_clone().expect("a second handle");
    writeln!(commands, "{} {}", hopscope_harness::runner::HELLO, hopscope_harness::runner::FOLLOW_PROTOCOL)
        .expect("hello");
    let mut blocks = TraceReader::new(BufReader::new(stream), None).expect("a trace header comes back");
    let header = blocks.header().clone();
    assert_eq!(header.lanes, ["inline"]);
    assert_eq!(header.run.get("follow.protocol").map(String::as_str), Some("1"));
    writeln!(commands, "warmup 0 0").expect("sent");
    let warm = blocks.next_block().expect("readable").expect("a warm-up block");
    assert_eq!(warm.op_count, 20);
    writeln!(commands, "block 0 3 5").expect("sent");
    let block = blocks.next_block().expect("readable").expect("a block");
    assert_eq!((block.lane, block.pass, block.sample, block.op_count), (0, 3, 5, 20));
    writeln!(commands, "stop").expect("sent");
    assert!(blocks.next_block().expect("an end record").is_none(), "the trace ends on stop");
    assert!(child.wait().expect("exits").success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_coordinator_of_another_protocol_version_is_refused_in_one_line() {
    let dir = dir("version");
    let socket = dir.join("s.sock");
    let listener = UnixListener::bind(&socket).expect("listens");
    let mut child = follower(&socket, &dir.join("out"));
    let (mut stream, _) = listener.accept().expect("the follower connects");
    writeln!(stream, "{} 99", hopscope_harness::runner::HELLO).expect("hello");
    let status = child.wait().expect("exits");
    assert!(!status.success());
    let mut err = String::new();
    BufReader::new(child.stderr.take().expect("stderr")).read_line(&mut err).expect("a line");
    assert!(err.contains("hopscope-follow 99") && err.contains("hopscope-follow 1"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn launch(arm: &str, program: &str) -> Launch {
    Launch {
        arm: arm.to_owned(),
        build: format!("build {arm}"),
        program: PathBuf::from(program),
        args: ["--ops", "20"].map(str::to_owned).to_vec(),
    }
}

/// Followers are reaped on every path: none started into `dir` is running.
fn assert_no_follower_left(dir: &Path) {
    let left = Command::new("pgrep").args(["-f", &format!("--follow .* --out {}", dir.display())]).output();
    if let Ok(left) = left {
        assert!(left.stdout.is_empty(), "followers left running: {}", String::from_utf8_lossy(&left.stdout));
    }
}

fn plan(lane: Option<&str>) -> Lockstep {
    Lockstep {
        samples: 2,
        passes: 4,
        warmup: 1,
        deadline: Duration::from_secs(60),
        lane: lane.map(str::to_owned),
        also: Vec::new(),
    }
}

#[test]
fn two_builds_run_in_lockstep_into_one_trace_judged_across_passes() {
    let dir = dir("run");
    let launches = [launch("a", PROGRAM), launch("b", PROGRAM), launch("control", PROGRAM)];
    let run = lockstep::run(&[launches], &plan(None), &dir, BTreeMap::new()).expect("runs");
    assert_eq!(run.stopped, None);
    assert_eq!(run.blocks, 4 * 2 * 3);
    let trace = Trace::read(&run.trace).expect("a valid trace");
    // The subject's probed build, by default, under each arm's name.
    assert_eq!(trace.header.lanes, ["a/kv-writer-probed", "b/kv-writer-probed", "control/kv-writer-probed"]);
    let roles: Vec<Role> = (0..3).map(|l| trace.header.lane_info(l).expect("declared").role).collect();
    assert_eq!(roles, [Role::ArmA, Role::ArmB, Role::Control]);
    // Every pass by its own three processes.
    for pass in 0..4 {
        for arm in ["a", "b", "control"] {
            assert!(dir.join(format!("followers/{pass}/{arm}.stderr")).exists(), "pass {pass} {arm}");
        }
    }
    let rule = hopscope_analyze::ab::Rule {
        min_effect_pct: 0.0,
        min_effect_us: 0.02,
        both_orders: true,
        max_control_drift_pct: 50.0,
        max_spread_ratio: 100.0,
        drift_dwarfed_by: 3.0,
        min_slice_effect_ns: None,
        min_slice_effect_pct: None,
        confidence_pct: None,
    };
    let e = hopscope_analyze::experiment::judge(&trace, &rule);
    let across = e.outcome.across.as_ref().expect("judged across passes");
    assert_eq!(across.passes, 4);
    assert!(across.control.is_some());
    assert_eq!(across.by_order.len(), 2, "both orders ran");
    assert!(e.slices.is_some(), "probed builds get slice verdicts");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_build_that_is_no_follower_or_lacks_the_lane_is_named_and_nothing_is_left_running() {
    let dir = dir("faults");
    // Not a harness program: it exits without connecting.
    let launches = [launch("a", PROGRAM), launch("b", "/bin/true"), launch("control", PROGRAM)];
    let err = lockstep::run(&[launches], &plan(None), &dir, BTreeMap::new()).expect_err("refused");
    assert!(matches!(&err, LockstepError::Follower { build, .. } if build == "build b"), "{err}");
    assert!(err.to_string().contains("exited before it connected"), "{err}");
    let launches = [launch("a", PROGRAM), launch("b", PROGRAM), launch("control", PROGRAM)];
    let err = lockstep::run(&[launches], &plan(Some("no-such-lane")), &dir, BTreeMap::new()).expect_err("refused");
    assert!(err.to_string().contains("no lane `no-such-lane`"), "{err}");
    // Followers are reaped on every path: none of this test's is running.
    assert_no_follower_left(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_build_that_hangs_past_the_deadline_is_stopped_and_named() {
    let dir = dir("hang");
    // kv-writer pausing 0.2 s between writes: a 20-write block takes 4 s,
    // past a 1 s deadline.
    let slow = dir.join("slow-kv-writer");
    std::fs::write(&slow, format!("#!/bin/sh\nexec {PROGRAM} --gap-us 200000 \"$@\"\n")).expect("wrapper");
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let launches = [launch("a", PROGRAM), launch("b", slow.to_str().expect("utf-8")), launch("control", PROGRAM)];
    let plan = Lockstep { deadline: Duration::from_secs(1), ..plan(Some("inline")) };
    let started = std::time::Instant::now();
    let run = lockstep::run(&[launches], &plan, &dir, BTreeMap::new()).expect("a run that stops");
    let line = run.stopped.expect("the run says why it stopped");
    assert!(line.contains("build b: did not answer `warmup 0 0` within its deadline"), "{line}");
    assert_eq!(run.blocks, 0);
    assert!(started.elapsed() < Duration::from_secs(30), "stopped at the deadline, not at the block's end");
    assert_no_follower_left(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_build_whose_lanes_differ_is_refused_naming_it() {
    let dir = dir("other-lanes");
    // Build b runs only its inline lane: it has no subject to set beside a's.
    let other = dir.join("inline-only");
    std::fs::write(&other, format!("#!/bin/sh\nexec {PROGRAM} --lanes inline \"$@\"\n")).expect("wrapper");
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let launches = [launch("a", PROGRAM), launch("b", other.to_str().expect("utf-8")), launch("control", PROGRAM)];
    let err = lockstep::run(&[launches], &plan(None), &dir, BTreeMap::new()).expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("build b"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_build_that_crashes_mid_run_is_named_and_the_passes_before_are_kept() {
    let dir = dir("crash");
    // Build b's third process (pass 2) writes with 0.2 s between writes and
    // is killed after 1 s, inside its first block; its first two run whole.
    let count = dir.join("starts");
    let crashing = dir.join("crashing-kv-writer");
    let script = format!(
        "#!/bin/sh\necho x >> {count}\nif [ $(wc -l < {count}) -ge 3 ]; then\n  exec timeout -s KILL 1 {PROGRAM} \
         --gap-us 200000 \"$@\"\nfi\nexec {PROGRAM} \"$@\"\n",
        count = count.display()
    );
    std::fs::write(&crashing, script).expect("wrapper");
    std::fs::set_permissions(&crashing, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let launches = [launch("a", PROGRAM), launch("b", crashing.to_str().expect("utf-8")), launch("control", PROGRAM)];
    let plan = Lockstep { passes: 6, ..plan(Some("inline")) };
    let run = lockstep::run(&[launches], &plan, &dir, BTreeMap::new()).expect("a run that stops");
    let line = run.stopped.expect("the run says why it stopped");
    assert!(line.starts_with("pass 2: build b:"), "{line}");
    assert!(line.contains("ended during `") || line.contains("broke off during `"), "{line}");
    // Passes 0 and 1, whole: two rounds of three arms each.
    assert_eq!(run.blocks, 2 * 2 * 3);
    let trace = Trace::read(&run.trace).expect("the blocks before are a valid trace");
    assert_eq!(trace.blocks.len(), 12);
    assert!(trace.blocks.iter().all(|b| b.pass < 2), "only whole passes");
    assert_no_follower_left(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}
