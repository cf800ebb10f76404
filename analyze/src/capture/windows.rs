//! A capture window by window: how many operations each window kept, how
//! fast the program went, and the latency quantiles of its operations, so a
//! deploy or a checkpoint storm inside one capture shows as the windows
//! where the figures move.

use std::collections::BTreeMap;

use hopscope_probe::{Block, LiveReading, ReadingKey, TraceHeader};
use serde::{Deserialize, Serialize};

use super::facts::CaptureFacts;
use crate::join::LaneOps;

/// What the first pass over the blocks keeps per window (block pass): the
/// marks dropped and the capture's readings of its process and host,
/// summed.
#[derive(Debug, Clone, Default)]
pub struct WindowScan {
    windows: BTreeMap<u32, Scanned>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Scanned {
    dropped: u64,
    /// Per [`LiveReading::ALL`], the sum, when any block carried it.
    readings: [Option<u64>; 4],
}

impl WindowScan {
    /// Add one block.
    pub fn add(&mut self, header: &TraceHeader, block: &Block) {
        let dropped = block.dropped();
        let live: Vec<(usize, u64)> = block
            .readings
            .iter()
            .filter_map(|r| match ReadingKey::named(header.readings.get(usize::from(r.key))?) {
                ReadingKey::Live(which) => Some((LiveReading::ALL.iter().position(|l| *l == which)?, r.value)),
                _ => None,
            })
            .collect();
        if dropped == 0 && live.is_empty() {
            return;
        }
        let window = self.windows.entry(block.pass).or_default();
        window.dropped = window.dropped.saturating_add(dropped);
        for (at, value) in live {
            window.readings[at] = Some(window.readings[at].unwrap_or(0).saturating_add(value));
        }
    }
}

/// One window of a capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureWindow {
    /// Its number, from 1, as `hopscope compare TRACE@N` names it.
    pub window: u32,
    /// When it began, s since the capture started.
    pub from_s: f64,
    /// When it ended (the capture's end, for the last), s.
    pub to_s: f64,
    /// Operations joined in it (kept ones, when the capture sampled).
    pub operations: u64,
    /// Operations per second in it, all of them (the kept count × N).
    pub ops_per_s: Option<f64>,
    /// Latency of one operation, first mark to last, µs: p50, p90, p99,
    /// p99.9 over its operations.
    pub latency_us: [Option<f64>; 4],
    /// Marks dropped in it.
    pub dropped: u64,
    /// CPUs the program kept busy on average (its CPU time over the
    /// window's length), when the capture read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_cpus: Option<f64>,
    /// Time its threads waited runnable for a CPU, ms per second of the
    /// window (where the kernel keeps scheduler statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_queue_ms_per_s: Option<f64>,
    /// CPUs the whole host kept busy on average, the program's included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_busy_cpus: Option<f64>,
    /// CPUs the hypervisor gave other guests while this one wanted them
    /// (steal), on average.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_cpus: Option<f64>,
}

/// The quantiles [`CaptureWindow::latency_us`] holds.
pub const QUANTILES: [f64; 4] = [0.50, 0.90, 0.99, 0.999];

/// The windows of a capture whose facts are `facts`, from the program
/// lane's joined operations and what the first pass kept of each window;
/// empty for a capture that does not cut windows (a program's own
/// `Capture`).
pub fn of(facts: &CaptureFacts, ops: &LaneOps, scan: &WindowScan) -> Vec<CaptureWindow> {
    let Some(window_s) = facts.window_s.filter(|w| w.is_finite() && *w > 0.0) else { return Vec::new() };
    let n = f64::from(facts.sample_every.max(1));
    let mut passes: Vec<u32> = ops.window_total_ns.keys().chain(scan.windows.keys()).copied().collect();
    passes.sort_unstable();
    passes.dedup();
    passes
        .into_iter()
        .map(|pass| {
            let from_s = f64::from(pass) * window_s;
            let to_s = facts.seconds.map_or(from_s + window_s, |end| end.clamp(from_s, from_s + window_s));
            let latency = ops.window_total_ns.get(&pass);
            let operations = latency.map_or(0, |d| d.len() as u64);
            // A window the capture's last moments opened (shorter than one
            // of its blocks' stretches) has no rate worth stating.
            let span = Some(to_s - from_s).filter(|s| *s >= window_s / 20.0).unwrap_or(0.0);
            let scanned = scan.windows.get(&pass).copied().unwrap_or_default();
            let per_s =
                |at: usize, scale: f64| scanned.readings[at].filter(|_| span > 0.0).map(|v| v as f64 / scale / span);
            CaptureWindow {
                window: pass.saturating_add(1),
                from_s,
                to_s,
                operations,
                ops_per_s: (span > 0.0).then(|| operations as f64 * n / span),
                latency_us: QUANTILES.map(|q| latency.and_then(|d| d.quantile(q)).map(|ns| ns / 1e3)),
                dropped: scanned.dropped,
                process_cpus: per_s(0, 1e9),
                run_queue_ms_per_s: per_s(1, 1e6),
                host_busy_cpus: per_s(2, 1e9),
                host_steal_cpus: per_s(3, 1e9),
            }
        })
        .collect()
}
