//! The async service through the harness as its binary runs it: an inline
//! baseline beside the service, clean and probed by `HopLayer`, with the
//! insert future polled more than once per operation on the runtime's
//! workers and the statement run on tokio-rusqlite's connection thread,
//! none of them running any code for hopscope. Every operation must join.

#![cfg(feature = "hopscope")]

use hopscope_harness::{Harness, Plan};

#[test]
fn every_async_operation_joins_though_its_future_is_polled_more_than_once() {
    let dir = std::env::temp_dir().join(format!("hopscope-async-notes-{}", std::process::id()));
    let layer = async_notes::decompose::layer();
    let plan = Plan { ops_per_block: 100, samples: 6, passes: 2, warmup_blocks: 1, ..Plan::quick() };
    let harness = Harness::new("async-notes").plan(plan).out(&dir).quiet();
    let outcome = async_notes::decompose::lanes(harness, layer.clone()).run().expect("the service runs");
    let d = outcome.decomposition.expect("decomposition");
    assert_eq!(
        d.drops.complete_ops["async-notes-probed"],
        u64::from(2 * 6 - d.contention.as_ref().map_or(0, |c| c.rounds_left_out())) * 100,
        "{:?}",
        d.drops
    );
    assert_eq!(d.drops.incomplete_ops["async-notes-probed"], 0);
    assert_eq!(d.drops.marks_dropped, 0);
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["insert.enter→execute.enter", "execute.enter→execute.exit", "execute.exit→insert.exit"]);
    let counts = layer.counts();
    let insert = counts.iter().find(|c| c.span == "insert").expect("insert counted");
    assert!(insert.closed >= 1_200, "{insert:?}");
    assert!(insert.enters >= 2 * insert.closed, "the insert future is polled at least twice per operation: {insert:?}");
    assert_eq!(insert.without_op, 0, "the late op id bound every span");
    assert!(d.observer_effect.is_some());
    assert!(d.derived.is_some(), "hop = service − inline");
    let _ = std::fs::remove_dir_all(&dir);
}
