//! One block of one lane: reset and inputs before it, the timed writes
//! (sequential, or one thread per caller released together), and marks,
//! CPU, counters and a row check after it.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};

use hopscope_probe::counters::ThreadCounters;
use hopscope_probe::{Block, Session, Ticks, clock, local};
use rusqlite::Connection;

use super::{CALLER_THREAD, Plan, WORKER_THREAD};
use crate::cpu::{self, Gap, ThreadSample};
use crate::db;
use crate::error::RunError;
use crate::knobs::Placement;
use crate::lane::{Lane, LaneSpec};
use crate::readings::ReadingKeys;

/// A lane in a run: what it is, its open lane and an admin connection.
pub(super) struct LaneRun {
    pub(super) spec: LaneSpec,
    pub(super) lane: Box<dyn Lane>,
    /// A second connection to the lane's database, for resets and checks
    /// outside measured blocks.
    pub(super) admin: Connection,
    /// The lane's database file.
    pub(super) path: PathBuf,
    /// Operations measured so far (warm-up blocks not counted).
    pub(super) ops: u64,
}

/// What every block of a run shares.
pub(super) struct BlockContext<'a> {
    pub(super) plan: &'a Plan,
    pub(super) blob: &'a Arc<[u8]>,
    pub(super) capacity: usize,
    pub(super) next_key: &'a mut u64,
    /// The runner thread's own counters (it is the caller of sequential shapes).
    pub(super) caller_counters: ThreadCounters,
    pub(super) keys: ReadingKeys,
    pub(super) gap: Gap,
}

impl BlockContext<'_> {
    /// Run one block of `lane` and return it (lane, pass and sample unset).
    pub(super) fn run_block(&mut self, lane: &mut LaneRun) -> Result<Block, RunError> {
        let shape = lane.spec.shape_for(self.plan.shape);
        let ops = self.plan.ops_per_block;
        let db_error = |source| RunError::Database { path: lane.path.clone(), source };
        let write_error = |source| RunError::Write { lane: lane.spec.name.clone(), source };

        // Before the block: empty the table, drop marks made by earlier
        // work, build the inputs, pin the caller, read the CPU clocks.
        if shape.inserts() {
            lane.admin.execute_batch(&format!("DELETE FROM {}", shape.table())).map_err(db_error)?;
        }
        let discard = Session::new();
        lane.lane.flush(&discard, WORKER_THREAD).map_err(write_error)?;
        let _ = local::drain_into(&mut Vec::new());
        let inputs = shape.inputs(*self.next_key, ops, self.blob);
        *self.next_key += ops;
        pin_caller(lane.lane.placement());
        let session = Session::new();
        let worker_before = lane.lane.flush(&discard, WORKER_THREAD).map_err(write_error)?;
        let process_cpu_before = cpu::process_cpu_ns();
        let process_ctx_before = cpu::process_ctx_switches();

        let (start, end, changes, caller) = if inputs.len() == 1 {
            let inputs = inputs.into_iter().next().unwrap_or_default();
            let caller_before = ThreadSample::take(&mut self.caller_counters);
            let start = clock::now();
            let changes = lane.lane.run(0, inputs, self.gap).map_err(write_error)?;
            let end = clock::now();
            let caller = ThreadSample::take(&mut self.caller_counters).since(&caller_before);
            (start, end, changes, caller)
        } else {
            self.run_concurrent(lane, inputs, &session)?
        };

        // After the block: collect marks, CPU and counters, check the rows.
        let worker_after = lane.lane.flush(&session, WORKER_THREAD).map_err(write_error)?;
        session.collect(CALLER_THREAD);
        let process_cpu = cpu::process_cpu_ns().saturating_sub(process_cpu_before);
        let process_ctx_switches = cpu::process_ctx_switches().saturating_sub(process_ctx_before);
        self.check_rows(lane, changes)?;

        let worker = worker_before.zip(worker_after).map(|(before, after)| after.since(&before));
        let readings = self.keys.readings(&caller, worker.as_ref(), process_cpu, process_ctx_switches);
        Ok(Block { op_count: ops, start, end, streams: session.take(), readings, ..Block::default() })
    }

    /// Run a block with one thread per caller, released together.
    fn run_concurrent(
        &self,
        lane: &LaneRun,
        inputs: Vec<Vec<crate::shape::OpInput>>,
        session: &Session,
    ) -> Result<(Ticks, Ticks, u64, ThreadSample), RunError> {
        let barrier = Barrier::new(inputs.len() + 1);
        let gap = self.gap;
        let capacity = self.capacity;
        let placement = lane.lane.placement();
        let worker = &*lane.lane;
        std::thread::scope(|scope| {
            let handles: Vec<_> = inputs
                .into_iter()
                .enumerate()
                .map(|(caller, inputs)| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        local::attach(capacity);
                        pin_caller(placement);
                        let mut counters = cpu::open_counters();
                        let before = ThreadSample::take(&mut counters);
                        barrier.wait();
                        // Each caller times its own span: the coordinating
                        // thread may not run again until the callers are done.
                        let started = clock::now();
                        let result = worker.run(caller, inputs, gap);
                        let ended = clock::now();
                        let cpu = ThreadSample::take(&mut counters).since(&before);
                        let thread = if caller == 0 { CALLER_THREAD } else { WORKER_THREAD + caller as u16 };
                        session.collect(thread);
                        (result, cpu, (started, ended))
                    })
                })
                .collect();
            barrier.wait();
            let mut changes = 0;
            let mut callers = ThreadSample::default();
            let mut failure = None;
            // The block runs from the first caller's start to the last one's end.
            let mut span: Option<(Ticks, Ticks)> = None;
            for handle in handles {
                match handle.join() {
                    Ok((result, sample, (started, ended))) => {
                        span = Some(span.map_or((started, ended), |(s, e)| (s.min(started), e.max(ended))));
                        match result {
                            Ok(n) => {
                                changes += n;
                                callers.add(&sample);
                            }
                            Err(source) => failure = Some(RunError::Write { lane: lane.spec.name.clone(), source }),
                        }
                    }
                    Err(_) => failure = Some(RunError::CallerPanicked { lane: lane.spec.name.clone() }),
                }
            }
            match (failure, span) {
                (Some(err), _) => Err(err),
                (None, Some((start, end))) => Ok((start, end, changes, callers)),
                (None, None) => {
                    Err(RunError::Plan(format!("lane `{}`: a concurrent block had no callers", lane.spec.name)))
                }
            }
        })
    }

    /// Every lane writes exactly the rows it reports.
    fn check_rows(&self, lane: &LaneRun, changes: u64) -> Result<(), RunError> {
        let shape = self.plan.shape;
        let expected = self.plan.ops_per_block * shape.rows_per_op();
        if changes != expected {
            return Err(RunError::WrongChanges { lane: lane.spec.name.clone(), expected, reported: changes });
        }
        let rows = db::count_rows(&lane.path, shape.table())
            .map_err(|source| RunError::Database { path: lane.path.clone(), source })?;
        let expected_rows = if shape.inserts() { changes } else { shape.seed_rows() };
        if rows != expected_rows {
            return Err(RunError::RowMismatch { lane: lane.spec.name.clone(), reported: expected_rows, found: rows });
        }
        Ok(())
    }
}

fn pin_caller(placement: Placement) {
    match placement {
        Placement::Unpinned => cpu::unpin_current(),
        Placement::SameCore | Placement::DifferentCores => {
            cpu::pin_current(0);
        }
    }
}
