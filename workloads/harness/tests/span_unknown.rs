//! A span slice whose machinery cannot be priced is flagged with the
//! reason, in the decomposition and in the receipt, never shown bare: a
//! span entered twice (its first enter and last exit bound a slice that
//! holds more than one pass) and a span the layer does not watch inside a
//! slice (the Registry path sees it; its cost is not measured).

#![cfg(feature = "tracing")]

mod common;

use common::busy;
use hopscope_harness::{BoxError, Harness, Lane, Plan};
use hopscope_probe::HopLayer;

fn write(op: u64) -> Result<(), BoxError> {
    let _write = tracing::info_span!("write", op).entered();
    busy(300);
    // Entered twice: `poll.enter→poll.exit` spans both passes.
    let poll = tracing::info_span!("poll", op);
    poll.in_scope(|| busy(200));
    busy(100);
    poll.in_scope(|| busy(200));
    drop(poll);
    busy(200);
    // Not watched: `step.enter→step.exit` holds its whole life.
    tracing::info_span!("step", op).in_scope(|| {
        busy(100);
        tracing::info_span!("unwatched").in_scope(|| busy(100));
    });
    busy(100);
    Ok(())
}

#[test]
fn slices_whose_span_events_cannot_be_priced_are_flagged_with_the_reason() {
    common::ns_per_tick();
    let dir = std::env::temp_dir().join(format!("hopscope-span-unknown-{}", std::process::id()));
    let layer = HopLayer::new().caller("write").caller("poll").caller("step");
    let lane =
        Lane::subject("flagged", |_s| Ok::<_, BoxError>(()), |_: &mut (), op| write(op.index())).probed_by_spans(layer);
    let plan = Plan { ops_per_block: 50, samples: 6, passes: 1, warmup_blocks: 1, ..Plan::quick() };
    let outcome = Harness::new("span-unknown").plan(plan).out(&dir).quiet().lane(lane).run().expect("run");
    let d = outcome.decomposition.as_ref().expect("decomposition");
    let slice = |name: &str| d.slices.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no slice {name}"));
    let polled = slice("poll.enter→poll.exit");
    assert_eq!(polled.machinery_us, None, "no figure for what cannot be priced");
    let reason = polled.machinery_unknown.as_deref().unwrap_or_default();
    assert!(reason.contains("entered again"), "{reason:?}");
    // The slices around it are priced, the one around the unwatched span too.
    for name in ["write.enter→poll.enter", "poll.exit→step.enter", "step.enter→step.exit", "step.exit→write.exit"]
    {
        let s = slice(name);
        assert!(s.machinery_us.is_some(), "{name}: {:?}", s.machinery_unknown);
    }
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains(" **unknown** | — |"), "the table flags it: {receipt}");
    assert!(
        receipt.contains("`poll.enter→poll.exit`: **span machinery unknown**, its span was entered again"),
        "{receipt}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
