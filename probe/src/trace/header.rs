//! The trace header: everything needed to interpret the blocks that follow.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::clock::ClockInfo;
use crate::counters::CounterSupport;
use crate::hook_cost::HookCost;
use crate::hop::HopTable;
use crate::host::HostInfo;
use crate::machinery::SpanMachinery;
use crate::role::LaneInfo;

/// Declared once at the start of a trace. Blocks refer to lanes, threads,
/// hops and reading keys by their index in these lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Wall-clock creation time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// The machine the trace was taken on.
    pub host: HostInfo,
    /// Clock source and calibration: how to turn ticks into nanoseconds.
    pub clock: ClockInfo,
    /// Hop names and sides, indexed by [`crate::Hop`].
    pub hops: HopTable,
    /// Lane names (`inline`, `floor`, `writer`, ...), indexed by
    /// [`super::Block::lane`].
    pub lanes: Vec<String>,
    /// Thread roles (`caller`, `writer`, ...), indexed by [`super::Stream::thread`].
    pub threads: Vec<String>,
    /// Names of per-block readings (CPU time, counters), indexed by
    /// [`super::Reading::key`].
    pub readings: Vec<String>,
    /// Which perf-event counters this host supports, and why not.
    pub counters: Vec<CounterSupport>,
    /// Free-form run metadata: command line, commit, workload settings.
    pub run: BTreeMap<String, String>,
    /// What each lane stands for, indexed like [`TraceHeader::lanes`];
    /// empty in traces written before roles were recorded (read them with
    /// [`TraceHeader::lane_info`], which falls back to the lane names).
    #[serde(default)]
    pub lane_info: Vec<LaneInfo>,
    /// The span machinery measured before the run, when `tracing` spans
    /// mark some of its hops: what each kind of span-to-span slice holds
    /// besides the code under study.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_machinery: Option<SpanMachinery>,
    /// What one probe mark costs on this host, ns (median of short timed
    /// batches at the run's start): lets the analysis price the marks one
    /// lane takes more than another. Absent in older traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_ns: Option<f64>,
    /// What SQLite's trace hook costs a statement on this host, measured
    /// before the run when some lane marks statements through it. Absent
    /// otherwise, and in older traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement_hook: Option<HookCost>,
}

impl TraceHeader {
    /// A header for a run on this host: detects the host and clock, declares
    /// the standard hops and the given lanes and threads. Counters start
    /// empty (fill them with [`crate::counters::detect`] when the run uses them).
    pub fn for_this_host(lanes: &[&str], threads: &[&str]) -> TraceHeader {
        let created_unix_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        TraceHeader {
            created_unix_ms,
            host: HostInfo::detect(),
            clock: ClockInfo::measure(),
            mark_ns: None,
            hops: HopTable::standard(),
            lanes: lanes.iter().map(|s| (*s).to_owned()).collect(),
            threads: threads.iter().map(|s| (*s).to_owned()).collect(),
            readings: Vec::new(),
            counters: Vec::new(),
            run: BTreeMap::new(),
            lane_info: Vec::new(),
            span_machinery: None,
            statement_hook: None,
        }
    }

    /// The declaration of lane `lane`: as recorded, or for a trace without
    /// roles, as [`LaneInfo::legacy`] reads its name. `None` for an index the
    /// header does not declare.
    pub fn lane_info(&self, lane: u16) -> Option<LaneInfo> {
        let name = self.lanes.get(usize::from(lane))?;
        Some(match self.lane_info.get(usize::from(lane)) {
            Some(info) => info.clone(),
            None => LaneInfo::legacy(name, self.lanes.len()),
        })
    }

    /// Index of the lane called `name`.
    pub fn lane(&self, name: &str) -> Option<u16> {
        self.lanes.iter().position(|l| l == name).map(|i| i as u16)
    }

    /// Index of the thread role called `name`.
    pub fn thread(&self, name: &str) -> Option<u16> {
        self.threads.iter().position(|t| t == name).map(|i| i as u16)
    }
}
