//! A user's program through hopscope: the `traced-writer` example (a writer
//! instrumented only with `tracing` spans, hopscope behind its own cargo
//! feature) runs on the public harness as its binary does — an inline
//! baseline beside the writer clean and probed — and the same `analyze`,
//! `report` and `export` commands that serve hopscope's own runs read what
//! it wrote.

use hopscope_analyze::timeline::importer;
use hopscope_harness::Harness;

mod common;
use common::{hopscope, ok, temp_dir};

/// The example's `main`, with these flags: `--quick --out DIR` and small
/// sizes (3 samples × 2 passes of 50 inserts per lane).
fn traced_writer(dir: &std::path::Path) -> hopscope_harness::Outcome {
    let dir = dir.to_str().expect("utf-8 path");
    let args = ["traced-writer", "--quick", "--out", dir, "--samples", "3", "--ops", "50", "--warmup", "1"];
    let harness = Harness::try_from_args("traced-writer", args).expect("the example's flags parse").quiet();
    traced_writer::decompose::lanes(harness).run().expect("the example runs")
}

#[test]
fn the_traced_writer_example_decomposes_with_a_baseline_and_both_builds() {
    let dir = temp_dir("traced-writer");
    let outcome = traced_writer(&dir);
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result.json")).expect("json");
    // Every insert each lane reports is in its table (the harness checks
    // each block's rows), so each lane ran all its operations.
    // Rounds another process held the CPUs of are left out of every lane.
    let left_out = common::rounds_left_out(&result);
    for lane in ["inline", "traced-writer", "traced-writer-probed"] {
        assert_eq!(result["lanes"][lane]["ops"], 50 * (6 - left_out), "{lane}");
    }
    assert_eq!(result["lanes"]["traced-writer"]["probed"], false, "the clean build records nothing");
    assert_eq!(result["lanes"]["traced-writer-probed"]["probed"], true);
    assert_eq!(result["derived"]["lanes"]["baseline"], "inline");
    assert_eq!(result["derived"]["lanes"]["subject"], "traced-writer");
    assert!(result["derived"]["hop_us"]["median"].as_f64().expect("hop") > 0.0, "a thread boundary costs something");
    assert!(result["derived"]["boundary_us"].is_null(), "no floor, so no boundary split");
    assert!(result["observer_effect"]["delta_us"].is_number());
    assert_eq!(result["insitu_lane"], "traced-writer-probed");
    let complete = &result["drops"]["complete_ops"]["traced-writer-probed"];
    assert_eq!(complete, 300, "every operation joined across both threads");
    assert_eq!(result["drops"]["incomplete_ops"]["traced-writer-probed"], 0);
    // The spans' enters and exits, as the example's layer maps them, in the
    // order an insert passes them: `sent` and `replied` on the enters of the
    // `send` and `reply` spans (before the send, as the hops define them),
    // and the writer's cycle closed by the `reply` span's exit.
    let slices = result["slices"].as_array().expect("slices");
    let names: Vec<&str> = slices.iter().map(|s| s["name"].as_str().expect("name")).collect();
    let sides: Vec<&str> = slices.iter().map(|s| s["side"].as_str().expect("side")).collect();
    // Where the writer goes idle decides the path, as for hopscope's own
    // writer: before the caller runs again (a shared core: `idle→received`
    // is the switch), or beside it (`replied→idle` a tail off the path).
    let idle_first = (
        vec![
            "enter→sent",
            "sent→woke",
            "woke→executed",
            "executed→replied",
            "replied→idle",
            "idle→received",
            "received→done",
        ],
        vec!["caller", "cross", "writer", "writer", "writer", "cross", "caller"],
    );
    let idle_beside = (
        vec![
            "enter→sent",
            "sent→woke",
            "woke→executed",
            "executed→replied",
            "replied→received",
            "received→done",
            "replied→idle",
        ],
        vec!["caller", "cross", "writer", "writer", "cross", "caller", "writer"],
    );
    assert!(
        (names.clone(), sides.clone()) == idle_first || (names.clone(), sides.clone()) == idle_beside,
        "{names:?} {sides:?}"
    );
    let tail = slices.iter().find(|s| s["name"] == "replied→idle").expect("replied→idle");
    assert_eq!(tail["on_path"], names[4] == "replied→idle", "{tail}");
    for s in result["slices"].as_array().expect("slices") {
        assert!(s["median_us"].as_f64().expect("median") >= 0.0, "{s}");
    }
    for file in ["receipt.md", "report.html", "waterfall.png", "trace.hop"] {
        assert!(dir.join(file).exists(), "{file} missing");
    }
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.starts_with("# hopscope receipt: traced-writer"), "{receipt}");
    assert!(receipt.contains("## Slices of `traced-writer-probed`"), "{receipt}");
    assert!(receipt.contains("## Observer effect"), "{receipt}");

    // hopscope's own commands read what the program wrote.
    let trace = dir.join("trace.hop");
    let trace = trace.to_str().expect("utf-8 path");
    let again = temp_dir("traced-writer-again");
    let stdout = ok(&hopscope(&["analyze", trace, "--out", again.to_str().expect("utf-8")]));
    assert!(stdout.contains("slices of traced-writer-probed") && stdout.contains("observer effect"), "{stdout}");
    ok(&hopscope(&["report", dir.to_str().expect("utf-8 path")]));

    let json = ok(&hopscope(&["export", "--format", "chrome", trace]));
    let timeline: serde_json::Value = serde_json::from_str(&json).expect("chrome JSON");
    // Two cross-thread slices per probed insert (sent→woke, replied→received):
    // each an arrow between slices of its own insert, as Perfetto binds it.
    let cut = hopscope_analyze::timeline::Cut::default();
    let trace = hopscope_probe::Trace::read(std::path::Path::new(trace)).expect("trace");
    let arrows = importer::arrows(&trace, &cut).expect("arrows");
    assert_eq!(arrows.len(), 300 * 2, "every cross-thread slice of every insert is an arrow");
    let wrong = importer::misbound(&importer::import_chrome(&timeline), &arrows);
    assert!(wrong.is_empty(), "{wrong:#?}");
    let events = timeline["traceEvents"].as_array().expect("events");
    assert!(events.iter().filter(|e| e["ph"] == "X").count() >= 300 * 5, "same-thread intervals are slices");
    // The example's writer thread keeps its own name on its track.
    let tracks: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(tracks.contains(&"traced-writer"), "{tracks:?}");
    assert!(!tracks.iter().any(|t| t.starts_with("traced-1")), "{tracks:?}");
}
