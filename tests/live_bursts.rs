//! Bursts through a live span capture: one thread making spans as fast as
//! it can for 10 ms and 100 ms, through the Registry and `HopLayer` and
//! through the profiling `HopSubscriber`, beside a second thread that only
//! burns CPU; and a process that ends about 12 ms after it starts. Every
//! mark is in the trace, or counted as dropped and said.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hopscope_probe::{Capture, CaptureSummary, HopLayer, Trace};

/// The child process's trace path, when this test binary runs as one.
const CHILD: &str = "HOPSCOPE_BURST_CHILD";

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hopscope-bursts-{}-{name}.hop", std::process::id()))
}

/// Spans of `op` as fast as this thread can for `how_long`; the spans made.
fn spans_for(how_long: Duration) -> u64 {
    let start = Instant::now();
    let mut made = 0u64;
    while start.elapsed() < how_long {
        for _ in 0..64 {
            let _span = tracing::info_span!("op", op = made).entered();
            made += 1;
        }
    }
    made
}

/// Marks in `trace`, and marks it counts as dropped.
fn written(trace: &Trace) -> (u64, u64) {
    let marks = trace.blocks.iter().flat_map(|b| &b.streams).map(|s| s.marks.len() as u64).sum();
    (marks, trace.blocks.iter().map(|b| b.dropped()).sum())
}

/// A burst of `how_long` on one thread, captured through the profiling
/// subscriber or the Registry and the layer, beside a busy thread.
fn burst(path: &Path, how_long: Duration, profiling: bool) -> (u64, CaptureSummary) {
    let options = Capture::live(path).settle(Duration::from_millis(5));
    let layer = HopLayer::new().caller("op");
    let (dispatch, capture) = if profiling {
        let (subscriber, capture) = layer.capture_profiling_with(options).expect("capture");
        (tracing::Dispatch::new(subscriber), capture)
    } else {
        use tracing_subscriber::layer::SubscriberExt;
        let (layer, capture) = layer.capture_with(options).expect("capture");
        (tracing::Dispatch::new(tracing_subscriber::registry().with(layer)), capture)
    };
    let busy = Arc::new(AtomicBool::new(true));
    let burner = {
        let busy = busy.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while busy.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        })
    };
    let spans = std::thread::spawn(move || tracing::dispatcher::with_default(&dispatch, || spans_for(how_long)))
        .join()
        .expect("the marking thread");
    busy.store(false, Ordering::Relaxed);
    burner.join().expect("the burner");
    (spans * 2, capture.finish().expect("finish"))
}

#[test]
fn a_burst_of_spans_keeps_every_mark_or_says_what_it_dropped() {
    for profiling in [false, true] {
        for ms in [10, 100] {
            let name = format!("{}-{ms}ms", if profiling { "profiling" } else { "registry" });
            let path = scratch(&name);
            let (made, summary) = burst(&path, Duration::from_millis(ms), profiling);
            let trace = Trace::read(&path).expect("the trace reads");
            let _ = std::fs::remove_file(&path);
            let (marks, dropped) = written(&trace);
            assert_eq!(marks + dropped, made, "{name}: every mark (an enter and an exit a span) written or counted");
            assert_eq!((marks, dropped), (summary.marks, summary.dropped), "{name}: {summary}");
            assert_eq!(dropped, 0, "{name}: the ring grew within its cap ({summary})");
            if dropped > 0 {
                assert!(summary.to_string().contains("DROPPED"), "{name}: a drop is said: {summary}");
            }
        }
    }
}

/// The child: spans for 12 ms through a live capture, then the process
/// ends (the guard finishes as `main` would). Runs only as the child.
#[test]
#[ignore = "run by a_process_that_ends_after_12_ms_keeps_its_marks as a child process"]
fn child_process_burst() {
    let Some(path) = std::env::var_os(CHILD) else { return };
    let (layer, capture) = HopLayer::new().caller("op").capture_profiling(PathBuf::from(path)).expect("capture");
    let dispatch = tracing::Dispatch::new(layer);
    let spans = tracing::dispatcher::with_default(&dispatch, || spans_for(Duration::from_millis(12)));
    println!("made {}", spans * 2);
    drop(capture);
}

#[test]
fn a_process_that_ends_after_12_ms_keeps_its_marks() {
    let path = scratch("child");
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "child_process_burst", "--include-ignored", "--nocapture", "--test-threads", "1"])
        .env(CHILD, &path)
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let made: u64 = stdout
        .lines()
        // The test harness prints the test's name on the same line.
        .find_map(|l| l.split_once("made ").map(|(_, n)| n))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the child says what it made: {stdout}"));
    let trace = Trace::read(&path).expect("the child's trace reads");
    let _ = std::fs::remove_file(&path);
    let (marks, dropped) = written(&trace);
    assert!(made > 10_000, "the child made {made} marks in 12 ms");
    assert_eq!(marks + dropped, made, "every mark written or counted");
    assert_eq!(dropped, 0, "its last marks were drained when it finished");
    assert!(stderr.contains("hopscope: captured"), "the capture said what it took: {stderr}");
}
