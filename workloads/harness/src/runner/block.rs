//! One block of one lane: its reset and inputs, a hand-in that discards
//! stale marks, the timed operations on the caller threads (one, or several
//! released together), a hand-in of the lane's threads' marks and CPU time,
//! the count check, and the block with its readings.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use hopscope_probe::{Block, Session, Ticks, clock, local};

use super::callers::{Callers, catching};
use crate::cpu::{self, Gap, ThreadSample};
use crate::error::{At, Failure};
use crate::hand_in::HandIn;
use crate::placement::Placement;
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
}

/// What a lane's code runs under on a caller thread: the variant's
/// `tracing` dispatcher, if the lane is probed by one.
#[derive(Clone, Default)]
pub(crate) struct Context {
    #[cfg(feature = "tracing")]
    pub(crate) dispatch: Option<tracing::Dispatch>,
}

impl Context {
    /// Run `f` with this context's dispatcher as the thread's default
    /// (lanes without one run under no dispatcher at all).
    pub(crate) fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        {
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
    pub(crate) deadline: Duration,
    pub(crate) gap: Gap,
    /// Trace thread index of each caller (caller 0 is the `caller` role).
    pub(crate) caller_threads: &'a [u16],
    /// Index of the next block's first operation.
    pub(crate) next_op: u64,
}

/// What the caller threads measured.
struct Timed {
    start: Ticks,
    end: Ticks,
    reported: u64,
    callers: ThreadSample,
    process: (u64, u64),
}

/// One caller's share of a block.
struct CallerRun {
    result: Result<Result<u64, BoxError>, Failure>,
    start: Ticks,
    end: Ticks,
    sample: ThreadSample,
    process: Option<(u64, u64)>,
    /// Caller 0: whether the lane's threads handed in around the block.
    hand_in: Result<(), Failure>,
}

impl Blocks<'_> {
    /// Run block `id` of `lane`; the block's lane, pass and sample are left
    /// for the caller to set.
    pub(crate) fn run(&mut self, lane: &mut OpenLane, id: BlockId) -> Result<Block, (At, Failure)> {
        let info = BlockInfo { id, first_op: self.next_op, ops: self.ops_per_block, callers: lane.callers };
        self.next_op = self.next_op.wrapping_add(self.ops_per_block);

        let (workload, context) = (lane.workload.clone(), lane.context.clone());
        let before = self.callers.call(0, self.deadline, move || context.enter(|| workload.before_block(&info)));
        flatten(before).map_err(|f| (At::BeforeBlock(id), f))?;

        // The lane's threads hand in on caller 0 right before and right
        // after the measured region (the first to discard stale marks), so
        // their CPU and context switches cover the block and little else.
        let session = Session::new();
        let hand_ins = (!lane.roles.is_empty()).then(|| {
            (HandIn::new(Session::new(), lane.roles.clone()), HandIn::new(session.clone(), lane.roles.clone()))
        });
        let timed = self.timed(lane, &info, &session, hand_ins.clone())?;
        let (stale, handed) = match &hand_ins {
            Some((stale, handed)) => {
                (checked(stale).map_err(|f| (At::HandIn(id), f))?, checked(handed).map_err(|f| (At::HandIn(id), f))?)
            }
            None => (Vec::new(), Vec::new()),
        };
        let (workload, context) = (lane.workload.clone(), lane.context.clone());
        let counted = flatten(self.callers.call(0, self.deadline, move || context.enter(|| workload.count())))
            .map_err(|f| (At::Count(id), f))?;
        check(lane, &info, timed.reported, counted).map_err(|f| (At::Count(id), f))?;

        let mut samples = BlockSamples {
            roles: vec![(0, timed.callers)],
            process_cpu_ns: timed.process.0,
            process_ctx_switches: timed.process.1,
        };
        for (_, _, reading) in &lane.roles {
            let sum = |samples: &[(usize, ThreadSample)]| {
                let mut total: Option<ThreadSample> = None;
                for (_, s) in samples.iter().filter(|(r, _)| r == reading) {
                    total.get_or_insert_with(ThreadSample::default).add(s);
                }
                total
            };
            if let (Some(after), Some(before)) = (sum(&handed), sum(&stale)) {
                samples.roles.push((*reading, after.since(&before)));
            }
        }
        Ok(Block {
            op_count: info.ops,
            start: timed.start,
            end: timed.end,
            streams: session.take(),
            readings: self.keys.readings(&samples),
            ..Block::default()
        })
    }

    /// The measured region: every caller's operations, timed on the
    /// callers; caller 0 also has the lane's threads hand in around it.
    fn timed(
        &mut self,
        lane: &OpenLane,
        info: &BlockInfo,
        session: &Session,
        hand_ins: Option<(HandIn, HandIn)>,
    ) -> Result<Timed, (At, Failure)> {
        let n = lane.callers;
        let start_line = Arc::new(Barrier::new(n));
        let end_line = Arc::new(Barrier::new(n));
        let jobs: Vec<(usize, Box<dyn FnOnce() -> CallerRun + Send>)> = (0..n)
            .map(|c| {
                let (workload, context, session) = (lane.workload.clone(), lane.context.clone(), session.clone());
                let (start_line, end_line) = (start_line.clone(), end_line.clone());
                let hand_ins = if c == 0 { hand_ins.clone() } else { None };
                let placement = lane.placement;
                let thread = self.caller_threads[c];
                let ops = info.ops_of(c).with_gap(self.gap);
                let job = move || {
                    context.enter(|| {
                        placement.place_caller();
                        // Marks made outside any block (set-up, resets) are
                        // not this block's.
                        let _ = local::drain_into(&mut Vec::new());
                        let stale = hand_ins.as_ref().map(|(stale, _)| hand_in(&*workload, stale));
                        let skip = matches!(stale, Some(Err(_)));
                        let before = ThreadSample::here();
                        let process_before = (c == 0).then(|| (cpu::process_cpu_ns(), cpu::process_ctx_switches()));
                        start_line.wait();
                        let start = clock::now();
                        let result = if skip { Ok(Ok(0)) } else { catching(|| workload.run(c, ops)) };
                        let end = clock::now();
                        end_line.wait();
                        let process = process_before.map(|(cpu_ns, ctx)| {
                            (
                                cpu::process_cpu_ns().saturating_sub(cpu_ns),
                                cpu::process_ctx_switches().saturating_sub(ctx),
                            )
                        });
                        let sample = ThreadSample::here().since(&before);
                        session.collect(thread);
                        let handed = match (&hand_ins, &result) {
                            (Some((_, handed)), Ok(Ok(_))) if !skip => Some(hand_in(&*workload, handed)),
                            _ => None,
                        };
                        let hand_in = match (stale, handed) {
                            (Some(Err(f)), _) | (_, Some(Err(f))) => Err(f),
                            _ => Ok(()),
                        };
                        CallerRun { result, start, end, sample, process, hand_in }
                    })
                };
                (c, Box::new(job) as Box<dyn FnOnce() -> CallerRun + Send>)
            })
            .collect();
        let id = info.id;
        let runs = self.callers.call_each(jobs, self.deadline).map_err(|f| (At::Block(id), f))?;
        let mut timed = Timed {
            start: Ticks(u64::MAX),
            end: Ticks(0),
            reported: 0,
            callers: ThreadSample::default(),
            process: (0, 0),
        };
        // The block runs from the first caller's start to the last one's end.
        for run in runs {
            run.hand_in.map_err(|f| (At::HandIn(id), f))?;
            timed.reported = timed.reported.saturating_add(flatten(run.result).map_err(|f| (At::Block(id), f))?);
            timed.start = timed.start.min(run.start);
            timed.end = timed.end.max(run.end);
            timed.callers.add(&run.sample);
            if let Some(process) = run.process {
                timed.process = process;
            }
        }
        Ok(timed)
    }
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
