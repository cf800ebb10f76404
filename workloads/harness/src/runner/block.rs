//! One block of one lane, run as one job per caller thread: caller 0 resets
//! the lane and builds its inputs, has the lane's threads hand in (to
//! discard stale marks), then every caller is released together into the
//! timed operations; after them caller 0 has the lane's threads hand in
//! their marks and CPU time and counts the lane's store. The thread that
//! drives the run is woken once per block, when the block is done.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use hopscope_probe::{Block, Session, Ticks, clock, local};

use super::callers::{Callers, catching};
use super::span_hook::SpanHook;
use crate::cpu::{self, Gap, ProcessSample, ThreadSample};
use crate::error::{At, Failure};
use crate::hand_in::HandIn;
use crate::placement::{Pin, Placement};
use crate::readings::{BlockSamples, ReadingKeys};
use crate::workload::{BlockId, BlockInfo, BoxError, Workload};

/// One trace lane, opened.
pub(crate) struct OpenLane {
    /// Trace lane name.
    pub(crate) name: String,
    pub(crate) workload: Arc<dyn Workload>,
    pub(crate) context: Context,
    /// The lane's own thread roles: (name, trace thread index, reading index).
    pub(crate) roles: Vec<(String, u16, usize)>,
    pub(crate) placement: Placement,
    pub(crate) callers: usize,
    pub(crate) per_op: Option<u64>,
    /// Operations measured so far (warm-up blocks not counted).
    pub(crate) ops: u64,
    /// The span layer the lane runs under, if it is a span lane.
    pub(crate) spans: SpanHook,
}

/// What a lane's code runs under on a caller thread: the variant's
/// `tracing` dispatcher, if the lane is probed by one.
#[derive(Clone, Default)]
pub(crate) struct Context {
    #[cfg(feature = "tracing")]
    pub(crate) dispatch: Option<tracing::Dispatch>,
    /// The lane runs under the global span switch: its callers keep the
    /// global default.
    #[cfg(feature = "tracing")]
    pub(crate) switched: bool,
}

impl Context {
    /// Run `f` with this context's dispatcher as the thread's default
    /// (lanes without one run under no dispatcher at all, span lanes under
    /// the global switch).
    pub(crate) fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        {
            if self.switched {
                return f();
            }
            let none = tracing::Dispatch::none();
            tracing::dispatcher::with_default(self.dispatch.as_ref().unwrap_or(&none), f)
        }
        #[cfg(not(feature = "tracing"))]
        f()
    }
}

/// What every block of a run shares.
pub(crate) struct Blocks<'a> {
    pub(crate) callers: &'a mut Callers,
    pub(crate) keys: &'a ReadingKeys,
    pub(crate) ops_per_block: u64,
    /// [`crate::Plan::ops_per_caller`]: a lane of several callers runs
    /// larger blocks.
    pub(crate) ops_per_caller: Option<u64>,
    pub(crate) deadline: Duration,
    pub(crate) gap: Gap,
    /// Trace thread index of each caller (caller 0 is the `caller` role).
    pub(crate) caller_threads: &'a [u16],
    /// Index of the next block's first operation.
    pub(crate) next_op: u64,
}

/// What caller 0 does around the measured region.
struct Around {
    info: BlockInfo,
    /// Discards stale marks, and samples the lane's threads before.
    stale: Option<HandIn>,
    /// Collects the block's marks, and samples the lane's threads after.
    handed: Option<HandIn>,
    /// Set when caller 0 could not prepare the block: the others skip it.
    skip: Arc<AtomicBool>,
}

/// One caller's share of a block.
struct CallerRun {
    /// The first thing that went wrong, and where.
    failed: Option<(At, Failure)>,
    reported: u64,
    start: Ticks,
    end: Ticks,
    sample: ThreadSample,
    /// CPU this caller spent sampling itself inside the process's window,
    /// beyond its timed one, ns.
    overhead_ns: u64,
    /// Caller 0: the process's readings over the block.
    process: Option<ProcessSample>,
    /// Caller 0: the lane's count after the block.
    counted: Option<u64>,
    /// The caller thread that ran this share.
    thread_id: std::thread::ThreadId,
}

impl Blocks<'_> {
    /// Run block `id` of `lane`; the block's lane, pass and sample are left
    /// for the caller to set.
    pub(crate) fn run(&mut self, lane: &mut OpenLane, id: BlockId) -> Result<Block, (At, Failure)> {
        let ops = crate::plan::block_ops(self.ops_per_block, self.ops_per_caller, lane.callers);
        let info = BlockInfo { id, first_op: self.next_op, ops, callers: lane.callers };
        self.next_op = self.next_op.wrapping_add(ops);
        let session = Session::new();
        let hand_in = |session: Session| (!lane.roles.is_empty()).then(|| HandIn::new(session, lane.roles.clone()));
        let around = Around {
            info,
            stale: hand_in(Session::new()),
            handed: hand_in(session.clone()),
            skip: Arc::new(AtomicBool::new(false)),
        };
        let (stale, handed) = (around.stale.clone(), around.handed.clone());
        lane.spans.before_block();
        let runs = self.run_callers(lane, &session, around).map_err(|f| (At::Block(id), f))?;
        let caller_ids: Vec<(std::thread::ThreadId, u16)> =
            runs.iter().zip(self.caller_threads).map(|(run, thread)| (run.thread_id, *thread)).collect();

        let mut samples = BlockSamples::default();
        let (mut start, mut end, mut reported, mut callers) = (Ticks(u64::MAX), Ticks(0), 0u64, None::<ThreadSample>);
        let (mut counted, mut overhead) = (None, 0u64);
        for run in runs {
            if let Some(failed) = run.failed {
                return Err(failed);
            }
            // The block runs from the first caller's start to the last one's end.
            start = start.min(run.start);
            end = end.max(run.end);
            reported = reported.saturating_add(run.reported);
            callers = ThreadSample::total(callers.iter().chain([&run.sample]));
            if let Some(process) = run.process {
                samples.process = process;
            }
            overhead = overhead.saturating_add(run.overhead_ns);
            counted = counted.or(run.counted);
        }
        // The callers' own sampling off, and the process clock's own
        // readings (never below what the callers measured themselves).
        let process = samples.process.cpu_ns.saturating_sub(overhead);
        let floor = callers.as_ref().map_or(0, |c| c.cpu_ns);
        samples.process.cpu_ns = process.saturating_sub(cpu::process_clock_cost_ns()).max(floor.min(process));
        let stale = stale.as_ref().map(checked).transpose().map_err(|f| (At::HandIn(id), f))?.unwrap_or_default();
        let handed = handed.as_ref().map(checked).transpose().map_err(|f| (At::HandIn(id), f))?.unwrap_or_default();
        check(lane, &info, reported, counted).map_err(|f| (At::Count(id), f))?;

        samples.roles.push((0, callers.unwrap_or_default()));
        for (_, _, reading) in &lane.roles {
            let sum = |samples: &[(usize, ThreadSample)]| {
                ThreadSample::total(samples.iter().filter(|(r, _)| r == reading).map(|(_, s)| s))
            };
            if let (Some(after), Some(before)) = (sum(&handed), sum(&stale)) {
                samples.roles.push((*reading, after.since(&before)));
            }
        }
        let mut streams = session.take();
        samples.spans = lane.spans.after_block(&mut streams, &caller_ids);
        Ok(Block {
            op_count: info.ops,
            start,
            end,
            streams,
            readings: self.keys.readings(&samples),
            ..Block::default()
        })
    }

    /// One job per caller, released into the measured region together;
    /// caller 0 also does everything around it.
    fn run_callers(&mut self, lane: &OpenLane, session: &Session, around: Around) -> Result<Vec<CallerRun>, Failure> {
        let n = lane.callers;
        let start_line = Arc::new(Barrier::new(n));
        let end_line = Arc::new(Barrier::new(n));
        let info = around.info;
        let skip = around.skip.clone();
        let mut around = Some(around);
        let jobs: Vec<(usize, Box<dyn FnOnce() -> CallerRun + Send>)> = (0..n)
            .map(|c| {
                let (workload, context, session) = (lane.workload.clone(), lane.context.clone(), session.clone());
                let (start_line, end_line) = (start_line.clone(), end_line.clone());
                let around = if c == 0 { around.take() } else { None };
                let placement = lane.placement;
                let thread = self.caller_threads[c];
                let ops = info.ops_of(c).with_gap(self.gap);
                let skip = skip.clone();
                let job = move || {
                    context.enter(|| {
                        placement.place_caller();
                        let lines = (&*start_line, &*end_line);
                        caller(c, info.id, &*workload, around, &skip, ops, lines, &session, thread)
                    })
                };
                (c, Box::new(job) as Box<dyn FnOnce() -> CallerRun + Send>)
            })
            .collect();
        self.callers.call_each(jobs, self.deadline)
    }
}

/// One caller's job: `around` (caller 0 only) prepares and closes the block.
#[allow(clippy::too_many_arguments)]
fn caller(
    c: usize,
    id: BlockId,
    workload: &dyn Workload,
    around: Option<Around>,
    skip: &AtomicBool,
    ops: crate::workload::Ops,
    (start_line, end_line): (&Barrier, &Barrier),
    session: &Session,
    thread: u16,
) -> CallerRun {
    let mut failed = around.as_ref().and_then(|a| prepare(workload, a, id));
    // Marks made outside any block (set-up, resets) are not this block's.
    let _ = local::drain_into(&mut Vec::new());
    // The process's readings enclose every caller's own: caller 0 reads the
    // process before the start line and after the end line, each caller
    // samples itself between them. So the process's CPU is never less than
    // the callers' (the process clock's own cost is taken off its figure).
    let process_before = around.as_ref().map(|_| ProcessSample::opening());
    start_line.wait();
    let skipped = skip.load(Ordering::Acquire) || failed.is_some();
    let Timed { result, start, end, sample, overhead_ns } = timed(workload, c, ops, skipped);
    end_line.wait();
    let process = process_before.map(|before| before.closing());
    session.collect(thread);
    let reported = match flatten(result) {
        Ok(n) => n,
        Err(f) => {
            failed.get_or_insert((At::Block(id), f));
            0
        }
    };
    let mut counted = None;
    if let (Some(a), None) = (&around, &failed) {
        match close(workload, a, id) {
            Ok(n) => counted = n,
            Err(f) => failed = Some(f),
        }
    }
    CallerRun {
        failed,
        reported,
        start,
        end,
        sample,
        overhead_ns,
        process,
        counted,
        thread_id: std::thread::current().id(),
    }
}

/// One caller's timed share, as measured: what its operations returned,
/// their start and end, and the caller's own samples over them.
struct Timed {
    result: Result<Result<u64, BoxError>, Failure>,
    start: Ticks,
    end: Ticks,
    sample: ThreadSample,
    /// CPU this caller spent sampling itself inside the process's window,
    /// beyond its timed one, ns.
    overhead_ns: u64,
}

/// Run `ops` as caller `c` (none when `skipped`) between two clock
/// readings, the caller's own CPU sampled around them: the measured region
/// between the start and end lines. Always inlined into the caller's job,
/// so the split adds no call to the region.
#[inline(always)]
fn timed(workload: &dyn Workload, c: usize, ops: crate::workload::Ops, skipped: bool) -> Timed {
    // The CPU window holds the timed one and the clock's own reading only,
    // and that is taken off: a caller that works the whole block reads no
    // more CPU than the block's wall time.
    let cost = cpu::thread_clock_cost_ns();
    let bracket = cpu::thread_cpu_ns();
    let before = ThreadSample::opening();
    let start = clock::now();
    let result = if skipped { Ok(Ok(0)) } else { catching(|| workload.run(c, ops)) };
    let end = clock::now();
    // In a what-if run, the caller's virtual end: its real one less what
    // the experiment charged it (0 in any other run).
    #[cfg(feature = "what-if")]
    let end = hopscope_probe::Ticks(end.0.saturating_sub(hopscope_probe::whatif::charged()));
    let after = ThreadSample::here();
    let closed = cpu::thread_cpu_ns();
    let mut sample = after.since(&before);
    sample.cpu_ns = sample.cpu_ns.saturating_sub(cost);
    // What taking its own samples cost this caller inside the process's
    // window (a getrusage and a schedstat file read each side, the clock's
    // reading): the process's figure has it taken off, so a lane of one
    // busy thread reads about its wall time there too (it read ~9% more).
    let overhead_ns = before.cpu_ns.saturating_sub(bracket) + closed.saturating_sub(after.cpu_ns) + cost;
    Timed { result, start, end, sample, overhead_ns }
}

/// Caller 0, before the start line: the lane resets and builds its inputs,
/// and its threads discard their stale marks. What failed, if anything;
/// the other callers are then told to skip the block.
#[inline]
fn prepare(workload: &dyn Workload, around: &Around, id: BlockId) -> Option<(At, Failure)> {
    let prepared = flatten(catching(|| workload.before_block(&around.info)))
        .map_err(|f| (At::BeforeBlock(id), f))
        .and_then(|()| around.stale.as_ref().map_or(Ok(()), |h| hand_in(workload, h).map_err(|f| (At::HandIn(id), f))));
    let failed = prepared.err();
    if failed.is_some() {
        around.skip.store(true, Ordering::Release);
    }
    failed
}

/// Caller 0, after the end line of a block that went well: the lane's
/// threads hand their marks in, then the lane counts its store.
#[inline]
fn close(workload: &dyn Workload, around: &Around, id: BlockId) -> Result<Option<u64>, (At, Failure)> {
    around
        .handed
        .as_ref()
        .map_or(Ok(()), |h| hand_in(workload, h).map_err(|f| (At::HandIn(id), f)))
        .and_then(|()| flatten(catching(|| workload.count())).map_err(|f| (At::Count(id), f)))
}

/// Have the lane's threads hand in to `hand_in`, a panic caught.
fn hand_in(workload: &dyn Workload, hand_in: &HandIn) -> Result<(), Failure> {
    flatten(catching(|| workload.hand_in(hand_in)))
}

/// What the lane's threads handed in, refusing a missed or undeclared role.
fn checked(hand_in: &HandIn) -> Result<Vec<(usize, ThreadSample)>, Failure> {
    let handed = hand_in.take();
    if let Some(role) = handed.undeclared.first() {
        let declared: Vec<&str> = hand_in.roles().collect();
        return Err(Failure::HandIn(format!(
            "named thread role `{role}`, which the lane does not declare (it declares {})",
            declared.join(", ")
        )));
    }
    if !handed.missing.is_empty() {
        return Err(Failure::HandIn(format!(
            "did not collect thread role(s) {}: each declared thread must call HandIn::collect",
            handed.missing.join(", ")
        )));
    }
    Ok(handed.samples)
}

/// A call's two layers of failure (the call's own, the lane code's error)
/// as one.
fn flatten<T>(result: Result<Result<T, BoxError>, Failure>) -> Result<T, Failure> {
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(Failure::Error(error)),
        Err(failure) => Err(failure),
    }
}

/// What the operations reported against the lane's declaration and count.
fn check(lane: &OpenLane, info: &BlockInfo, reported: u64, counted: Option<u64>) -> Result<(), Failure> {
    if let Some(per_op) = lane.per_op {
        let expected = info.ops.saturating_mul(per_op);
        if reported != expected {
            return Err(Failure::Reported { ops: info.ops, expected, reported });
        }
    }
    match counted {
        Some(counted) if counted != reported => Err(Failure::Count { reported, counted }),
        _ => Ok(()),
    }
}
