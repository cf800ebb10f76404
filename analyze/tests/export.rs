//! A trace file exported as a timeline: the streamed export writes what
//! the in-memory timeline holds, a cut file is exported from its complete
//! blocks and says so, and a selection the trace cannot satisfy is refused
//! before a byte is written.

use std::path::{Path, PathBuf};

use hopscope_analyze::timeline::{self, Cut, ExportError, Selection, TimelineFormat};
use hopscope_probe::Trace;

mod common;

use common::corpus;

fn scratch(name: &str) -> PathBuf {
    common::scratch_trace("export", name)
}

fn exported(path: &Path, format: TimelineFormat, selection: &Selection) -> (timeline::Exported, Vec<u8>) {
    let mut out = Vec::new();
    let summary = timeline::export(path, format, selection, &mut out).expect("export");
    (summary, out)
}

#[test]
fn a_streamed_export_writes_the_timeline_in_memory() {
    let path = corpus("decompose.hop");
    let trace = Trace::read(&path).expect("trace");
    let selection = Selection { ops_per_lane: Some(20), lanes: Vec::new() };
    let cut = Cut { ops_per_lane: Some(20), lanes: None };

    let (summary, json) = exported(&path, TimelineFormat::Chrome, &selection);
    let streamed: serde_json::Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(streamed, timeline::chrome_trace(&trace, cut.clone()).expect("in memory"));
    assert!(json.ends_with(b"\n"), "a JSON file ends with a newline");
    let held = timeline::blocks(&trace, cut.clone());
    assert_eq!(summary.slices, held.iter().map(|b| b.slices.len() as u64).sum::<u64>());
    assert!(summary.flows > 0 && summary.slices > summary.flows, "{summary:?}");
    assert_eq!(summary.blocks, trace.blocks.len() as u64);
    assert!(summary.partial.is_none());

    let (_, protobuf) = exported(&path, TimelineFormat::Perfetto, &selection);
    assert_eq!(protobuf, timeline::perfetto_trace(&trace, cut).expect("in memory"));
}

#[test]
fn a_cut_file_is_exported_from_its_complete_blocks_and_says_so() {
    let whole = std::fs::read(corpus("decompose.hop")).expect("corpus");
    let path = scratch("cut");
    std::fs::write(&path, &whole[..whole.len() / 2]).expect("write");
    let (trace, _) = Trace::salvage(&path).expect("salvage");
    let (summary, json) = exported(&path, TimelineFormat::Chrome, &Selection::default());
    assert_eq!(summary.blocks, trace.blocks.len() as u64);
    let partial = summary.partial.expect("a cut trace is partial");
    assert!(partial.contains("ended early"), "{partial}");
    let document: serde_json::Value = serde_json::from_slice(&json).expect("the JSON is whole");
    assert!(document.to_string().contains("ended early"), "the JSON says it is partial");
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

#[test]
fn a_selection_the_trace_cannot_satisfy_is_refused_before_writing() {
    let path = corpus("decompose.hop");
    for (selection, says) in [
        (Selection { ops_per_lane: None, lanes: vec!["no-such-lane".to_owned()] }, "has no lane \"no-such-lane\""),
        (Selection { ops_per_lane: Some(0), lanes: Vec::new() }, "leaves nothing"),
    ] {
        let mut out = Vec::new();
        let error = timeline::export(&path, TimelineFormat::Chrome, &selection, &mut out).expect_err("refused");
        assert!(error.to_string().contains(says), "{error}");
        assert!(out.is_empty(), "nothing written before the refusal");
    }
    let missing = timeline::export(
        Path::new("/nonexistent/trace.hop"),
        TimelineFormat::Perfetto,
        &Selection::default(),
        Vec::new(),
    );
    assert!(matches!(missing, Err(ExportError::Trace { .. })), "{missing:?}");
}
