//! The command line as a user meets it: the main job end to end, and one
//! clear line with a non-zero exit for every kind of bad trace.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{hopscope, small_decompose_args, temp_dir};

/// A tiny real decomposition, shared by the tests that need a trace.
fn small_decompose(dir: &Path) -> Output {
    small_decompose_with(dir, &[])
}

/// [`small_decompose`] with `extra` flags.
fn small_decompose_with(dir: &Path, extra: &[&str]) -> Output {
    hopscope(&small_decompose_args(dir, extra))
}

#[test]
fn decompose_writes_the_receipt_and_says_where() {
    let dir = temp_dir("decompose");
    let out = small_decompose(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("receipt: {}", dir.join("receipt.md").display())), "{stdout}");
    for file in ["trace.hop", "result.json", "receipt.md"] {
        assert!(dir.join(file).exists(), "{file} missing");
    }
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
    assert_eq!(result["schema"], "hopscope.decomposition/1");
    for lane in ["inline", "handoff", "floor", "writer"] {
        assert!(result["lanes"][lane]["us_per_op"]["median"].is_number(), "{lane}");
        assert!(result["lanes"][lane]["us_per_op"]["ci95"].is_array(), "{lane}");
    }
    assert_eq!(result["lane_order"][1], "handoff", "read after inline: {}", result["lane_order"]);
    assert_eq!(result["derived"]["lanes"]["handoff"], "handoff");
    // The handoff's thread hands its CPU time in, like the writer's.
    assert!(result["cpu_us_per_op"]["handoff"]["writer"].is_number(), "{}", result["cpu_us_per_op"]);
    for figure in ["hop_us", "boundary_us", "switches_us", "machinery_us", "library_us"] {
        assert!(result["derived"][figure]["median"].is_number(), "{figure}");
        assert!(result["derived"][figure]["ci95"].is_array(), "{figure}");
    }
    let slices = result["slices"].as_array().expect("slices");
    // Nine slices of the write, and the two that close each thread's
    // cycle: `replied→idle` and `done→returned` (with `idle→received` on a
    // shared core, or the writer's tail beside the path across cores).
    assert!(slices.len() == 11 || slices.len() == 12, "{slices:?}");
    let names: Vec<&str> = slices.iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.contains(&"replied→idle") && names.contains(&"done→returned"), "{names:?}");
    for s in slices {
        assert!(s["name"].is_string() && s["side"].is_string() && s["median_us"].is_number() && s["ci95"].is_array());
    }
    for key in ["insitu_library_us", "lanes_library_us", "agree", "difference_us", "tolerance_us"] {
        assert!(!result["crosscheck"][key].is_null(), "crosscheck.{key}");
    }
    let accounting = &result["crosscheck"]["accounting"];
    for key in ["total", "net_us", "difference_us", "closes", "indirect", "by_owner"] {
        assert!(!accounting[key].is_null(), "crosscheck.accounting.{key}");
    }
    for key in ["clean_us", "probed_us", "delta_us"] {
        assert!(result["observer_effect"][key].is_number(), "observer_effect.{key}");
    }
    assert!(result["cpu_us_per_op"]["writer"]["writer"].is_number());
    assert_eq!(result["drops"]["marks_dropped"], 0);
    // Each probed lane's cold start, and the library's split into its cold
    // start and its cost once warm, in the result and the receipt.
    let cold = &result["cold_start"];
    let cold_lanes: Vec<&str> =
        cold["lanes"].as_array().expect("lanes").iter().filter_map(|l| l["lane"].as_str()).collect();
    assert!(cold_lanes.contains(&"writer-probed") && cold_lanes.contains(&"floor-probed"), "{cold_lanes:?}");
    assert_eq!(cold["compared"], serde_json::json!(["writer-probed", "floor-probed"]));
    for key in ["library_first_op_us", "library_steady_us"] {
        assert!(cold[key]["median"].is_number() && cold[key]["ci95"].is_array(), "cold_start.{key}");
    }
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("## Cold start") && receipt.contains("The library once warm"), "{receipt}");
    // Each lane by the lane before it. Six rounds are less than one cycle
    // of the balanced order for six lanes, and the receipt says so.
    assert_eq!(result["carryover"]["balanced"], false, "{}", result["carryover"]);
    assert!(result["carryover"]["lanes"].as_array().is_some_and(|l| l.len() == 6), "{}", result["carryover"]);
    assert!(receipt.contains("## Carryover") && receipt.contains("shorter than one cycle"), "{receipt}");

    // Re-analysis of the same trace gives the same result.
    let again = temp_dir("reanalyze");
    let trace = dir.join("trace.hop");
    let out = hopscope(&["analyze", trace.to_str().expect("utf-8"), "--out", again.to_str().expect("utf-8")]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(dir.join("result.json")).expect("first"),
        std::fs::read_to_string(again.join("result.json")).expect("second")
    );
}

/// Run `analyze` on `bytes` and return its stderr, asserting failure.
fn analyze_fails(name: &str, bytes: &[u8]) -> String {
    let dir = temp_dir(name);
    let path = dir.join("bad.hop");
    std::fs::write(&path, bytes).expect("write");
    let out = hopscope(&["analyze", path.to_str().expect("utf-8")]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{name}: analyze succeeded");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: not one line: {stderr}");
    assert!(stderr.contains(path.to_str().expect("utf-8")), "{name}: file not named: {stderr}");
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    stderr
}

#[test]
fn bad_traces_fail_with_one_clear_line() {
    let dir = temp_dir("source");
    assert!(small_decompose(&dir).status.success());
    let good = std::fs::read(dir.join("trace.hop")).expect("trace");

    let mut version = good.clone();
    version[8] = 99;
    assert!(analyze_fails("version", &version).contains("version 99"));
    assert!(analyze_fails("magic", b"this is not a trace at all").contains("not a hopscope trace"));
    assert!(analyze_fails("header cut", &good[..40]).contains("truncated"));

    // Cut in half (a killed run) or damaged mid-way: every complete block
    // before the damage is analyzed, and the result says it is partial.
    let mut corrupt = good.clone();
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0x55;
    for (name, bytes, why) in
        [("truncated", &good[..good.len() / 2], "truncated"), ("corrupt", &corrupt[..], "at byte")]
    {
        let dir = temp_dir(name);
        let path = dir.join("cut.hop");
        std::fs::write(&path, bytes).expect("write");
        let out = hopscope(&["analyze", path.to_str().expect("utf-8")]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("warning: partial: these figures cover the "), "{name}: {stdout}");
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
        let kept = result["partial"]["blocks_kept"].as_u64().expect("partial.blocks_kept");
        assert!(kept > 0, "{name}: no block kept");
        let reason = &result["partial"]["reason"];
        assert!(["trace_cut", "trace_damaged"].contains(&reason["cause"].as_str().expect("cause")), "{name}: {result}");
        assert!(reason["detail"].as_str().expect("detail").contains(why), "{name}: {result}");
        assert!(stdout.contains(why), "{name}: the line says what the reader found: {stdout}");
        let blocks: u64 =
            result["lanes"].as_object().expect("lanes").values().map(|l| l["blocks"].as_u64().unwrap_or(0)).sum();
        if result["contention"]["dropped_rounds"] == true {
            // Rounds another process held the CPUs of are left out too.
            assert!(blocks < kept, "{name}: {blocks} blocks in the figures of {kept} kept");
        } else {
            assert_eq!(blocks, kept, "{name}: the figures use exactly the kept blocks");
        }
    }

    let missing = temp_dir("missing").join("nope.hop");
    let out = hopscope(&["analyze", missing.to_str().expect("utf-8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("nope.hop") && stderr.trim_end().lines().count() == 1, "{stderr}");
}

#[test]
fn calibrate_json_has_the_documented_fields() {
    let out = hopscope(&["calibrate", "--json", "--rounds", "5"]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    for key in ["clock_read_ns", "mark_ns", "mark_to_clock_ratio"] {
        assert!(json[key].as_f64().is_some_and(|v| v > 0.0), "{key}");
    }
    assert!(json["clock_source"].is_string());
    assert_eq!(json["schema"], "hopscope.calibration/1");
    let counters = json["counters"].as_object().expect("counters");
    for name in ["cycles", "instructions", "context-switches", "cpu-migrations", "task-clock", "page-faults"] {
        let verdict = counters[name].as_str().expect("string verdict");
        assert!(verdict == "supported" || verdict.starts_with("unsupported: "), "{name}: {verdict}");
    }
}

#[test]
fn bad_flags_are_refused() {
    let out = hopscope(&["run", "--shape", "teleport"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("shape `teleport`: one of single-insert"));
    let out = hopscope(&[
        "run",
        "--lanes",
        "inline,warpdrive",
        "--quick",
        "--out",
        temp_dir("lanes").to_str().expect("utf-8"),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("lane `warpdrive`: inline, floor, writer"));
}

const SMALL_SPEC: &str = r#"
name = "tiny"
hypothesis = "a smoke test of the A/B machinery"
shape = "single-insert"
[run]
ops = 20
samples = 3
pairs = 1
warmup = 1
[a]
reply = "oneshot"
[b]
reply = "persistent"
[rule]
min_effect_pct = 3.0
min_effect_us = 0.3
max_control_drift_pct = 3.0
"#;

#[test]
fn ab_runs_a_spec_and_detects_a_later_edit() {
    let dir = temp_dir("ab");
    let spec = dir.join("tiny.toml");
    std::fs::write(&spec, SMALL_SPEC).expect("spec");
    let run_dir = dir.join("run");
    let out = hopscope(&["ab", spec.to_str().expect("utf-8"), "--out", run_dir.to_str().expect("utf-8")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("tiny: "), "{stdout}");
    let ab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("ab.json")).expect("ab.json")).expect("json");
    assert_eq!(ab["schema"], "hopscope.ab/1");
    assert_eq!(ab["outcome"]["passes"].as_array().expect("passes").len(), 2);
    assert_eq!(ab["outcome"]["passes"][1]["order"], "b→a");
    assert!(
        ["reproduced", "inconclusive", "drift-suspected"]
            .contains(&ab["outcome"]["verdict"].as_str().expect("verdict"))
    );
    for file in ["receipt.md", "report.html", "ab-deltas.png", "trace.hop"] {
        assert!(run_dir.join(file).exists(), "{file} missing");
    }
    // Clean arms carry no marks: no slice verdicts.
    assert!(ab.get("slices").is_none());

    // Re-analysis under an unchanged spec: no warning; after an edit: one.
    let reanalyze = || hopscope(&["ab", spec.to_str().expect("utf-8"), "--analyze", run_dir.to_str().expect("utf-8")]);
    let same = reanalyze();
    assert!(same.status.success());
    assert!(!String::from_utf8_lossy(&same.stdout).contains("edited after the run"));
    std::fs::write(&spec, SMALL_SPEC.replace("min_effect_pct = 3.0", "min_effect_pct = 0.1")).expect("edit");
    let edited = reanalyze();
    let stdout = String::from_utf8_lossy(&edited.stdout);
    assert!(edited.status.success());
    assert!(stdout.contains("edited after the run"), "{stdout}");
    let ab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("ab.json")).expect("ab.json")).expect("json");
    assert_eq!(ab["rule"]["min_effect_pct"], 3.0, "the recorded rule judges, not the edited one");

    // --fail-on maps the verdict (b against a) to the documented statuses.
    let delta: f64 = ab["outcome"]["passes"]
        .as_array()
        .expect("passes")
        .iter()
        .map(|p| p["delta_us"]["median"].as_f64().expect("delta"))
        .sum();
    let expected = match ab["outcome"]["verdict"].as_str().expect("verdict") {
        "reproduced" if delta > 0.0 => (3, 3),
        "reproduced" => (0, 4),
        "drift-suspected" => (5, 5),
        _ => (0, 0),
    };
    for (fail_on, code) in [("regression", expected.0), ("any", expected.1)] {
        let args =
            ["ab", spec.to_str().expect("utf-8"), "--analyze", run_dir.to_str().expect("utf-8"), "--fail-on", fail_on];
        assert_eq!(hopscope(&args).status.code(), Some(code), "--fail-on {fail_on}");
    }
    // --json: the run and its experiment on stdout, nothing else there.
    let json =
        hopscope(&["ab", spec.to_str().expect("utf-8"), "--analyze", run_dir.to_str().expect("utf-8"), "--json"]);
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&json.stdout).expect("stdout is one JSON document");
    assert_eq!(printed["schema"], "hopscope.ab-run/1");
    assert_eq!(printed["experiment"]["schema"], "hopscope.ab/1");
    assert_eq!(printed["experiment"]["outcome"]["verdict"], ab["outcome"]["verdict"]);
}

#[test]
fn ab_on_probed_arms_judges_every_slice() {
    let dir = temp_dir("ab-probed");
    let spec = dir.join("probed.toml");
    std::fs::write(&spec, SMALL_SPEC.replace("[run]\n", "[run]\nprobed = true\n")).expect("spec");
    let run_dir = dir.join("run");
    let out = hopscope(&["ab", spec.to_str().expect("utf-8"), "--out", run_dir.to_str().expect("utf-8")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("slices"), "{stdout}");
    let ab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("ab.json")).expect("ab.json")).expect("json");
    let slices = ab["slices"]["slices"].as_array().expect("slice verdicts");
    assert!(slices.iter().any(|s| s["name"] == "locked→built"), "{slices:?}");
    assert!(slices.iter().all(|s| s["min_effect_ns"].as_f64().is_some_and(|m| m >= 10.0)), "{slices:?}");
    let receipt = std::fs::read_to_string(run_dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("## Effect per slice") && receipt.contains("`locked→built`"), "{receipt}");
}

#[test]
fn a_bad_spec_fails_before_measuring_with_one_line_naming_the_field() {
    let dir = temp_dir("bad-spec");
    let cases = [
        (SMALL_SPEC.replace("reply = \"persistent\"", "replie = \"persistent\""), "replie"),
        (SMALL_SPEC.replace("min_effect_pct = 3.0", "min_effect_pct = \"three\""), "min_effect_pct"),
        (SMALL_SPEC.replace("[b]\nreply = \"persistent\"\n", ""), "`b`"),
        (SMALL_SPEC.replace("shape = \"single-insert\"", "shape = \"warp\""), "shape"),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let spec = dir.join(format!("bad-{i}.toml"));
        std::fs::write(&spec, text).expect("spec");
        let run_dir = dir.join(format!("run-{i}"));
        let out = hopscope(&["ab", spec.to_str().expect("utf-8"), "--out", run_dir.to_str().expect("utf-8")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{field}: accepted");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{field}: {stderr}");
        assert!(stderr.contains(field), "{field} not named: {stderr}");
        assert!(!run_dir.join("trace.hop").exists(), "{field}: measured before refusing");
    }
}

#[test]
fn every_shipped_spec_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("experiments/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            // `--analyze` on an empty directory parses the spec first, then
            // fails for want of a trace: the failure must not be the spec's.
            let out = hopscope(&[
                "ab",
                path.to_str().expect("utf-8"),
                "--analyze",
                temp_dir("none").to_str().expect("utf-8"),
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("trace.hop"), "{}: {stderr}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 6, "only {seen} specs shipped");
}

#[test]
fn resolve_writes_the_documented_table() {
    let dir = temp_dir("resolve");
    let out = hopscope(&[
        "resolve",
        "--deltas",
        "0,3000",
        "--repeats",
        "1",
        "--samples",
        "4",
        "--ops",
        "20",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("resolution.json")).expect("resolution.json"))
            .expect("json");
    assert_eq!(json["schema"], "hopscope.resolution/3");
    assert_eq!(json["slice"], "locked→built");
    let deltas = json["deltas"].as_array().expect("deltas");
    assert_eq!(deltas.len(), 2);
    for d in deltas {
        for key in [
            "injected_ns",
            "delay_measured_ns",
            "detection_rate",
            "estimated_ns",
            "repeats",
            "seconds",
            "slice_detection_rate",
            "elsewhere_rate",
            "any_flag_rate",
        ] {
            assert!(d[key].is_number(), "{key}");
        }
        assert!(d.get("attributed_slice").is_some());
    }
    // The injected busy-wait is sized to its nominal length, and measured.
    assert_eq!(deltas[0]["delay_measured_ns"], 0.0);
    let measured = deltas[1]["delay_measured_ns"].as_f64().expect("measured");
    assert!(measured > 1_500.0, "a 3000 ns delay measured {measured} ns");
    assert!(dir.join("resolution.png").exists() && dir.join("receipt.md").exists());
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("slice: detected") && receipt.contains("lane: detected"), "{receipt}");
    let bad = hopscope(&["resolve", "--slice", "nowhere", "--out", temp_dir("resolve-bad").to_str().expect("utf-8")]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("slice `nowhere`: a hop the writer can delay"));
}

#[test]
fn keep_warm_sweeps_and_writes_its_table_and_frontier() {
    let dir = temp_dir("keep-warm");
    let out = hopscope(&[
        "keep-warm",
        "--windows",
        "5",
        "--modes",
        "spin,both,tick,adaptive,budget",
        "--cpu-budget",
        "2x",
        "--placement",
        "same-core",
        "--gap-us",
        "5",
        "--samples",
        "2",
        "--ops",
        "10",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("keep-warm.json")).expect("json")).expect("parses");
    assert_eq!(sweep["schema"], "hopscope.keep-warm/1");
    let rows = &sweep["rows"];
    let settings: Vec<&str> =
        rows.as_array().expect("rows").iter().map(|r| r["setting"].as_str().expect("setting")).collect();
    // Two shapes (back to back, and with a 5 µs caller gap) × 7 lanes.
    assert_eq!(settings.len(), 14, "{settings:?}");
    let placements: Vec<&str> =
        rows.as_array().expect("rows").iter().map(|r| r["placement"].as_str().expect("p")).collect();
    assert!(placements.contains(&"same-core+gap5us"), "{placements:?}");
    for s in ["inline", "park", "spin-5us", "both-5us", "tick-5us", "adaptive-5us", "budget2x-5us"] {
        assert!(settings.contains(&s), "{s} missing from {settings:?}");
    }
    assert!(dir.join("frontier.png").exists() && dir.join("receipt.md").exists());
    // The wake floor, measured on the sweep's placement: both kinds of
    // wake, every sample, quantiles in order, and the receipt's bound.
    let floor: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("wake-floor.json")).expect("wake floor")).expect("json");
    assert_eq!(floor["placement"], "same-core");
    for kind in ["sleep_late_us", "park_wake_us"] {
        let q = |k: &str| floor[kind][k].as_f64().expect("quantile");
        assert_eq!(floor[kind]["count"], 300, "{kind}");
        assert!(0.0 <= q("p10") && q("p10") <= q("median") && q("median") <= q("p90"), "{kind}: {floor}");
    }
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("- Wake floor (same-core): a 2 µs sleep returns"), "{receipt}");
    assert!(receipt.contains("any wait that gives its CPU up adds at least"), "{receipt}");
    // keep-warm.json carries what the receipt says: the findings and the
    // bound with their figures.
    assert_eq!(sweep["wake_floor"], floor, "the floor in both files");
    let kinds: Vec<&str> =
        sweep["findings"].as_array().expect("findings").iter().map(|f| f["finding"].as_str().expect("kind")).collect();
    assert_eq!(kinds.first(), Some(&"fastest"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"beat_parking"), "{kinds:?}");
    let least = sweep["wake_bound"]["least_us"].as_f64().expect("least_us");
    assert!(receipt.contains(&format!("adds at least {least:.2} µs")), "{least} in {receipt}");
}

#[test]
fn export_writes_a_chrome_timeline_of_a_real_trace() {
    let dir = temp_dir("export");
    assert!(small_decompose(&dir).status.success());
    let trace = dir.join("trace.hop");
    let out = hopscope(&["export", "--format", "chrome", trace.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == "woke→executed"));
    // The wake's arrow arrives on the writer's first slice.
    assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == "woke→executed" && e["flow_in"] == true));
    let bad = hopscope(&["export", dir.join("missing.hop").to_str().expect("utf-8")]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("missing.hop"));
}

#[test]
fn decompose_with_peers_compares_every_peer_with_the_writer() {
    let dir = temp_dir("peers");
    let out = small_decompose_with(&dir, &["--peers"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
    let peers = ["tokio-rusqlite", "async-sqlite", "async-sqlite-blocking", "sqlx-sqlite", "deadpool-sqlite"];
    // Rounds another process held the CPUs of are left out of every lane.
    let left_out = common::rounds_left_out(&result);
    // Every peer also runs probed through SQLite's trace hook.
    let probed: Vec<String> = peers.iter().map(|p| format!("{p}-probed")).collect();
    for peer in peers.iter().copied().chain(probed.iter().map(String::as_str)) {
        // The runner checked every block's rows against what the lane reported.
        assert_eq!(result["lanes"][peer]["ops"], 20 * (3 * 2 - left_out), "{peer}");
    }
    let rows = result["comparison"]["rows"].as_array().expect("comparison rows");
    let lanes: Vec<&str> = rows.iter().map(|r| r["lane"].as_str().expect("lane")).collect();
    assert_eq!(lanes[..3], ["writer", "writer-probed", "writer-hook-probed"]);
    let expected: Vec<&str> = peers
        .iter()
        .flat_map(|p| {
            let own = probed.iter().map(String::as_str).filter(move |q| q.strip_suffix("-probed") == Some(*p));
            std::iter::once(*p).chain(own)
        })
        .collect();
    assert_eq!(lanes[3..], expected);
    // Each probed peer's operations join whole and are sliced: the way to
    // its thread, SQLite's statement, the way back.
    // The reference writer marked as they are comes first, and every
    // peer's slices are paired against its, round by round.
    let sliced = result["peer_slices"].as_array().expect("peer slices");
    let sliced_lanes: Vec<&str> = sliced.iter().map(|p| p["lane"].as_str().expect("lane")).collect();
    assert_eq!(sliced_lanes[..2], ["writer-hook-probed", "inline-hook-probed"]);
    assert_eq!(sliced_lanes[2..], probed);
    assert_eq!(sliced[0]["reference"], true);
    assert_eq!(sliced[1]["baseline"], true);
    // Every lane but the inline baseline sums its slices into its hop,
    // checked against the clean lanes' hop round by round.
    for peer in sliced.iter().filter(|p| p["baseline"] != true) {
        let hop = &peer["hop"];
        assert_eq!(hop["baseline"], "inline-hook-probed", "{}", peer["lane"]);
        assert_eq!(hop["clean"][1], "inline", "{}", peer["lane"]);
        assert!(hop["difference"]["rounds"].as_u64() > Some(0), "{}", peer["lane"]);
        let (slices, lanes) = (hop["slices"]["median"].as_f64(), hop["lanes"]["median"].as_f64());
        assert!(slices.is_some() && lanes.is_some(), "{hop}");
    }
    for peer in sliced {
        let names: Vec<&str> =
            peer["slices"].as_array().expect("slices").iter().map(|s| s["name"].as_str().expect("name")).collect();
        assert_eq!(names, ["enter→woke", "woke→executed", "executed→done"], "{}", peer["lane"]);
        assert!(peer["slices"].as_array().expect("slices").iter().all(|s| s["median_us"].as_f64() > Some(0.0)));
        if peer["reference"] != true {
            let paired = peer["versus_reference"].as_array().expect("paired");
            assert_eq!(paired.len(), 3, "{}", peer["lane"]);
            assert!(paired.iter().all(|d| d["difference"]["rounds"].as_u64() > Some(0)), "{}", peer["lane"]);
        }
    }
    assert_eq!(result["drops"]["marks_dropped"], 0);
    for peer in &probed {
        assert_eq!(result["drops"]["incomplete_ops"][peer], 0, "every operation of {peer} joined");
        assert_eq!(result["drops"]["complete_ops"][peer], result["lanes"][peer]["ops"], "{peer}");
    }
    for row in rows {
        assert!(row["us_per_op"]["median"].is_number() && row["beyond_floor"]["median"].is_number(), "{row}");
        assert!(row["description"].as_str().expect("description").contains(
            if row["lane"].as_str().is_some_and(|l| l.starts_with("writer")) { "reference writer" } else { "peer " }
        ));
    }
    assert!(!result["comparison"]["findings"].as_array().expect("findings").is_empty());
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains(
        "| lane | µs/op | 95% CI | hop vs inline | beyond floor | − writer (same build) | CPU µs/op | ctx switches/op |"
    ));
    assert!(receipt.contains("## `writer` and its peers"), "named after the subject lane");
    assert!(receipt.contains("tokio-rusqlite 0.7.0") && receipt.contains("deadpool-sqlite 0.12.1"), "versions named");
    assert!(receipt.contains("## Slices of each probed peer"), "{receipt}");
    assert!(
        receipt.contains(
            "| slice | `writer-hook-probed` (reference) | `inline-hook-probed` (inline baseline) | \
             `tokio-rusqlite-probed` |"
        ),
        "{receipt}"
    );
    assert!(receipt.contains("### Where each peer loses"), "{receipt}");
    assert!(receipt.contains("| `inline-hook-probed` (inline, no thread) |"), "{receipt}");
    assert!(receipt.contains("### Do the slices add up?"), "{receipt}");
    assert!(result["statement_hook"]["ns_per_statement"].is_number(), "the hook's cost measured");
    assert!(receipt.contains("Measured before this run on this host, the hook adds"), "{receipt}");
    assert!(receipt.contains("| `tokio-rusqlite-probed` | +"), "{receipt}");
    assert!(receipt.contains("probed minus clean build paired by round (95% CI): `writer-hook-probed` − `writer`"));
    let png = std::fs::read(dir.join("peers.png")).expect("the peers chart");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(page.contains("id=\"peers\"") && page.contains("Where each peer loses"), "chart and table in the report");
    for peer in sliced {
        let clean = peer["observer_effect"]["clean"].as_str().expect("paired with a clean build");
        let expected = peer["lane"].as_str().and_then(|l| l.strip_suffix("-probed"));
        let own = match (peer["reference"] == true, peer["baseline"] == true) {
            (true, _) => "writer",
            (_, true) => "inline",
            _ => expected.expect("a probed lane"),
        };
        assert_eq!(clean, own);
    }
    assert!(
        receipt.contains("- `deadpool-sqlite-probed` adds") || receipt.contains("- `deadpool-sqlite-probed`: no slice")
    );
}

#[test]
fn merge_imports_along_both_paths_and_writes_its_receipt() {
    let dir = temp_dir("merge");
    let out =
        hopscope(&["merge", "--quick", "--rows", "60", "--rounds", "2", "--out", dir.to_str().expect("utf-8 path")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("naive ÷ tuned (cold)"), "{stdout}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("merge.json")).expect("merge.json")).expect("json");
    assert_eq!(result["schema"], "hopscope.merge/1");
    assert_eq!(result["changes"], 240);
    let arms = result["arms"].as_object().expect("arms");
    let all = ["naive", "tuned", "cached_statements", "no_returning", "direct_pk_bind", "row_memo", "site_memo"];
    for arm in all.iter().chain(&["direct_state", "naive-control"]) {
        for phase in ["cold", "again"] {
            assert!(arms[*arm][phase]["us_per_change"]["median"].is_number(), "{arm}/{phase}");
        }
    }
    assert_eq!(result["steps"].as_array().expect("steps").len(), 12, "six steps × two phases");
    // A cold change passes every mark; a re-imported one loses at the compare.
    let names = |lane: &str| -> Vec<String> {
        result["slices"][lane]
            .as_array()
            .expect(lane)
            .iter()
            .map(|s| s["name"].as_str().expect("name").to_owned())
            .collect()
    };
    assert_eq!(names("tuned/cold"), ["start→key", "key→site", "site→compare", "compare→apply", "apply→clock"]);
    assert_eq!(names("naive/again"), ["start→key", "key→site", "site→compare"]);
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("## Each step tuned alone, against naive"), "{receipt}");
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for chart in ["merge", "merge-slices"] {
        assert!(page.contains(&format!("id=\"{chart}\"")), "the {chart} chart is inline in the page");
        let png = std::fs::read(dir.join(format!("{chart}.png"))).expect(chart);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
    assert!(page.contains("start→key"), "the slices chart names its slices");
}

#[test]
fn merge_runs_only_the_steps_asked_for_and_refuses_an_unknown_one() {
    let dir = temp_dir("merge-arms");
    let path = dir.to_str().expect("utf-8 path");
    let out =
        hopscope(&["merge", "--rows", "40", "--rounds", "1", "--parts", "4", "--steps", "row_memo", "--out", path]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("merge.json")).expect("merge.json")).expect("json");
    let arms: Vec<&String> = result["arms"].as_object().expect("arms").keys().collect();
    assert_eq!(arms, ["naive", "naive-control", "row_memo", "tuned"]);
    let steps = result["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "one step × two phases");
    assert!(steps.iter().all(|s| s["step"] == "row_memo"));
    assert_eq!(result["meta"]["parts_per_import"], "4");
    // Each refusal is a usage error: exit 2, and the run directory holds
    // only what the first run wrote.
    let before = std::fs::read_dir(&dir).expect("dir").count();
    let out = hopscope(&["merge", "--rows", "40", "--steps", "cached", "--out", path]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown step `cached`") && stderr.contains("cached_statements"), "{stderr}");
    let out = hopscope(&["merge", "--rows", "40", "--parts", "0", "--out", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value '0' for '--parts"));
    // Every block of a run has as many changes as the next: 160 changes do
    // not split into 3 parts, and the refusal says what would.
    let out = hopscope(&["merge", "--rows", "40", "--parts", "3", "--out", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--parts 3 does not split 160 changes evenly (try 2)"));
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), before);
}

#[test]
fn a_second_run_into_a_directory_in_use_is_refused_in_one_line() {
    let dir = temp_dir("busy");
    // Another run holds the directory (this test, through the same lock).
    let held = hopscope_harness::rundir::lock(&dir).expect("lock");
    std::fs::write(dir.join("trace.hop"), b"the other run's trace").expect("write");
    let out = small_decompose(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let pid = std::process::id().to_string();
    assert!(stderr.contains("is in use by pid") && stderr.contains(&pid), "{stderr}");
    assert_eq!(std::fs::read(dir.join("trace.hop")).expect("trace"), b"the other run's trace", "nothing touched");
    // Released, the directory takes the run.
    drop(held);
    assert!(small_decompose(&dir).status.success());
}

/// Run hopscope confined to CPU 0, as a restricted cpuset would (`None`
/// where `taskset` is missing).
fn on_cpu_zero(args: &[&str]) -> Option<Output> {
    let _turn = common::one_run();
    let out = Command::new("taskset")
        .env(hopscope_harness::rundir::RUNS_ENV, hopscope_harness::rundir::runs_dir())
        .arg("-c")
        .arg("0")
        .arg(env!("CARGO_BIN_EXE_hopscope"))
        .args(args)
        .output()
        .ok()?;
    // taskset itself failing (no such CPU, not permitted) is not our test.
    (out.status.code() != Some(127)).then_some(out)
}

#[test]
fn a_placement_the_cpuset_cannot_give_is_refused_before_anything_is_written() {
    let dir = std::env::temp_dir().join(format!("hopscope-cli-{}-cpuset", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let args = ["decompose", "--quick", "--placement", "different-cores", "--out", dir.to_str().expect("utf-8")];
    let Some(out) = on_cpu_zero(&args) else {
        eprintln!("taskset is not installed: skipped");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("different-cores needs two CPUs") && stderr.contains("[0]"), "{stderr}");
    assert!(!dir.exists(), "a refused run made its directory");
    // Same-core pins inside the allowed set and runs.
    let ok = temp_dir("cpuset-same");
    let out = on_cpu_zero(&["decompose", "--quick", "--out", ok.to_str().expect("utf-8")]).expect("taskset ran before");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("refused") && !stdout.contains("did not run where"), "{stdout}");
}

#[test]
fn a_bad_keyword_value_exits_2_before_anything_runs() {
    let cases: [&[&str]; 8] = [
        &["decompose", "--delay", "bogus"],
        &["decompose", "--placement", "cross-core"],
        &["decompose", "--writer-wait", "bogus"],
        &["keep-warm", "--placement", "bogus"],
        &["keep-warm", "--modes", "bogus"],
        &["keep-warm", "--cpu-budget", "0.5x"],
        &["decompose", "--writer-wait", "adaptive:50us:fast"],
        &["export", "--format", "svg", "trace.hop"],
    ];
    for args in cases {
        let out = hopscope(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value"), "{args:?}");
    }
    // Values only the command can judge (a lane table, the plan's sizes)
    // are usage errors too, each naming what is wrong, and none makes a
    // run directory.
    let dir = std::env::temp_dir().join(format!("hopscope-cli-{}-bad-values", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out_dir = dir.to_str().expect("utf-8 path");
    let judged: [(&[&str], &str); 6] = [
        (&["run", "--lanes", "inline,bogus", "--out", out_dir], "lane `bogus`"),
        (&["run", "--lanes", "handoff-probed", "--out", out_dir], "no -probed build"),
        (&["decompose", "--ops", "0", "--out", out_dir], "--ops: must be at least 1"),
        (&["decompose", "--gap-us", "99999999", "--out", out_dir], "--gap-us: 99999999"),
        (&["keep-warm", "--windows", "99999999", "--out", out_dir], "--windows: 99999999"),
        (&["calibrate", "--rounds", "0"], "--rounds"),
    ];
    for (args, says) in judged {
        let out = hopscope(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!dir.exists(), "{args:?} made its run directory");
    }
}
