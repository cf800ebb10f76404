//! The instrument on a batching writer whose truth is known: callers
//! pipeline requests, a writer runs exactly 1, 8 or 64 of them per
//! transaction, and BEGIN, each statement and COMMIT are busy-waits of
//! known length (`common::batch_writer`). Every slice of a request must
//! come out at its length, the slices of each must add up to its time,
//! the COMMIT must cost each request its length over the batch, and the
//! batch sizes must be exact. The figures are printed (`cargo test -p
//! hopscope-harness --test suite known_batches -- --nocapture`).

use crate::common;

use common::batch_writer::{BatchWriter, Steps, hops};
use common::{ns_per_tick, spun_ns};
use hopscope_analyze::Decomposition;
use hopscope_analyze::join::{LaneOps, Sharing};
use hopscope_harness::{BoxError, Harness, Lane, Placement, Plan};

const STEPS: Steps = Steps { build: 400, begin: 1_500, statement: 2_000, commit: 12_000 };
const CALLERS: usize = 8;
/// Requests a caller sends before it waits: 8 callers × 8 fill a batch of 64.
const WINDOW: usize = 8;

/// A slice's bar: the larger of 0.2 µs and 5 % of its length.
fn tolerance_us(length_us: f64) -> f64 {
    0.2f64.max(0.05 * length_us)
}

fn decompose(batch: usize) -> (Decomposition, Vec<LaneOps>) {
    let dir = std::env::temp_dir().join(format!("hopscope-known-batches-{}-{batch}", std::process::id()));
    let lane = Lane::new(hopscope_harness::Role::Subject, "batch-writer", move |s| {
        Ok::<_, BoxError>(BatchWriter::spawn(s, STEPS, batch, CALLERS, WINDOW))
    })
    .threads(&["writer"])
    .callers(CALLERS);
    // 16 requests per caller a block: two windows each. The writer on a
    // core of its own: on the callers' core a caller woken by a reply, or
    // still sending its window, preempts it mid-step, and a step's wall
    // time is then longer than its busy-wait (the instrument right, the
    // truth unknown).
    let plan = Plan {
        ops_per_block: 128,
        samples: 15,
        passes: 2,
        warmup_blocks: 1,
        hops: hops(),
        placement: Placement::DifferentCores,
        // Whole windows of eight per caller: the size as given.
        ops_per_caller: None,
        ..Plan::quick()
    };
    let outcome = Harness::new("known-batches").plan(plan).out(&dir).quiet().lane(lane).run().expect("run");
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let (_, joined) = hopscope_analyze::join_file(&outcome.trace).expect("the trace joins");
    let _ = std::fs::remove_dir_all(&dir);
    (outcome.decomposition.expect("decomposition"), joined)
}

#[test]
fn a_batching_writer_of_known_steps_comes_out_slice_by_slice() {
    let _turn = crate::common::serial();
    ns_per_tick();
    let truth = |ns: u64| spun_ns(ns) / 1_000.0;
    let (statement, commit, begin) = (truth(STEPS.statement), truth(STEPS.commit), truth(STEPS.begin));
    // The writer's step between two statements, from the batch of one.
    let mut step: Option<f64> = None;
    for batch in [1usize, 8, 64] {
        let (d, joined) = decompose(batch);
        let lane = d.insitu_lane.clone().expect("sliced");
        assert_eq!(d.drops.incomplete_ops[&lane], 0, "batch of {batch}: every request joins its transaction");
        let figures = d.lanes[&lane].batches.as_ref().expect("batch sizes");
        let ops = d.drops.complete_ops[&lane];
        assert_eq!(figures.sizes, [(batch as u64, ops / batch as u64)], "batch of {batch}: sizes exact");
        let slice = |name: &str| d.slices.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}"));
        let k = batch as f64;
        // Positions in a batch: half the requests wait for at most (k − 2)
        // / 2 statements before their own, half for at least k / 2, so the
        // median request waits (k − 1) / 2 of them, each as long as the
        // statement slices measured plus the writer's step between two
        // statements (a mark and a loop turn: what a batch of one measures
        // from BEGIN to its statement). This holds the join to the right
        // marks; the statements themselves are held to their truth.
        let own = slice("executing→executed").median_us;
        let step = *step.get_or_insert(slice("began→executing").median_us);
        let before = (k - 1.0) / 2.0 * (own + step) + step;
        for (name, truth, view, sharing) in [
            ("executing→executed", statement, slice("executing→executed").median_us, Sharing::Own),
            ("begin→began", begin, slice("begin→began").median_us, Sharing::Shared),
            ("commit→committed", commit, slice("commit→committed").median_us, Sharing::Shared),
            ("commit→committed (cost)", commit / k, slice("commit→committed").cost_us.expect("cost"), Sharing::Shared),
            ("begin→began (cost)", begin / k, slice("begin→began").cost_us.expect("cost"), Sharing::Shared),
            ("began→executing", before, slice("began→executing").median_us, Sharing::Siblings),
        ] {
            let error = view - truth;
            eprintln!("batch {batch:>2} · {name:<24} truth {truth:>8.3} µs · measured {view:>8.3} · off {error:+.3}");
            let plain = name.split(' ').next().unwrap_or(name);
            assert_eq!(slice(plain).sharing, sharing, "{plain}");
            // A cost is a mean over every request, so a step preempted on a
            // busy machine lengthens it where the median shrugs: the part
            // of the slice's mean above its median is the run's own
            // interference, allowed beside the bar (the instrument right,
            // the truth longer).
            let interference = match name.strip_suffix(" (cost)") {
                Some(plain) => (slice(plain).mean_us.expect("mean") - slice(plain).median_us).max(0.0) / k,
                None => 0.0,
            };
            assert!(
                error.abs() <= tolerance_us(truth) + interference,
                "batch of {batch}: {name} {view:.3} µs against {truth:.3}"
            );
        }
        // A batch of one waits on nobody: its wait slices are its own, and
        // the terminal and receipt say so.
        let kind = hopscope_reports::receipt::shared::kind_label(&d, &lane, Sharing::Siblings);
        assert_eq!(kind, if batch == 1 { "its own (batches of one)" } else { "waiting on the batch's others" });
        // The cost view is the interval divided among those it served: the
        // COMMIT's and the BEGIN's mean length over the batch, exactly.
        for name in ["commit→committed", "begin→began"] {
            let (mean, cost) = (slice(name).mean_us.expect("mean"), slice(name).cost_us.expect("cost"));
            eprintln!("batch {batch:>2} · {name:<24} mean {mean:>8.3} µs ÷ {batch} against cost {cost:.4}");
            assert!(
                (cost - mean / k).abs() <= 1e-3 * mean / k + 1e-6,
                "batch of {batch}: {name} cost {cost} against {mean} ÷ {k}"
            );
        }
        // Each request's slices add up to its whole time: block by block,
        // the path slices' means against the mean time from each request's
        // first mark to its last (means add up where every request does).
        let ops = joined.iter().find(|o| o.complete > 0).expect("the lane's requests");
        let mut worst = 0.0f64;
        for block in &ops.blocks {
            let path: f64 = block.slice_mean_ns[..ops.path_len - 1].iter().map(|m| m.expect("mean")).sum();
            let whole = block.total_mean_ns.expect("path time");
            worst = worst.max((path - whole).abs() / 1_000.0);
        }
        eprintln!("batch {batch:>2} · slices summed against each request's time: at most {worst:.6} µs apart");
        assert!(worst <= 0.2, "batch of {batch}: a block's slices {worst:.3} µs from its requests' time");
    }
}
