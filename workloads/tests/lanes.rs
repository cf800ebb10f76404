//! The reference lanes on the harness: every lane runs every shape with
//! its rows checked after each block, and the trace's probed writer
//! operations carry all ten hops, joined across the caller and writer
//! threads.

use std::collections::BTreeMap;

use hopscope_harness::{Lane, Plan, RunError, runner};
use hopscope_probe::{Hop, Trace};
use hopscope_workloads::knobs::BlobHandover;
use hopscope_workloads::{DbConfig, Knobs, LaneSpec, Shape};

fn lanes(names: &[&str], shape: Shape) -> Vec<Lane> {
    LaneSpec::standard(names, Knobs::default())
        .expect("standard lanes")
        .iter()
        .map(|spec| spec.lane(shape, DbConfig::default()).expect("lane"))
        .collect()
}

fn small() -> Plan {
    Plan { ops_per_block: 20, samples: 2, passes: 2, warmup_blocks: 1, ..Plan::quick() }
}

fn try_run(lanes: &[Lane], name: &str) -> Result<Trace, RunError> {
    let dir = std::env::temp_dir().join(format!("hopscope-lanes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let summary = runner::run(&small(), lanes, &dir, BTreeMap::new(), false)?;
    let trace = Trace::read(&summary.trace).expect("trace reads back");
    assert_eq!(summary.blocks as usize, trace.blocks.len());
    Ok(trace)
}

fn run(lanes: &[Lane], name: &str) -> Trace {
    try_run(lanes, name).expect("run succeeds")
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
        let trace = run(&lanes(&all, shape), &format!("shape-{i}"));
        // 2 passes × 2 samples × 6 lanes.
        assert_eq!(trace.blocks.len(), 24, "{shape}");
        assert_eq!(trace.dropped(), 0, "{shape}");
        for block in &trace.blocks {
            assert_eq!(block.op_count, 20);
            assert!(block.end >= block.start);
        }
    }
    // The floor runs single statements only: a batch is refused up front.
    let floor = &LaneSpec::standard(&["floor"], Knobs::default()).expect("floor")[0];
    let refused = floor.lane(Shape::Batch { size: 4 }, DbConfig::default()).expect_err("refused");
    assert!(refused.to_string().contains("single statements"), "{refused}");
    let batch = run(&lanes(&["inline", "writer-probed"], Shape::Batch { size: 4 }), "batch");
    assert_eq!(batch.blocks.len(), 8);
}

#[test]
fn lanes_rotate_and_probed_writer_ops_carry_all_ten_hops() {
    let trace = run(&lanes(&["inline", "floor", "writer", "writer-probed"], Shape::SingleInsert), "hops");
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
