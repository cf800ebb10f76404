//! Where a lane's waits for a CPU showed among its slices.
//!
//! The kernel says how long each thread waited runnable per block, not
//! per operation, so a wait cannot be placed in a slice directly. Across
//! blocks it can: where another process held the CPU unevenly, a block
//! whose threads waited more per write is slower in the slices the waits
//! fell in (a writer woken while the CPU was taken waits in its wake
//! slice; one preempted mid-statement, in the database's). The slope of a
//! slice's time over its lane's waits, block by block (least squares), is
//! how much of each µs waited showed in that slice: about 1 for the one
//! slice all waits fell in. It is an association, so it is drawn only for
//! a lane another process held in [`MIN_BLOCKS`] blocks or more, and
//! where the blocks' waits spread enough to tell ([`MIN_SPREAD_US`]): in
//! a quiet run a lane's own threads wait for each other in proportion to
//! the work they do, and a slow block (a WAL checkpoint) has longer
//! slices and longer waits together (a quiet careful run put 10 µs of the
//! statement's slice on each µs waited).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::join::LaneOps;
use crate::lanes::LaneBlocks;
use crate::stats::{Confidence, quantile_sorted};

/// A lane's blocks must spread in their waits by at least this many µs
/// per operation (10th to 90th percentile) for slopes to be drawn.
pub const MIN_SPREAD_US: f64 = 1.0;

/// Blocks needed for a slope (and its CI).
pub const MIN_BLOCKS: usize = 8;

/// A slope is named when its CI excludes zero and it reaches this much of
/// a µs per µs waited.
pub const MIN_SLOPE: f64 = 0.05;

/// How much of each µs a lane's threads waited showed in one slice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceWaits {
    /// The slice, as the join names it.
    pub slice: String,
    /// µs of the slice per µs waited, per operation (the slope over
    /// blocks).
    pub per_us_waited: f64,
    /// Its 95% CI.
    pub ci95: [f64; 2],
    /// Blocks it was drawn from.
    pub blocks: usize,
}

/// Every probed lane's slices that its waits showed in, largest share
/// first, by lane name, for the lanes `waits` says another process held
/// in [`MIN_BLOCKS`] blocks or more. `lanes` hold every block's waits
/// (before any round is left out); `joined` the blocks the figures use.
pub fn of(
    lanes: &[LaneBlocks],
    joined: &[LaneOps],
    waits: &BTreeMap<String, super::waits::LaneWaits>,
) -> BTreeMap<String, Vec<SliceWaits>> {
    let mut out = BTreeMap::new();
    for ops in joined.iter().filter(|o| o.complete > 0) {
        let Some(lane) = lanes.get(usize::from(ops.lane)) else { continue };
        if waits.get(&lane.name).is_none_or(|w| w.contended_blocks < MIN_BLOCKS) {
            continue;
        }
        let Some(waits) = super::waits::lane_run_queue(lane) else { continue };
        // A lane's blocks are in trace order, which is (pass, sample) order.
        if waits.len() != lane.us_per_op.len() {
            continue;
        }
        let by_round: BTreeMap<(u32, u32), f64> =
            lane.us_per_op.keys().copied().zip(waits.iter().map(|ns| ns / 1_000.0)).collect();
        let found = in_slices(ops, &by_round);
        if !found.is_empty() {
            out.insert(lane.name.clone(), found);
        }
    }
    out
}

/// The slices of `ops` whose per-block means follow `waits_us` (µs per
/// operation, by round).
fn in_slices(ops: &LaneOps, waits_us: &BTreeMap<(u32, u32), f64>) -> Vec<SliceWaits> {
    let mut found: Vec<SliceWaits> = ops
        .slices
        .iter()
        .enumerate()
        .filter_map(|(j, slice)| {
            let (xs, ys): (Vec<f64>, Vec<f64>) = ops
                .blocks
                .iter()
                .filter_map(|b| {
                    Some((*waits_us.get(&(b.pass, b.sample))?, b.slice_mean_ns.get(j).copied()?? / 1_000.0))
                })
                .unzip();
            let (per_us_waited, ci95) = slope(&xs, &ys)?;
            (ci95[0] > 0.0 && per_us_waited >= MIN_SLOPE).then(|| SliceWaits {
                slice: slice.name.clone(),
                per_us_waited,
                ci95,
                blocks: xs.len(),
            })
        })
        .collect();
    found.sort_by(|a, b| b.per_us_waited.total_cmp(&a.per_us_waited));
    found
}

/// The least-squares slope of `ys` over `xs` and its 95% CI, when there are
/// [`MIN_BLOCKS`] points and the `xs` spread by [`MIN_SPREAD_US`].
pub fn slope(xs: &[f64], ys: &[f64]) -> Option<(f64, [f64; 2])> {
    let n = xs.len();
    if n < MIN_BLOCKS || ys.len() != n || xs.iter().chain(ys).any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    if quantile_sorted(&sorted, 0.9) - quantile_sorted(&sorted, 0.1) < MIN_SPREAD_US {
        return None;
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n as f64, ys.iter().sum::<f64>() / n as f64);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let a = my - b * mx;
    let residual: f64 = xs.iter().zip(ys).map(|(x, y)| (y - a - b * x).powi(2)).sum();
    let se = (residual / (n - 2) as f64 / sxx).sqrt();
    let half = Confidence::P95.t(n - 2) * se;
    Some((b, [b - half, b + half]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_that_took_every_wait_has_a_slope_of_one_and_one_that_took_none_has_none() {
        // Blocks whose waits run 0…38 µs per write; the wake slice holds
        // them all (with a little noise), the statement none of them.
        let xs: Vec<f64> = (0..20).map(|i| f64::from(i) * 2.0).collect();
        let wake: Vec<f64> = xs.iter().enumerate().map(|(i, x)| 2.0 + x + 0.1 * (i % 3) as f64).collect();
        let (b, ci) = slope(&xs, &wake).expect("a slope");
        assert!((b - 1.0).abs() < 0.01 && ci[0] > 0.98 && ci[1] < 1.02, "{b} {ci:?}");
        let statement: Vec<f64> = (0..20).map(|i| 8.0 + 0.1 * f64::from(i % 4)).collect();
        let (b, ci) = slope(&xs, &statement).expect("a slope");
        assert!(b.abs() < 0.01 && ci[0] < 0.0 && ci[1] > 0.0, "{b} {ci:?}");
    }

    #[test]
    fn waits_too_even_or_too_few_blocks_place_nothing() {
        let even: Vec<f64> = (0..20).map(|i| 4.0 + 0.02 * f64::from(i)).collect();
        let ys: Vec<f64> = even.iter().map(|x| 2.0 * x).collect();
        assert_eq!(slope(&even, &ys), None, "a quiet run's waits spread by 0.4 µs");
        let few: Vec<f64> = (0..5).map(|i| f64::from(i) * 10.0).collect();
        assert_eq!(slope(&few, &few), None);
        assert_eq!(slope(&[f64::NAN; 10], &[1.0; 10]), None);
    }
}
