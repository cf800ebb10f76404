//! A run's apparatus, opened: its caller threads, every lane's builds, the
//! readings it takes and the trace header that declares them. The plan's
//! loop ([`super::run`]) and a follower ([`super::follow`]) both run blocks
//! through an [`OpenRun`]; only who decides the next block differs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hopscope_probe::counters::{self, Counter, CounterSupport};
use hopscope_probe::{Block, ThreadRole, TraceHeader};

use super::block::{Blocks, Context, OpenLane};
use super::callers::{self, Callers};
use super::check::check;
use super::header::header;
use super::placed::{Placed, PlacedAsWorker};
use crate::cpu::{self, Gap};
use crate::error::{At, Failure, RunError, Stopped};
use crate::interrupt::Signal;
use crate::lane::{Build, Lane};
use crate::placement::Placement;
use crate::plan::Plan;
use crate::readings::ReadingKeys;
use crate::run_summary::RunSummary;
use crate::rundir::LANES_DIR;
use crate::workload::{BlockId, Setup, ThreadInit, Workload};

/// Held by the run in progress: runs in one process take turns (see
/// [`OpenRun::open`]).
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Everything a run holds while it measures. Dropping it closes the lanes,
/// removes their scratch directories, gives the driving thread its
/// affinity back and lets the next run of the process start.
pub(crate) struct OpenRun {
    /// The trace lanes, in header order.
    pub(crate) lanes: Vec<OpenLane>,
    /// The header every block written refers to.
    pub(crate) header: TraceHeader,
    /// Thread roles, in header order (the traced ones renamed at the end).
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    threads: Vec<String>,
    callers: Callers,
    keys: ReadingKeys,
    caller_threads: Vec<u16>,
    ops_per_block: u64,
    /// [`Plan::ops_per_caller`].
    ops_per_caller: Option<u64>,
    deadline: std::time::Duration,
    gap: Gap,
    settle: std::time::Duration,
    next_op: u64,
    dropped: u64,
    span_lanes: bool,
    #[cfg(feature = "tracing")]
    traced: crate::traced::SharedThreads,
    // Dropped in this order after the lanes: the scratch space, then what
    // the run claimed (the placement, the directory's lock, the process's
    // turn).
    _scratch: Scratch,
    claimed: Claimed,
}

/// What a run claims before it opens anything, released in this order
/// when it ends: the driving thread's placement, the directory's lock, the
/// process's turn.
struct Claimed {
    /// Pins the kernel had refused before the run (see
    /// [`RunSummary::pin_failures`]).
    pin_failures_before: u64,
    _placed: Placed,
    _lock: crate::rundir::DirLock,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Claimed {
    /// Take the process's turn and `dir`'s lock, and place the thread that
    /// drives the run where the callers run.
    fn take(plan: &Plan, dir: &Path) -> Result<Claimed, RunError> {
        // Runs in one process take turns (a program's tests run them on
        // parallel threads): the span switch, the process's CPU clock and
        // its cores are the whole process's, and two runs at once would
        // measure each other.
        let turn = ONE_RUN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // What the block's own CPU readings cost, measured once before any
        // block (a first measurement inside a run would fall in a block).
        let _ = (crate::cpu::thread_clock_cost_ns(), crate::cpu::process_clock_cost_ns());
        let pin_failures_before = crate::placement::pin_failures();
        // One run per directory: a second run into it is refused before it
        // touches any file.
        let lock = crate::rundir::lock(dir)?;
        // The thread that drives the run sits where the callers run, as the
        // caller of a program does, and gets its affinity back at the end.
        // Left to roam, it woke between blocks on the otherwise idle core,
        // and every same-core wake inside the blocks read ~0.1 µs dearer
        // (sent→woke 2.11 vs 1.99 µs, replied→received 2.78 vs 2.69,
        // repeatable).
        let placed = Placed::here(plan.placement);
        Ok(Claimed { pin_failures_before, _placed: placed, _lock: lock, _turn: turn })
    }
}

/// A run's thread roles: those its readings are taken for, every role's
/// name in header order, and each caller's trace thread index.
struct ThreadRoles {
    reading: Vec<ThreadRole>,
    names: Vec<String>,
    callers: Vec<u16>,
}

impl ThreadRoles {
    /// The caller, every lane's own roles, the extra callers of a run of
    /// `max_callers` (and the traced threads' slots a span lane needs).
    fn of(lanes: &[Lane], max_callers: usize) -> ThreadRoles {
        let mut reading = vec![ThreadRole::Caller];
        for lane in lanes {
            for role in &lane.threads {
                let role = ThreadRole::Lane(role.clone());
                if !reading.contains(&role) {
                    reading.push(role);
                }
            }
        }
        let mut names: Vec<String> = reading.iter().map(ThreadRole::to_string).collect();
        let callers: Vec<u16> = (0..max_callers)
            .map(|c| {
                if c == 0 {
                    return 0;
                }
                names.push(ThreadRole::ExtraCaller(u32::try_from(c).unwrap_or(u32::MAX)).to_string());
                (names.len() - 1) as u16
            })
            .collect();
        #[cfg(feature = "tracing")]
        crate::spans::declare_traced_role(lanes, &mut names);
        ThreadRoles { reading, names, callers }
    }
}

/// Who opens a run, which decides what its header measures before the
/// first block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opener {
    /// A run of the program's own: its decomposition states the span
    /// machinery, measured once before any block (~40 ms).
    Run,
    /// A follower of `hopscope ab --builds`: its blocks are judged build
    /// against build, slice by slice, and no machinery is stated, so the
    /// set-up measurement is skipped (three followers start every pass, and
    /// it made a fifth of a pass's time).
    Follower,
}

impl OpenRun {
    /// Check the declaration, take the process's turn and `dir`'s lock,
    /// start the callers and open every build of every lane (in its own
    /// fresh directory under `dir`); the header carries `meta`, and the
    /// span machinery measured before any block when `opener` states it.
    pub(crate) fn open(
        plan: &Plan,
        lanes: &[Lane],
        dir: &Path,
        meta: BTreeMap<String, String>,
        opener: Opener,
    ) -> Result<OpenRun, RunError> {
        check(plan, lanes)?;
        let claimed = Claimed::take(plan, dir)?;
        // Before any lane starts a thread: threads open counters on first use.
        cpu::record_perf_counters(plan.perf_counters);
        let max_callers = lanes.iter().map(|l| l.callers).max().unwrap_or(1);
        let callers = spawn_callers(plan, max_callers, dir)?;
        let roles = ThreadRoles::of(lanes, max_callers);

        // However the run ends, its lanes' scratch directories go with it.
        let scratch = Scratch(dir.join(LANES_DIR));
        // Before any lane opens a connection: only those opened after it
        // are seen.
        let checkpoints = crate::checkpoints::record();
        #[cfg(feature = "tracing")]
        let traced = crate::traced::TracedThreads::shared(&roles.names);
        let open = open_lanes(
            plan,
            lanes,
            dir,
            &roles.names,
            #[cfg(feature = "tracing")]
            &traced,
        )?;

        let span_lanes = span_lanes(lanes);
        let (keys, counters) = reading_keys(plan, roles.reading, span_lanes, checkpoints);
        let mut header = header(plan, lanes, &open, &roles.names, &keys, counters, meta);
        measure_before_blocks(opener, lanes, &mut header);
        Ok(OpenRun {
            lanes: open,
            header,
            threads: roles.names,
            callers,
            keys,
            caller_threads: roles.callers,
            ops_per_block: plan.ops_per_block,
            ops_per_caller: plan.ops_per_caller,
            deadline: plan.block_deadline,
            gap: Gap::ns(plan.caller_gap_ns),
            settle: plan.settle,
            next_op: 0,
            dropped: 0,
            span_lanes,
            #[cfg(feature = "tracing")]
            traced,
            _scratch: scratch,
            claimed,
        })
    }

    /// Whether a lane is probed by spans (its traced threads are renamed
    /// after their own names at the end, so the header needs room).
    pub(crate) fn span_lanes(&self) -> bool {
        self.span_lanes
    }

    /// Settle, then run block `id` of trace lane `index`; the block comes
    /// back with its lane, pass and sample set (a warm-up block: pass 0,
    /// its round as the sample).
    pub(crate) fn block(&mut self, index: usize, id: BlockId) -> Result<Block, (At, Failure)> {
        settle(self.settle);
        let mut blocks = Blocks {
            callers: &mut self.callers,
            keys: &self.keys,
            ops_per_block: self.ops_per_block,
            ops_per_caller: self.ops_per_caller,
            deadline: self.deadline,
            gap: self.gap,
            caller_threads: &self.caller_threads,
            next_op: self.next_op,
        };
        let Some(lane) = self.lanes.get_mut(index) else {
            return Err((At::BeforeBlock(id), Failure::Error(format!("no trace lane {index}").into())));
        };
        let result = blocks.run(lane, id);
        self.next_op = blocks.next_op;
        let (pass, sample) = match id {
            BlockId::Warmup { round } => (0, round),
            BlockId::Measured { pass, sample } => (pass, sample),
        };
        result.map(|measured| Block { lane: index as u16, pass, sample, ..measured })
    }

    /// Count a measured block's operations and dropped marks for the
    /// run's summary.
    pub(crate) fn count(&mut self, block: &Block) {
        self.dropped = self.dropped.saturating_add(block.dropped());
        if let Some(lane) = self.lanes.get_mut(usize::from(block.lane)) {
            lane.ops = lane.ops.saturating_add(block.op_count);
        }
    }

    /// The traced threads' roles renamed after the threads' own names
    /// (none without span lanes).
    pub(crate) fn renames(&self) -> Vec<(u16, String)> {
        #[cfg(feature = "tracing")]
        return crate::traced::lock(&self.traced).renames(&self.threads);
        #[cfg(not(feature = "tracing"))]
        Vec::new()
    }

    /// End the run: close the lanes (a lane still stuck in a call keeps its
    /// own reference) and remove their scratch space — a run's results are
    /// its trace and files — then say how it went.
    pub(crate) fn close(
        self,
        trace: PathBuf,
        written: u64,
        failed: Option<(String, At, Failure)>,
        interrupted: Option<Signal>,
    ) -> Result<RunSummary, RunError> {
        let summary = RunSummary {
            trace,
            blocks: written,
            ops: self.lanes.iter().map(|l| (l.name.clone(), l.ops)).collect(),
            dropped: self.dropped,
            pin_failures: crate::placement::pin_failures().saturating_sub(self.claimed.pin_failures_before),
        };
        drop(self);
        if let Some((lane, at, failure)) = failed {
            return Err(RunError::Stopped(Box::new(Stopped { lane, at, failure, kept: summary })));
        }
        if let Some(signal) = interrupted {
            return Err(RunError::Interrupted { signal, kept: summary });
        }
        Ok(summary)
    }
}

/// A run's lane directories, removed when the run ends (however it ends).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Start the run's `max_callers` caller threads, each with room for a
/// block's marks.
fn spawn_callers(plan: &Plan, max_callers: usize, dir: &Path) -> Result<Callers, RunError> {
    let capacity = plan.marks_per_block(max_callers);
    Callers::spawn(max_callers, capacity).map_err(|source| RunError::Io {
        what: "cannot start the caller threads in",
        path: dir.to_owned(),
        source,
    })
}

/// The readings every block takes for the `reading` thread roles, and the
/// hardware counters the plan asked for, as this host supports them.
fn reading_keys(
    plan: &Plan,
    reading: Vec<ThreadRole>,
    span_lanes: bool,
    checkpoints: bool,
) -> (ReadingKeys, Vec<CounterSupport>) {
    let counters = if plan.perf_counters { counters::detect() } else { Vec::new() };
    let supported: Vec<Counter> = counters.iter().filter(|c| c.support.is_supported()).map(|c| c.counter).collect();
    let keys = ReadingKeys::new(reading, supported).with_span_machinery(span_lanes).with_checkpoints(checkpoints);
    (keys, counters)
}

/// Whether a lane is probed by spans.
fn span_lanes(lanes: &[Lane]) -> bool {
    #[cfg(feature = "tracing")]
    return lanes.iter().any(|l| l.span_layer().is_some());
    #[cfg(not(feature = "tracing"))]
    {
        let _ = lanes;
        false
    }
}

/// What a run measures into `header` before its first block, as `opener`
/// states it: the span machinery, and SQLite's trace hook's cost.
fn measure_before_blocks(opener: Opener, lanes: &[Lane], header: &mut TraceHeader) {
    #[cfg(feature = "tracing")]
    if opener == Opener::Run {
        crate::spans::measure_machinery(lanes, header);
    }
    #[cfg(feature = "sqlite")]
    if opener == Opener::Run && lanes.iter().any(|l| l.hooks_statements) {
        header.statement_hook = crate::sqlite::measure_hook_cost();
    }
    #[cfg(not(any(feature = "tracing", feature = "sqlite")))]
    let _ = (opener, lanes, header);
}

/// Open every build of every lane, each in its own fresh directory, on the
/// thread that runs the harness (as a program opens its writer), a panic
/// caught and described. Not on a caller thread, and so without a deadline.
fn open_lanes(
    plan: &Plan,
    lanes: &[Lane],
    dir: &Path,
    threads: &[String],
    #[cfg(feature = "tracing")] traced: &crate::traced::SharedThreads,
) -> Result<Vec<OpenLane>, RunError> {
    let mut opening = Opening {
        plan,
        dir,
        #[cfg(feature = "tracing")]
        threads,
        #[cfg(feature = "tracing")]
        traced,
        #[cfg(feature = "tracing")]
        registered: Vec::new(),
    };
    let mut open = Vec::new();
    for lane in lanes {
        let roles = lane_roles(lane, threads);
        for (name, build) in lane.trace_lanes() {
            open.push(opening.build(lane, name, build, &roles)?);
        }
    }
    Ok(open)
}

/// A lane's own thread roles among the run's `threads`: (name, trace
/// thread index, reading index).
fn lane_roles(lane: &Lane, threads: &[String]) -> Vec<(String, u16, usize)> {
    lane.threads
        .iter()
        .filter_map(|role| {
            let index = threads.iter().position(|t| t == role)?;
            Some((role.clone(), index as u16, index))
        })
        .collect()
}

/// What opening the builds of a run's lanes shares.
struct Opening<'a> {
    plan: &'a Plan,
    dir: &'a Path,
    /// The run's thread roles, in header order.
    #[cfg(feature = "tracing")]
    threads: &'a [String],
    #[cfg(feature = "tracing")]
    traced: &'a crate::traced::SharedThreads,
    /// Span layers already added to the global switch (a lane's clean and
    /// probed builds share one).
    #[cfg(feature = "tracing")]
    registered: Vec<(hopscope_probe::HopLayer, hopscope_probe::SpanPath, usize)>,
}

impl Opening<'_> {
    /// Open `build` of `lane` as trace lane `name` (its own thread roles:
    /// `roles`), in a fresh directory of its own.
    fn build(
        &mut self,
        lane: &Lane,
        name: String,
        build: &Build,
        roles: &[(String, u16, usize)],
    ) -> Result<OpenLane, RunError> {
        let placement = lane.placement.unwrap_or(self.plan.placement);
        let lane_dir = self.dir.join(LANES_DIR).join(&name);
        fresh_dir(&lane_dir)?;
        #[cfg(feature = "tracing")]
        let (spans, dispatch) = crate::spans::open_build(lane, build, self.threads, self.traced, &mut self.registered);
        #[cfg(feature = "tracing")]
        let switched = spans.as_ref().is_some_and(crate::spans::SpanLane::switched);
        #[cfg(feature = "tracing")]
        let span_hook = super::span_hook::SpanHook::new(spans);
        #[cfg(not(feature = "tracing"))]
        let span_hook = super::span_hook::SpanHook::default();
        let context = Context {
            #[cfg(feature = "tracing")]
            dispatch: dispatch.clone(),
            #[cfg(feature = "tracing")]
            switched,
        };
        let setup = Setup {
            dir: lane_dir,
            lane: name.clone(),
            variant: build.variant,
            #[cfg(feature = "sqlite")]
            sqlite: None,
            placement,
            thread: ThreadInit {
                capacity: self.plan.marks_per_block(lane.callers),
                placement,
                #[cfg(feature = "tracing")]
                dispatch,
            },
        };
        let opened = match open_workload(build, &context, setup, placement, self.plan.placement) {
            Ok(workload) => workload,
            Err(failure) => return Err(RunError::Open { lane: name, failure }),
        };
        Ok(OpenLane {
            name,
            workload: Arc::from(opened),
            context,
            roles: roles.to_vec(),
            placement,
            callers: lane.callers,
            per_op: lane.per_op,
            ops: 0,
            spans: span_hook,
        })
    }
}

/// Open one build's workload with `setup`, under `context`, a panic caught
/// and described.
fn open_workload(
    build: &Build,
    context: &Context,
    setup: Setup,
    placement: Placement,
    driver: Placement,
) -> Result<Box<dyn Workload>, Failure> {
    let (opener, ctx) = (build.opener.clone(), context.clone());
    // The opener runs placed as the lane's own thread, so a writer
    // thread it starts (std::thread, a runtime's workers) inherits
    // the lane's place without calling `ThreadInit::enter`: a user
    // writer once inherited the caller's core and `different-cores`
    // measured one core. The driving thread goes back to the callers'
    // place afterwards (`driver`).
    let job = move || {
        let _back = PlacedAsWorker::here(placement, driver);
        ctx.enter(|| opener(&setup))
    };
    match callers::here(job) {
        Ok(Ok(workload)) => Ok(workload),
        Ok(Err(error)) => Err(Failure::Error(error)),
        Err(failure) => Err(failure),
    }
}

/// Remove `dir` if it exists and create it empty.
fn fresh_dir(dir: &Path) -> Result<(), RunError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(RunError::Io { what: "cannot empty lane directory", path: dir.to_owned(), source }),
    }
    std::fs::create_dir_all(dir).map_err(|source| RunError::Io {
        what: "cannot create lane directory",
        path: dir.to_owned(),
        source,
    })
}

/// Idle for `settle` before a block, so the threads of the lane before it
/// go quiet (see [`Plan::settle`]).
fn settle(settle: std::time::Duration) {
    if !settle.is_zero() {
        std::thread::sleep(settle);
    }
}
