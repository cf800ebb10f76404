//! The blocks of a what-if run: one lane, opened once, run block after
//! block with a different experiment switched on around each (see
//! [`crate::whatif`]). No trace is written: a block's marks are bent by
//! the experiment's payments, and what the profile needs of a block is its
//! wall time and the delay inserted during it.

use std::collections::BTreeMap;
use std::path::Path;

use hopscope_analyze::causal::ArmBlock;
use hopscope_probe::clock;
use hopscope_probe::whatif::{self, Experiment};

use super::open::{OpenRun, Opener};
use crate::error::RunError;
use crate::lane::Lane;
use crate::plan::{Plan, shuffled};
use crate::workload::BlockId;

/// How many rounds, and the seed of their orders.
pub(crate) struct Schedule {
    pub(crate) rounds: u32,
    pub(crate) seed: u64,
}

/// Run `lane` (one build) under `plan`'s sizes for `schedule`'s rounds; in
/// each, every experiment of `arms` runs one block, in an order shuffled
/// from the seed and the round. Warm-up blocks run under the first arm. `tick` is
/// told of every block run. A signal stops the run after the block in
/// progress: the blocks measured so far come back with the signal.
pub(crate) fn run(
    plan: &Plan,
    lane: &Lane,
    arms: &[Experiment],
    schedule: Schedule,
    dir: &Path,
    meta: BTreeMap<String, String>,
    mut tick: impl FnMut(),
) -> Result<(Vec<ArmBlock>, Option<crate::interrupt::Signal>), RunError> {
    let mut open = OpenRun::open(plan, std::slice::from_ref(lane), dir, meta, Opener::Run)?;
    if open.lanes.len() != 1 {
        return Err(RunError::Plan(format!(
            "a what-if run changes one build, lane `{}` has {}",
            lane.name,
            open.lanes.len()
        )));
    }
    let Some(reference) = arms.first() else {
        return Err(RunError::Plan("a what-if run needs at least its reference".to_owned()));
    };
    let mut blocks = Vec::new();
    let warmups = (0..plan.warmup_blocks).map(|round| (reference, usize::MAX, BlockId::Warmup { round }));
    let measured = (0..schedule.rounds).flat_map(|round| {
        shuffled(arms.len(), schedule.seed.wrapping_add(u64::from(round)))
            .into_iter()
            .map(move |a| (&arms[a], a, BlockId::Measured { pass: 0, sample: round }))
    });
    for (experiment, a, id) in warmups.chain(measured) {
        if let Some(signal) = crate::interrupt::requested() {
            drop(open);
            return Ok((blocks, Some(signal)));
        }
        whatif::start(experiment).map_err(|e| RunError::Plan(e.to_string()))?;
        let result = open.block(0, id);
        let waited = whatif::spun();
        let inserted = whatif::stop();
        let taken = whatif::taken();
        let block = match result {
            Ok(block) => block,
            Err((at, failure)) => {
                let name = open.lanes[0].name.clone();
                let trace = dir.join("no-trace");
                return open.close(trace, 0, Some((name, at, failure)), None).map(|_| (blocks, None));
            }
        };
        tick();
        if let BlockId::Measured { sample, .. } = id {
            blocks.push(ArmBlock {
                round: sample,
                arm: a,
                ops: block.op_count,
                wall_ns: clock::clock().delta_as_nanos(block.start.0, block.end.0) as f64,
                inserted_ns: clock::clock().delta_as_nanos(0, inserted) as f64,
                waited_ns: clock::clock().delta_as_nanos(0, waited) as f64,
                taken_ns: clock::clock().delta_as_nanos(0, taken) as f64,
            });
        }
    }
    drop(open);
    Ok((blocks, None))
}
