//! Whether the machine, not the write path, set a run's figures: how long
//! each lane's threads waited runnable for a CPU that something else held
//! (run-queue delay, per block, from the kernel's scheduler statistics),
//! and a verdict under a rule fixed before any run.
//!
//! A lane's own threads wait for each other too: on one core the writer
//! is runnable while the caller finishes its turn, and back. On a quiet
//! 2-vCPU VM kv-writer's two threads on one core waited 4.2 µs of every
//! 17.5 µs write (24%); with a CPU hog on that core a write's figures grew
//! to 128–392 µs, nearly all of it waiting. So the rule
//! ([`CONTENDED_SHARE`]) sits at half a lane's wall time: above what its
//! own threads make it wait, far below what another process does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::lanes::LaneBlocks;
use crate::stats::median_of_unsorted;

/// A block is contended when its threads waited runnable, summed, for at
/// least this share of its wall time; a run is when a lane's median block
/// is.
pub const CONTENDED_SHARE: f64 = 0.5;

/// The reading that sums every thread's run-queue delay in a block.
pub const PROCESS_RUN_QUEUE: &str = "process.run_queue_ns";

/// What the scheduler did to one lane, per operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneWaits {
    /// Every thread's run-queue delay, µs per operation (median of blocks).
    pub run_queue_us_per_op: f64,
    /// Its share of the lane's wall time (median of blocks).
    pub share: f64,
    /// Per thread role (`caller`, a lane's own threads), µs per operation.
    pub by_role: BTreeMap<String, f64>,
    /// Involuntary switches per operation, per role and `process`.
    pub involuntary_per_op: BTreeMap<String, f64>,
    /// Blocks whose share reached [`CONTENDED_SHARE`].
    pub contended_blocks: usize,
    /// Blocks with a run-queue reading.
    pub blocks: usize,
}

/// The run's waits and the verdict on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contention {
    /// [`CONTENDED_SHARE`], as the run was judged.
    pub threshold_share: f64,
    /// Per lane.
    pub lanes: BTreeMap<String, LaneWaits>,
    /// Whether another process held the run's CPUs beyond the rule: some
    /// lane's median block waited at least the threshold share.
    pub contended: bool,
}

impl Contention {
    /// The lane that waited the largest share of its time, and its waits.
    pub fn worst(&self) -> Option<(&String, &LaneWaits)> {
        self.lanes.iter().max_by(|a, b| a.1.share.total_cmp(&b.1.share))
    }

    /// The headline's verdict line when the run was contended.
    pub fn line(&self) -> Option<String> {
        let (lane, w) = self.worst().filter(|_| self.contended)?;
        let wall = if w.share > 0.0 { w.run_queue_us_per_op / w.share } else { f64::NAN };
        Some(format!(
            "another process held this run's CPUs: `{lane}` waited for a CPU {:.1} µs of every {:.1} µs per write \
             ({:.0}% of its wall time; {} of {} blocks past {:.0}%); the figures below measure that, not the write \
             path. Run on a quieter machine, or give the run cores of its own (--placement).",
            w.run_queue_us_per_op,
            wall,
            w.share * 100.0,
            w.contended_blocks,
            w.blocks,
            self.threshold_share * 100.0
        ))
    }
}

/// The run's waits from its lanes' blocks; `None` when no block carries a
/// run-queue reading (a kernel without scheduler statistics, or a trace
/// written before they were read).
pub fn of(lanes: &[LaneBlocks]) -> Option<Contention> {
    let mut out = BTreeMap::new();
    for lane in lanes {
        let Some(rq) = lane.cpu_ns_per_op.get(PROCESS_RUN_QUEUE) else { continue };
        let walls = &lane.wall_ns_per_op;
        if rq.len() != walls.len() || rq.is_empty() {
            continue;
        }
        let mut shares: Vec<f64> = rq.iter().zip(walls).map(|(r, w)| if *w > 0.0 { r / w } else { 0.0 }).collect();
        let contended_blocks = shares.iter().filter(|s| **s >= CONTENDED_SHARE).count();
        let median_of = |values: &[f64]| median_of_unsorted(&mut values.to_vec());
        let per_role = |suffix: &str| -> BTreeMap<String, f64> {
            lane.cpu_ns_per_op
                .iter()
                .filter_map(|(key, v)| Some((key.strip_suffix(suffix)?.to_owned(), median_of(v))))
                .collect()
        };
        let by_role = per_role(".run_queue_ns")
            .into_iter()
            .filter(|(role, _)| role != "process")
            .map(|(role, ns)| (role, ns / 1_000.0))
            .collect();
        out.insert(
            lane.name.clone(),
            LaneWaits {
                run_queue_us_per_op: median_of(rq) / 1_000.0,
                share: median_of_unsorted(&mut shares),
                by_role,
                involuntary_per_op: per_role(".involuntary_switches"),
                contended_blocks,
                blocks: rq.len(),
            },
        );
    }
    if out.is_empty() {
        return None;
    }
    let contended = out.values().any(|w| w.share >= CONTENDED_SHARE);
    Some(Contention { threshold_share: CONTENDED_SHARE, lanes: out, contended })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(name: &str, wall_ns: f64, rq_ns: &[f64]) -> LaneBlocks {
        LaneBlocks {
            name: name.to_owned(),
            us_per_op: rq_ns.iter().enumerate().map(|(i, _)| ((0, i as u32), wall_ns / 1_000.0)).collect(),
            wall_ns_per_op: vec![wall_ns; rq_ns.len()],
            ops: 20 * rq_ns.len() as u64,
            cpu_ns_per_op: BTreeMap::from([
                (PROCESS_RUN_QUEUE.to_owned(), rq_ns.to_vec()),
                ("caller.run_queue_ns".to_owned(), rq_ns.iter().map(|r| r / 2.0).collect()),
            ]),
            span_machinery_ns: BTreeMap::new(),
        }
    }

    #[test]
    fn a_lane_that_waits_for_its_own_threads_is_not_contended() {
        // kv-writer on one core, quiet: 4.2 µs of 17.5 waiting.
        let c = of(&[lane("kv-writer", 17_500.0, &[4_200.0; 9])]).expect("waits");
        assert!(!c.contended && c.line().is_none(), "{c:?}");
        let w = &c.lanes["kv-writer"];
        assert!((w.run_queue_us_per_op - 4.2).abs() < 1e-9 && (w.by_role["caller"] - 2.1).abs() < 1e-9);
    }

    #[test]
    fn a_lane_that_waits_for_another_process_is_named() {
        let mut rq = vec![110_000.0; 7];
        rq.extend([3_000.0, 3_000.0]);
        let c = of(&[lane("floor", 128_000.0, &rq), lane("inline", 17_600.0, &[0.0; 9])]).expect("waits");
        assert!(c.contended, "{c:?}");
        let line = c.line().expect("a verdict line");
        assert!(
            line.contains("`floor` waited for a CPU 110.0 µs of every 128.0 µs") && line.contains("7 of 9"),
            "{line}"
        );
    }

    #[test]
    fn no_reading_no_verdict() {
        let mut l = lane("inline", 17_600.0, &[0.0; 3]);
        l.cpu_ns_per_op.clear();
        assert!(of(&[l]).is_none());
    }
}
