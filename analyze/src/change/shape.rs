//! How two runs' shapes differ beyond their figures: batch sizes that
//! moved (a batching writer's change is first a change of its batches),
//! and slices that cannot be set side by side (hops marked another way).

use super::outcome::ChangeFinding;
use super::samples::RunSamples;
use crate::join::Sharing;

/// A batch mean that moved by this factor or more either way is said: the
/// bar placement's twins use for the same question.
const BATCHES_MOVED: f64 = 1.25;

/// One finding per lane whose mean batch moved by [`BATCHES_MOVED`] or
/// more between the runs.
pub(super) fn batches_moved(a: &RunSamples, b: &RunSamples) -> Vec<ChangeFinding> {
    a.batch_means
        .iter()
        .filter_map(|(lane, &x)| {
            let y = *b.batch_means.get(lane)?;
            let ratio = if x > 0.0 && y > 0.0 { (y / x).max(x / y) } else { return None };
            (ratio >= BATCHES_MOVED).then(|| ChangeFinding::BatchesMoved { lane: lane.clone(), a: x, b: y })
        })
        .collect()
}

/// A finding when both runs have slices and none of one run's is the
/// other's (spans in one, direct marks in the other): nothing of them was
/// compared, and the table would otherwise just lack them.
pub(super) fn slices_apart(a: &RunSamples, b: &RunSamples) -> Option<ChangeFinding> {
    let common = a.slices.iter().filter(|(name, _)| b.slices.iter().any(|(n, _)| n == name)).count();
    (common == 0 && !a.slices.is_empty() && !b.slices.is_empty())
        .then_some(ChangeFinding::SlicesApart { a: a.slices.len(), b: b.slices.len() })
}

/// Blocks a capture's window needs for its median to count in
/// [`unsteady`]: a window the capture's last moments opened has a few.
const WINDOW_BLOCKS: usize = 5;

/// A finding when `run`, a capture, changed inside itself: its windows'
/// median latencies (each the median of the window's block medians) lie
/// further apart than `rule` lets two runs' drift be. Two captures are
/// compared on the median over their blocks, which for a capture that
/// ran two ways is neither: a program that went from 80 to 158 µs halfway
/// had a median of 141, and a later one at 89 read as no change.
pub(super) fn unsteady(run: &RunSamples, label: &str, rule: &super::Rule) -> Option<ChangeFinding> {
    if run.figure != crate::ab::FigureKind::LatencyMedian {
        return None;
    }
    let blocks = run.lanes.values().next()?;
    let mut by_window: std::collections::BTreeMap<u32, Vec<f64>> = std::collections::BTreeMap::new();
    for (&(pass, _), &value) in blocks {
        by_window.entry(pass).or_default().push(value);
    }
    let medians: Vec<f64> = by_window
        .into_values()
        .filter(|v| v.len() >= WINDOW_BLOCKS)
        .map(|mut v| crate::stats::median_of_unsorted(&mut v))
        .filter(|m| m.is_finite() && *m > 0.0)
        .collect();
    let low = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let high = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (medians.len() >= 2 && rule.refuses(high / low - 1.0)).then(|| ChangeFinding::Unsteady {
        run: label.to_owned(),
        low_us: low,
        high_us: high,
        windows: medians.len(),
        max_drift: rule.max_drift,
    })
}

/// Which slice decides a verdict before which, of slices that moved the
/// verdict's way: an operation's own step (where a change sits), then a
/// shared interval, then a wait on the batch's others (it moves with the
/// others' steps: a user's 240 ns in the statement read +340 ns in the
/// wait after it, and the headline named the wait).
pub(super) fn slice_rank(run: &RunSamples, slice: &str) -> u8 {
    match run.slice_sharing.get(slice).copied().unwrap_or_default() {
        Sharing::Own => 0,
        Sharing::Shared => 1,
        Sharing::Siblings => 2,
    }
}
