//! The lane runner: alternates lanes inside one process and writes every
//! measured block to a `.hop` trace.
//!
//! A run is `passes` × `samples` rounds; in each round every lane runs one
//! block, in an order rotated by one lane per round so no lane always goes
//! first. Before the first round each lane runs `warmup_blocks` blocks that
//! are not recorded. Around each block, outside its measured region: the
//! lane's table is emptied (insert shapes), stale marks are discarded, CPU
//! clocks are read; after it, marks are drained, CPU clocks read again, and
//! the row count checked against the writes the lane reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hopscope_probe::counters::{Counter, ThreadCounters};
use hopscope_probe::{Block, TraceWriter, local};
use rusqlite::Connection;

use crate::cpu::{self, Gap};
use crate::db;
use crate::error::RunError;
use crate::lane;
use crate::readings::ReadingKeys;
use crate::shape::Shape;

mod block;
mod plan;

pub use crate::readings::READINGS;
pub use plan::{Order, Plan};

use block::{BlockContext, LaneRun};
use plan::header;

/// Trace thread index of the (first) caller thread.
pub const CALLER_THREAD: u16 = 0;
/// Trace thread index of the lane's own thread (writer or floor).
pub const WORKER_THREAD: u16 = 1;

/// Marks each thread can hold per block: ten hops per operation with room
/// to spare; a block that overflows it reports drops, never blocks.
const MARKS_PER_OP: usize = 12;

/// Where a run went and what it wrote.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The trace file.
    pub trace: PathBuf,
    /// Measured blocks written.
    pub blocks: u64,
    /// Operations run per lane (measured blocks only), in plan order.
    pub ops: Vec<(String, u64)>,
    /// Marks dropped across the trace.
    pub dropped: u64,
}

/// Run `plan`, writing `trace.hop` and one database per lane under `dir`.
/// `run_meta` is added to the trace header (command line, commit, ...).
pub fn run(
    plan: &Plan,
    dir: &Path,
    run_meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<RunSummary, RunError> {
    plan.check()?;
    // Before any lane starts its thread: threads open counters at start.
    cpu::record_perf_counters(plan.perf_counters);
    let db_dir = db::run_dir(dir)?;

    let mut lanes = Vec::with_capacity(plan.lanes.len());
    for spec in &plan.lanes {
        let path = db_dir.join(format!("{}.db", spec.name));
        db::remove(&path)?;
        let opened = lane::open(spec, &path, plan.db, spec.shape_for(plan.shape))?;
        let admin = db::open(&path, plan.db).map_err(|source| RunError::Database { path: path.clone(), source })?;
        seed(&admin, plan.shape).map_err(|source| RunError::Database { path: path.clone(), source })?;
        lanes.push(LaneRun { spec: spec.clone(), lane: opened, admin, path, ops: 0 });
    }

    let trace_path = dir.join("trace.hop");
    let header = header(plan, run_meta);
    let supported: Vec<Counter> =
        header.counters.iter().filter(|c| c.support.is_supported()).map(|c| c.counter).collect();
    let keys = ReadingKeys::new(supported.clone());
    let mut header = header;
    header.readings = keys.names();
    let mut trace = TraceWriter::create(&trace_path, header)?;
    let blob = plan.shape.blob_source();
    let capacity = plan.ops_per_block as usize * MARKS_PER_OP * plan.shape.rows_per_op().max(1) as usize;
    local::attach(capacity);

    let total = u64::from(plan.passes) * u64::from(plan.samples) * plan.lanes.len() as u64
        + u64::from(plan.warmup_blocks) * plan.lanes.len() as u64;
    let bar = crate::progress::bar(progress, total);
    let mut next_key = 0u64;
    let mut block_ctx = BlockContext {
        plan,
        blob: &blob,
        capacity,
        next_key: &mut next_key,
        caller_counters: ThreadCounters::open(&supported),
        keys,
        gap: Gap::ns(plan.caller_gap_ns),
    };

    for _ in 0..plan.warmup_blocks {
        for lane in lanes.iter_mut() {
            block_ctx.run_block(lane)?;
            bar.inc(1);
        }
    }
    let mut blocks = 0u64;
    let mut dropped = 0u64;
    for pass in 0..plan.passes {
        for sample in 0..plan.samples {
            for index in plan.order.round(pass, sample, lanes.len()) {
                let measured = block_ctx.run_block(&mut lanes[index])?;
                let block = Block { lane: index as u16, pass, sample, ..measured };
                dropped += block.dropped();
                lanes[index].ops += block.op_count;
                trace.write_block(&block)?;
                blocks += 1;
                bar.inc(1);
            }
        }
    }
    trace.finish()?;
    bar.finish_and_clear();
    Ok(RunSummary {
        trace: trace_path,
        blocks,
        ops: lanes.iter().map(|l| (l.spec.name.clone(), l.ops)).collect(),
        dropped,
    })
}

fn seed(admin: &Connection, shape: Shape) -> rusqlite::Result<()> {
    admin.execute_batch(&format!("DELETE FROM {}", shape.table()))?;
    if shape.seed_rows() > 0 {
        admin.execute_batch("BEGIN")?;
        {
            let mut insert = admin.prepare("INSERT INTO items (id, k, v) VALUES (?1, ?1, 'seed')")?;
            for id in 1..=shape.seed_rows() as i64 {
                insert.execute([id])?;
            }
        }
        admin.execute_batch("COMMIT")?;
    }
    Ok(())
}
