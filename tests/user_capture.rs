//! A user's program through hopscope: the `traced-writer` example (a writer
//! instrumented only with `tracing` spans, hopscope behind its own cargo
//! feature) writes a `.hop` trace, and the same `analyze`, `report` and
//! `export` commands that serve hopscope's own runs decompose it.

use std::path::PathBuf;
use std::process::{Command, Output};

use traced_writer::capture::{Run, count_rows};

fn hopscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hopscope")).args(args).output().expect("hopscope runs")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-user-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn the_traced_writer_example_decomposes_through_analyze_report_and_export() {
    let dir = temp_dir("traced-writer");
    let run = Run { db: dir.join("notes.db"), trace: dir.join("trace.hop"), blocks: 4, ops_per_block: 50 };
    let trace = traced_writer::capture::run(&run).expect("captured run");
    assert_eq!(count_rows(&run.db).expect("rows"), 200, "every insert the run reports is in the table");
    let trace = trace.to_str().expect("utf-8 path");

    let stdout = ok(&hopscope(&["analyze", trace]));
    assert!(stdout.contains("slices of traced-writer"), "{stdout}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result.json")).expect("json");
    let lane = &result["lanes"]["traced-writer"];
    assert_eq!(lane["ops"], 200);
    assert_eq!(lane["probed"], true);
    assert_eq!(result["insitu_lane"], "traced-writer");
    assert_eq!(result["drops"]["complete_ops"]["traced-writer"], 200, "every operation joined across both threads");
    assert_eq!(result["drops"]["incomplete_ops"]["traced-writer"], 0);
    // The spans' enters and exits, as the example's layer maps them, in the
    // order an insert passes them.
    let names: Vec<&str> =
        result["slices"].as_array().expect("slices").iter().map(|s| s["name"].as_str().expect("name")).collect();
    assert_eq!(
        names,
        [
            "enter→built",
            "built→sent",
            "sent→woke",
            "woke→executed",
            "executed→replied",
            "replied→received",
            "received→done"
        ]
    );
    let sides: Vec<&str> =
        result["slices"].as_array().expect("slices").iter().map(|s| s["side"].as_str().expect("side")).collect();
    assert_eq!(sides, ["caller", "caller", "cross", "writer", "writer", "cross", "caller"]);
    for s in result["slices"].as_array().expect("slices") {
        assert!(s["median_us"].as_f64().expect("median") >= 0.0, "{s}");
    }
    assert!(result["derived"].is_null(), "a single program has no lane arithmetic");

    ok(&hopscope(&["report", dir.to_str().expect("utf-8 path")]));
    for file in ["receipt.md", "report.html", "waterfall.png"] {
        assert!(dir.join(file).exists(), "{file} missing");
    }
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.starts_with("# hopscope receipt: traced-writer"), "{receipt}");
    assert!(receipt.contains("## Slices of `traced-writer`"), "{receipt}");

    let json = ok(&hopscope(&["export", "--format", "chrome", trace]));
    let timeline: serde_json::Value = serde_json::from_str(&json).expect("chrome JSON");
    let events = timeline["traceEvents"].as_array().expect("events");
    let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
    // Eight marks per insert, so seven intervals: each a slice on one
    // thread or a flow arrow (start and finish) across two.
    assert_eq!(count("X") + count("s"), 200 * 7, "every interval of every insert is on the timeline");
    assert_eq!(count("s"), count("f"), "every flow arrow has both ends");
    assert!(count("X") >= 200 * 3, "same-thread intervals are slices");
}
