//! `finish`, the one writer a run ends with: the result's JSON and receipt,
//! the trace listed after them, the change against a baseline written
//! beside them, and the drawn files exactly when this build draws.

use hopscope_analyze::Decomposition;
use hopscope_analyze::change::{self, RunSamples};
use hopscope_reports::{ChartOptions, DRAWS, Finished, RunResult, finish};

fn fixture() -> Decomposition {
    Decomposition::from_json(include_str!("fixtures/result.json")).expect("fixture parses")
}

#[test]
fn a_decomposition_with_a_baseline_writes_every_file_once_and_lists_them_in_order() {
    let dir = std::env::temp_dir().join(format!("hopscope-finish-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let d = fixture();
    let samples = RunSamples::new(&d, None);
    let change = change::compare(&samples, &samples, "main (run #1)", "this run");
    let trace = dir.join("trace.hop");
    let run = Finished {
        result: RunResult::Decomposition(&d, ChartOptions::default()),
        trace: Some(&trace),
        change: Some(&change),
    };
    let written = finish(&dir, &run).expect("finish");
    let labels: Vec<&str> = written.files.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels[..3], ["receipt", "result", "trace"], "{labels:?}");
    for file in ["receipt.md", "result.json", "change.md", "change.json"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    // The change's JSON is the change, and its files are listed once each
    // but printed by the verdict's line, not the listing.
    let text = std::fs::read_to_string(dir.join("change.json")).expect("change.json");
    let back: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(back["verdict"], serde_json::to_value(change.verdict).expect("verdict"));
    assert_eq!(labels.iter().filter(|l| **l == "change").count(), 2);
    assert!(!written.to_string().contains("change.md"), "{written}");
    // Drawn exactly when this build draws; otherwise said, with the command.
    assert_eq!(dir.join("report.html").is_file(), DRAWS);
    assert_eq!(labels.contains(&"report"), DRAWS);
    assert_eq!(written.undrawn, !DRAWS);
    let _ = std::fs::remove_dir_all(&dir);
}
