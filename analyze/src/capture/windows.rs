//! A capture window by window: how many operations each window kept, how
//! fast the program went, and the latency quantiles of its operations, so a
//! deploy or a checkpoint storm inside one capture shows as the windows
//! where the figures move.

use serde::{Deserialize, Serialize};

use super::facts::CaptureFacts;
use crate::join::LaneOps;

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
}

/// The quantiles [`CaptureWindow::latency_us`] holds.
pub const QUANTILES: [f64; 4] = [0.50, 0.90, 0.99, 0.999];

/// The windows of a capture whose facts are `facts`, from the program
/// lane's joined operations and the marks each window dropped (by pass);
/// empty for a capture that does not cut windows (a program's own
/// `Capture`).
pub fn of(facts: &CaptureFacts, ops: &LaneOps, dropped: &std::collections::BTreeMap<u32, u64>) -> Vec<CaptureWindow> {
    let Some(window_s) = facts.window_s.filter(|w| w.is_finite() && *w > 0.0) else { return Vec::new() };
    let n = f64::from(facts.sample_every.max(1));
    let mut passes: Vec<u32> = ops.window_total_ns.keys().chain(dropped.keys()).copied().collect();
    passes.sort_unstable();
    passes.dedup();
    passes
        .into_iter()
        .map(|pass| {
            let from_s = f64::from(pass) * window_s;
            let to_s = facts.seconds.map_or(from_s + window_s, |end| end.clamp(from_s, from_s + window_s));
            let latency = ops.window_total_ns.get(&pass);
            let operations = latency.map_or(0, |d| d.len() as u64);
            let span = to_s - from_s;
            CaptureWindow {
                window: pass.saturating_add(1),
                from_s,
                to_s,
                operations,
                ops_per_s: (span > 0.0).then(|| operations as f64 * n / span),
                latency_us: QUANTILES.map(|q| latency.and_then(|d| d.quantile(q)).map(|ns| ns / 1e3)),
                dropped: dropped.get(&pass).copied().unwrap_or(0),
            }
        })
        .collect()
}
