//! `--span-path` runs a lane declared with a `HopLayer` on the profiling
//! path, and the receipt says the path was the command line's.

#![cfg(feature = "tracing")]

use hopscope_harness::{BoxError, Harness, Lane, Plan, RunArgs, SpanPathFlag};
use hopscope_probe::HopLayer;

#[test]
fn the_flag_takes_the_lane_to_the_profiling_path_and_the_receipt_says_so() {
    let dir = std::env::temp_dir().join(format!("hopscope-span-path-flag-{}", std::process::id()));
    let args = RunArgs { span_path: Some(SpanPathFlag::Subscriber), ..RunArgs::default() };
    let lane = Lane::subject(
        "flagged",
        |_s| Ok::<_, BoxError>(()),
        |_: &mut (), op| {
            let _write = tracing::info_span!("write", op = op.index()).entered();
            tracing::info_span!("step", op = op.index()).in_scope(|| std::hint::black_box(op.index()));
            Ok::<_, BoxError>(())
        },
    )
    .probed_by_spans(HopLayer::new().caller("write").caller("step"));
    let plan = Plan { ops_per_block: 50, samples: 4, passes: 1, warmup_blocks: 1, ..Plan::quick() };
    let outcome =
        Harness::with_args("span-path-flag", args).plan(plan).out(&dir).quiet().lane(lane).run().expect("run");
    let d = outcome.decomposition.as_ref().expect("decomposition");
    let m = d.span_machinery.as_ref().expect("machinery");
    assert_eq!(m.path, hopscope_probe::SpanPath::Subscriber, "measured through the flag's path");
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(
        receipt.contains("The spans took the HopSubscriber path")
            && receipt.contains("(chosen on the command line, `--span-path`, whatever the code declared)"),
        "{receipt}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
