//! The reference lanes on the harness: every lane runs every shape with
//! its rows checked after each block, the trace's probed writer
//! operations carry all ten hops and the two that close each thread's
//! cycle, joined across the caller and writer threads, and an injected
//! delay lands where it says on every shape.

use std::collections::BTreeMap;

use hopscope_harness::{Lane, Plan, RunError, runner};
use hopscope_probe::{Hop, Trace};
use hopscope_workloads::knobs::{BlobHandover, GroupCommit};
use hopscope_workloads::{DbConfig, GroupHops, Knobs, LaneSpec, Shape};

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
        // Several callers get at least 100 operations each a block
        // (`Plan::ops_per_caller`), however small the block asked for.
        let ops = small().ops_for(shape.callers());
        assert_eq!(ops, if shape.callers() > 1 { 100 * shape.callers() as u64 } else { 20 }, "{shape}");
        for block in &trace.blocks {
            assert_eq!(block.op_count, ops, "{shape}");
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
fn lanes_rotate_and_probed_writer_ops_carry_every_standard_and_closing_hop() {
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
            let mut standard: Vec<Hop> = Hop::DOCUMENTED_ORDER.to_vec();
            standard.sort();
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

/// Per probed op of `lane` in `trace`, the ticks of each hop it marked.
fn op_ticks(trace: &Trace, lane: &str) -> Vec<BTreeMap<Hop, u64>> {
    let lane = trace.header.lane(lane).expect("lane declared");
    let mut ops: BTreeMap<(usize, u64), BTreeMap<Hop, u64>> = BTreeMap::new();
    for (b, block) in trace.blocks.iter().enumerate().filter(|(_, b)| b.lane == lane) {
        for mark in block.streams.iter().flat_map(|s| &s.marks) {
            ops.entry((b, mark.op.0)).or_default().insert(mark.hop, mark.ticks.0);
        }
    }
    ops.into_values().collect()
}

#[test]
fn the_probed_floor_closes_both_cycles_too() {
    let trace = run(&lanes(&["inline", "floor-probed"], Shape::SingleInsert), "floor-hops");
    let expected = Hop::BARE_PATH;
    let ops = op_ticks(&trace, "floor-probed");
    assert!(!ops.is_empty());
    for op in &ops {
        let mut hops: Vec<Hop> = op.keys().copied().collect();
        let mut want = expected.to_vec();
        hops.sort();
        want.sort();
        assert_eq!(hops, want);
        assert!(op[&Hop::IDLE] >= op[&Hop::REPLIED] && op[&Hop::RETURNED] >= op[&Hop::DONE]);
    }
}

#[test]
fn an_injected_delay_is_honoured_on_the_batch_shape() {
    let knobs = |delay: &str| Knobs { delay: Some(delay.parse().expect("delay")), ..Knobs::default() };
    let ns_per_tick = |t: &Trace| t.header.clock.ns_per_tick;
    for (hop, before) in [("executed", Hop::WOKE), ("harvested", Hop::EXECUTED), ("idle", Hop::REPLIED)] {
        let lanes: Vec<Lane> = LaneSpec::standard(&["writer-probed"], knobs(&format!("{hop}:50000")))
            .expect("lanes")
            .iter()
            .map(|spec| spec.lane(Shape::Batch { size: 4 }, DbConfig::default()).expect("lane"))
            .collect();
        let trace = run(&lanes, &format!("batch-delay-{hop}"));
        let at = trace.header.hops.find(hop).expect("hop");
        let ops = op_ticks(&trace, "writer-probed");
        assert!(!ops.is_empty());
        for op in &ops {
            let ns = (op[&at] - op[&before]) as f64 * ns_per_tick(&trace);
            // The delay is a calibrated counted loop sized to about its
            // length (not a clock loop that only ever overshoots). In this
            // unoptimized test build one process's calibration came out 1.6×
            // slow (31 µs waits for 50 asked, other runs 46–52 µs); a skipped
            // delay would show ~0, so half the wait still tells them apart.
            assert!(ns >= 25_000.0, "{before:?}→{hop}: {ns:.0} ns with 50 µs injected");
        }
    }
    // A hop the writer cannot delay is refused in one line.
    for hop in ["enter", "returned", "nowhere"] {
        let err = format!("{hop}:100").parse::<hopscope_workloads::knobs::InjectedDelay>().expect_err("refused");
        assert!(err.to_string().contains("delay hop"), "{err}");
    }
}

#[test]
fn a_group_commit_writer_links_every_request_to_one_transaction_and_joins_whole() {
    let knobs = Knobs { group_commit: GroupCommit::of(8).expect("size"), ..Knobs::default() };
    let specs = LaneSpec::standard(&["writer", "writer-probed"], knobs).expect("lanes");
    let shape = Shape::ConcurrentInsert { callers: 6 };
    let lanes: Vec<Lane> = specs.iter().map(|s| s.lane(shape, DbConfig::default()).expect("lane")).collect();
    let dir = std::env::temp_dir().join(format!("hopscope-lanes-{}-group", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plan = Plan { hops: LaneSpec::hops_for(&specs).expect("group hops"), ..small() };
    // The rows of every block are counted by the harness: none is lost.
    let summary = runner::run(&plan, &lanes, &dir, BTreeMap::new(), false).expect("run");
    let trace = Trace::read(&summary.trace).expect("trace");
    let probed = trace.header.lane("writer-probed").expect("lane");
    let joined = hopscope_analyze::join::join(&trace);
    let ops = &joined[usize::from(probed)];
    let measured: u64 = trace.blocks.iter().filter(|b| b.lane == probed).map(|b| b.op_count).sum();
    assert_eq!(ops.incomplete, 0, "every request joins its transaction's marks");
    assert_eq!(ops.complete, measured, "every measured request");
    // Each request served once, by a transaction of at most eight.
    assert_eq!(ops.batches.served, ops.complete);
    assert!(ops.batches.largest <= 8 && ops.batches.intervals > 0, "{:?}", ops.batches);
    for (hop, name, _, _) in GroupHops::NAMED {
        assert_eq!(trace.header.hops.find(name), Some(hop), "{name} at its fixed id");
    }
    // One BEGIN, one COMMIT and one `idle` per transaction.
    for block in trace.blocks.iter().filter(|b| b.lane == probed) {
        let marks = || block.streams.iter().flat_map(|s| &s.marks);
        let links = marks().filter(|m| m.is_link()).count();
        let commits = marks().filter(|m| m.hop == GroupHops::COMMITTED).count();
        let idles = marks().filter(|m| m.hop == Hop::IDLE).count();
        assert_eq!(links as u64, block.op_count);
        assert_eq!(commits, idles);
        assert!(commits >= links.div_ceil(8));
    }
}

#[test]
fn a_group_commit_writer_marked_by_sqlite_s_hook_joins_each_request_to_its_transaction() {
    let knobs = Knobs { group_commit: GroupCommit::of(8).expect("size"), ..Knobs::default() };
    let specs = LaneSpec::standard(&["writer-hook-probed"], knobs).expect("lanes");
    let shape = Shape::ConcurrentInsert { callers: 4 };
    let lanes: Vec<Lane> = specs.iter().map(|s| s.lane(shape, DbConfig::default()).expect("lane")).collect();
    let dir = std::env::temp_dir().join(format!("hopscope-lanes-{}-group-hook", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plan = Plan { hops: LaneSpec::hops_for(&specs).expect("group hops"), ..small() };
    let summary = runner::run(&plan, &lanes, &dir, BTreeMap::new(), false).expect("run");
    let trace = Trace::read(&summary.trace).expect("trace");
    let ops = &hopscope_analyze::join::join(&trace)[0];
    let measured: u64 = trace.blocks.iter().map(|b| b.op_count).sum();
    assert_eq!((ops.complete, ops.incomplete), (measured, 0), "every request joins its transaction");
    assert_eq!(ops.batches.served, measured);
    let names: Vec<&str> = ops.slices.iter().map(|s| s.name.as_str()).collect();
    for slice in ["begin→began", "woke→executed", "commit→committed"] {
        assert!(names.contains(&slice), "{slice} in {names:?}");
    }
}
