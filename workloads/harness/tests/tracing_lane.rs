//! A lane probed by a `tracing` dispatcher carrying `HopLayer` runs clean
//! (no dispatcher) and probed in one process: the probed build's spans
//! become marks on the caller and on the lane's own thread and join into
//! slices; the clean build records nothing.

#![cfg(feature = "tracing")]

use hopscope_harness::{BoxError, Harness, Lane, Plan};
use hopscope_probe::{Hop, HopLayer};
use tracing_subscriber::layer::SubscriberExt;

#[test]
fn a_lane_probed_by_a_dispatcher_is_sliced_and_its_clean_build_is_not() {
    let layer = HopLayer::new().span("write", Hop::ENTER, Some(Hop::DONE)).span("work", Hop::BUILT, Some(Hop::SENT));
    let probed = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let lane = Lane::subject(
        "spans",
        |_s| Ok::<_, BoxError>(0u64),
        |n: &mut u64, op| {
            let _write = tracing::info_span!("write", op = op.index()).entered();
            tracing::info_span!("work", op = op.index()).in_scope(|| *n += 1);
            Ok::<_, BoxError>(())
        },
    )
    .probed_by(probed);
    let inline = Lane::baseline("inline", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(()));
    let dir = std::env::temp_dir().join(format!("hopscope-tracing-lane-{}", std::process::id()));
    let plan = Plan { ops_per_block: 50, samples: 4, passes: 2, warmup_blocks: 1, ..Plan::quick() };
    let outcome = Harness::new("tracing-lane").plan(plan).out(&dir).quiet().lane(inline).lane(lane).run().expect("run");
    let d = outcome.decomposition.expect("decomposition");
    assert_eq!(d.drops.complete_ops["spans-probed"], 2 * 4 * 50, "{:?}", d.drops);
    assert_eq!(d.drops.complete_ops["spans"], 0);
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["enter→built", "built→sent", "sent→done"]);
    assert!(d.observer_effect.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}
