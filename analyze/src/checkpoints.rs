//! WAL checkpoints by block: which blocks held one, what they cost, and
//! each lane's figures with and without them.
//!
//! A file database in WAL mode copies its log back now and then, inside
//! one commit of a few thousand: a block that holds that commit runs at
//! another pace. The harness records the process's checkpoints around
//! every block (`sqlite.checkpoints`, `sqlite.checkpoint_ns`); here each
//! such block is named, the checkpoints' time is set against its lane's
//! operations, and the lane's figure is given over every block and over
//! the blocks that held none. A run that recorded none has no readings,
//! and no figures here: none seen is not zero.

use serde::{Deserialize, Serialize};

use crate::lanes::LaneBlocks;
use crate::stats::median_of_unsorted;

/// Most held blocks named per lane (a hostile trace cannot grow the
/// result past it; the counts stay whole).
pub const MAX_NAMED: usize = 1_000;

/// Every lane's checkpoints, in the order the trace declares the lanes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoints {
    /// Lanes with recorded blocks.
    pub lanes: Vec<LaneCheckpoints>,
}

/// One lane's checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneCheckpoints {
    /// The lane.
    pub lane: String,
    /// Its blocks with a recording.
    pub blocks: usize,
    /// Checkpoints finished during them.
    pub checkpoints: u64,
    /// The blocks that held one or more, in run order (at most
    /// [`MAX_NAMED`]).
    pub held: Vec<HeldBlock>,
    /// One checkpoint's mean length, µs (absent without any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    /// The checkpoints' time over every operation of the lane, µs per
    /// operation: what they add to its mean.
    pub cost_us_per_op: f64,
    /// Wall time per operation over every block.
    pub all: BlockFigures,
    /// And over the blocks that held none (absent when every block did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without: Option<BlockFigures>,
    /// Of what the held blocks ran over the others' median, the share
    /// their checkpoints' own time accounts for (absent without held
    /// blocks, or when they ran no slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained: Option<f64>,
}

/// A block that held a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeldBlock {
    /// Its pass.
    pub pass: u32,
    /// Its sample (round) within the pass.
    pub sample: u32,
    /// Checkpoints during it.
    pub checkpoints: u64,
    /// Their summed length, µs.
    pub checkpoint_us: f64,
    /// The block's wall time per operation, µs.
    pub us_per_op: f64,
}

/// A lane's wall time per operation over a set of its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlockFigures {
    /// Blocks.
    pub blocks: usize,
    /// Median over them, µs.
    pub median_us: f64,
    /// Mean over them, µs: a held block counts as it ran.
    pub mean_us: f64,
}

impl BlockFigures {
    fn of(values: &[f64]) -> Option<BlockFigures> {
        if values.is_empty() {
            return None;
        }
        let mean_us = values.iter().sum::<f64>() / values.len() as f64;
        let median_us = median_of_unsorted(&mut values.to_vec());
        Some(BlockFigures { blocks: values.len(), median_us, mean_us })
    }
}

/// The checkpoints of `lanes`, when the run recorded them.
pub fn of(lanes: &[LaneBlocks]) -> Option<Checkpoints> {
    let lanes: Vec<LaneCheckpoints> = lanes.iter().filter_map(lane).collect();
    (!lanes.is_empty()).then_some(Checkpoints { lanes })
}

/// A recorded block: its round, its checkpoints (how many, ns) and its
/// wall time per operation, µs.
type Recorded = ((u32, u32), (u64, f64), f64);

/// One lane's checkpoints, when its blocks were recorded.
fn lane(blocks: &LaneBlocks) -> Option<LaneCheckpoints> {
    let recorded: Vec<Recorded> = blocks
        .checkpoints
        .iter()
        .filter_map(|(round, reading)| Some((*round, *reading, *blocks.us_per_op.get(round)?)))
        .collect();
    if recorded.is_empty() {
        return None;
    }
    let all: Vec<f64> = recorded.iter().map(|(_, _, us)| *us).collect();
    let quiet: Vec<f64> = recorded.iter().filter(|(_, (n, _), _)| *n == 0).map(|(_, _, us)| *us).collect();
    let held: Vec<HeldBlock> = recorded
        .iter()
        .filter(|(_, (n, _), _)| *n > 0)
        .map(|&((pass, sample), (checkpoints, ns), us_per_op)| HeldBlock {
            pass,
            sample,
            checkpoints,
            checkpoint_us: ns / 1_000.0,
            us_per_op,
        })
        .collect();
    let checkpoints: u64 = held.iter().map(|h| h.checkpoints).fold(0, u64::saturating_add);
    let total_us: f64 = held.iter().map(|h| h.checkpoint_us).sum();
    let without = BlockFigures::of(&quiet);
    let explained = explained(&held, without.as_ref(), blocks);
    Some(LaneCheckpoints {
        lane: blocks.name.clone(),
        blocks: recorded.len(),
        checkpoints,
        mean_us: (checkpoints > 0).then(|| total_us / checkpoints as f64),
        cost_us_per_op: if blocks.ops > 0 { (total_us / blocks.ops as f64).max(0.0) } else { 0.0 },
        all: BlockFigures::of(&all)?,
        without,
        explained,
        held: held.into_iter().take(MAX_NAMED).collect(),
    })
}

/// The share of the held blocks' excess over the quiet blocks' median
/// that their checkpoints' own time accounts for.
fn explained(held: &[HeldBlock], quiet: Option<&BlockFigures>, blocks: &LaneBlocks) -> Option<f64> {
    let quiet = quiet?;
    let ops_per_block = blocks.ops as f64 / blocks.us_per_op.len().max(1) as f64;
    let excess_us: f64 = held.iter().map(|h| (h.us_per_op - quiet.median_us) * ops_per_block).sum();
    let own_us: f64 = held.iter().map(|h| h.checkpoint_us).sum();
    (excess_us > 0.0).then(|| own_us / excess_us)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A lane of 20 blocks of 100 operations at 10 µs each, the ones in
    /// `held` carrying a 300 µs checkpoint (3 µs more per operation).
    fn lane_with(held: &[u32]) -> LaneBlocks {
        let mut lane = LaneBlocks { name: "writer".into(), ops: 2_000, ..LaneBlocks::default() };
        for sample in 0..20 {
            let checkpoint = held.contains(&sample);
            lane.us_per_op.insert((0, sample), if checkpoint { 13.0 } else { 10.0 + 0.01 * f64::from(sample % 3) });
            lane.checkpoints.insert((0, sample), if checkpoint { (1, 300_000.0) } else { (0, 0.0) });
        }
        lane
    }

    #[test]
    fn each_held_block_is_named_and_the_figures_are_given_with_and_without() {
        let found = of(&[lane_with(&[4, 14])]).expect("recorded");
        let lane = &found.lanes[0];
        assert_eq!((lane.blocks, lane.checkpoints), (20, 2));
        let named: Vec<(u32, u32)> = lane.held.iter().map(|h| (h.pass, h.sample)).collect();
        assert_eq!(named, [(0, 4), (0, 14)]);
        assert_eq!(lane.mean_us, Some(300.0));
        assert!((lane.cost_us_per_op - 0.3).abs() < 1e-9, "600 µs over 2,000 operations");
        let without = lane.without.expect("quiet blocks");
        assert_eq!(without.blocks, 18);
        assert!(lane.all.mean_us > without.mean_us + 0.25, "{lane:?}");
        let explained = lane.explained.expect("explained");
        assert!((explained - 1.0).abs() < 0.01, "the checkpoints are the held blocks' whole excess: {explained}");
    }

    #[test]
    fn a_run_that_recorded_none_has_no_figures_and_one_that_saw_none_says_zero() {
        let unrecorded =
            LaneBlocks { name: "w".into(), us_per_op: BTreeMap::from([((0, 0), 1.0)]), ..Default::default() };
        assert_eq!(of(&[unrecorded]), None);
        let quiet = of(&[lane_with(&[])]).expect("recorded");
        assert_eq!((quiet.lanes[0].checkpoints, quiet.lanes[0].mean_us), (0, None));
        assert!(quiet.lanes[0].held.is_empty() && quiet.lanes[0].explained.is_none());
    }
}
