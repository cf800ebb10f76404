//! The full accounting on synthetic traces whose every cost is known: the
//! library's cost is found in the slice where it was put, and said to be
//! direct, a tail, or indirect accordingly.

mod common;

use hopscope_analyze::slices::Owner;
use hopscope_analyze::{Decomposition, decompose};
use hopscope_probe::{Block, Hop, HopTable, Mark, OpId, Side, Stream, Ticks, Trace, TraceHeader};
use hopscope_reports::receipt;

const LANES: [&str; 5] = ["inline", "floor", "floor-probed", "writer", "writer-probed"];
/// What one mark costs in these traces, ns.
const MARK_NS: f64 = 10.0;
/// Per-op time outside every lane's marks (the loop around the call), ns.
const GAP_NS: u64 = 500;
const OPS: u64 = 8;
const ROUNDS: u32 = 12;

/// An operation's marks as offsets from its start, ns.
type Offsets = Vec<(Hop, u64)>;

/// Offsets from consecutive slice durations along `hops`.
fn path(hops: &[Hop], slices: &[u64]) -> Offsets {
    let mut t = 0;
    hops.iter()
        .enumerate()
        .map(|(i, h)| {
            if i > 0 {
                t += slices[i - 1];
            }
            (*h, t)
        })
        .collect()
}

/// The floor: enter, sent, woke, executed, replied, idle, received, done,
/// returned (idle before received: one shared core).
fn floor() -> Offsets {
    path(&Hop::BARE_PATH, &[200, 5_000, 10_000, 100, 150, 1_500, 50, 30])
}

/// The writer with every slice of the floor's, the library's steps costing
/// what the floor's do, plus `tail_ns` in `replied→idle`, `returned_ns` in
/// `done→returned` and `sqlite_ns` in `woke→executed`.
fn writer(tail_ns: u64, returned_ns: u64, sqlite_ns: u64) -> Offsets {
    path(
        &Hop::DOCUMENTED_ORDER,
        &[50, 50, 100, 5_000, 10_000 + sqlite_ns, 50, 50, 150 + tail_ns, 1_500, 50, 30 + returned_ns],
    )
}

fn header() -> TraceHeader {
    TraceHeader { mark_ns: Some(MARK_NS), ..common::header(&LANES, &["caller", "writer"]) }
}

/// A run of both lanes' shapes: the probed lanes' wall time is their path
/// plus the gap; the clean lanes' is that less their marks' cost.
fn trace(writer_ops: &Offsets, floor_ops: &Offsets) -> Trace {
    // The caller's path ends at `returned`; a writer tail beside it does
    // not lengthen the write.
    let span = |o: &Offsets| o.iter().find(|(h, _)| *h == Hop::RETURNED).map_or(0, |(_, t)| *t);
    let marks_ns = |o: &Offsets| (o.len() as f64 * MARK_NS) as u64;
    let wall = |lane: &str| match lane {
        "inline" => 10_000,
        "floor" => span(floor_ops) + GAP_NS - marks_ns(floor_ops),
        "floor-probed" => span(floor_ops) + GAP_NS,
        "writer" => span(writer_ops) + GAP_NS - marks_ns(writer_ops),
        _ => span(writer_ops) + GAP_NS,
    };
    let side = |h: Hop| HopTable::standard().get(h).map(|d| d.side);
    let mut blocks = Vec::new();
    for round in 0..ROUNDS {
        // Round-to-round drift every lane of the round shares.
        let drift = u64::from(round * 7_919 % 13) * 10;
        for (lane, name) in LANES.iter().enumerate() {
            let per_op = wall(name) + drift;
            let start = 100_000_000 * u64::from(round) + 10_000_000 * lane as u64;
            let mut streams =
                vec![Stream { thread: 0, dropped: 0, marks: vec![] }, Stream { thread: 1, dropped: 0, marks: vec![] }];
            let offsets = match *name {
                "writer-probed" => Some(writer_ops),
                "floor-probed" => Some(floor_ops),
                _ => None,
            };
            for i in 0..OPS {
                let op = OpId((lane as u64) << 40 | u64::from(round) << 16 | i);
                for (hop, at) in offsets.into_iter().flatten() {
                    let thread = u16::from(side(*hop) == Some(Side::Writer));
                    let ticks = Ticks(start + i * per_op + at + if *at > 200 { drift } else { 0 });
                    streams[usize::from(thread)].marks.push(Mark { op, hop: *hop, cpu: 0, ticks });
                }
            }
            for s in &mut streams {
                s.marks.sort_by_key(|m| m.ticks);
            }
            blocks.push(Block {
                lane: lane as u16,
                pass: 0,
                sample: round,
                op_count: OPS,
                start: Ticks(start),
                end: Ticks(start + OPS * per_op),
                streams: streams.into_iter().filter(|s| !s.marks.is_empty()).collect(),
                readings: Vec::new(),
            });
        }
    }
    Trace { header: header(), blocks }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn owner_delta(d: &Decomposition, owner: Owner) -> f64 {
    let a = d.crosscheck.as_ref().and_then(|c| c.accounting.as_ref()).expect("accounting");
    a.by_owner.iter().find(|o| o.owner == owner).expect("owner").delta.median_us
}

#[test]
fn a_cost_in_the_writers_tails_is_attributed_to_them_and_the_accounting_closes() {
    let d = decompose(&trace(&writer(600, 200, 0), &floor())).expect("decomposes");
    let library = d.derived.as_ref().and_then(|x| x.library_us).expect("library");
    assert!(close(library.median, 0.8 - 3.0 * MARK_NS / 1000.0), "lanes: {}", library.median);
    let c = d.crosscheck.as_ref().expect("cross-check");
    let a = c.accounting.as_ref().expect("accounting");
    assert!(close(owner_delta(&d, Owner::Tail), 0.8));
    assert!(close(owner_delta(&d, Owner::Library), 0.0));
    assert!(close(owner_delta(&d, Owner::Sqlite), 0.0) && close(owner_delta(&d, Owner::Boundary), 0.0));
    // Three marks more on the writer's path (locked, built, harvested).
    assert_eq!(a.extra_marks, 3);
    assert!(close(a.marks_us, 0.03));
    assert!(close(a.net_us, library.median) && close(a.difference_us, 0.0));
    assert!(a.closes && c.agree);
    assert!(a.indirect.covers_zero());
    let tails: Vec<&str> =
        a.by_owner.iter().filter(|o| o.owner == Owner::Tail).flat_map(|o| &o.slices).map(String::as_str).collect();
    assert_eq!(tails, ["replied→idle", "done→returned"]);
    // On one core the writer's idle comes before the caller's wake: the
    // switch to the caller is its own slice, on the path.
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"idle→received") && d.slices.iter().all(|s| s.on_path), "{names:?}");
    let md = receipt::markdown(&d);
    assert!(md.contains("**agree: yes**") && md.contains("No indirect cost is distinguishable from zero"), "{md}");
}

#[test]
fn a_cost_in_sqlites_slice_is_reported_as_the_librarys_indirect_cost() {
    let d = decompose(&trace(&writer(0, 0, 400), &floor())).expect("decomposes");
    let a = d.crosscheck.as_ref().and_then(|c| c.accounting.as_ref()).expect("accounting");
    assert!(close(owner_delta(&d, Owner::Sqlite), 0.4));
    assert!(close(owner_delta(&d, Owner::Library), 0.0) && close(owner_delta(&d, Owner::Tail), 0.0));
    assert!(close(a.indirect.median_us, 0.4) && !a.indirect.covers_zero());
    assert!(a.closes);
    let md = receipt::markdown(&d);
    assert!(md.contains("indirect cost**: +0.400 µs (95% CI +0.400…+0.400)"), "{md}");
}

#[test]
fn a_writer_tail_after_the_callers_wake_is_beside_the_path_not_in_it() {
    // Across cores: the writer goes idle 2 µs after its reply, long after
    // the caller (1.5 µs) has the reply in hand.
    let mut w = writer(0, 0, 0);
    let replied = w.iter().find(|(h, _)| *h == Hop::REPLIED).map(|(_, t)| *t).expect("replied");
    for (h, t) in &mut w {
        match *h {
            Hop::IDLE => *t = replied + 2_000,
            Hop::RECEIVED | Hop::DONE | Hop::RETURNED => *t -= 150,
            _ => {}
        }
    }
    let d = decompose(&trace(&w, &floor())).expect("decomposes");
    let tail = d.slices.iter().find(|s| s.name == "replied→idle").expect("the tail is still a slice");
    assert!(!tail.on_path && close(tail.median_us, 2.0));
    assert!(d.slices.iter().any(|s| s.name == "replied→received" && s.on_path));
    // The receipt's table says which row is off the path (its share is not
    // part of the path's 100%), and only that row.
    let md = receipt::markdown(&d);
    assert!(md.contains("| replied→idle *(off the path)* |"), "{md}");
    assert_eq!(md.matches("*(off the path)* |").count(), 1, "{md}");
    let a = d
        .crosscheck
        .as_ref()
        .and_then(|c| c.accounting.as_ref())
        .unwrap_or_else(|| panic!("no accounting: {:?}", d.warnings));
    let off = a.off_path.expect("an off-path tail is reported");
    // Writer's tail 2.0 µs, floor's 0.15 µs (on its path, not beside it).
    assert!(close(off.median_us, 2.0));
    assert!(a.closes, "difference {}", a.difference_us);
}

#[test]
fn an_agreement_within_a_tolerance_wider_than_the_figure_is_said_to_confirm_little() {
    let d = decompose(&trace(&writer(0, 0, 0), &floor())).expect("decomposes");
    let a = d.crosscheck.as_ref().and_then(|c| c.accounting.as_ref()).expect("accounting");
    assert!(a.lanes_library_us.abs() < a.tolerance_us && a.closes, "{a:?}");
    let md = receipt::markdown(&d);
    assert!(md.contains("is smaller than that tolerance, so an accounting of zero would agree too"), "{md}");
    assert!(md.contains("a tolerance wider than the figure itself"), "the headline says so too: {md}");
    // The clean-vs-probed sentence reads clean − probed, as it says.
    let p = a.probed_lanes.as_ref().expect("the probed lanes' difference");
    let said = format!("differs from the probed ones' by {:+.3} µs", a.lanes_library_us - p.median);
    assert!(md.contains(&said), "{said}\n{md}");
}
