//! A lane's waits for a CPU, from its run-queue readings: which readings
//! count (the process's less the driver's, else the lane's roles'), and
//! each block's waits per operation. Both the run's verdict and the
//! slices' waits read them.

use std::collections::BTreeMap;

use hopscope_probe::{ReadingKey, ThreadFigure, ThreadRole};
use serde::{Deserialize, Serialize};

use crate::lanes::LaneBlocks;

/// The reading that sums every thread's run-queue delay in a block: the
/// lane's waits once the driver's ([`DRIVER_RUN_QUEUE`]) are taken off.
///
/// The process holds more than the lane: the run's driver thread, pinned
/// to the lane's core on a `same-core` run, waits there as each block
/// starts (a quiet debug build's writer lane: 42 µs of process waits per
/// 33 µs write, 16 µs of them its caller's and writer's), and none of that
/// is another process. The other lanes' threads are parked meanwhile.
pub const PROCESS_RUN_QUEUE: ReadingKey = ReadingKey::Thread(ThreadRole::Process, ThreadFigure::RunQueueNs);

/// The run-queue delay of the run's driver thread, hopscope's own, which
/// the process's holds: the process's less this is every thread's but
/// the driver's, a span lane's own writer thread included.
pub const DRIVER_RUN_QUEUE: ReadingKey = ReadingKey::Thread(ThreadRole::Driver, ThreadFigure::RunQueueNs);

/// Whether `key` is a lane thread's run-queue reading (`caller.run_queue_ns`,
/// `writer.run_queue_ns`; not the process's or the driver's).
pub(super) fn is_role_run_queue(key: &ReadingKey) -> bool {
    matches!(key, ReadingKey::Thread(role, ThreadFigure::RunQueueNs) if !matches!(role, ThreadRole::Process | ThreadRole::Driver))
}

/// A block's (or an operation's) waits from its readings: the process's
/// less the driver's where both were read; else the lane's roles' summed
/// (a trace from before the driver was read apart: roles miss a thread a
/// program starts itself); else the process's.
pub(super) fn lane_waits(process: Option<f64>, driver: Option<f64>, roles: &[f64]) -> Option<f64> {
    match (process, driver) {
        (Some(p), Some(d)) => Some((p - d).max(0.0)),
        _ if !roles.is_empty() => Some(roles.iter().sum()),
        _ => process,
    }
}

/// What the scheduler did to one lane, per operation (every block the run
/// measured, those left out of the figures included).
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
    /// Blocks that waited for another process ([`waited_for_another`](super::waited_for_another)).
    pub contended_blocks: usize,
    /// Blocks with a run-queue reading.
    pub blocks: usize,
    /// In the contended blocks alone: the threads' waits and the wall
    /// time, µs per operation (medians); `None` with none contended.
    #[serde(default)]
    pub in_contended: Option<(f64, f64)>,
}

/// A lane's waits per operation, block by block ([`lane_waits`]).
pub(super) fn lane_run_queue(lane: &LaneBlocks) -> Option<Vec<f64>> {
    let blocks = lane.wall_ns_per_op.len();
    let of = |key: &ReadingKey| lane.cpu_ns_per_op.get(key).filter(|v| v.len() == blocks);
    let (process, driver) = (of(&PROCESS_RUN_QUEUE), of(&DRIVER_RUN_QUEUE));
    let roles: Vec<&Vec<f64>> = lane
        .cpu_ns_per_op
        .iter()
        .filter(|(key, v)| is_role_run_queue(key) && v.len() == blocks)
        .map(|(_, v)| v)
        .collect();
    if process.is_none() && roles.is_empty() {
        return None;
    }
    let waits = (0..blocks).map(|i| {
        let roles: Vec<f64> = roles.iter().map(|v| v[i]).collect();
        lane_waits(process.map(|v| v[i]), driver.map(|v| v[i]), &roles).unwrap_or(0.0)
    });
    Some(waits.collect())
}
