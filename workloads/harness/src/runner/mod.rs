//! The runner: alternates lanes inside one process and writes every
//! measured block to a `.hop` trace.
//!
//! A run is `passes` × `samples` rounds; in each round every trace lane runs
//! one block, in the plan's [`Order`](crate::Order). Before the first round
//! each lane runs `warmup_blocks` blocks that are not recorded. Around each
//! block, outside its measured region: the lane resets, its threads hand in
//! and discard stale marks, CPU clocks are read; after it, marks are handed
//! in, CPU clocks read again and the lane's count checked against what its
//! operations reported.
//!
//! A lane that fails (an error, a panic, a block past its deadline, a wrong
//! count) stops the run: the trace is finished with every block measured
//! before, and [`RunError::Stopped`] says which lane, which block and why.

use std::collections::BTreeMap;
use std::path::Path;

use hopscope_probe::{RunFact, RunFacts, TraceWriter};

use crate::error::{At, Failure, RunError};
use crate::lane::Lane;
use crate::plan::Plan;
use crate::workload::BlockId;

#[cfg(feature = "what-if")]
pub(crate) mod arms;
mod block;
mod callers;
mod check;
mod follow;
mod header;
mod open;
mod placed;
mod span_hook;

pub use check::{MAX_THREAD_ROLES, MAX_TRACE_LANES};
pub use follow::{FOLLOW_PROTOCOL, HELLO, follow};
use open::{OpenRun, Opener};

pub use crate::run_summary::RunSummary;
pub use crate::rundir::LANES_DIR;

#[cfg(feature = "tracing")]
use crate::traced::HEADER_ROOM;
#[cfg(not(feature = "tracing"))]
const HEADER_ROOM: usize = 0;

/// Run `lanes` under `plan`, writing `trace.hop` and one directory per trace
/// lane (`lanes/<name>/`, handed to the lane as [`Setup::dir`](crate::Setup::dir), removed at
/// the end) under `dir`, which no other run may use meanwhile (it is
/// locked). A signal caught by [`crate::interrupt`] stops the run after the
/// block in progress.
/// `meta` is added to the trace header (command line, commit, ...); a
/// progress bar is drawn on stderr when `progress`. Runs in one process
/// take turns: a second waits for the first to end.
pub fn run(
    plan: &Plan,
    lanes: &[Lane],
    dir: &Path,
    meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<RunSummary, RunError> {
    // This thread hands out the blocks: its waits are read apart.
    crate::sched::set_driver();
    // Blocks grown for several callers: fewer samples, about the plan's
    // operations per lane.
    let plan = &plan.scaled_for(lanes.iter().map(|l| l.callers).max().unwrap_or(1));
    let mut meta = meta;
    let lanes_n = lanes.iter().map(|l| l.trace_lanes().count()).sum::<usize>();
    meta.record(RunFact::PlannedBlocks, planned_blocks(plan, lanes_n).to_string());
    let mut open = OpenRun::open(plan, lanes, dir, meta, Opener::Run)?;
    let trace_path = dir.join("trace.hop");
    // Room to rename the traced threads' roles after their threads at the end.
    let room = if open.span_lanes() { HEADER_ROOM } else { 0 };
    let mut trace = TraceWriter::create_with_room(&trace_path, open.header.clone(), room).inspect_err(|_| {
        // Nothing half-written: a trace that could not even take its header.
        let _ = std::fs::remove_file(&trace_path);
    })?;

    let lanes_n = open.lanes.len();
    let total = planned_blocks(plan, lanes_n) + u64::from(plan.warmup_blocks) * lanes_n as u64;
    let bar = crate::progress::bar(progress, total);
    // Without a terminal for the bar, a line now and then says the run is
    // alive (a block of large blobs can take seconds).
    let mut note = crate::progress::Note::new(!progress, planned_blocks(plan, lanes_n));
    let mut written = 0u64;
    let mut failed: Option<(String, At, Failure)> = None;
    let mut interrupted = None;
    'run: {
        let warmups =
            (0..plan.warmup_blocks).flat_map(|round| (0..lanes_n).map(move |lane| (lane, BlockId::Warmup { round })));
        let measured = (0..plan.passes).flat_map(|pass| {
            (0..plan.samples).flat_map(move |sample| {
                plan.order
                    .round(pass, sample, lanes_n)
                    .into_iter()
                    .map(move |lane| (lane, BlockId::Measured { pass, sample }))
            })
        });
        for (index, id) in warmups.chain(measured) {
            if let Some(signal) = crate::interrupt::requested() {
                interrupted = Some(signal);
                break 'run;
            }
            let block = match open.block(index, id) {
                Ok(block) => block,
                Err((at, failure)) => {
                    failed = Some((open.lanes[index].name.clone(), at, failure));
                    break 'run;
                }
            };
            bar.inc(1);
            if let BlockId::Measured { .. } = id {
                open.count(&block);
                trace.write_block(&block)?;
                written += 1;
                note.tick(written);
            }
        }
    }
    let renames = open.renames();
    if !renames.is_empty() {
        trace.rename_threads(&renames)?;
    }
    trace.finish()?;
    bar.finish_and_clear();
    open.close(trace_path, written, failed, interrupted)
}

/// Measured blocks the plan runs with `lanes` trace lanes (recorded in the
/// header, so an analysis knows a trace that ended early).
fn planned_blocks(plan: &Plan, lanes: usize) -> u64 {
    (0..plan.passes).map(|p| (0..plan.samples).map(|s| plan.order.round(p, s, lanes).len() as u64).sum::<u64>()).sum()
}
