//! Carryover: how a lane's blocks fare after each other lane.
//!
//! A block can start while the lane before it is still settling (a thread
//! finishing a backoff, pages being written back), and the lane that runs
//! next pays for it. Lane differences are only fair when every lane has
//! every other lane before it about equally often, as the harness's
//! balanced order arranges; this module reads the order back from the
//! trace, says whether it was balanced, and states each lane's figure by
//! the lane that ran before it, so a carryover is seen rather than guessed.

use std::collections::BTreeMap;

use hopscope_probe::TraceHeader;
use serde::{Deserialize, Serialize};

use crate::lanes::{Difference, LaneBlocks};

/// A lane's blocks that ran right after one other lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct After {
    /// The lane that ran before.
    pub lane: String,
    /// Blocks of the lane that followed it.
    pub blocks: usize,
    /// Their median µs per operation and its 95% CI.
    pub median_us: f64,
    /// The sign test's 95% CI of that median.
    pub ci95: [f64; 2],
}

/// One lane's figure by the lane before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneCarryover {
    /// The lane.
    pub lane: String,
    /// Its blocks grouped by the lane that ran just before, in trace lane
    /// order.
    pub after: Vec<After>,
}

/// Every lane's figure by its predecessor, and whether the order gave
/// every lane every other lane before it about equally often.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Carryover {
    /// Whether, for every lane, the other lane that ran before it least
    /// often did so at least [`BALANCED_SHARE`] as often as the one that
    /// ran before it most often.
    pub balanced: bool,
    /// Per lane with blocks after two or more different lanes.
    pub lanes: Vec<LaneCarryover>,
}

/// How even a lane's predecessors must be for the order to count as
/// balanced: the rarest at least this share of the commonest. A Williams
/// design cycled round after round gives ≥ 2/3 (the rounds' seams add a
/// few pairs), a shuffle about 0.8 over hundreds of rounds, a rotation 0.
pub const BALANCED_SHARE: f64 = 0.5;

/// Fewest blocks after one predecessor for its figure to be compared: below
/// six, the sign test's 95% interval is the whole range of the blocks.
pub const MIN_BLOCKS: usize = 6;

/// The carryover table of a run whose blocks ran in `order` (each block's
/// lane, pass and sample, in trace order); `None` with fewer than two lanes.
pub fn carryover(header: &TraceHeader, order: &[(u16, u32, u32)], lanes: &[LaneBlocks]) -> Option<Carryover> {
    // Lanes that measured any block.
    let live: Vec<u16> =
        (0..lanes.len()).filter(|&l| !lanes[l].us_per_op.is_empty()).filter_map(|l| u16::try_from(l).ok()).collect();
    if live.len() < 2 {
        return None;
    }
    // (lane, lane before) → that lane's µs per op in each such block.
    let mut figures: BTreeMap<(u16, u16), Vec<f64>> = BTreeMap::new();
    for pair in order.windows(2) {
        let ((before, ..), (lane, pass, sample)) = (pair[0], pair[1]);
        let figure = lanes.get(usize::from(lane)).and_then(|l| l.us_per_op.get(&(pass, sample)));
        if let Some(&us) = figure.filter(|us| us.is_finite()) {
            figures.entry((lane, before)).or_default().push(us);
        }
    }
    let name = |lane: u16| header.lanes.get(usize::from(lane)).cloned().unwrap_or_else(|| format!("lane {lane}"));
    // Balanced: for every lane, its least frequent predecessor ran before
    // it at least BALANCED_SHARE as often as its most frequent one.
    let balanced = live.iter().all(|&lane| {
        let counts = live.iter().filter(|&&b| b != lane).map(|b| figures.get(&(lane, *b)).map_or(0, Vec::len));
        let (least, most) = counts.fold((usize::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
        least as f64 >= BALANCED_SHARE * most as f64
    });
    let mut out: BTreeMap<u16, Vec<After>> = BTreeMap::new();
    for ((lane, before), values) in figures {
        if lane == before {
            continue;
        }
        if let Some(d) = Difference::of(values) {
            let after = After { lane: name(before), blocks: d.rounds, median_us: d.median, ci95: d.ci95 };
            out.entry(lane).or_default().push(after);
        }
    }
    let lanes = out
        .into_iter()
        .filter(|(_, after)| after.len() >= 2)
        .map(|(lane, after)| LaneCarryover { lane: name(lane), after })
        .collect();
    Some(Carryover { balanced, lanes })
}

impl LaneCarryover {
    /// The predecessors after which this lane ran fastest and slowest (of
    /// those followed in at least [`MIN_BLOCKS`] blocks), when their CIs do
    /// not overlap: `(fast, slow)`.
    pub fn apart(&self) -> Option<(&After, &After)> {
        let by_median = |a: &&After, b: &&After| a.median_us.total_cmp(&b.median_us);
        let enough = || self.after.iter().filter(|a| a.blocks >= MIN_BLOCKS);
        let fast = enough().min_by(by_median)?;
        let slow = enough().max_by(by_median)?;
        (slow.ci95[0] > fast.ci95[1]).then_some((fast, slow))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lanes::tests::lane;

    /// Three lanes; lane 2 runs 1 µs slower after lane 1 than after lane 0.
    fn run(rounds: &[[u16; 3]]) -> Option<Carryover> {
        let header = TraceHeader::for_this_host(&["a", "b", "c"], &["caller"]);
        let mut figures: Vec<Vec<((u32, u32), f64)>> = vec![Vec::new(); 3];
        let mut order = Vec::new();
        for (sample, round) in rounds.iter().enumerate() {
            let sample = sample as u32;
            for (i, &l) in round.iter().enumerate() {
                let slow = l == 2 && i > 0 && round[i - 1] == 1;
                let wobble = f64::from(sample % 5) * 0.01;
                figures[usize::from(l)].push(((0, sample), 10.0 + wobble + if slow { 1.0 } else { 0.0 }));
                order.push((l, 0, sample));
            }
        }
        let lanes: Vec<LaneBlocks> = ["a", "b", "c"].iter().zip(&figures).map(|(n, f)| lane(n, f)).collect();
        carryover(&header, &order, &lanes)
    }

    #[test]
    fn a_slower_lane_after_one_neighbour_is_seen_and_a_rotation_is_not_balanced() {
        // A Williams design for three lanes (six rows), cycled.
        let rows = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0], [0, 2, 1], [1, 0, 2]];
        let balanced: Vec<[u16; 3]> = (0..60).map(|i| rows[i % 6]).collect();
        let c = run(&balanced).expect("carryover");
        assert!(c.balanced);
        let lane_c = c.lanes.iter().find(|l| l.lane == "c").expect("c");
        let (fast, slow) = lane_c.apart().expect("apart");
        assert_eq!((fast.lane.as_str(), slow.lane.as_str()), ("a", "b"));
        assert!((slow.median_us - fast.median_us - 1.0).abs() < 0.05, "{lane_c:?}");
        assert!(c.lanes.iter().find(|l| l.lane == "a").expect("a").apart().is_none());
        // A rotation: c always follows b within a round, a only across rounds.
        let rotated: Vec<[u16; 3]> = (0..60).map(|i| [[0, 1, 2], [1, 2, 0], [2, 0, 1]][i % 3]).collect();
        assert!(!run(&rotated).expect("carryover").balanced);
    }
}
