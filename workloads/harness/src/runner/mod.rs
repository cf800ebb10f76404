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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hopscope_probe::counters::{self, Counter};
use hopscope_probe::{Block, LaneInfo, TraceHeader, TraceWriter};

use crate::cpu::{self, Gap};
use crate::error::{At, Failure, RunError, Stopped};
use crate::lane::Lane;
use crate::placement::Affinity;
use crate::plan::Plan;
use crate::readings::{CALLER_ROLE, ReadingKeys};
use crate::workload::{BlockId, Setup, ThreadInit};

mod block;
mod callers;

use block::{Blocks, Context, OpenLane};
use callers::Callers;

/// Most trace lanes in one run (each declared lane runs as one or two).
pub const MAX_TRACE_LANES: usize = 256;

/// The directory under a run's directory that holds each lane's own
/// directory ([`Setup::dir`]), removed when the run ends.
pub const LANES_DIR: &str = "lanes";

/// Most distinct thread roles in one run, over all lanes.
pub const MAX_THREAD_ROLES: usize = 64;

/// Where a run went and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The trace file.
    pub trace: PathBuf,
    /// Measured blocks written.
    pub blocks: u64,
    /// Operations measured per trace lane, in declaration order.
    pub ops: Vec<(String, u64)>,
    /// Marks dropped across the trace.
    pub dropped: u64,
    /// Pins the kernel refused during the run: threads that may not have
    /// run where the placement said (a report warns about it).
    pub pin_failures: u64,
}

/// Held by the run in progress: see [`run`].
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run `lanes` under `plan`, writing `trace.hop` and one directory per trace
/// lane (`lanes/<name>/`, handed to the lane as [`Setup::dir`], removed at
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
    check(plan, lanes)?;
    // Runs in one process take turns (a program's tests run them on
    // parallel threads): the span switch, the process's CPU clock and its
    // cores are the whole process's, and two runs at once would measure
    // each other.
    let _turn = ONE_RUN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let pin_failures_before = crate::placement::pin_failures();
    // One run per directory: a second run into it is refused before it
    // touches any file.
    let _lock = crate::rundir::lock(dir)?;
    // The thread that drives the run sits where the callers run, as the
    // caller of a program does, and gets its affinity back at the end. Left
    // to roam, it woke between blocks on the otherwise idle core, and every
    // same-core wake inside the blocks read ~0.1 µs dearer (sent→woke 2.11
    // vs 1.99 µs, replied→received 2.78 vs 2.69, repeatable).
    let _placed = Placed::here(plan.placement);
    // Before any lane starts a thread: threads open counters on first use.
    cpu::record_perf_counters(plan.perf_counters);
    let capacity = plan.marks_per_block();
    let max_callers = lanes.iter().map(|l| l.callers).max().unwrap_or(1);
    let mut callers = Callers::spawn(max_callers, capacity).map_err(|source| RunError::Io {
        what: "cannot start the caller threads in",
        path: dir.to_owned(),
        source,
    })?;

    // Thread roles: the caller, every lane's own roles, the extra callers.
    let mut threads: Vec<String> = vec![CALLER_ROLE.to_owned()];
    for lane in lanes {
        for role in &lane.threads {
            if !threads.contains(role) {
                threads.push(role.clone());
            }
        }
    }
    let reading_roles = threads.clone();
    let caller_threads: Vec<u16> = (0..max_callers)
        .map(|c| {
            if c == 0 {
                return 0;
            }
            threads.push(format!("{CALLER_ROLE}-{c}"));
            (threads.len() - 1) as u16
        })
        .collect();
    #[cfg(feature = "tracing")]
    crate::spans::declare_traced_role(lanes, &mut threads);

    // However the run ends, its lanes' scratch directories go with it.
    let _scratch = Scratch(dir.join(LANES_DIR));
    #[cfg(feature = "tracing")]
    let traced = crate::traced::TracedThreads::shared(&threads);
    let mut open = open_lanes(
        plan,
        lanes,
        dir,
        &threads,
        #[cfg(feature = "tracing")]
        &traced,
    )?;

    let counters = if plan.perf_counters { counters::detect() } else { Vec::new() };
    let supported: Vec<Counter> = counters.iter().filter(|c| c.support.is_supported()).map(|c| c.counter).collect();
    #[cfg(feature = "tracing")]
    let span_lanes = lanes.iter().any(|l| l.span_layer().is_some());
    #[cfg(not(feature = "tracing"))]
    let span_lanes = false;
    let keys = ReadingKeys::new(reading_roles, supported).with_span_machinery(span_lanes);
    let mut meta = meta;
    meta.insert("planned_blocks".to_owned(), planned_blocks(plan, open.len()).to_string());
    let header = header(plan, lanes, &open, &threads, &keys, counters, meta);
    let trace_path = dir.join("trace.hop");
    // Room to rename the traced threads' roles after their threads at the end.
    #[cfg(feature = "tracing")]
    let room = if span_lanes { crate::traced::HEADER_ROOM } else { 0 };
    #[cfg(not(feature = "tracing"))]
    let room = 0;
    let mut trace = TraceWriter::create_with_room(&trace_path, header, room).inspect_err(|_| {
        // Nothing half-written: a trace that could not even take its header.
        let _ = std::fs::remove_file(&trace_path);
    })?;

    let lanes_n = open.len() as u64;
    let total = planned_blocks(plan, open.len()) + u64::from(plan.warmup_blocks) * lanes_n;
    let bar = crate::progress::bar(progress, total);
    // Without a terminal for the bar, a line now and then says the run is
    // alive (a block of large blobs can take seconds).
    let mut note = crate::progress::Note::new(!progress, planned_blocks(plan, open.len()));
    let mut blocks = Blocks {
        callers: &mut callers,
        keys: &keys,
        ops_per_block: plan.ops_per_block,
        deadline: plan.block_deadline,
        gap: Gap::ns(plan.caller_gap_ns),
        caller_threads: &caller_threads,
        next_op: 0,
    };
    let mut written = 0u64;
    let mut dropped = 0u64;
    let mut failed: Option<(String, At, Failure)> = None;
    let mut interrupted = None;
    'run: {
        for round in 0..plan.warmup_blocks {
            for lane in open.iter_mut() {
                if let Some(signal) = crate::interrupt::requested() {
                    interrupted = Some(signal);
                    break 'run;
                }
                settle(plan.settle);
                if let Err((at, failure)) = blocks.run(lane, BlockId::Warmup { round }) {
                    failed = Some((lane.name.clone(), at, failure));
                    break 'run;
                }
                bar.inc(1);
            }
        }
        for pass in 0..plan.passes {
            for sample in 0..plan.samples {
                for index in plan.order.round(pass, sample, open.len()) {
                    if let Some(signal) = crate::interrupt::requested() {
                        interrupted = Some(signal);
                        break 'run;
                    }
                    let lane = &mut open[index];
                    settle(plan.settle);
                    let measured = match blocks.run(lane, BlockId::Measured { pass, sample }) {
                        Ok(block) => block,
                        Err((at, failure)) => {
                            failed = Some((lane.name.clone(), at, failure));
                            break 'run;
                        }
                    };
                    let block = Block { lane: index as u16, pass, sample, ..measured };
                    dropped = dropped.saturating_add(block.dropped());
                    lane.ops = lane.ops.saturating_add(block.op_count);
                    trace.write_block(&block)?;
                    written += 1;
                    bar.inc(1);
                    note.tick(written);
                }
            }
        }
    }
    #[cfg(feature = "tracing")]
    {
        let renames = crate::traced::lock(&traced).renames(&threads);
        if !renames.is_empty() {
            trace.rename_threads(&renames)?;
        }
    }
    trace.finish()?;
    bar.finish_and_clear();
    let summary = RunSummary {
        trace: trace_path,
        blocks: written,
        ops: open.iter().map(|l| (l.name.clone(), l.ops)).collect(),
        dropped,
        pin_failures: crate::placement::pin_failures().saturating_sub(pin_failures_before),
    };
    // The lanes close (a lane still stuck in a call keeps its own
    // reference); `_scratch` then removes their databases: a run's results
    // are its trace and files, not its lanes' scratch space.
    drop(open);
    if let Some((lane, at, failure)) = failed {
        return Err(RunError::Stopped(Box::new(Stopped { lane, at, failure, kept: summary })));
    }
    if let Some(signal) = interrupted {
        return Err(RunError::Interrupted { signal, kept: summary });
    }
    Ok(summary)
}

/// A run's lane directories, removed when the run ends (however it ends).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The calling thread placed as a caller until this is dropped, when its
/// affinity is given back.
struct Placed(Option<Affinity>);

impl Placed {
    fn here(placement: crate::placement::Placement) -> Placed {
        let before = Affinity::current();
        placement.place_caller();
        Placed(before)
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(affinity) = &self.0 {
            affinity.restore();
        }
    }
}

/// Measured blocks the plan runs with `lanes` trace lanes (recorded in the
/// header, so an analysis knows a trace that ended early).
fn planned_blocks(plan: &Plan, lanes: usize) -> u64 {
    (0..plan.passes).map(|p| (0..plan.samples).map(|s| plan.order.round(p, s, lanes).len() as u64).sum::<u64>()).sum()
}

/// Refuse a plan or declaration the run cannot carry out, before anything
/// runs.
fn check(plan: &Plan, lanes: &[Lane]) -> Result<(), RunError> {
    plan.check().map_err(RunError::Plan)?;
    if lanes.is_empty() {
        return Err(RunError::Plan("no lanes to run".to_owned()));
    }
    let mut names: Vec<String> = Vec::new();
    let mut roles: Vec<&str> = Vec::new();
    #[cfg(feature = "tracing")]
    crate::spans::check_hops(plan, lanes).map_err(RunError::Plan)?;
    // Placements the process's CPUs cannot give are refused before
    // anything runs, rather than measured somewhere else.
    let placements = std::iter::once(plan.placement).chain(lanes.iter().filter_map(|l| l.placement));
    if let Some(why) = placements.filter_map(crate::placement::unachievable).next() {
        return Err(RunError::Plan(why));
    }
    for lane in lanes {
        lane.check().map_err(RunError::Plan)?;
        for (name, _) in lane.trace_lanes() {
            if names.contains(&name) {
                return Err(RunError::Plan(format!("lane name `{name}` is used twice")));
            }
            names.push(name);
        }
        for role in &lane.threads {
            if !roles.contains(&role.as_str()) {
                roles.push(role);
            }
        }
    }
    if names.len() > MAX_TRACE_LANES {
        return Err(RunError::Plan(format!("{} lanes (at most {MAX_TRACE_LANES})", names.len())));
    }
    if roles.len() > MAX_THREAD_ROLES {
        return Err(RunError::Plan(format!("{} thread roles (at most {MAX_THREAD_ROLES})", roles.len())));
    }
    Ok(())
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
    let mut open = Vec::new();
    #[cfg(feature = "tracing")]
    let mut registered = Vec::new();
    for lane in lanes {
        let placement = lane.placement.unwrap_or(plan.placement);
        let roles: Vec<(String, u16, usize)> = lane
            .threads
            .iter()
            .filter_map(|role| {
                let index = threads.iter().position(|t| t == role)?;
                Some((role.clone(), index as u16, index))
            })
            .collect();
        for (name, build) in lane.trace_lanes() {
            let lane_dir = dir.join(LANES_DIR).join(&name);
            fresh_dir(&lane_dir)?;
            #[cfg(feature = "tracing")]
            let (spans, dispatch) = crate::spans::open_build(lane, build, threads, traced, &mut registered);
            let context = Context {
                #[cfg(feature = "tracing")]
                dispatch: dispatch.clone(),
                #[cfg(feature = "tracing")]
                switched: spans.as_ref().is_some_and(crate::spans::SpanLane::switched),
            };
            let setup = Setup {
                dir: lane_dir,
                lane: name.clone(),
                variant: build.variant,
                placement,
                thread: ThreadInit {
                    capacity: plan.marks_per_block(),
                    placement,
                    #[cfg(feature = "tracing")]
                    dispatch,
                },
            };
            let (opener, ctx) = (build.opener.clone(), context.clone());
            let job = move || ctx.enter(|| opener(&setup));
            let opened = match callers::here(job) {
                Ok(Ok(workload)) => workload,
                Ok(Err(error)) => return Err(RunError::Open { lane: name, failure: Failure::Error(error) }),
                Err(failure) => return Err(RunError::Open { lane: name, failure }),
            };
            open.push(OpenLane {
                name,
                workload: Arc::from(opened),
                context,
                roles: roles.clone(),
                placement,
                callers: lane.callers,
                per_op: lane.per_op,
                ops: 0,
                #[cfg(feature = "tracing")]
                spans,
            });
        }
    }
    Ok(open)
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

/// One probe mark's cost on this host, ns, timed on a thread of its own
/// (timing attaches a mark buffer, which must not be the driving
/// thread's): ~70,000 marks, a millisecond or two.
fn mark_ns() -> Option<f64> {
    let plan = hopscope_probe::calibrate::CostPlan { batch: 1_000, rounds: 31, warmup_rounds: 4 };
    let costs = std::thread::scope(|s| s.spawn(|| hopscope_probe::calibrate::measure_costs(plan)).join()).ok()?;
    costs.mark.median_ns.is_finite().then_some(costs.mark.median_ns)
}

/// The trace header of a run: lanes with their roles, thread roles,
/// readings, counters, `meta` and every plan setting.
fn header(
    plan: &Plan,
    lanes: &[Lane],
    open: &[OpenLane],
    threads: &[String],
    keys: &ReadingKeys,
    counters: Vec<hopscope_probe::counters::CounterSupport>,
    meta: BTreeMap<String, String>,
) -> TraceHeader {
    let names: Vec<&str> = open.iter().map(|l| l.name.as_str()).collect();
    let thread_names: Vec<&str> = threads.iter().map(String::as_str).collect();
    let mut header = TraceHeader::for_this_host(&names, &thread_names);
    header.hops = plan.hops.clone();
    header.mark_ns = mark_ns();
    #[cfg(feature = "tracing")]
    crate::spans::declare_hops(plan, lanes, &mut header);
    header.counters = counters;
    header.readings = keys.names();
    header.run = meta;
    let settings = [
        ("ops_per_block", plan.ops_per_block.to_string()),
        ("samples", plan.samples.to_string()),
        ("passes", plan.passes.to_string()),
        ("warmup_blocks", plan.warmup_blocks.to_string()),
        ("order", format!("{:?}", plan.order)),
        ("caller_gap_ns", plan.caller_gap_ns.to_string()),
        ("perf_counters", if plan.perf_counters { "on" } else { "off" }.to_owned()),
        ("placement", plan.placement.to_string()),
        ("block_deadline_s", plan.block_deadline.as_secs_f64().to_string()),
        ("settle_us", plan.settle.as_micros().to_string()),
    ];
    for (key, value) in settings {
        header.run.entry(key.to_owned()).or_insert(value);
    }
    for lane in lanes {
        for (name, build) in lane.trace_lanes() {
            header.lane_info.push(LaneInfo { role: lane.role, variant: build.variant, code: lane.name.clone() });
            let placement = lane.placement.unwrap_or(plan.placement);
            let described = lane.description.clone().unwrap_or_else(|| format!("{} ({})", lane.name, lane.role));
            let description = match build.variant {
                Some(hopscope_probe::Variant::Clean) => format!("{described} · clean build"),
                Some(hopscope_probe::Variant::Probed) => format!("{described} · probed build"),
                None => described,
            };
            header.run.entry(format!("lane.{name}")).or_insert(description);
            header.run.insert(format!("lane.{name}.role"), lane.role.to_string());
            header.run.insert(format!("lane.{name}.placement"), placement.to_string());
            let probed = match build.variant {
                Some(v) => (v == hopscope_probe::Variant::Probed).to_string(),
                None => "as built".to_owned(),
            };
            header.run.insert(format!("lane.{name}.probed"), probed);
        }
    }
    header
}

/// Idle for `settle` before a block, so the threads of the lane before it
/// go quiet (see [`Plan::settle`]).
fn settle(settle: std::time::Duration) {
    if !settle.is_zero() {
        std::thread::sleep(settle);
    }
}
