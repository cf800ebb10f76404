//! Cold start: how much more a block's first operation costs than the
//! block's median operation, per probed lane, and how much of the library's
//! per-operation figure that is.
//!
//! A run rotates its lanes block by block, so a block's first operation
//! runs after the other lanes have filled the caches with their own code
//! and data: the lane's instructions, its SQLite pages and its threads'
//! stacks come back from the outer caches or from memory. A lane that
//! touches more lines per operation pays more for that. A block's figure
//! (and so every lane difference) carries the first operation's excess
//! divided by the block's operations; this module states it apart, so the
//! library figure reads as a steady cost plus a cold start, and a change
//! can say which of the two it moved.
//!
//! The excess is a difference inside one lane (first operation against the
//! block's median, both probed, so the marks' own cost cancels); lanes are
//! compared by pairing their excesses round by round, as every lane
//! difference is.

use std::collections::BTreeMap;

use hopscope_probe::{Role, TraceHeader, Variant};
use serde::{Deserialize, Serialize};

use crate::join::LaneOps;
use crate::lanes::{Difference, LaneBlocks, per_round};
use crate::roles::Roles;
use crate::stats::median_of_unsorted;

/// A round of the run: (pass, sample).
type Round = (u32, u32);

/// One probed lane's cold start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneColdStart {
    /// The lane.
    pub lane: String,
    /// Median over blocks of the first operation's path time, µs.
    pub first_us: f64,
    /// Median over blocks of the block's median path time, µs.
    pub median_us: f64,
    /// Per block, first operation − block median: the median over blocks
    /// and its 95% CI, µs (`rounds` counts blocks).
    pub excess_us: Difference,
}

/// Every probed lane's cold start, and the library's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdStart {
    /// Every probed lane with two or more complete operations per block.
    pub lanes: Vec<LaneColdStart>,
    /// The probed subject and floor lanes the library's figures compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared: Option<[String; 2]>,
    /// The probed subject's excess − the probed floor's, paired by round:
    /// what the library adds to the first operation of a block, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_first_op_us: Option<Difference>,
    /// Mean operations per block of the clean subject lane: the count the
    /// first operation's excess is spread over in the lane arithmetic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_block: Option<f64>,
    /// Per round, the library (clean subject − clean floor) less the
    /// library's first-operation excess spread over the block: its cost
    /// per operation once warm, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_steady_us: Option<Difference>,
}

/// The cold start of every probed lane of a run, and the library's when
/// the run has a probed subject and a probed floor; `None` when no lane
/// has blocks of two or more complete operations.
///
/// `floor_stands` is false when the floor cannot stand for the boundary
/// ([`crate::floor::refusal`]): the library's figures are then left out.
pub fn cold_start(
    header: &TraceHeader,
    blocks: &[LaneBlocks],
    joined: &[LaneOps],
    roles: &Roles,
    floor_stands: bool,
) -> Option<ColdStart> {
    let excess: Vec<BTreeMap<Round, f64>> = joined.iter().map(excess_by_round).collect();
    let lanes: Vec<LaneColdStart> =
        joined.iter().zip(&excess).filter_map(|(ops, by_round)| lane_cold_start(header, ops, by_round)).collect();
    if lanes.is_empty() {
        return None;
    }
    let of = |role: Role, variant: Variant| roles.find(role, variant).and_then(|i| excess.get(i));
    let name = |role: Role| roles.find(role, Variant::Probed).and_then(|i| header.lanes.get(i)).cloned();
    let of = |role: Role, variant: Variant| of(role, variant).filter(|_| role != Role::Floor || floor_stands);
    let compared = name(Role::Subject).zip(name(Role::Floor)).filter(|_| floor_stands).map(|(s, f)| [s, f]);
    let library_first_op = match (of(Role::Subject, Variant::Probed), of(Role::Floor, Variant::Probed)) {
        (Some(subject), Some(floor)) => Difference::of(per_round_map(subject, floor).into_values().collect()),
        _ => None,
    };
    let clean = |role: Role| roles.find(role, Variant::Clean).and_then(|i| blocks.get(i)).filter(|l| l.ops > 0);
    let ops_per_block = clean(Role::Subject).map(|l| l.ops as f64 / l.us_per_op.len().max(1) as f64);
    let library_steady = (|| {
        let (subject, floor) = (clean(Role::Subject)?, clean(Role::Floor)?);
        let excess = per_round_map(of(Role::Subject, Variant::Probed)?, of(Role::Floor, Variant::Probed)?);
        let n = ops_per_block.filter(|n| *n >= 1.0)?;
        let spread: BTreeMap<Round, f64> = excess.into_iter().map(|(r, d)| (r, d / n)).collect();
        Difference::of(per_round(&subject.us_per_op, &[&floor.us_per_op, &spread]))
    })();
    Some(ColdStart {
        lanes,
        compared,
        library_first_op_us: library_first_op,
        ops_per_block,
        library_steady_us: library_steady,
    })
}

/// Per round, a lane's first-operation excess, µs, from its blocks of two
/// or more complete operations.
fn excess_by_round(ops: &LaneOps) -> BTreeMap<Round, f64> {
    ops.blocks
        .iter()
        .filter(|b| b.complete >= 2)
        .filter_map(|b| {
            let excess = (b.first_total_ns? - b.total_median_ns?) / 1_000.0;
            excess.is_finite().then_some(((b.pass, b.sample), excess))
        })
        .collect()
}

fn lane_cold_start(header: &TraceHeader, ops: &LaneOps, by_round: &BTreeMap<Round, f64>) -> Option<LaneColdStart> {
    if by_round.is_empty() {
        return None;
    }
    let usable = ops.blocks.iter().filter(|b| b.complete >= 2);
    let mut firsts: Vec<f64> = usable.clone().filter_map(|b| b.first_total_ns).map(|ns| ns / 1_000.0).collect();
    let mut medians: Vec<f64> = usable.filter_map(|b| b.total_median_ns).map(|ns| ns / 1_000.0).collect();
    Some(LaneColdStart {
        lane: header.lanes.get(usize::from(ops.lane))?.clone(),
        first_us: median_of_unsorted(&mut firsts),
        median_us: median_of_unsorted(&mut medians),
        excess_us: Difference::of(by_round.values().copied().collect())?,
    })
}

/// `a − b` for every round both have.
fn per_round_map(a: &BTreeMap<Round, f64>, b: &BTreeMap<Round, f64>) -> BTreeMap<Round, f64> {
    a.iter().filter_map(|(r, x)| b.get(r).map(|y| (*r, x - y))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::join;
    use hopscope_probe::{Block, Hop, Mark, OpId, Stream, Ticks, Trace};

    /// A block of `durations` (µs) in one caller stream, ops in run order,
    /// each marked `enter` and `done` one after another.
    fn block(lane: u16, round: Round, durations: &[u64]) -> Block {
        let mut marks = Vec::new();
        let mut t = 1_000_000u64;
        for (i, d) in durations.iter().enumerate() {
            let op = OpId(u64::from(lane) << 32 | u64::from(round.1) << 16 | i as u64);
            marks.push(Mark::new(op, Hop::ENTER, Ticks(t)));
            t += d * 1_000;
            marks.push(Mark::new(op, Hop::DONE, Ticks(t)));
            t += 100;
        }
        Block {
            lane,
            pass: round.0,
            sample: round.1,
            op_count: durations.len() as u64,
            start: Ticks(1_000_000),
            end: Ticks(t),
            streams: vec![Stream { thread: 0, dropped: 0, marks }],
            readings: Vec::new(),
        }
    }

    #[test]
    fn the_first_operation_of_each_block_is_told_apart_and_paired_between_lanes() {
        // Lanes: 0 floor-probed, 1 writer-probed. One ns per tick.
        let mut trace = Trace {
            header: TraceHeader::for_this_host(&["floor-probed", "writer-probed"], &["caller"]),
            blocks: Vec::new(),
        };
        trace.header.clock.ns_per_tick = 1.0;
        for sample in 0..9u32 {
            let round = (0, sample);
            // The floor's first op: 30 µs against 17; the writer's: 33 against 17.
            trace.blocks.push(block(0, round, &[30, 17, 17, 17, 17]));
            // The writer's first op is listed last in its stream, yet starts
            // first: order by start, not by position in the stream.
            let mut writer = block(1, round, &[33, 17, 17, 17, 17]);
            writer.streams[0].marks.rotate_left(2);
            trace.blocks.push(writer);
        }
        let joined = join(&trace);
        let roles = Roles::of(&trace.header, &joined);
        let cold = cold_start(&trace.header, &[], &joined, &roles, true).expect("cold start");
        let floor = cold.lanes.iter().find(|l| l.lane == "floor-probed").expect("floor");
        let writer = cold.lanes.iter().find(|l| l.lane == "writer-probed").expect("writer");
        assert_eq!((floor.first_us, floor.median_us, floor.excess_us.median), (30.0, 17.0, 13.0));
        assert_eq!((writer.first_us, writer.excess_us.median, writer.excess_us.rounds), (33.0, 16.0, 9));
        let library = cold.library_first_op_us.expect("paired");
        assert_eq!((library.median, library.rounds), (3.0, 9));
        // No clean lanes: nothing to spread the excess over.
        assert_eq!((cold.ops_per_block, cold.library_steady_us), (None, None));
    }

    #[test]
    fn blocks_of_one_operation_have_no_cold_start() {
        let mut trace =
            Trace { header: TraceHeader::for_this_host(&["writer-probed"], &["caller"]), blocks: Vec::new() };
        trace.blocks.push(block(0, (0, 0), &[20]));
        let joined = join(&trace);
        assert_eq!(cold_start(&trace.header, &[], &joined, &Roles::of(&trace.header, &joined), true), None);
    }
}
