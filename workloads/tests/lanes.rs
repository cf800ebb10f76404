//! The runner alternates every lane on every shape, checks rows after each
//! block, and writes a trace whose probed writer operations carry all ten
//! hops, joined across the caller and writer threads.

use std::collections::BTreeMap;

use hopscope_probe::{Hop, Trace};
use hopscope_workloads::knobs::BlobHandover;
use hopscope_workloads::{Knobs, LaneSpec, Plan, Shape, runner};

fn lanes(names: &[&str]) -> Vec<LaneSpec> {
    names.iter().map(|n| LaneSpec::standard(n, Knobs::default()).expect("standard lane")).collect()
}

fn small(plan: Plan) -> Plan {
    Plan { ops_per_block: 20, samples: 2, passes: 2, warmup_blocks: 1, ..plan }
}

fn run(plan: &Plan, name: &str) -> Trace {
    let dir = std::env::temp_dir().join(format!("hopscope-lanes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let summary = runner::run(plan, &dir, BTreeMap::new(), false).expect("run succeeds");
    let trace = Trace::read(&summary.trace).expect("trace reads back");
    assert_eq!(summary.blocks as usize, trace.blocks.len());
    trace
}

#[test]
fn every_lane_runs_every_shape_with_rows_checked() {
    let all = ["inline", "floor", "writer", "writer-probed", "inline-probed", "floor-probed"];
    let shapes = [
        Shape::SingleInsert,
        Shape::ConcurrentInsert { callers: 3 },
        Shape::BlobInsert { bytes: 64 * 1024, handover: BlobHandover::Copy },
        Shape::BlobInsert { bytes: 4096, handover: BlobHandover::Move },
        Shape::BlobInsert { bytes: 4096, handover: BlobHandover::Shared },
        Shape::NoopUpdate,
        Shape::PointUpdate,
    ];
    for (i, shape) in shapes.into_iter().enumerate() {
        let plan = small(Plan::quick(lanes(&all), shape));
        let trace = run(&plan, &format!("shape-{i}"));
        // 2 passes × 2 samples × 6 lanes.
        assert_eq!(trace.blocks.len(), 24, "{shape}");
        assert_eq!(trace.dropped(), 0, "{shape}");
        for block in &trace.blocks {
            assert_eq!(block.op_count, 20);
            assert!(block.end >= block.start);
        }
    }
    // The floor runs single statements only: a batch is refused up front.
    let dir = std::env::temp_dir().join(format!("hopscope-lanes-{}-batch-floor", std::process::id()));
    let refused =
        runner::run(&small(Plan::quick(lanes(&["floor"]), Shape::Batch { size: 4 })), &dir, BTreeMap::new(), false);
    assert!(refused.is_err());
    let batch = run(&small(Plan::quick(lanes(&["inline", "writer-probed"]), Shape::Batch { size: 4 })), "batch");
    assert_eq!(batch.blocks.len(), 8);
}

#[test]
fn lanes_rotate_and_probed_writer_ops_carry_all_ten_hops() {
    let plan = small(Plan::quick(lanes(&["inline", "floor", "writer", "writer-probed"]), Shape::SingleInsert));
    let trace = run(&plan, "hops");
    let probed = trace.header.lane("writer-probed").expect("lane declared");
    let clean = trace.header.lane("writer").expect("lane declared");

    // Order rotates: the first lane of each round is not always the same.
    let firsts: Vec<u16> = trace.blocks.chunks(4).map(|round| round[0].lane).collect();
    assert!(firsts.windows(2).any(|w| w[0] != w[1]), "lane order never rotated: {firsts:?}");

    for block in &trace.blocks {
        let marks: Vec<_> = block.streams.iter().flat_map(|s| s.marks.iter().map(move |m| (s.thread, *m))).collect();
        if block.lane == clean {
            assert!(marks.is_empty(), "the clean writer recorded marks");
        }
        if block.lane != probed {
            continue;
        }
        let mut by_op: BTreeMap<u64, Vec<(u16, Hop)>> = BTreeMap::new();
        for (thread, mark) in &marks {
            by_op.entry(mark.op.0).or_default().push((*thread, mark.hop));
        }
        assert_eq!(by_op.len(), 20, "one op per write");
        for (op, hops) in &by_op {
            let mut seen: Vec<Hop> = hops.iter().map(|(_, h)| *h).collect();
            seen.sort();
            let standard: Vec<Hop> = Hop::STANDARD.iter().map(|(h, _, _)| *h).collect();
            assert_eq!(seen, standard, "op {op} has hops {seen:?}");
            // Caller hops on the caller thread, writer hops on the writer thread.
            for (thread, hop) in hops {
                let side = trace.header.hops.get(*hop).expect("declared").side;
                let expected = if side == hopscope_probe::Side::Caller { 0 } else { 1 };
                assert_eq!(*thread, expected, "hop {hop:?} of op {op} on thread {thread}");
            }
        }
        // Per-thread marks are in time order.
        for stream in &block.streams {
            assert!(stream.marks.windows(2).all(|w| w[0].ticks <= w[1].ticks));
        }
        assert!(block.readings.len() >= 3, "caller, writer and process CPU, then counters");
    }
}
