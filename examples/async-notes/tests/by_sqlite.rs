//! The service sliced by SQLite's trace hook alone, as `notes-by-sqlite`
//! runs it: every call joins with the statement tokio-rusqlite's thread ran
//! for it, and the hook's cost is stated.

#![cfg(feature = "hopscope")]

use hopscope_harness::{Harness, Plan};

#[test]
fn every_call_joins_with_the_statement_its_connection_thread_ran() {
    let dir = std::env::temp_dir().join(format!("hopscope-notes-by-sqlite-{}", std::process::id()));
    let plan = Plan { ops_per_block: 100, samples: 6, passes: 2, warmup_blocks: 1, ..Plan::quick() };
    let harness = Harness::new("notes-by-sqlite").plan(plan).out(&dir).quiet();
    let outcome = async_notes::decompose::sqlite_lanes(harness).run().expect("the service runs");
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let d = outcome.decomposition.expect("decomposition");
    let rounds = u64::from(2 * 6 - d.contention.as_ref().map_or(0, |c| c.rounds_left_out()));
    assert_eq!(d.drops.complete_ops["async-notes-probed"], rounds * 100, "{:?}", d.drops);
    assert_eq!(d.drops.incomplete_ops["async-notes-probed"], 0);
    assert_eq!(d.drops.marks_dropped, 0);
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["enter→woke", "woke→executed", "executed→done"]);
    assert!(d.statement_hook.is_some(), "the hook's cost is measured");
    assert!(d.derived.is_some(), "hop = service − inline");
    // The instrument's measured cost: the caller's two marks and one
    // statement through the hook per call.
    let instrument = d.observer_effect.as_ref().and_then(|o| o.instrument.as_ref()).expect("instrument priced");
    assert_eq!((instrument.marks_per_op, instrument.statements_per_op), (2, 1), "{instrument:?}");
    assert_eq!(Some(instrument.statement_ns), d.statement_hook.as_ref().map(|h| h.ns_per_statement));
    let _ = std::fs::remove_dir_all(&dir);
}
