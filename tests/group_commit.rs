//! Group commit as a user meets it: `decompose --group-lanes` puts the
//! reference writer with shared transactions beside the one that commits
//! each write, with its batch sizes, both views of its slices and a
//! comparison that says its µs per write is a throughput.

use std::path::Path;

mod common;
use common::{hopscope, ok, small_decompose_args, temp_dir};

fn result(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json")
}

#[test]
fn decompose_puts_a_group_commit_lane_beside_the_writer_with_its_batch_sizes() {
    let dir = temp_dir("group-lanes");
    let stdout = ok(&hopscope(&small_decompose_args(&dir, &["--group-lanes", "4", "--group-callers", "3"])));
    let r = result(&dir);
    for lane in ["group-commit-4", "group-commit-4-probed"] {
        assert!(r["lanes"][lane]["us_per_op"]["median"].is_number(), "{lane}");
    }
    // Batch sizes from the probed build's marks, never past the group's size.
    let batches = &r["lanes"]["group-commit-4-probed"]["batches"];
    let largest = batches["largest"].as_u64().expect("largest");
    assert!((1..=4).contains(&largest), "{batches}");
    assert_eq!(batches["served"], r["lanes"]["group-commit-4-probed"]["ops"], "every write in one transaction");
    // Its slices, in both views: the shared COMMIT costs a write a share.
    let peer = r["peer_slices"].as_array().expect("peer slices").iter().find(|p| p["lane"] == "group-commit-4-probed");
    let slices = peer.expect("the group lane's slices")["slices"].as_array().expect("slices").clone();
    let commit = slices.iter().find(|s| s["name"] == "commit→committed").expect("the COMMIT's slice");
    assert_eq!(commit["sharing"], "shared");
    let (wait, cost) = (commit["mean_us"].as_f64().expect("mean"), commit["cost_us"].as_f64().expect("cost"));
    let mean_batch = batches["mean"].as_f64().expect("mean batch");
    assert!(cost <= wait && cost >= wait / 4.0 - 1e-9, "cost {cost} of a {wait} µs COMMIT shared by {mean_batch}");
    // Compared with the writer, its callers named.
    let rows = r["comparison"]["rows"].as_array().expect("rows");
    let row = rows.iter().find(|row| row["lane"] == "group-commit-4").expect("its row");
    assert_eq!(row["callers"], 3);
    assert!(row["hop_vs_inline"].is_null(), "three callers' throughput is no hop over one caller's insert");
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    for said in ["## Shared work: batches", "group-commit-4 (3 callers)", "what an operation waits, and what it costs"]
    {
        assert!(receipt.contains(said), "the receipt says {said}");
    }
    assert!(stdout.contains("batches              group-commit-4-probed served"), "{stdout}");
}

#[test]
fn group_lanes_are_refused_in_one_line_when_they_cannot_run() {
    let dir = temp_dir("group-refused");
    for (flags, said) in [
        (&["--group-lanes", "8,8"][..], "a size given twice"),
        (&["--group-lanes", "8", "--shape", "point-update"][..], "single inserts by several callers"),
        (&["--group-lanes", "1,2,3,4,5,6,7,8,9"][..], "at most 8"),
    ] {
        let out = hopscope(&small_decompose_args(&dir, flags));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {stderr}");
        assert!(stderr.contains(said) && stderr.trim().lines().count() == 1, "{flags:?}: {stderr}");
    }
    let out = hopscope(&small_decompose_args(&dir, &["--group-lanes", "5000"]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_ab_of_group_commit_names_the_figure_it_judged() {
    let dir = temp_dir("group-ab");
    let spec = dir.join("gc.toml");
    std::fs::create_dir_all(&dir).expect("dir");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/group-commit-64.toml"))
        .expect("the shipped spec")
        .replace("ops = 800", "ops = 160")
        .replace("samples = 20", "samples = 3")
        .replace("pairs = 2", "pairs = 1");
    for (probed, kind) in [(false, "wall_per_op"), (true, "latency_median")] {
        let text = if probed { text.replace("warmup = 2", "warmup = 2\nprobed = true") } else { text.clone() };
        std::fs::write(&spec, text).expect("spec");
        let out_dir = dir.join(if probed { "probed" } else { "clean" });
        let out = hopscope(&["ab", spec.to_str().expect("utf-8"), "--out", out_dir.to_str().expect("utf-8")]);
        assert!(common::finished(&out), "{}", String::from_utf8_lossy(&out.stderr));
        let ab: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("ab.json")).expect("ab.json")).expect("json");
        assert_eq!(ab["outcome"]["figure"]["kind"], kind);
        assert_eq!(ab["outcome"]["figure"]["callers"], 8);
        // 160 a block is 20 for each of eight callers: the spec's size
        // stands, and is warned of.
        let few = |w: &serde_json::Value| w["warning"] == "few_ops_per_caller" && w["callers"] == 8;
        assert!(ab["warnings"].as_array().expect("warnings").iter().any(few), "{}", ab["warnings"]);
        let receipt = std::fs::read_to_string(out_dir.join("receipt.md")).expect("receipt");
        assert!(receipt.contains("Judged on each block's") && receipt.contains("8 callers at once"), "{receipt}");
    }
}

#[test]
fn several_group_lanes_are_a_sweep_with_its_chart_and_its_knee() {
    let dir = temp_dir("group-sweep");
    let stdout = ok(&hopscope(&small_decompose_args(&dir, &["--group-lanes", "4,1", "--group-callers", "4"])));
    let r = result(&dir);
    let points = r["batch_sweep"]["points"].as_array().expect("a sweep");
    let lanes: Vec<&str> = points.iter().filter_map(|p| p["lane"].as_str()).collect();
    assert_eq!(lanes, ["group-commit-1-probed", "group-commit-4-probed"], "sizes ascending");
    assert_eq!(points[0]["throughput_lane"], "group-commit-1", "throughput from the clean build");
    assert_eq!(points[0]["batch_mean"], 1.0, "a transaction of one at size 1");
    for p in points {
        assert!(p["ops_per_s"].as_f64().expect("throughput") > 0.0 && p["latency_p50_us"].is_number(), "{p}");
    }
    assert!(dir.join("batching.png").is_file(), "the chart is drawn");
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("### Batch size against latency and throughput"), "{receipt}");
    assert!(stdout.contains("batch sweep"), "{stdout}");
}
