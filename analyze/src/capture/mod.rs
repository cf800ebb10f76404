//! What a capture of a running program says about itself, read from its
//! run facts: a capture is one lane, the program, with no lanes to compare,
//! so the analysis and its receipt leave out what only lanes give (lane
//! arithmetic, cold starts, a noisy host read from spread blocks) and say
//! what a capture is instead (its sampling, windows, drops).
use hopscope_probe::{LiveFact, RunFact, RunFacts, TraceHeader};

use crate::join::{LaneOps, Sharing};
use serde::{Deserialize, Serialize};

mod facts;
pub mod windows;

pub use facts::CaptureFacts;
pub use windows::CaptureWindow;

/// Whether `header` is a capture's.
pub fn is_capture(header: &TraceHeader) -> bool {
    header.run.fact(&RunFact::Capture).is_some()
}

/// What the analysis reads of a capture beside its slices: its facts, its
/// throughput, and what its marks cost each operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureFigures {
    /// The capture's own facts.
    pub facts: CaptureFacts,
    /// Operations per second over the capture, all of them (the sampled
    /// count × N when it sampled), when it states its length.
    pub ops_per_s: Option<f64>,
    /// Marks one operation makes, on average: its own hops, its share of
    /// its batch's, its link.
    pub marks_per_op: Option<f64>,
    /// A kept operation's mark, ns, measured at the capture's start.
    pub mark_ns: Option<f64>,
    /// A left-out operation's mark (the sampling's decision alone), ns.
    pub left_out_mark_ns: Option<f64>,
    /// The marks' cost to one operation, µs, estimated: marks per operation
    /// × (a kept mark's cost ÷ N + a left-out one's × (1 − 1 ÷ N)).
    pub marks_us_per_op: Option<f64>,
    /// That cost over the median operation's latency.
    pub marks_share_of_latency: Option<f64>,
    /// The capture window by window, when it cut windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<CaptureWindow>,
}

/// Marks one operation makes, on average: its own hops, a share of its
/// batch's (a shared interval's hops are marked once for the whole batch)
/// and its link, when its lane batches. A capture that kept one operation
/// in `sample_every` shares by the mean over every batch the program ran,
/// not the kept ones' (which favour large batches).
pub fn marks_per_op(ops: &LaneOps, sample_every: u32) -> Option<f64> {
    if ops.hops.is_empty() {
        return None;
    }
    let shared: Vec<hopscope_probe::Hop> = {
        let mut ends: Vec<hopscope_probe::Hop> =
            ops.slices.iter().filter(|s| s.sharing == Sharing::Shared).flat_map(|s| [s.from, s.to]).collect();
        ends.sort_unstable();
        ends.dedup();
        ends
    };
    let own = (ops.hops.len() - shared.len().min(ops.hops.len())) as f64;
    let batch = if sample_every > 1 { ops.batch_sizes.mean_over_all(sample_every) } else { ops.batches.mean() };
    Some(match batch.filter(|m| *m > 0.0) {
        Some(batch) => own + shared.len() as f64 / batch + 1.0,
        None => own,
    })
}

/// The figures of the capture `header` starts, from the program lane's
/// median latency (µs) and the marks one operation makes; `None` for any
/// other run.
pub fn figures(
    header: &TraceHeader,
    median_latency_us: Option<f64>,
    marks_per_op: Option<f64>,
) -> Option<CaptureFigures> {
    let facts = CaptureFacts::of_header(header)?;
    let n = f64::from(facts.sample_every.max(1));
    let written = facts.operations.filter(|&ops| ops > 0);
    let ops_per_s = match (written, facts.seconds) {
        (Some(ops), Some(s)) if s > 0.0 => Some(ops as f64 * n / s),
        _ => None,
    };
    let mark_ns = header.mark_ns.filter(|ns| ns.is_finite() && *ns >= 0.0);
    let left_out_mark_ns = header
        .run
        .fact(&RunFact::Live(LiveFact::LeftOutMarkNs))
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ns| ns.is_finite() && *ns >= 0.0);
    let per_mark_ns = match (mark_ns, left_out_mark_ns) {
        (Some(kept), _) if facts.keeps_all() => Some(kept),
        (Some(kept), Some(left)) => Some(kept / n + left * (1.0 - 1.0 / n)),
        _ => None,
    };
    let marks_us_per_op = marks_per_op.zip(per_mark_ns).map(|(m, ns)| m * ns / 1_000.0);
    let marks_share_of_latency =
        marks_us_per_op.zip(median_latency_us.filter(|l| *l > 0.0)).map(|(cost, latency)| cost / latency);
    Some(CaptureFigures {
        facts,
        ops_per_s,
        marks_per_op,
        mark_ns,
        left_out_mark_ns,
        marks_us_per_op,
        marks_share_of_latency,
        windows: Vec::new(),
    })
}
