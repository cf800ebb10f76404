//! The analyzer on synthetic traces whose every duration is known: it must
//! recover them exactly, count what it excludes, and be reproducible.

mod common;

use std::collections::BTreeMap;

use hopscope_analyze::change::RunSamples;
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::source::TraceFile;
use hopscope_analyze::warning::Warning;
use hopscope_analyze::{AnalyzeError, decompose};
use hopscope_probe::counters::{Counter, CounterSupport, Support};
use hopscope_probe::{
    Block, Hop, HopTable, Mark, OpId, Reading, Stream, ThreadRole, Ticks, Trace, TraceHeader, TraceWriter,
};
use hopscope_reports::receipt;

const LANES: [&str; 5] = ["inline", "floor", "floor-probed", "writer", "writer-probed"];

/// A header whose clock runs at exactly 1 ns per tick.
fn header() -> TraceHeader {
    TraceHeader {
        readings: vec![
            "caller.cpu_ns".into(),
            "writer.cpu_ns".into(),
            "process.cpu_ns".into(),
            "caller.context-switches".into(),
            "writer.context-switches".into(),
        ],
        counters: vec![
            CounterSupport { counter: Counter::ContextSwitches, support: Support::Supported },
            CounterSupport {
                counter: Counter::Cycles,
                support: Support::Unsupported { reason: "no such event on this host (ENOENT)".into() },
            },
        ],
        run: BTreeMap::from([("shape".to_owned(), "single-insert".to_owned())]),
        // Legacy: no roles (`lane_info` empty), so the analyzer reads them
        // from the lane names.
        ..common::header(&LANES, &["caller", "writer"])
    }
}

/// Writer slice durations (ns) in hop order: enter→locked, locked→built,
/// built→sent, sent→woke, woke→executed, executed→harvested,
/// harvested→replied, replied→received, received→done.
const WRITER_SLICES: [u64; 9] = [100, 300, 200, 5_000, 10_000, 150, 250, 6_000, 50];
/// Floor slices: enter→sent, sent→woke, woke→executed, executed→replied,
/// replied→received, received→done.
const FLOOR_HOPS: [Hop; 7] = [Hop::ENTER, Hop::SENT, Hop::WOKE, Hop::EXECUTED, Hop::REPLIED, Hop::RECEIVED, Hop::DONE];
const FLOOR_SLICES: [u64; 6] = [200, 5_000, 10_000, 100, 6_000, 50];

/// Per-op wall time of each lane (ns): inline 10 µs, floor 21.35 µs,
/// writer 22.3 µs, probed lanes 0.2 µs slower than their clean twins.
fn wall_ns(lane: &str) -> u64 {
    match lane {
        "inline" => 10_000,
        "floor" => 21_350,
        "floor-probed" => 21_550,
        "writer" => 22_300,
        "writer-probed" => 22_500,
        _ => unreachable!(),
    }
}

const OPS: u64 = 10;

fn marks(hops: &[Hop], slices: &[u64], op: u64, start: u64) -> Vec<(u16, Mark)> {
    let mut t = start;
    let mut out = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        if i > 0 {
            t += slices[i - 1];
        }
        let thread =
            if HopTable::standard().get(*hop).map(|d| d.side) == Some(hopscope_probe::Side::Writer) { 1 } else { 0 };
        out.push((thread, Mark { op: OpId(op), hop: *hop, cpu: thread, ticks: Ticks(t) }));
    }
    out
}

/// Lane `lane`'s block; the writer's `locked→built` (a slice the floor
/// does not mark) and so its wall time `built_extra_ns` longer.
fn block(lane: u16, pass: u32, sample: u32, spoil: bool, built_extra_ns: u64) -> Block {
    let name = LANES[usize::from(lane)];
    let wall_ns = |name: &str| wall_ns(name) + if name.starts_with("writer") { built_extra_ns } else { 0 };
    let mut writer_slices = WRITER_SLICES;
    writer_slices[1] += built_extra_ns;
    let start = 1_000_000 * u64::from(pass * 100 + sample) + 1_000 * u64::from(lane);
    let mut streams =
        vec![Stream { thread: 0, dropped: 0, marks: vec![] }, Stream { thread: 1, dropped: 0, marks: vec![] }];
    let writer_hops: Vec<Hop> = Hop::STANDARD.iter().map(|(h, _, _)| *h).collect();
    for i in 0..OPS {
        let op = (u64::from(lane) << 32) | (u64::from(pass * 100 + sample) << 8) | i;
        let op_start = start + i * wall_ns(name);
        let mut op_marks = match name {
            "writer-probed" => marks(&writer_hops, &writer_slices, op, op_start),
            "floor-probed" => marks(&FLOOR_HOPS, &FLOOR_SLICES, op, op_start),
            _ => Vec::new(),
        };
        if spoil && i == 0 && !op_marks.is_empty() {
            // One op loses a mark, another repeats one: both are excluded.
            op_marks.remove(3);
        }
        if spoil && i == 1 && !op_marks.is_empty() {
            let again = op_marks[2];
            op_marks.push(again);
        }
        for (thread, mark) in op_marks {
            streams[usize::from(thread)].marks.push(mark);
        }
    }
    for s in &mut streams {
        s.marks.sort_by_key(|m| m.ticks);
    }
    Block {
        lane,
        pass,
        sample,
        op_count: OPS,
        start: Ticks(start),
        end: Ticks(start + OPS * wall_ns(name)),
        streams: streams.into_iter().filter(|s| !s.marks.is_empty()).collect(),
        readings: vec![
            Reading { key: 0, value: 3_000 * OPS },
            Reading { key: 2, value: 9_000 * OPS },
            Reading { key: 3, value: OPS },
            Reading { key: 4, value: 2 * OPS },
        ],
    }
}

fn trace(spoil_first: bool) -> Trace {
    trace_with(spoil_first, 0)
}

fn trace_with(spoil_first: bool, built_extra_ns: u64) -> Trace {
    let mut blocks = Vec::new();
    for pass in 0..2 {
        for sample in 0..5 {
            for lane in 0..LANES.len() as u16 {
                blocks.push(block(lane, pass, sample, spoil_first && pass == 0 && sample == 0, built_extra_ns));
            }
        }
    }
    Trace { header: header(), blocks }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn known_durations_are_recovered_exactly() {
    let d = decompose(&trace(false)).expect("decomposes");
    let lane = |n: &str| d.lanes[n].us_per_op.expect("figures");
    assert!(close(lane("inline").median, 10.0));
    assert!(close(lane("floor").median, 21.35));
    assert!(close(lane("writer").median, 22.3));
    assert_eq!(lane("writer").ci95, [22.3, 22.3]);

    let derived = d.derived.as_ref().expect("derived");
    assert!(close(derived.hop_us.median, 12.3));
    assert!(close(derived.boundary_us.expect("boundary").median, 11.35));
    assert!(close(derived.library_us.expect("library").median, 0.95));
    assert_eq!(derived.library_us.expect("library").rounds, 10);

    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "enter→locked",
            "locked→built",
            "built→sent",
            "sent→woke",
            "woke→executed",
            "executed→harvested",
            "harvested→replied",
            "replied→received",
            "received→done"
        ]
    );
    for (s, expected_ns) in d.slices.iter().zip(WRITER_SLICES) {
        assert!(close(s.median_us, expected_ns as f64 / 1000.0), "{}: {}", s.name, s.median_us);
        assert!(close(s.ci95[0], s.median_us) && close(s.ci95[1], s.median_us));
    }

    // Library slices: 0.1 + 0.3 + 0.2 + 0.15 + 0.25 + 0.05 = 1.05 µs; the
    // floor's own: 0.2 + 0.1 + 0.05 = 0.35 µs; in-situ library 0.70 µs.
    let c = d.crosscheck.as_ref().expect("cross-check");
    assert!(close(c.insitu_writer_us, 1.05));
    assert!(close(c.insitu_floor_us, 0.35));
    assert!(close(c.insitu_library_us, 0.70));
    assert!(close(c.lanes_library_us, 0.95));
    // All slices: writer 22.05 µs − floor 21.35 µs = 0.70 µs; by owner the
    // SQLite and boundary slices cancel. These probed lanes do not close
    // their cycles: 0.25 µs of each write's wall time lies outside the
    // marks, beyond the fixed 0.2 µs, so the instruments disagree.
    let a = c.accounting.as_ref().expect("a probed floor gives the full accounting");
    assert!(close(a.total.median_us, 0.70));
    assert!(close(a.by_owner.iter().map(|o| o.delta.median_us).sum::<f64>(), 0.70));
    assert!(close(a.indirect.median_us, 0.0) && a.indirect.covers_zero());
    assert_eq!(a.extra_marks, 3);
    assert!(close(a.difference_us, -0.25) && !a.closes && !c.agree);
    assert!(close(c.tolerance_us, 0.2));

    let o = d.observer_effect.as_ref().expect("observer effect");
    assert!(close(o.delta_us, 0.2));
    assert!(close(o.clean_us, 22.3));

    assert!(close(d.cpu_us_per_op["writer"]["caller"], 3.0));
    assert!(close(d.cpu_us_per_op["writer"]["process"], 9.0));
    assert_eq!(d.drops.complete_ops["writer-probed"], 100);
    assert_eq!(d.drops.incomplete_ops["writer-probed"], 0);

    // Every mark carries its thread's CPU, 0 (caller) or 1 (writer): two
    // CPU changes per write.
    assert_eq!(d.lanes["writer-probed"].cross_core_hops_per_op, Some(2.0));
    assert_eq!(d.lanes["writer-probed"].ops_crossing_cores, Some(1.0));
    assert_eq!(d.lanes["writer"].cross_core_hops_per_op, None, "a clean lane has no marks to place");

    // Counters: 1 caller and 2 writer context switches per op; cycles are
    // unsupported and say so, never 0.
    let counters = &d.lanes["writer"].counters;
    match &counters["context_switches_per_op"] {
        hopscope_analyze::CounterFigure::PerOp(roles) => {
            assert!(
                roles.role(&ThreadRole::Caller).is_some_and(|v| close(v, 1.0))
                    && roles.role(&ThreadRole::writer()).is_some_and(|v| close(v, 2.0))
                    && roles.total().is_some_and(|v| close(v, 3.0)),
                "{roles:?}"
            );
        }
        other => panic!("context switches: {other:?}"),
    }
    assert_eq!(
        counters["cycles_per_op"],
        hopscope_analyze::CounterFigure::Unsupported("unsupported: no such event on this host (ENOENT)".into())
    );
    let json = serde_json::to_value(&d).expect("json");
    assert_eq!(
        json["lanes"]["writer"]["counters"]["cycles_per_op"],
        "unsupported: no such event on this host (ENOENT)"
    );
    assert_eq!(json["lanes"]["writer"]["counters"]["context_switches_per_op"]["total"], 3.0);
    assert!(receipt::markdown(&d).contains("## Counters per operation"));
}

#[test]
fn incomplete_operations_are_counted_and_excluded() {
    let d = decompose(&trace(true)).expect("decomposes");
    assert_eq!(d.drops.incomplete_ops["writer-probed"], 2);
    assert_eq!(d.drops.complete_ops["writer-probed"], 98);
    assert_eq!(d.drops.incomplete_ops["floor-probed"], 2);
    // Exclusion leaves the exact figures untouched.
    for (s, expected_ns) in d.slices.iter().zip(WRITER_SLICES) {
        assert!(close(s.median_us, expected_ns as f64 / 1000.0), "{}", s.name);
    }
}

#[test]
fn the_analysis_is_reproducible_and_records_its_seed() {
    let mut t = trace(false);
    // Make the lanes noisy so the bootstrap has something to resample.
    for (i, b) in t.blocks.iter_mut().enumerate() {
        b.end = Ticks(b.end.0 + (i as u64 * 7_919) % 5_000);
    }
    let a = serde_json::to_string(&decompose(&t).expect("a")).expect("json");
    let b = serde_json::to_string(&decompose(&t).expect("b")).expect("json");
    assert_eq!(a, b);
    let d = decompose(&t).expect("decomposes");
    assert_eq!(d.run.bootstrap_seed, hopscope_analyze::BOOTSTRAP_SEED);
    let ci = d.derived.expect("derived").library_us.expect("library").ci95;
    assert!(ci[0] < ci[1], "noisy data gives a real interval: {ci:?}");
}

#[test]
fn a_lane_without_operations_is_reported_not_nan() {
    let mut t = trace(false);
    let floor = t.header.lane("floor").expect("floor");
    t.blocks.retain(|b| b.lane != floor);
    let d = decompose(&t).expect("decomposes");
    assert!(d.lanes["floor"].us_per_op.is_none());
    assert_eq!(d.lanes["floor"].ops, 0);
    let floor_said = Warning::NoOperations { lane: "floor".into() };
    assert!(d.warnings.contains(&Recorded::Typed(floor_said)), "{:?}", d.warnings);
    // Floor-probed stands in for the arithmetic.
    assert!(d.derived.is_some());
    let json = serde_json::to_string(&d).expect("json");
    assert!(!json.contains("NaN"), "{json}");
    assert!(receipt::markdown(&d).contains("no operations"));
}

#[test]
fn an_empty_trace_is_an_error() {
    let t = Trace { header: header(), blocks: Vec::new() };
    assert!(matches!(decompose(&t), Err(AnalyzeError::NoBlocks)));
}

#[test]
fn the_receipt_carries_every_section() {
    let d = decompose(&trace(false)).expect("decomposes");
    let md = receipt::markdown(&d);
    for section in
        ["## Lanes", "## Derived", "## Slices", "## Cross-check", "## Observer effect", "## CPU", "## Drops", "## Run"]
    {
        assert!(md.contains(section), "missing {section}");
    }
    // Lanes read baseline → floor → subject, clean before probed.
    let lanes = md.split("## Lanes").nth(1).and_then(|rest| rest.split("\n## ").next()).expect("lane table");
    let at = |lane: &str| lanes.find(&format!("| {lane} |")).unwrap_or_else(|| panic!("{lane} listed"));
    let order = ["inline", "floor", "floor-probed", "writer", "writer-probed"];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{lanes}");
    let headline = receipt::headline(&d).expect("headline");
    assert!(headline.contains("Of the 12.30 µs (95% CI 12.30…12.30) hop"), "{headline}");
    assert!(headline.contains("0.95 µs (95% CI 0.95…0.95) is the writer's own work"), "{headline}");
}

#[test]
fn a_start_time_past_year_9999_is_shown_raw_not_a_panic() {
    let mut d = decompose(&trace(false)).expect("decomposes");
    assert_eq!(receipt::date(&d), "2023-11-14T22:13:20Z");
    for ms in [253_402_300_799_000, 253_402_300_800_000, u64::MAX] {
        d.run.created_unix_ms = ms;
        let shown = receipt::date(&d);
        assert!(shown.starts_with("9999-12-31") || shown.contains("past year 9999"), "{ms}: {shown}");
        assert!(receipt::markdown(&d).contains(&shown));
    }
}

#[test]
fn result_json_round_trips_and_refuses_other_schemas() {
    let d = decompose(&trace(true)).expect("decomposes");
    let json = serde_json::to_string_pretty(&d).expect("json");
    let back = hopscope_analyze::Decomposition::from_json(&json).expect("reads back");
    assert!(back == d, "the decomposition changed on its way through result.json");
    assert_eq!(back.lanes["writer"].blocks_us.len(), 10);
    assert_eq!(back.lanes["writer-probed"].op_latency_quantiles_us.len(), 101);
    assert!(back.lanes["writer"].op_latency_quantiles_us.is_empty());

    let future = json.replace("hopscope.decomposition/1", "hopscope.decomposition/2");
    let err = hopscope_analyze::Decomposition::from_json(&future).expect_err("future schema");
    assert!(err.to_string().contains("hopscope.decomposition/2"), "{err}");
    assert!(hopscope_analyze::Decomposition::from_json("{\"schema\": 3}").is_err());
    assert!(hopscope_analyze::Decomposition::from_json("not json").is_err());
}

#[test]
fn the_chrome_timeline_has_tracks_slices_flows_and_counters() {
    let t = trace(false);
    let cut = hopscope_analyze::timeline::Cut::default();
    let json = hopscope_analyze::timeline::chrome_trace(&t, cut).expect("timeline");
    let text = serde_json::to_string(&json).expect("serialises");
    let parsed: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = parsed["traceEvents"].as_array().expect("traceEvents");
    let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
    // 5 lanes as processes; the three clean lanes show only their readings
    // (on thread 0), the probed ones both threads.
    assert_eq!(events.iter().filter(|e| e["name"] == "process_name").count(), 5);
    assert_eq!(events.iter().filter(|e| e["name"] == "thread_name").count(), 3 + 2 * 2);
    // Writer-probed: 100 ops × 8 slices on one thread (caller: 4 steps and
    // its wait, writer: 3 steps); floor-probed: 100 ops × 5. Each carries
    // two flows: sent→woke, replied→received.
    assert_eq!(count("X"), 100 * 8 + 100 * 5);
    let starts = events.iter().filter(|e| e["flow_out"] == true).count();
    let ends = events.iter().filter(|e| e["flow_in"] == true).count();
    assert_eq!((starts, ends), (400, 400));
    assert_eq!(count("C"), t.blocks.len(), "one counter event per block");
    let wait = events.iter().find(|e| e["name"] == "sent→received").expect("the caller's wait");
    assert_eq!(wait["cat"], "gap");
    let woke = events.iter().find(|e| e["name"] == "woke→executed" && e["flow_in"] == true).expect("a wake's slice");
    let source = events.iter().find(|e| e["flow_out"] == true && e["bind_id"] == woke["bind_id"]).expect("source");
    assert_eq!(woke["args"]["op"], source["args"]["op"], "the wake's arrow stays in its operation");
    assert!(source["name"] == "built→sent" || source["name"] == "enter→sent", "it leaves from the send: {source}");
    let slice = events.iter().find(|e| e["name"] == "locked→built").expect("a slice");
    assert!((slice["dur"].as_f64().expect("dur") - 0.3).abs() < 1e-3, "locked→built lasts 300 ns");
}

/// The same trace with a user's own lane names and the roles recorded: the
/// analyzer finds baseline, floor and subject by role, so every figure is
/// the same as under hopscope's names.
#[test]
fn roles_not_names_decide_which_lane_is_which() {
    use hopscope_probe::{LaneInfo, Role, Variant};
    let legacy = decompose(&trace(false)).expect("decomposes");
    let mut renamed = trace(false);
    // Declared in another order than hopscope's names sort in, and named
    // nothing like them.
    let infos = [
        ("sqlite-alone", Role::Baseline, None, "sqlite-alone"),
        ("bare-thread", Role::Floor, Some(Variant::Clean), "bare-thread"),
        ("bare-thread-probed", Role::Floor, Some(Variant::Probed), "bare-thread"),
        ("my-writer", Role::Subject, Some(Variant::Clean), "my-writer"),
        ("my-writer-probed", Role::Subject, Some(Variant::Probed), "my-writer"),
    ];
    renamed.header.lanes = infos.iter().map(|i| i.0.to_owned()).collect();
    renamed.header.lane_info = infos
        .iter()
        .map(|&(_, role, variant, code)| LaneInfo {
            role,
            variant,
            code: code.to_owned(),
            reference: false,
            baseline: false,
        })
        .collect();
    let d = decompose(&renamed).expect("decomposes");
    let derived = d.derived.as_ref().expect("derived");
    let before = legacy.derived.as_ref().expect("derived");
    assert_eq!(derived.hop_us, before.hop_us);
    assert_eq!(derived.boundary_us, before.boundary_us);
    assert_eq!(derived.library_us, before.library_us);
    assert_eq!(derived.lane(Role::Subject), Some("my-writer"));
    assert_eq!(derived.lane(Role::Baseline), Some("sqlite-alone"));
    assert_eq!(d.insitu_lane.as_deref(), Some("my-writer-probed"));
    assert_eq!(d.slices, legacy.slices);
    assert_eq!(d.floor_slices, legacy.floor_slices);
    assert_eq!(d.crosscheck, legacy.crosscheck);
    assert_eq!(d.observer_effect, legacy.observer_effect);
    assert!(d.comparison.is_none(), "no lane here is a peer");

    // Without a floor: the hop, no boundary or library, no cross-check.
    let mut no_floor = renamed.clone();
    for info in &mut no_floor.header.lane_info {
        if info.role == Role::Floor {
            info.role = Role::Peer;
        }
    }
    let d = decompose(&no_floor).expect("decomposes");
    let derived = d.derived.as_ref().expect("derived");
    assert_eq!(derived.hop_us, before.hop_us);
    assert!(derived.boundary_us.is_none() && derived.library_us.is_none() && d.crosscheck.is_none());
    assert!(d.warnings.contains(&Recorded::Typed(Warning::NoFloor)), "{:?}", d.warnings);
}

/// The synthetic trace with a handoff lane whose every turn takes
/// `turn_ns` per operation.
fn with_handoff(turn_ns: u64) -> Trace {
    use hopscope_probe::{LaneInfo, Role};
    let mut t = trace(false);
    let handoff = LANES.len() as u16;
    let turns: Vec<Block> = t
        .blocks
        .iter()
        .filter(|b| b.lane == 0)
        .map(|b| Block { lane: handoff, end: Ticks(b.start.0 + OPS * turn_ns), ..b.clone() })
        .collect();
    t.blocks.extend(turns);
    t.header.lanes.push("handoff".to_owned());
    t.header.lane_info = LANES.iter().map(|name| LaneInfo::legacy(name, LANES.len())).collect();
    t.header.lane_info.push(LaneInfo {
        role: Role::Handoff,
        variant: None,
        code: "handoff".to_owned(),
        reference: false,
        baseline: false,
    });
    t
}

/// A handoff lane of 7 µs a turn beside the same lanes: the boundary
/// (11.35 µs) splits into its switches (7 µs) and the machinery (4.35 µs),
/// round by round, and the receipt and result say so.
#[test]
fn a_handoff_lane_splits_the_boundary_into_switches_and_machinery() {
    use hopscope_probe::Role;
    let t = with_handoff(7_000);

    let d = decompose(&t).expect("decomposes");
    let derived = d.derived.as_ref().expect("derived");
    assert!(close(derived.boundary_us.expect("boundary").median, 11.35));
    let switches = derived.switches_us.expect("switches");
    let machinery = derived.machinery_us.expect("machinery");
    assert!(close(switches.median, 7.0) && close(machinery.median, 4.35), "{switches:?} {machinery:?}");
    assert_eq!((switches.rounds, machinery.rounds), (10, 10));
    assert_eq!(derived.lane(Role::Handoff), Some("handoff"));
    assert_eq!(d.lane_order.get(1).map(String::as_str), Some("handoff"), "{:?}", d.lane_order);
    // The hop's other figures do not move.
    let plain = decompose(&trace(false)).expect("decomposes");
    let before = plain.derived.as_ref().expect("derived");
    assert_eq!((derived.hop_us, derived.library_us), (before.hop_us, before.library_us));
    assert!(before.switches_us.is_none() && before.machinery_us.is_none());

    let md = receipt::markdown(&d);
    assert!(md.contains("| · switches | handoff (a bare turn to a thread and back) | 7.000 |"), "{md}");
    assert!(md.contains("| · machinery | floor − inline − handoff | 4.350 |"), "{md}");
    assert!(md.contains("the bare switches"), "the headline splits the boundary: {md}");
    let json = serde_json::to_value(&d).expect("json");
    assert_eq!(json["derived"]["switches_us"]["median"], 7.0);
    // A result without the split leaves the fields out, and older results
    // without them still read.
    let old = serde_json::to_value(&plain).expect("json");
    assert!(old["derived"].get("switches_us").is_none());
}

/// Switches that measured more than the whole boundary (14 µs of turn in
/// an 11.35 µs boundary): the machinery would be negative beyond its CI,
/// so the boundary is not split, and a warning says why.
#[test]
fn switches_past_the_boundary_do_not_split_it() {
    let d = decompose(&with_handoff(14_000)).expect("decomposes");
    let derived = d.derived.as_ref().expect("derived");
    assert!(close(derived.switches_us.expect("the switches are still measured").median, 14.0));
    assert!(derived.machinery_us.is_none(), "no negative machinery: {:?}", derived.machinery_us);
    let refused = d.warnings.iter().find_map(|w| match w.typed() {
        Some(Warning::SwitchesPastBoundary { switches_us, boundary_us, machinery }) => {
            Some((*switches_us, *boundary_us, *machinery))
        }
        _ => None,
    });
    let (switches, boundary, machinery) = refused.expect("a warning says why");
    assert!(close(switches, 14.0) && close(boundary, 11.35) && machinery.ci95[1] < 0.0, "{machinery:?}");
    let headline = receipt::headline(&d).expect("headline");
    assert!(headline.contains("not split into switches and machinery"), "{headline}");
    assert!(!headline.contains("the machinery around them"), "{headline}");
}

#[test]
fn slices_within_two_grains_of_a_10_ns_clock_are_not_printed_as_figures() {
    // The same trace read with a clock of 0.2 ns per tick that advances in
    // steps of 50 ticks: a 10 ns grain. Every duration is a multiple of it;
    // enter→locked is 2 grains, received→done 1.
    let mut t = trace(false);
    t.header.clock.ns_per_tick = 0.2;
    t.header.clock.grain_ticks = Some(50);
    let d = decompose(&t).expect("decomposes");
    let within: Vec<&str> = d.slices.iter().filter(|s| s.within_two_grains).map(|s| s.name.as_str()).collect();
    assert_eq!(within, ["enter→locked", "received→done"]);
    let done = d.slices.iter().find(|s| s.name == "received→done").expect("slice");
    assert!(close(done.mean_us.expect("mean") * 1_000.0, 10.0), "the mean is still given: {:?}", done.mean_us);
    let md = receipt::markdown(&d);
    assert!(md.contains("| received→done | caller | library | ≤ 2 grains (~20 ns; mean 10.0 ns) | — |"), "{md}");
    assert!(md.contains("steps of 10.0 ns"), "the receipt says what a grain is");
    // No slice row prints a median finer than two grains.
    let slices = md.split("## Slices of").nth(1).and_then(|rest| rest.split("\n## ").next()).expect("slice table");
    for row in slices.lines().filter(|l| l.starts_with("| ") && l.contains('→')) {
        let median = row.split(" | ").nth(3).expect("median cell");
        if let Ok(us) = median.parse::<f64>() {
            assert!(us * 1_000.0 > 20.0, "{row}");
        } else {
            assert!(median.starts_with("≤ 2 grains"), "{row}");
        }
    }
    // Without a measured grain nothing changes.
    let plain = decompose(&trace(false)).expect("decomposes");
    assert!(plain.slices.iter().all(|s| !s.within_two_grains));
}

/// [`trace`] with every block's run-queue delay recorded: 1 µs per op,
/// and in `rounds` the `writer` lane's block stretched by 2 ms of waiting
/// for a CPU that another process held.
fn waiting(rounds: &[(u32, u32)]) -> Trace {
    let mut t = trace(false);
    t.header.readings.push("process.run_queue_ns".into());
    let key = u16::try_from(t.header.readings.len() - 1).expect("few readings");
    for b in &mut t.blocks {
        let waited = LANES[usize::from(b.lane)] == "writer" && rounds.contains(&(b.pass, b.sample));
        if waited {
            b.end = Ticks(b.end.0 + 2_000_000);
        }
        b.readings.push(Reading { key, value: if waited { 2_000_000 } else { 1_000 * OPS } });
    }
    t
}

#[test]
fn rounds_that_waited_for_another_process_are_left_out_and_said() {
    let d = decompose(&waiting(&[(0, 1), (1, 3)])).expect("decomposes");
    let c = d.contention.as_ref().expect("run-queue delay recorded");
    assert!(!c.contended && c.dropped_rounds && (c.contended_rounds, c.rounds) == (2, 10), "{c:?}");
    assert_eq!(c.lanes["writer"].contended_blocks, 2);
    // Every lane loses those two rounds, and the figures are the clean ones.
    for lane in LANES {
        assert_eq!(d.lanes[lane].blocks_us.len(), 8, "{lane}");
    }
    assert!(close(d.lanes["writer"].us_per_op.expect("figures").max, 22.3));
    assert!(close(d.derived.as_ref().and_then(|x| x.library_us).expect("library").median, 0.95));
    let md = receipt::markdown(&d);
    assert!(md.contains("**Left out:** 2 of 10 rounds waited for another process (blocks: writer 2 of 10)"), "{md}");
    assert!(!md.contains("**Contended:**"));

    // Judged again from its file (`compare`, a baseline), the run reads
    // the operations it was judged by: those rounds are left out there too.
    let crowded = waiting(&[(0, 1), (1, 3)]);
    let path = common::scratch_trace("synthetic", "left-out");
    let mut writer = TraceWriter::new(Vec::new(), crowded.header.clone()).expect("writer");
    for block in &crowded.blocks {
        writer.write_block(block).expect("block");
    }
    std::fs::write(&path, writer.finish().expect("trace")).expect("write");
    let (header, joined) = hopscope_analyze::join_file(&path).expect("joins");
    let rounds: Vec<(u32, u32)> = joined.iter().flat_map(|l| l.blocks.iter().map(|b| (b.pass, b.sample))).collect();
    assert!(joined.iter().all(|l| l.blocks.is_empty() || l.blocks.len() == 8) && !rounds.is_empty(), "{rounds:?}");
    assert!(!rounds.contains(&(0, 1)) && !rounds.contains(&(1, 3)), "{rounds:?}");
    let (held, samples) =
        hopscope_analyze::decompose_source_with_samples(&mut TraceFile::open(&path).expect("opens"), None)
            .expect("decomposes");
    assert_eq!(RunSamples::new(&held, Some((&header, &joined))), samples);
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));

    // Half the rounds or more: nothing is left out, and the run says whose
    // figures these are.
    let all: Vec<(u32, u32)> = (0..2).flat_map(|p| (0..3).map(move |s| (p, s))).collect();
    let d = decompose(&waiting(&all)).expect("decomposes");
    let c = d.contention.as_ref().expect("run-queue delay recorded");
    assert!(c.contended && !c.dropped_rounds && c.contended_rounds == 6, "{c:?}");
    assert_eq!(d.lanes["writer"].blocks_us.len(), 10);
    let md = receipt::markdown(&d);
    assert!(md.contains("**Contended:** another process held this run's CPUs: 6 of 10 rounds waited for it; in `writer`'s 6 such blocks of 10"), "{md}");

    // A trace with no run-queue reading says nothing either way.
    assert!(decompose(&trace(false)).expect("decomposes").contention.is_none());
}

#[test]
fn a_slower_slice_the_floor_does_not_mark_is_named_as_what_moved_beyond_it() {
    // The writer's `locked→built` (the floor has none: its first slice is
    // enter→sent) 1 µs longer: the library grows by 1 µs, and that slice
    // is the one it names, wholly beyond the floor.
    let samples = |t: &Trace| {
        let d = decompose(t).expect("decomposes");
        let joined = hopscope_analyze::join::join(t);
        hopscope_analyze::change::RunSamples::new(&d, Some((&t.header, &joined)))
    };
    let (before, after) = (trace_with(false, 0), trace_with(false, 1_000));
    let change = hopscope_analyze::change::compare(&samples(&before), &samples(&after), "a", "b");
    let library = change.figures.iter().find(|f| f.name == "library").expect("library");
    let carried = library.carried_by.as_ref().expect("a slice named");
    assert_eq!(carried.slice, "locked→built", "{library:?}");
    assert!((carried.delta_us - 1.0).abs() < 1e-6, "{carried:?}");
}
