//! The exported timeline as a viewer reads it: every flow arrow must bind
//! to the slices of its own operation, on the threads its marks are on, in
//! both formats. Checked by replaying Perfetto's importer
//! (`hopscope_analyze::timeline::importer`) over the decoded files. The
//! protobuf is read back with hopscope's own declaration of Perfetto's
//! messages; where `HOPSCOPE_PERFETTO_DECODER` names Perfetto's generated
//! decoder (`checks/perfetto-decode`, built in CI), it reads the same files
//! and must print the same rows.

use std::collections::BTreeMap;

use hopscope_analyze::timeline::importer::{self, Imported, TrackEventRow};
use hopscope_analyze::timeline::track_events;
use hopscope_analyze::timeline::{self, Cut};
use hopscope_probe::{
    Block, ClockInfo, ClockSource, Hop, HopTable, HostInfo, Mark, OpId, Reading, Stream, Ticks, Trace, TraceHeader,
};

mod common;
use common::{hopscope, small_decompose_args, temp_dir};

/// The protobuf timeline as the importer's rows.
fn decode(bytes: &[u8]) -> Vec<TrackEventRow> {
    let rows = track_events::read(bytes).expect("a Perfetto Trace of track events");
    assert!(!rows.is_empty(), "no rows");
    rows
}

/// Both formats of `trace` under `cut`, imported as Perfetto would.
fn both(trace: &Trace, cut: &Cut) -> [(&'static str, Imported); 2] {
    let json = timeline::chrome_trace(trace, cut.clone()).expect("chrome JSON");
    let text = serde_json::to_string(&json).expect("serialises");
    let reparsed: serde_json::Value = serde_json::from_str(&text).expect("parses");
    let bytes = timeline::perfetto_trace(trace, cut.clone()).expect("protobuf");
    [("chrome", importer::import_chrome(&reparsed)), ("perfetto", importer::import_track_events(&decode(&bytes)))]
}

fn assert_bound(trace: &Trace, cut: &Cut) -> usize {
    let arrows = importer::arrows(trace, cut).expect("arrows");
    assert!(!arrows.is_empty(), "the trace has cross-thread slices");
    for (format, imported) in both(trace, cut) {
        let wrong = importer::misbound(&imported, &arrows);
        assert!(wrong.is_empty(), "{format}: {} problems, first: {:#?}", wrong.len(), &wrong[..wrong.len().min(5)]);
        assert_eq!(imported.flows.len(), arrows.len(), "{format}");
    }
    arrows.len()
}

// --- Synthetic traces: cases a real run may or may not show. ---

const CALLER: u16 = 0;
const WRITER: u16 = 1;

fn header(lanes: &[&str]) -> TraceHeader {
    TraceHeader {
        created_unix_ms: 0,
        host: HostInfo {
            hostname: "test".into(),
            cpu_model: "synthetic".into(),
            cores: 2,
            kernel: "0".into(),
            target: "test".into(),
        },
        // 0.4 ns per tick: times are rounded to whole ns on export.
        clock: ClockInfo {
            source: ClockSource::Tsc,
            ns_per_tick: 0.4,
            invariant_tsc: true,
            kernel_clocksource: "tsc".into(),
            grain_ticks: None,
        },
        hops: HopTable::standard(),
        lanes: lanes.iter().map(|s| (*s).to_owned()).collect(),
        threads: vec!["caller".into(), "writer".into()],
        readings: vec!["caller.cpu_ns".into()],
        counters: Vec::new(),
        run: BTreeMap::new(),
        lane_info: Vec::new(),
        span_machinery: None,
        mark_ns: None,
        statement_hook: None,
    }
}

/// A block of `ops` operations, each marking `hops` = (hop, thread, ns
/// after the op's start), ops `spacing` ns apart.
fn block(lane: u16, first_op: u64, ops: u64, spacing: u64, hops: &[(Hop, u16, u64)]) -> Block {
    let start = 1_000_000 * u64::from(lane) + 10_000_000 * first_op;
    let mut streams: BTreeMap<u16, Vec<Mark>> = BTreeMap::new();
    for i in 0..ops {
        for &(hop, thread, at) in hops {
            let mark = Mark { op: OpId(first_op + i), hop, cpu: thread, ticks: Ticks(start + i * spacing + at) };
            streams.entry(thread).or_default().push(mark);
        }
    }
    let streams = streams
        .into_iter()
        .map(|(thread, mut marks)| {
            marks.sort_by_key(|m| m.ticks);
            Stream { thread, dropped: 0, marks }
        })
        .collect();
    Block {
        lane,
        pass: 0,
        sample: 0,
        op_count: ops,
        start: Ticks(start),
        end: Ticks(start + ops * spacing),
        streams,
        readings: vec![Reading { key: 0, value: 42 }],
    }
}

/// The reference writer's twelve hops; the writer goes idle after the
/// caller has its reply (so `replied→idle` is a tail).
const FULL: [(Hop, u16, u64); 12] = [
    (Hop::ENTER, CALLER, 0),
    (Hop::LOCKED, CALLER, 100),
    (Hop::BUILT, CALLER, 300),
    (Hop::SENT, CALLER, 500),
    (Hop::WOKE, WRITER, 5_500),
    (Hop::EXECUTED, WRITER, 15_500),
    (Hop::HARVESTED, WRITER, 15_650),
    (Hop::REPLIED, WRITER, 15_900),
    (Hop::RECEIVED, CALLER, 21_900),
    (Hop::IDLE, WRITER, 22_000),
    (Hop::DONE, CALLER, 22_050),
    (Hop::RETURNED, CALLER, 22_100),
];

/// A relay whose writer marks once per operation: no slice of its own to
/// carry the arrows, so an anchor carries both (a chained flow).
const RELAY: [(Hop, u16, u64); 3] = [(Hop::ENTER, CALLER, 0), (Hop::WOKE, WRITER, 4_000), (Hop::DONE, CALLER, 9_000)];

fn synthetic() -> Trace {
    let header = header(&["writer", "relay", "batch"]);
    let mut blocks = Vec::new();
    for round in 0..3 {
        blocks.push(block(0, 100 * round, 10, 30_000, &FULL));
        blocks.push(block(1, 100 * round + 1_000, 10, 10_000, &RELAY));
        // Batched: operations 10 µs apart whose writer work takes 16 µs,
        // so one operation's writer slices overlap the next one's.
        blocks.push(block(2, 100 * round + 2_000, 10, 10_000, &FULL));
    }
    Trace { header, blocks }
}

#[test]
fn every_flow_binds_to_the_slices_of_its_own_operation_in_both_formats() {
    let trace = synthetic();
    let arrows = assert_bound(&trace, &Cut::default());
    // writer: sent→woke, replied→received; relay: enter→woke, woke→done;
    // batch: the same two as the writer. 30 operations each.
    assert_eq!(arrows, 30 * 2 * 3);
}

#[test]
fn a_cut_keeps_the_first_operations_of_the_chosen_lanes_and_their_flows_whole() {
    let trace = synthetic();
    let cut = Cut { ops_per_lane: Some(4), lanes: Some(vec![0, 1]) };
    assert_eq!(assert_bound(&trace, &cut), 4 * 2 * 2);
    let json = timeline::chrome_trace(&trace, cut).expect("json");
    let events = json["traceEvents"].as_array().expect("events");
    let ops: std::collections::BTreeSet<u64> = events.iter().filter_map(|e| e["args"]["op"].as_u64()).collect();
    assert_eq!(ops.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 1_000, 1_001, 1_002, 1_003]);
}

#[test]
fn every_event_names_a_thread_of_its_own_process() {
    let json = timeline::chrome_trace(&synthetic(), Cut::default()).expect("json");
    let mut process_of = BTreeMap::new();
    for event in json["traceEvents"].as_array().expect("events") {
        let tid = event["tid"].as_i64().unwrap_or_else(|| panic!("no tid: {event}"));
        let pid = event["pid"].as_i64().expect("pid");
        assert_ne!(tid, pid, "a thread numbered like a process: {event}");
        assert_eq!(*process_of.entry(tid).or_insert(pid), pid, "thread {tid} in two processes");
    }
    // Three lanes × two threads, each named once.
    let names = json["traceEvents"].as_array().expect("events").iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(names, 6);
}

/// The check can fail: the timeline hopscope wrote before flows rode on
/// their slices (a `ph: f` end at the next slice's start, written before
/// that slice) binds every wake to the slice before it.
#[test]
fn the_importer_replay_catches_flow_ends_bound_by_time() {
    let trace = Trace { header: header(&["writer"]), blocks: vec![block(0, 0, 2, 30_000, &FULL)] };
    let good = timeline::chrome_trace(&trace, Cut::default()).expect("json");
    let mut events: Vec<serde_json::Value> = Vec::new();
    for event in good["traceEvents"].as_array().expect("events") {
        let mut event = event.clone();
        let Some(fields) = event.as_object_mut() else { continue };
        let (Some(id), Some(out)) = (fields.remove("bind_id"), fields.remove("flow_out")) else {
            if fields.remove("bind_id").is_none() {
                events.push(event);
            }
            continue;
        };
        let _ = out;
        events.push(event.clone());
        // The old shape: `s` at the source's end, `f` (bp e) at the
        // arrival — both by time, on the right threads.
        let end = event["ts"].as_f64().expect("ts") + event["dur"].as_f64().expect("dur");
        events.push(serde_json::json!({"ph": "s", "id": id, "pid": event["pid"], "tid": event["tid"], "ts": end}));
        let arrival = good["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .find(|e| e["bind_id"] == id && e["flow_in"] == true)
            .expect("arrival");
        events.insert(
            events.len() - 1,
            serde_json::json!({"ph": "f", "bp": "e", "id": id, "pid": arrival["pid"], "tid": arrival["tid"], "ts": arrival["ts"]}),
        );
    }
    let old = serde_json::json!({"traceEvents": events});
    let imported = importer::import_chrome(&old);
    let wrong = importer::misbound(&imported, &importer::arrows(&trace, &Cut::default()).expect("arrows"));
    // The reply's arrow ends on the previous operation's slice.
    assert!(
        wrong.iter().any(|w| w.contains("a flow joins built→sent of op Some(1) to replied→idle of op Some(0)")),
        "flow ends bound by time went unnoticed: {wrong:#?}"
    );
}

// --- A real run, through the command line. ---

#[test]
fn a_quick_runs_timeline_binds_every_flow_in_both_formats() {
    let dir = temp_dir("quick");
    let out = hopscope(&small_decompose_args(&dir, &[]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace_path = dir.join("trace.hop");
    let trace = Trace::read(&trace_path).expect("trace");
    let arrows = importer::arrows(&trace, &Cut::default()).expect("arrows");
    assert!(arrows.len() >= 2 * 20 * 3 * 2, "at least the writer's two arrows per operation: {}", arrows.len());

    let path = trace_path.to_str().expect("utf-8");
    let json_file = dir.join("timeline.json");
    let pb_file = dir.join("timeline.perfetto-trace");
    for (format, file) in [("chrome", &json_file), ("perfetto", &pb_file)] {
        let out = hopscope(&["export", "--format", format, "-o", file.to_str().expect("utf-8"), path]);
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("bytes →"), "the size is stated");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_file).expect("json file")).expect("one JSON document");
    let rows = decode(&std::fs::read(&pb_file).expect("protobuf file"));
    for (format, imported) in
        [("chrome", importer::import_chrome(&json)), ("perfetto", importer::import_track_events(&rows))]
    {
        let wrong = importer::misbound(&imported, &arrows);
        assert!(wrong.is_empty(), "{format}: {} problems, first: {:#?}", wrong.len(), &wrong[..wrong.len().min(5)]);
    }

    // A cut to one lane's first five operations.
    let out = hopscope(&["export", "--format", "perfetto", "--lane", "writer-probed", "--ops", "5", path]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lane = trace.header.lanes.iter().position(|l| l == "writer-probed").expect("lane") as u16;
    let cut = Cut { ops_per_lane: Some(5), lanes: Some(vec![lane]) };
    let imported = importer::import_track_events(&decode(&out.stdout));
    let arrows = importer::arrows(&trace, &cut).expect("arrows");
    assert!(!arrows.is_empty());
    assert!(importer::misbound(&imported, &arrows).is_empty());

    let bad = hopscope(&["export", "--lane", "nope", path]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no lane \"nope\"") && err.contains("writer-probed"), "{err}");
}

#[test]
fn a_group_commit_runs_timeline_binds_an_arrow_from_every_request_into_its_transaction() {
    let dir = temp_dir("group-commit");
    let out = hopscope(&[
        "run",
        "--quick",
        "--samples",
        "2",
        "--passes",
        "1",
        "--shape",
        "concurrent-insert:4",
        "--group-commit",
        "8",
        "--lanes",
        "writer-probed",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = Trace::read(&dir.join("trace.hop")).expect("trace");
    let arrows = importer::arrows(&trace, &Cut::default()).expect("arrows");
    let into = arrows.iter().filter(|a| a.to_op != a.op).count();
    let requests: u64 = trace.blocks.iter().map(|b| b.op_count).sum();
    assert_eq!(into as u64, requests, "one arrow from each request into its transaction");
    for (format, imported) in both(&trace, &Cut::default()) {
        let wrong = importer::misbound(&imported, &arrows);
        assert!(wrong.is_empty(), "{format}: {} problems, first: {:#?}", wrong.len(), &wrong[..wrong.len().min(5)]);
    }
}

// --- Perfetto's own decoder (CI): the same rows from the same files. ---

/// Perfetto's generated decoder, when this run was given one.
fn perfetto_decoder() -> Option<std::path::PathBuf> {
    std::env::var_os("HOPSCOPE_PERFETTO_DECODER").map(std::path::PathBuf::from)
}

/// What Perfetto's decoder prints for `bytes`, or its one-line refusal.
fn perfetto_rows(decoder: &std::path::Path, file: &std::path::Path, bytes: &[u8]) -> Result<String, String> {
    std::fs::write(file, bytes).expect("write the timeline");
    let out = std::process::Command::new(decoder)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("HOPSCOPE_PERFETTO_DECODER={}: {e}", decoder.display()));
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("utf-8 rows"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn perfetto_s_own_decoder_reads_the_rows_hopscope_reads() {
    let Some(decoder) = perfetto_decoder() else {
        eprintln!(
            "skipped: HOPSCOPE_PERFETTO_DECODER names no decoder (build checks/perfetto-decode, as .ci/run does)"
        );
        return;
    };
    let dir = temp_dir("perfetto-decoder");
    let out = hopscope(&small_decompose_args(&dir, &[]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = Trace::read(&dir.join("trace.hop")).expect("trace");
    let cut = Cut { ops_per_lane: Some(4), lanes: Some(vec![0, 2]) };
    let timelines = [
        ("synthetic", timeline::perfetto_trace(&synthetic(), Cut::default()).expect("protobuf")),
        ("synthetic, cut", timeline::perfetto_trace(&synthetic(), cut).expect("protobuf")),
        ("a quick run", timeline::perfetto_trace(&run, Cut::default()).expect("protobuf")),
    ];
    for (name, bytes) in &timelines {
        let theirs = perfetto_rows(&decoder, &dir.join("timeline.perfetto-trace"), bytes)
            .unwrap_or_else(|refusal| panic!("{name}: Perfetto's decoder refused it: {refusal}"));
        let ours: String = decode(bytes).iter().map(|row| format!("{row}\n")).collect();
        let first_difference = ours.lines().zip(theirs.lines()).find(|(a, b)| a != b);
        assert_eq!(first_difference, None, "{name}: hopscope's row, then Perfetto's");
        assert_eq!(ours.lines().count(), theirs.lines().count(), "{name}: rows");
    }
    let run_rows = decode(&timelines[2].1);
    let has = |kind: fn(&TrackEventRow) -> bool| run_rows.iter().any(kind);
    assert!(
        has(|r| matches!(r, TrackEventRow::Thread { .. }))
            && has(|r| matches!(r, TrackEventRow::Begin { .. }))
            && has(|r| matches!(r, TrackEventRow::End { .. }))
            && has(|r| matches!(r, TrackEventRow::Counter { .. })),
        "the quick run's timeline lacks a kind of row"
    );

    // The check can fail: a packet whose event carries field 9999 (what a
    // wrong field number in the declaration would write) is refused.
    let mut bytes = timelines[0].1.clone();
    bytes.extend_from_slice(&[0x0a, 0x0a, 0x50, 0x01, 0x68, 0x02, 0x5a, 0x04, 0xf8, 0xf0, 0x04, 0x00]);
    let refusal = perfetto_rows(&decoder, &dir.join("bad.perfetto-trace"), &bytes).expect_err("refused");
    assert!(refusal.contains("field 9999") && refusal.contains("does not declare"), "{refusal}");
}
