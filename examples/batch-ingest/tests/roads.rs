//! The batching writer decomposed through each road, as the guide's
//! batches chapter (docs/guide/batches.md) shows them: direct marks,
//! `tracing` spans and SQLite's hook. Each joins every event to its
//! batch's COMMIT, counts its batches, and gives the COMMIT both views:
//! what each event waits, and its share.

#![cfg(feature = "hopscope")]

use batch_ingest::Road;
use batch_ingest::decompose::{PRODUCERS, lanes};
use hopscope_harness::{Harness, Plan};

fn decompose(road: Road, name: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("batch-ingest-{}-{name}", std::process::id()));
    let (lanes, hops) = lanes(road);
    let plan = Plan { samples: 3, passes: 1, warmup_blocks: 1, ..Plan::quick() };
    let mut harness = Harness::new("batch-ingest").plan(plan).out(&dir).quiet();
    if let Some(hops) = hops {
        harness = harness.hops(hops);
    }
    for lane in lanes {
        harness = harness.lane(lane);
    }
    let outcome = harness.run().expect("run");
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let result = std::fs::read_to_string(dir.join("result.json")).expect("result.json");
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_str(&result).expect("json")
}

#[test]
fn every_road_joins_each_event_to_its_commit_and_divides_its_cost() {
    for (road, name, commit) in [
        (Road::Marks, "marks", "commit→committed"),
        (Road::Spans, "spans", "commit.enter→commit.exit"),
        (Road::Hook, "hook", "commit→committed"),
    ] {
        let r = decompose(road, name);
        let lane = r["insitu_lane"].as_str().expect("a sliced lane").to_owned();
        assert_eq!(r["drops"]["incomplete_ops"][&lane], 0, "{name}: every event joins its batch");
        let ops = r["lanes"][&lane]["ops"].as_u64().expect("ops");
        let batches = &r["lanes"][&lane]["batches"];
        // The spans road marks a batch's BEGIN and its COMMIT as two shared
        // spans: each event is served by both, and counted once.
        let intervals = if road == Road::Spans { 2 } else { 1 };
        assert_eq!(batches["served"].as_u64(), Some(intervals * ops), "{name}: each event served by its batch");
        assert_eq!(batches["operations"].as_u64(), Some(ops), "{name}: and counted once");
        let largest = batches["largest"].as_u64().expect("largest");
        assert!((1..=PRODUCERS as u64).contains(&largest), "{name}: {batches}");
        let slices = r["slices"].as_array().expect("slices");
        let s = slices.iter().find(|s| s["name"] == commit).unwrap_or_else(|| panic!("{name}: no {commit}"));
        assert_eq!(s["sharing"], "shared", "{name}");
        let (wait, cost) = (s["mean_us"].as_f64().expect("mean"), s["cost_us"].as_f64().expect("cost"));
        assert!(cost < wait, "{name}: a share of the COMMIT ({cost} of {wait})");
    }
}
