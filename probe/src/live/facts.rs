//! The run facts a live capture writes: how it was taken (at the start, so
//! a trace cut short has them) and what it took (at the end).

use std::collections::BTreeMap;
use std::time::Duration;

use super::summary::CaptureSummary;
use crate::collector::Sampling;
use crate::placement::Placement;
use crate::run_fact::{LaneFact, LiveFact, RunFact, RunFacts};

/// The options a capture ran with, as facts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    pub(super) window: Duration,
    pub(super) settle: Duration,
    pub(super) ring_marks: usize,
    pub(super) ring_cap: usize,
    pub(super) held_marks: usize,
    pub(super) max_threads: usize,
}

/// How the capture is taken: the command, the capture's kind, its lane's
/// callers and placement (as the program runs it: a capture pins nothing),
/// its sampling and its options.
pub(super) fn record_start(
    run: &mut BTreeMap<String, String>,
    how: &str,
    lane: &str,
    callers: Option<u32>,
    sampling: Sampling,
    asked: Asked,
) {
    run.record(RunFact::Command, std::env::args().collect::<Vec<_>>().join(" "));
    run.record(RunFact::Capture, how);
    run.record(RunFact::Build, if cfg!(debug_assertions) { "debug" } else { "release" });
    run.record(RunFact::HopscopeVersion, env!("CARGO_PKG_VERSION"));
    run.record(RunFact::Lane(lane.to_owned(), LaneFact::Placement), Placement::Unpinned.name());
    if let Some(callers) = callers {
        run.record(RunFact::Lane(lane.to_owned(), LaneFact::Callers), callers.to_string());
    }
    run.record(RunFact::SampleEvery, sampling.every().to_string());
    for (fact, value) in [
        (LiveFact::WindowS, format!("{}", asked.window.as_secs_f64())),
        (LiveFact::SettleMs, format!("{}", asked.settle.as_secs_f64() * 1e3)),
        (LiveFact::RingMarks, asked.ring_marks.to_string()),
        (LiveFact::RingCap, asked.ring_cap.to_string()),
        (LiveFact::HeldMarks, asked.held_marks.to_string()),
        (LiveFact::MaxThreads, asked.max_threads.to_string()),
    ] {
        run.record(RunFact::Live(fact), value);
    }
}

/// What the capture took.
pub(super) fn record_totals(run: &mut BTreeMap<String, String>, summary: &CaptureSummary) {
    for (fact, value) in [
        (LiveFact::Seconds, format!("{:.3}", summary.seconds)),
        (LiveFact::Operations, summary.operations.to_string()),
        (LiveFact::Marks, summary.marks.to_string()),
        (LiveFact::Dropped, summary.dropped.to_string()),
        (LiveFact::Cut, summary.cut.to_string()),
        (LiveFact::UndeclaredHops, summary.undeclared_hops.to_string()),
        (LiveFact::PeakHeldMarks, summary.peak_held_marks.to_string()),
        (LiveFact::LargestRingMarks, summary.largest_ring_marks.to_string()),
    ] {
        run.record(RunFact::Live(fact), value);
    }
}
