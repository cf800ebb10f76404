//! `hopscope ab --builds A B --lane L --minus M`: a lane's change net of
//! another's, each lane run in lockstep on its own, and the flags refused
//! in one line before anything runs.

use std::process::Command;

mod common;
use common::temp_dir;

const HOPSCOPE: &str = env!("CARGO_BIN_EXE_hopscope");

/// Four passes of 20 operations: enough for a CI, small enough for CI.
const SPEC: &str = "name = \"net\"\nhypothesis = \"no change\"\n[run]\nops = 20\nsamples = 1\npairs = 2\nwarmup = 0\n\
                    placement = \"same-core\"\nprobed = true\n[a]\n[b]\n[rule]\nmin_effect_pct = 0.0\nmin_effect_us = 0.02\n\
                    both_orders = true\nmax_control_drift_pct = 2.0\nmax_spread_ratio = 4.0\n";

#[test]
fn a_lane_is_judged_net_of_another_and_both_runs_are_kept() {
    let dir = temp_dir("net");
    let spec = dir.join("small.toml");
    std::fs::write(&spec, SPEC).expect("spec");
    let out_dir = dir.join("run");
    let out = {
        let _turn = common::one_run();
        Command::new(HOPSCOPE)
            .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
            .args(["ab", "--builds", HOPSCOPE, HOPSCOPE, "--lane", "writer", "--minus", "floor"])
            .arg(&spec)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .expect("hopscope runs")
    };
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(stdout.contains("\nnet: "), "the net verdict is printed: {stdout}");
    assert!(stdout.contains("net.md"), "and where it is: {stdout}");
    // Both lanes' own runs, each a whole A/B result.
    for sub in ["", "minus-floor"] {
        let ab = out_dir.join(sub).join("ab.json");
        let e: serde_json::Value = serde_json::from_slice(&std::fs::read(&ab).expect("ab.json")).expect("json");
        assert!(e["outcome"]["across"]["delta"]["mean_us"].is_f64(), "{}", ab.display());
    }
    let net: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("net.json")).expect("net.json")).expect("json");
    assert_eq!(net["schema"], "hopscope.ab-net/1");
    assert_eq!((net["lane"].as_str(), net["minus"].as_str()), (Some("writer"), Some("floor")));
    let f = |v: &serde_json::Value| v.as_f64().expect("a number");
    let (lane, minus, mean) = (f(&net["lane_delta"]["mean_us"]), f(&net["minus_delta"]["mean_us"]), f(&net["mean_us"]));
    assert!((mean - (lane - minus)).abs() < 1e-9, "{net}");
    let (lo, hi) = (f(&net["ci"][0]), f(&net["ci"][1]));
    assert!(lo < mean && mean < hi, "{net}");
    // The net CI is wider than either lane's: their variances add.
    let width = |d: &serde_json::Value| f(&d["ci"][1]) - f(&d["ci"][0]);
    assert!(hi - lo > width(&net["lane_delta"]).max(width(&net["minus_delta"])) * 0.5, "{net}");
    let md = std::fs::read_to_string(out_dir.join("net.md")).expect("net.md");
    assert!(md.starts_with("# hopscope A/B, net: `writer` − `floor`"), "{md}");
    assert!(md.contains("| **`writer` − `floor`** |"), "{md}");
    // The lane each run ran is the one asked.
    let lane_of = |sub: &str| {
        let e: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out_dir.join(sub).join("ab.json")).expect("ab.json")).expect("json");
        e["meta"]["lockstep.lane"].as_str().map(str::to_owned)
    };
    assert_eq!(lane_of("").as_deref(), Some("writer"));
    assert_eq!(lane_of("minus-floor").as_deref(), Some("floor"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_minus_that_cannot_run_is_refused_before_anything_runs() {
    let dir = temp_dir("net-refused");
    let out_dir = dir.join("run");
    let cases: [(&[&str], &str); 5] = [
        (&["x.toml", "--minus", "floor"], "--minus is for --builds and --commits"),
        (&["--builds", HOPSCOPE, HOPSCOPE, "--lane", "floor", "--minus", "floor"], "the same lane as --lane"),
        (&["--builds", HOPSCOPE, HOPSCOPE, "--minus", "../elsewhere"], "--minus ../elsewhere: a lane name"),
        (&["--builds", HOPSCOPE, HOPSCOPE, "--minus", ""], "--minus : a lane name"),
        (&["--commits", "HEAD", "HEAD", "--layouts", "2", "--minus", "floor"], "--minus with --layouts"),
    ];
    for (args, expected) in cases {
        let out = Command::new(HOPSCOPE)
            .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
            .arg("ab")
            .args(args)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .expect("hopscope runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(!out_dir.exists(), "{args:?}: nothing ran");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_minus_lane_the_builds_do_not_declare_is_refused_before_anything_is_measured() {
    let dir = temp_dir("net-unknown");
    let out_dir = dir.join("run");
    let out = {
        let _turn = common::one_run();
        Command::new(HOPSCOPE)
            .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
            .args(["ab", "--builds", HOPSCOPE, HOPSCOPE, "--lane", "writer", "--minus", "no-such-lane", "--out"])
            .arg(&out_dir)
            .output()
            .expect("hopscope runs")
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("has no lane `no-such-lane` (declared: inline, handoff, floor"), "{stderr}");
    assert!(!out_dir.join("ab.json").exists() && !out_dir.join("minus-no-such-lane").exists(), "nothing judged");
    // Refused at the first handshake, before a trace was begun, not after
    // the first lane's 200 passes.
    assert!(!out_dir.join("trace.hop").exists(), "nothing measured");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_lockstep_run_stopped_by_sigint_exits_130_with_the_passes_before_judged() {
    let dir = temp_dir("net-sigint");
    let out_dir = dir.join("run");
    let _turn = common::one_run();
    let child = Command::new(HOPSCOPE)
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .args(["ab", "--builds", HOPSCOPE, HOPSCOPE, "--lane", "writer", "--out"])
        .arg(&out_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("hopscope runs");
    // Some blocks in: the trace has grown past its header.
    let trace = out_dir.join("trace.hop");
    for _ in 0..600 {
        if std::fs::metadata(&trace).is_ok_and(|m| m.len() > 20_000) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    let out = child.wait_with_output().expect("hopscope ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    let receipt = std::fs::read_to_string(out_dir.join("receipt.md")).expect("the passes before are judged");
    assert!(receipt.contains("partial"), "{receipt}");
    let _ = std::fs::remove_dir_all(&dir);
}
