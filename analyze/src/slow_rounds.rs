//! Rounds in which every lane ran slow at once.
//!
//! A round runs each lane once, back to back, so a cost that lands on all
//! lanes in the same rounds is not any lane's own: it is shared (the
//! machine, or work every lane does on the same schedule). hopscope's
//! lanes each write their own SQLite file at the same rate, so SQLite's
//! WAL checkpoint — run every ~1,000 pages written — falls in the same
//! rounds of every lane and fits that pattern. A run that records
//! checkpoints ([`crate::checkpoints`]) says how many of the slow rounds
//! held one; one that does not names the pattern and says it cannot tell
//! the cause.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decomposition::LaneResult;
use crate::stats::median_of_unsorted;

/// A lane's block figures by round (pass, sample).
type Blocks = BTreeMap<(u32, u32), f64>;

/// A block is slow when its figure is past this multiple of its lane's
/// median block figure.
pub const SLOW_FACTOR: f64 = 2.0;

/// The rounds in which every lane was slow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowRounds {
    /// The rounds, as (pass, sample), in run order.
    pub rounds: Vec<[u32; 2]>,
    /// Rounds between consecutive slow rounds in run order, when at least
    /// three slow rounds are evenly spaced (±1 round); `None` otherwise.
    pub every: Option<u32>,
    /// The lanes compared (every lane with at least two blocks).
    pub lanes: usize,
    /// Rounds in which every one of those lanes ran.
    pub rounds_compared: usize,
    /// Of the slow rounds, those in which a lane's block held a WAL
    /// checkpoint, when the run recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_checkpoint: Option<usize>,
}

impl SlowRounds {
    /// The warning a decomposition carries: what was seen (the reports say
    /// that the run cannot tell why).
    pub fn warning(&self) -> crate::warning::Warning {
        crate::warning::Warning::SlowRounds {
            lanes: self.lanes,
            rounds: self.rounds.len(),
            of: self.rounds_compared,
            every: self.every,
            factor: SLOW_FACTOR,
            with_checkpoint: self.with_checkpoint,
        }
    }
}

/// The rounds in which every lane with two or more blocks ran over
/// [`SLOW_FACTOR`] × its median; `None` when there is none, or fewer than
/// two such lanes.
pub fn slow_rounds(
    lanes: &BTreeMap<String, LaneResult>,
    checkpoints: Option<&crate::checkpoints::Checkpoints>,
) -> Option<SlowRounds> {
    let usable: Vec<(Blocks, f64)> = lanes
        .values()
        .filter(|l| l.blocks_us.len() >= 2)
        .map(|l| {
            let blocks: BTreeMap<(u32, u32), f64> =
                l.blocks_us.iter().map(|b| ((b.pass, b.sample), b.us_per_op)).collect();
            let mut values: Vec<f64> = blocks.values().copied().collect();
            (blocks, median_of_unsorted(&mut values))
        })
        .collect();
    if usable.len() < 2 {
        return None;
    }
    let shared: Vec<(u32, u32)> = usable[0]
        .0
        .keys()
        .copied()
        .filter(|round| usable.iter().all(|(blocks, _)| blocks.contains_key(round)))
        .collect();
    let slow: Vec<usize> = shared
        .iter()
        .enumerate()
        .filter(|(_, round)| {
            usable.iter().all(|(blocks, median)| blocks.get(round).is_some_and(|us| *us > SLOW_FACTOR * median))
        })
        .map(|(index, _)| index)
        .collect();
    if slow.is_empty() {
        return None;
    }
    let rounds: Vec<[u32; 2]> = slow.iter().map(|&i| [shared[i].0, shared[i].1]).collect();
    let with_checkpoint = checkpoints.map(|c| {
        let held = |round: &[u32; 2]| c.lanes.iter().any(|l| l.held.iter().any(|h| [h.pass, h.sample] == *round));
        rounds.iter().filter(|r| held(r)).count()
    });
    Some(SlowRounds {
        rounds,
        every: period(&slow),
        lanes: usable.len(),
        rounds_compared: shared.len(),
        with_checkpoint,
    })
}

/// The spacing of `indices` (sorted) when there are at least three and every
/// gap is within one of their median gap.
fn period(indices: &[usize]) -> Option<u32> {
    if indices.len() < 3 {
        return None;
    }
    let gaps: Vec<usize> = indices.windows(2).map(|w| w[1] - w[0]).collect();
    let mut sorted = gaps.clone();
    sorted.sort_unstable();
    let typical = sorted[sorted.len() / 2];
    let even = typical > 1 && gaps.iter().all(|g| g.abs_diff(typical) <= 1);
    even.then(|| u32::try_from(typical).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decomposition::BlockFigure;

    fn lane(figures: &[f64]) -> LaneResult {
        let blocks_us: Vec<BlockFigure> = figures
            .iter()
            .enumerate()
            .map(|(i, us)| BlockFigure {
                pass: (i / 20) as u32,
                sample: (i % 20) as u32,
                us_per_op: *us,
                latency_median_us: None,
            })
            .collect();
        LaneResult {
            ops: 0,
            blocks: blocks_us.len(),
            probed: false,
            us_per_op: None,
            cv_by_pass: Vec::new(),
            blocks_us,
            counters: BTreeMap::new(),
            cross_core_hops_per_op: None,
            ops_crossing_cores: None,
            op_latency_quantiles_us: Vec::new(),
            op_latency_p999_us: None,
            batches: None,
        }
    }

    /// 40 rounds at `base` µs, `spike`× slower in the rounds listed.
    fn figures(base: f64, spike: f64, at: &[usize]) -> Vec<f64> {
        (0..40).map(|i| if at.contains(&i) { base * spike } else { base + (i % 3) as f64 * 0.1 }).collect()
    }

    #[test]
    fn a_slowdown_every_lane_shares_is_found_with_its_period() {
        let at = [7, 17, 27, 37];
        let lanes = BTreeMap::from([
            ("inline".to_owned(), lane(&figures(16.0, 9.0, &at))),
            ("floor".to_owned(), lane(&figures(24.0, 7.0, &at))),
            ("writer".to_owned(), lane(&figures(26.0, 6.0, &at))),
        ]);
        let found = slow_rounds(&lanes, None).expect("found");
        assert_eq!(found.rounds, [[0, 7], [0, 17], [1, 7], [1, 17]]);
        assert_eq!((found.every, found.lanes, found.rounds_compared), (Some(10), 3, 40));
        assert!(matches!(found.warning(), crate::warning::Warning::SlowRounds { every: Some(10), .. }), "{found:?}");
    }

    #[test]
    fn one_lanes_own_spikes_are_not_shared() {
        let lanes = BTreeMap::from([
            ("inline".to_owned(), lane(&figures(16.0, 9.0, &[7, 17, 27]))),
            ("writer".to_owned(), lane(&figures(26.0, 6.0, &[8, 18, 28]))),
        ]);
        assert_eq!(slow_rounds(&lanes, None), None);
        // Uneven spikes in every lane: found, no period.
        let at = [3, 4, 30];
        let lanes = BTreeMap::from([
            ("inline".to_owned(), lane(&figures(16.0, 9.0, &at))),
            ("writer".to_owned(), lane(&figures(26.0, 6.0, &at))),
        ]);
        assert_eq!(slow_rounds(&lanes, None).expect("found").every, None);
        // A single lane cannot share anything.
        let one = BTreeMap::from([("writer".to_owned(), lane(&figures(26.0, 6.0, &at)))]);
        assert_eq!(slow_rounds(&one, None), None);
    }
}
