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
use std::sync::{Arc, Barrier};

use hopscope_probe::counters::{Counter, ThreadCounters};
use hopscope_probe::{Block, Session, Ticks, TraceHeader, TraceWriter, clock, counters, local};
use indicatif::{ProgressBar, ProgressStyle};
use rusqlite::Connection;

use crate::cpu::{self, Gap, ThreadSample};
use crate::db::{self, DbConfig};
use crate::error::RunError;
use crate::knobs::Placement;
use crate::lane::{self, Lane, LaneSpec};
use crate::readings::ReadingKeys;
use crate::shape::Shape;

pub use crate::readings::READINGS;

/// Trace thread index of the (first) caller thread.
pub const CALLER_THREAD: u16 = 0;
/// Trace thread index of the lane's own thread (writer or floor).
pub const WORKER_THREAD: u16 = 1;

/// Marks each thread can hold per block: ten hops per operation with room
/// to spare; a block that overflows it reports drops, never blocks.
const MARKS_PER_OP: usize = 12;

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Lanes, alternated in rotating order.
    pub lanes: Vec<LaneSpec>,
    /// What every lane writes.
    pub shape: Shape,
    /// Operations per block.
    pub ops_per_block: u64,
    /// Blocks per lane per pass.
    pub samples: u32,
    /// Passes over all samples.
    pub passes: u32,
    /// Unrecorded blocks per lane before the first pass.
    pub warmup_blocks: u32,
    /// Pragmas of every lane's database.
    pub db: DbConfig,
    /// How lanes are ordered within a round.
    pub order: Order,
    /// Busy work of the caller before each write, ns (0: back to back).
    pub caller_gap_ns: u64,
    /// Open perf-event counters on every lane's threads. Off by default:
    /// each open counter costs µs per context switch here (see
    /// [`crate::cpu::record_perf_counters`]); context switches are counted
    /// from `getrusage` either way.
    pub perf_counters: bool,
}

/// How the lanes of one round are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Rotate by one lane every round, so no lane always goes first.
    #[default]
    Rotate,
    /// Plan order in even passes, the first two lanes swapped in odd passes:
    /// the `a→b` / `b→a` passes of an A/B experiment.
    FlipEachPass,
}

impl Order {
    /// The lane indices of round (`pass`, `sample`) for `lanes` lanes.
    pub fn round(self, pass: u32, sample: u32, lanes: usize) -> Vec<usize> {
        match self {
            Order::Rotate => {
                let rotation = (sample + pass) as usize % lanes.max(1);
                (0..lanes).map(|offset| (rotation + offset) % lanes).collect()
            }
            Order::FlipEachPass => {
                let mut order: Vec<usize> = (0..lanes).collect();
                if pass % 2 == 1 && lanes >= 2 {
                    order.swap(0, 1);
                }
                order
            }
        }
    }
}

impl Plan {
    /// A plan with the careful defaults: 200 ops per block, 50 samples,
    /// 4 passes, 5 warm-up blocks per lane. Many short blocks rather than a
    /// few long ones: a block median shrugs off the rare WAL checkpoint that
    /// a long block would average in.
    pub fn new(lanes: Vec<LaneSpec>, shape: Shape) -> Plan {
        Plan {
            lanes,
            shape,
            ops_per_block: 200,
            samples: 50,
            passes: 4,
            warmup_blocks: 5,
            db: DbConfig::default(),
            order: Order::Rotate,
            caller_gap_ns: 0,
            perf_counters: false,
        }
    }

    /// A short plan (seconds): 100 ops, 20 samples, 2 passes, 2 warm-ups.
    pub fn quick(lanes: Vec<LaneSpec>, shape: Shape) -> Plan {
        Plan { ops_per_block: 100, samples: 20, passes: 2, warmup_blocks: 2, ..Plan::new(lanes, shape) }
    }

    fn check(&self) -> Result<(), RunError> {
        if self.lanes.is_empty() {
            return Err(RunError::Plan("no lanes to run".to_owned()));
        }
        if self.ops_per_block == 0 || self.samples == 0 || self.passes == 0 {
            return Err(RunError::Plan("ops per block, samples and passes must all be at least 1".to_owned()));
        }
        for (i, lane) in self.lanes.iter().enumerate() {
            if self.lanes[..i].iter().any(|l| l.name == lane.name) {
                return Err(RunError::Plan(format!("lane name `{}` is used twice", lane.name)));
            }
        }
        Ok(())
    }

    /// Thread roles as the trace header declares them.
    fn threads(&self) -> Vec<String> {
        let mut threads = vec!["caller".to_owned(), "writer".to_owned()];
        threads.extend((1..self.shape.callers()).map(|c| format!("caller-{c}")));
        threads
    }
}

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
    let bar = progress_bar(progress, total);
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

struct LaneRun {
    spec: LaneSpec,
    lane: Box<dyn Lane>,
    /// A second connection to the lane's database, for resets and checks
    /// outside measured blocks.
    admin: Connection,
    path: PathBuf,
    ops: u64,
}

struct BlockContext<'a> {
    plan: &'a Plan,
    blob: &'a Arc<[u8]>,
    capacity: usize,
    next_key: &'a mut u64,
    /// The runner thread's own counters (it is the caller of sequential shapes).
    caller_counters: ThreadCounters,
    keys: ReadingKeys,
    gap: Gap,
}

impl BlockContext<'_> {
    /// Run one block of `lane` and return it (lane, pass and sample unset).
    fn run_block(&mut self, lane: &mut LaneRun) -> Result<Block, RunError> {
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

fn header(plan: &Plan, run_meta: BTreeMap<String, String>) -> TraceHeader {
    let lanes: Vec<&str> = plan.lanes.iter().map(|l| l.name.as_str()).collect();
    let threads = plan.threads();
    let threads: Vec<&str> = threads.iter().map(String::as_str).collect();
    let mut header = TraceHeader::for_this_host(&lanes, &threads);
    // Counters not recorded are not listed: the header says what the
    // blocks hold.
    header.counters = if plan.perf_counters { counters::detect() } else { Vec::new() };
    header.run = run_meta;
    let meta = &mut header.run;
    meta.insert("shape".to_owned(), plan.shape.to_string());
    meta.insert("ops_per_block".to_owned(), plan.ops_per_block.to_string());
    meta.insert("samples".to_owned(), plan.samples.to_string());
    meta.insert("passes".to_owned(), plan.passes.to_string());
    meta.insert("warmup_blocks".to_owned(), plan.warmup_blocks.to_string());
    meta.insert("db".to_owned(), plan.db.to_string());
    meta.insert("order".to_owned(), format!("{:?}", plan.order));
    meta.insert("caller_gap_ns".to_owned(), plan.caller_gap_ns.to_string());
    meta.insert("perf_counters".to_owned(), if plan.perf_counters { "on" } else { "off" }.to_owned());
    meta.insert("sqlite_version".to_owned(), rusqlite::version().to_owned());
    for lane in &plan.lanes {
        meta.insert(format!("lane.{}", lane.name), lane.to_string());
        meta.insert(format!("lane.{}.probed", lane.name), lane.probed.to_string());
    }
    header
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

fn pin_caller(placement: Placement) {
    match placement {
        Placement::Unpinned => cpu::unpin_current(),
        Placement::SameCore | Placement::DifferentCores => {
            cpu::pin_current(0);
        }
    }
}

fn progress_bar(enabled: bool, total: u64) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} blocks · {elapsed} (eta {eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("measuring");
    bar
}
