//! Coverage: how much of a sliced lane's operation its path slices hold.
//!
//! A lane's figure is its blocks' wall time per operation; its slices are
//! the intervals between the marks one operation passes. Where each
//! thread's cycle is closed (hopscope's `idle` and `returned`), the path
//! slices hold all of it but the harness's loop. Where the marks are a
//! program's own spans, much can lie outside them: a span's creation and
//! close, the code before the first span and after the last, a writer's
//! work after its last span while the caller waits. That remainder is
//! stated as *between marks*, a figure with its CI, and every slice's share
//! is a share of the whole operation, not of what the marks happen to
//! cover.
//!
//! Per block, `wall / ops − mean path time`: means add up (a block's path
//! slice means sum to its mean path time, as its wall time per operation is
//! a mean), so the remainder is exact per block; medians over blocks with a
//! bootstrap CI follow. Shares are of means for the same reason: a slice's
//! mean over the operation's mean time, so the path slices' shares and the
//! time between marks add up to the whole (medians do not add up: a block's
//! first operation, run cold, lifts every mean and no median).

use serde::{Deserialize, Serialize};

use crate::accounting::Figure;
use crate::join::LaneOps;
use crate::lanes::LaneBlocks;
use crate::stats::Samples;

/// How much of the sliced lane's operation its path slices cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The lane sliced.
    pub lane: String,
    /// Its wall time per operation, µs (median over blocks).
    pub op_us: f64,
    /// Its mean path time per operation, µs (median over blocks): what the
    /// path slices add up to.
    pub covered_us: f64,
    /// Wall time per operation minus mean path time, per block: the time
    /// no pair of marks covers.
    pub between: Figure,
    /// The lane's mean wall time per operation, µs (mean over blocks): the
    /// whole that shares are of.
    pub op_mean_us: f64,
    /// The time between marks, mean over blocks, µs (`op_mean − mean path`).
    pub between_mean_us: f64,
    /// `between_mean / op_mean`.
    pub between_share: f64,
    /// Whether the marks close every thread's cycle (the lane marks both
    /// `idle` and `returned`), so its slices are meant to hold all of each
    /// operation's time.
    pub closed: bool,
    /// Blocks paired (wall time and path time of the same block).
    pub blocks: usize,
}

/// The coverage of `ops` (a probed lane's join) against its own blocks'
/// wall times, `None` without a block that has both.
pub fn coverage(blocks: &LaneBlocks, ops: &LaneOps, seed: u64) -> Option<Coverage> {
    let mut walls = Vec::new();
    let mut paths = Vec::new();
    let mut between = Vec::new();
    for block in &ops.blocks {
        let (Some(wall), Some(path_ns)) = (blocks.us_per_op.get(&(block.pass, block.sample)), block.total_mean_ns)
        else {
            continue;
        };
        let path = path_ns / 1_000.0;
        walls.push(*wall);
        paths.push(path);
        between.push(wall - path);
    }
    let blocks_paired = between.len();
    let (walls, paths, between) = (Samples::new(walls).ok()?, Samples::new(paths).ok()?, Samples::new(between).ok()?);
    let summary = between.summary(seed);
    let op_mean_us = walls.mean();
    let between_mean_us = between.mean();
    Some(Coverage {
        lane: blocks.name.clone(),
        op_us: walls.median(),
        covered_us: paths.median(),
        between: Figure { median_us: summary.median, ci95: summary.ci95 },
        op_mean_us,
        between_mean_us,
        between_share: if op_mean_us > 0.0 { between_mean_us / op_mean_us } else { 0.0 },
        closed: ops.closes_cycles(),
        blocks: blocks_paired,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use hopscope_probe::{Block, Hop, Mark, OpId, Stream, Ticks, TraceHeader};

    use super::*;
    use crate::join::{HopScan, Join};

    /// One block of `ops` operations, each marking `enter` at 0 and `done`
    /// at `path` ticks after it, every `every` ticks; the block spans
    /// `ops × every` ticks.
    fn block(ops: u64, path: u64, every: u64, sample: u32) -> Block {
        let marks = (0..ops)
            .flat_map(|i| {
                let t = i * every;
                [Mark::new(OpId(i + 1), Hop::ENTER, Ticks(t)), Mark::new(OpId(i + 1), Hop::DONE, Ticks(t + path))]
            })
            .collect();
        Block {
            lane: 0,
            pass: 0,
            sample,
            op_count: ops,
            start: Ticks(0),
            end: Ticks(ops * every),
            streams: vec![Stream { thread: 0, dropped: 0, marks }],
            readings: Vec::new(),
        }
    }

    #[test]
    fn what_the_marks_do_not_cover_is_stated_and_the_cycles_are_read_from_the_hops() {
        let mut header = TraceHeader::for_this_host(&["subject-probed"], &["caller"]);
        header.clock.ns_per_tick = 1.0;
        let blocks: Vec<Block> = (0..9).map(|s| block(10, 700, 1_000, s)).collect();
        let mut lanes = crate::lanes::empty_lanes(&header);
        let mut scan = HopScan::new(&header);
        for b in &blocks {
            crate::lanes::add_block(&mut lanes, &header, b);
            scan.add(b);
        }
        let mut join = Join::new(&header, &scan);
        for (i, b) in blocks.iter().enumerate() {
            join.add(i, b);
        }
        let ops = join.finish();
        let c = coverage(&lanes[0], &ops[0], 7).expect("coverage");
        // 1 µs per operation, 0.7 µs of it between enter and done.
        assert!((c.op_us - 1.0).abs() < 1e-9 && (c.covered_us - 0.7).abs() < 1e-9, "{c:?}");
        assert!((c.between.median_us - 0.3).abs() < 1e-9 && (c.between_share - 0.3).abs() < 1e-9, "{c:?}");
        assert!((c.op_mean_us - 1.0).abs() < 1e-9 && (c.between_mean_us - 0.3).abs() < 1e-9, "{c:?}");
        assert_eq!((c.closed, c.blocks), (false, 9));
        // No wall time for the blocks: nothing to say.
        let empty = LaneBlocks { us_per_op: BTreeMap::new(), ..lanes[0].clone() };
        assert_eq!(coverage(&empty, &ops[0], 7), None);
    }
}
