//! A capture's own facts, as its trace's run facts recorded them: the
//! floor the capture's figures and its windows both read.

use std::collections::BTreeMap;

use hopscope_probe::{LaneFact, LiveFact, RunFact, RunFacts, TraceHeader};
use serde::{Deserialize, Serialize};

/// A capture's facts, as its trace recorded them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureFacts {
    /// How it was taken (`hopscope_probe::Capture::live`, a span layer's
    /// capture, a program's own `Capture`).
    pub how: String,
    /// One operation in this many was kept (1: all).
    pub sample_every: u32,
    /// Seconds per window, for a live capture.
    pub window_s: Option<f64>,
    /// How long it ran, s.
    pub seconds: Option<f64>,
    /// Operations it wrote.
    pub operations: Option<u64>,
    /// Marks it dropped.
    pub dropped: Option<u64>,
    /// Operations handed on before they settled (held marks at their cap).
    pub cut: Option<u64>,
    /// Marks of hops the table does not declare, left out.
    pub undeclared_hops: Option<u64>,
    /// Caller threads the program declared.
    pub callers: Option<u32>,
}

impl CaptureFacts {
    /// The facts of a capture, `None` for any other run.
    pub fn of(meta: &BTreeMap<String, String>, lane: Option<&str>) -> Option<CaptureFacts> {
        let how = meta.fact(&RunFact::Capture)?.to_owned();
        let live = |fact: LiveFact| meta.fact(&RunFact::Live(fact));
        Some(CaptureFacts {
            how,
            sample_every: meta.parsed(&RunFact::SampleEvery).filter(|&n| n >= 1).unwrap_or(1),
            window_s: live(LiveFact::WindowS).and_then(|v| v.parse().ok()),
            seconds: live(LiveFact::Seconds).and_then(|v| v.parse().ok()),
            operations: live(LiveFact::Operations).and_then(|v| v.parse().ok()),
            dropped: live(LiveFact::Dropped).and_then(|v| v.parse().ok()),
            cut: live(LiveFact::Cut).and_then(|v| v.parse().ok()),
            undeclared_hops: live(LiveFact::UndeclaredHops).and_then(|v| v.parse().ok()),
            callers: lane.and_then(|l| meta.parsed(&RunFact::Lane(l.to_owned(), LaneFact::Callers))),
        })
    }

    /// The facts of the capture `header` starts, `None` for any other run.
    pub fn of_header(header: &TraceHeader) -> Option<CaptureFacts> {
        CaptureFacts::of(&header.run, header.lanes.first().map(String::as_str))
    }

    /// Whether it kept every operation.
    pub fn keeps_all(&self) -> bool {
        self.sample_every <= 1
    }
}
