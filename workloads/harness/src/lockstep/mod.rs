//! Two builds in lockstep: the coordinator side of [`crate::runner::follow`].
//!
//! `hopscope ab --builds A B` starts build A twice (arm `a` and the inert
//! `control`) and build B once (arm `b`), each as a follower process, and
//! drives their blocks one at a time in a balanced order, so consecutive
//! blocks of A and B are milliseconds apart and whatever the host does
//! falls on both. The blocks go into one A/B trace (arms `a`, `b`,
//! `control`, each named after its build's lane) that the A/B analysis
//! judges as it judges two lanes of one process.
//!
//! Every build measures with the same clock counter (the TSC, or the OS's
//! monotonic clock): their raw ticks mean the same, so the trace keeps them
//! as read and converts them with one calibration, build A's. A follower
//! whose clock source, hops, thread roles or readings differ from A's is
//! refused before any block runs.

mod copies;
mod error;
mod follower;
mod order;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hopscope_analyze::generations;
use hopscope_probe::{ArmFact, LaneFact, LaneInfo, Role, RunFact, RunFacts, TraceHeader, TraceWriter};

pub use copies::FRESH_COPY_PER_PASS;
use copies::PassCopies;
pub use error::LockstepError;
use follower::Follower;
pub use follower::Launch;
pub use order::{round, start_order};

/// The arms, in the order their followers start: each one's role and the
/// prefix of its lane's name (`a/<lane>`).
pub const ARMS: [(Role, &str); 3] = [(Role::ArmA, "a"), (Role::ArmB, "b"), (Role::Control, "control")];

/// What to run: sizes of the run and the lane each build runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Lockstep {
    /// Measured blocks per arm per pass.
    pub samples: u32,
    /// Passes: even ones run `a` before `b` in every round, odd ones `b`
    /// before `a`.
    pub passes: u32,
    /// Unrecorded warm-up blocks per arm.
    pub warmup: u32,
    /// How long one block may take to come back.
    pub deadline: Duration,
    /// The trace lane each build runs (a name the tables print:
    /// `writer`, `writer-probed`); `None`: the subject's probed build, or
    /// the subject.
    pub lane: Option<String>,
    /// Lanes a later run of the same builds will ask for (`--minus`): a
    /// build that does not declare one is refused at its handshake, before
    /// anything is measured.
    pub also: Vec<String>,
}

/// What a lockstep run wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockstepRun {
    /// The combined trace.
    pub trace: PathBuf,
    /// Measured blocks in it.
    pub blocks: u64,
    /// What stopped the run early, in one line (the blocks before are kept).
    pub stopped: Option<String>,
}

/// Run `launches` (arms `a`, `b`, `control`, in that order) in lockstep
/// under `plan`, writing `trace.hop` and the followers' logs
/// (`followers/<pass>/`) under `dir`; `meta` goes into the trace header.
/// A pass starts the set of its layout ([`generations::layout_of`]): one
/// set per layout when each side was built several times (arms a and b
/// layout `k`, the control build A's layout `k + 1`), else one set.
///
/// Every pass is a generation: three fresh processes, started, warmed up,
/// run for the pass's rounds and stopped. Two processes of one build differ
/// by more than most changes (measured: 100–200 ns per write of kv-writer's
/// 7 µs, mostly in SQLite's slice, from where each process's memory and
/// database file sit), and that difference is fixed for a process's life:
/// judged within one set of processes, it is taken for the builds'. With a
/// new set per pass, the process is the unit a verdict counts, and what one
/// process's layout does falls on each build alike across passes. Each
/// runs from a fresh copy of its program file (the `copies` module): one file's
/// code sits at the same physical pages for every process started from it.
pub fn run(
    launches: &[[Launch; 3]],
    plan: &Lockstep,
    dir: &Path,
    meta: BTreeMap<String, String>,
) -> Result<LockstepRun, LockstepError> {
    let logs = dir.join("followers");
    let path = dir.join("trace.hop");
    let trace_error = |source| LockstepError::Trace { path: path.clone(), source };
    // The first generation's header: what every later one must match.
    let mut first: Option<(TraceHeader, Vec<u16>, TraceWriter<std::io::BufWriter<std::fs::File>>)> = None;
    let mut written = 0u64;
    let mut stopped = None;
    let mut held_copies: Option<PassCopies> = None;
    if launches.is_empty() {
        return Err(LockstepError::Mismatch("no builds to run".to_owned()));
    }
    for pass in 0..plan.passes {
        if let Some(signal) = crate::interrupt::requested() {
            stopped = Some(format!("interrupted by {signal}"));
            break;
        }
        let set = &launches[generations::layout_of(pass, launches.len())];
        let pass_logs = logs.join(pass.to_string());
        // The last pass's copies are removed only once this pass's exist,
        // so these do not simply take the pages those free.
        let copies = PassCopies::make(set, start_order(pass), &pass_logs.join("programs"));
        let copies = match copies {
            Ok(copies) => held_copies.insert(copies),
            Err(err) if first.is_some() => {
                stopped = Some(format!("pass {pass}: {err}"));
                break;
            }
            Err(err) => return Err(err),
        };
        let followers = match start(pass, copies.launches(), &pass_logs, plan.deadline) {
            Ok(followers) => followers,
            Err(err) if first.is_some() => {
                stopped = Some(format!("pass {pass}: {err}"));
                break;
            }
            Err(err) => return Err(err),
        };
        let lanes = match &first {
            None => {
                let lanes = chosen_lanes(&followers, plan.lane.as_deref())?;
                declares_all(&followers, &plan.also)?;
                let planned = u64::from(plan.passes) * u64::from(plan.samples) * ARMS.len() as u64;
                let header = merged(&followers, set, &lanes, meta.clone(), planned, plan.passes);
                let trace = TraceWriter::create(&path, header).map_err(trace_error)?;
                first = Some((followers[0].header.clone(), lanes.clone(), trace));
                lanes
            }
            Some((header, lanes, _)) => match same_generation(header, lanes, &followers) {
                Ok(()) => lanes.clone(),
                Err(why) => {
                    stopped = Some(format!("pass {pass}: {why}"));
                    stop_all(followers, &mut stopped);
                    break;
                }
            },
        };
        let Some((_, _, trace)) = first.as_mut() else { break };
        let mut followers = followers;
        let ended = generation(pass, plan, &lanes, &mut followers, trace, &mut written).map_err(trace_error)?;
        if ended.is_some() {
            stopped = ended;
        }
        stop_all(followers, &mut stopped);
        if stopped.is_some() {
            break;
        }
    }
    if let Some((_, _, trace)) = first {
        trace.finish().map_err(trace_error)?;
    }
    Ok(LockstepRun { trace: path, blocks: written, stopped })
}

/// The callers at once of the lane `wanted` picks in `launch`'s program
/// (1 when it does not say): the program started once, its declaration
/// read, and stopped, its logs under `logs`. A run sizes its blocks by
/// it before any block runs, as a decomposition sizes a lane of several
/// callers.
pub fn callers_of(
    launch: &Launch,
    wanted: Option<&str>,
    logs: &Path,
    deadline: Duration,
) -> Result<usize, LockstepError> {
    let follower = Follower::start(launch.clone(), logs, deadline)?;
    let header = follower.header.clone();
    follower.stop()?;
    let lane = pick(&header, wanted).map_err(LockstepError::Mismatch)?;
    let name = header.lanes.get(usize::from(lane)).cloned().unwrap_or_default();
    Ok(header.run.parsed(&RunFact::Lane(name, hopscope_probe::LaneFact::Callers)).unwrap_or(1))
}

/// Start the three followers of pass `pass`, one after another in the
/// pass's [`start_order`], their logs under `logs`; returned in arm order.
/// One after another, not side by side: started together, a pass's
/// `b − a` spread more (SD 120 ns per write against 82 over kv-writer
/// decisions, though an hour apart and not judged side by side), and what
/// starting saves is small once a follower skips the span machinery's
/// set-up measurement. On a failure the followers started so far are
/// stopped as they drop.
fn start(pass: u32, launches: &[Launch; 3], logs: &Path, deadline: Duration) -> Result<Vec<Follower>, LockstepError> {
    let mut started: [Option<Follower>; 3] = [None, None, None];
    for arm in start_order(pass) {
        started[arm] = Some(Follower::start(launches[arm].clone(), logs, deadline)?);
    }
    Ok(started.into_iter().flatten().collect())
}

/// Stop every follower, side by side; the first failure in arm order
/// becomes the run's stop line unless one is already set.
fn stop_all(followers: Vec<Follower>, stopped: &mut Option<String>) {
    let ended: Vec<Result<(), LockstepError>> = std::thread::scope(|s| {
        let threads: Vec<_> =
            followers.into_iter().map(|f| (f.launch.build.clone(), s.spawn(move || f.stop()))).collect();
        threads
            .into_iter()
            .map(|(build, thread)| {
                thread
                    .join()
                    .unwrap_or_else(|_| Err(LockstepError::Follower { build, what: "its stop panicked".to_owned() }))
            })
            .collect()
    });
    for err in ended.into_iter().filter_map(Result::err) {
        stopped.get_or_insert_with(|| err.to_string());
    }
}

/// Run pass `pass`: its warm-up rounds (unrecorded), then its measured
/// rounds in the balanced order, each block into `trace`. `Some(line)`
/// when a follower failed or a signal came: the blocks before are kept.
fn generation(
    pass: u32,
    plan: &Lockstep,
    lanes: &[u16],
    followers: &mut [Follower],
    trace: &mut TraceWriter<std::io::BufWriter<std::fs::File>>,
    written: &mut u64,
) -> Result<Option<String>, hopscope_probe::TraceError> {
    let warmups =
        (0..plan.warmup).flat_map(|warm| round(pass, warm, plan.warmup).into_iter().map(move |arm| (arm, None, warm)));
    let measured = (0..plan.samples)
        .flat_map(|sample| round(pass, sample, plan.samples).into_iter().map(move |arm| (arm, Some(pass), sample)));
    for (arm, measured_pass, sample) in warmups.chain(measured) {
        if let Some(signal) = crate::interrupt::requested() {
            return Ok(Some(format!("interrupted by {signal}")));
        }
        let command = match measured_pass {
            None => format!("warmup {} {sample}", lanes[arm]),
            Some(pass) => format!("block {} {pass} {sample}", lanes[arm]),
        };
        let block = match followers[arm].block(&command) {
            Ok(block) => block,
            Err(err) => return Ok(Some(format!("pass {pass}: {err}"))),
        };
        let Some(pass) = measured_pass else { continue };
        if block.lane != lanes[arm] {
            return Ok(Some(format!("{}: answered `{command}` with lane {}", followers[arm].launch.build, block.lane)));
        }
        let block = hopscope_probe::Block { lane: arm as u16, pass, sample, ..block };
        trace.write_block(&block)?;
        *written += 1;
    }
    Ok(None)
}

/// Refuse a later generation whose processes declare other than the
/// first's (a program rebuilt under the run, say): the same checks as
/// between builds, against build a's first process.
fn same_generation(first: &TraceHeader, lanes: &[u16], followers: &[Follower]) -> Result<(), String> {
    let start = (first, "its first process");
    for (follower, &lane) in followers.iter().zip(lanes) {
        let now = (&follower.header, follower.launch.build.as_str());
        if follower.header.lanes.get(usize::from(lane)) != first.lanes.get(usize::from(lanes[0])) {
            return Err(format!("{} now runs other lanes than at the start", follower.launch.build));
        }
        same_shape(start, lanes[0], now, lane)?;
    }
    Ok(())
}

/// The trace lane each follower runs, the same in every build.
fn chosen_lanes(followers: &[Follower], wanted: Option<&str>) -> Result<Vec<u16>, LockstepError> {
    let first = &followers[0];
    let lane = pick(&first.header, wanted)
        .map_err(|what| LockstepError::Follower { build: first.launch.build.clone(), what })?;
    let name = &first.header.lanes[usize::from(lane)];
    let mut lanes = Vec::new();
    for follower in followers {
        let Some(index) = follower.header.lane(name) else {
            return Err(LockstepError::Mismatch(format!(
                "{} has no lane `{name}` (it runs {})",
                follower.launch.build,
                follower.header.lanes.join(", ")
            )));
        };
        let (a, b) = ((&first.header, first.launch.build.as_str()), (&follower.header, follower.launch.build.as_str()));
        same_shape(a, lane, b, index).map_err(LockstepError::Mismatch)?;
        lanes.push(index);
    }
    Ok(lanes)
}

/// Refuse a follower whose program does not declare every lane of `also`
/// (a follower of a harness that does not list its lanes is let through:
/// the later run names what it lacks).
fn declares_all(followers: &[Follower], also: &[String]) -> Result<(), LockstepError> {
    for follower in followers {
        let Some(listed) = follower.header.run.fact(&RunFact::DeclaredLanes) else { continue };
        let declared: Vec<String> = serde_json::from_str(listed).unwrap_or_default();
        if let Some(missing) = also.iter().find(|lane| !declared.contains(lane)) {
            return Err(LockstepError::Mismatch(format!(
                "{} has no lane `{missing}` (declared: {})",
                follower.launch.build,
                declared.join(", ")
            )));
        }
    }
    Ok(())
}

/// The lane `wanted` names, or the subject's probed build, or the subject.
fn pick(header: &TraceHeader, wanted: Option<&str>) -> Result<u16, String> {
    if let Some(name) = wanted {
        return header.lane(name).ok_or_else(|| format!("no lane `{name}` (it runs {})", header.lanes.join(", ")));
    }
    let subject = |probed: bool| {
        (0..header.lanes.len() as u16).find(|&i| {
            header.lane_info(i).is_some_and(|l| {
                l.role == Role::Subject && (!probed || l.variant == Some(hopscope_probe::Variant::Probed))
            })
        })
    };
    subject(true).or_else(|| subject(false)).ok_or_else(|| {
        format!("declares no subject lane: name the lane to compare with --lane (it runs {})", header.lanes.join(", "))
    })
}

/// Refuse two builds whose blocks cannot share one trace.
fn same_shape(a: (&TraceHeader, &str), lane_a: u16, b: (&TraceHeader, &str), lane_b: u16) -> Result<(), String> {
    let ((ha, build_a), (hb, build_b)) = (a, b);
    let differ = |what: &str, x: String, y: String| Err(format!("{build_b} {what} {y}, {build_a} {x}"));
    if ha.clock.source != hb.clock.source {
        return differ("reads the clock", ha.clock.source.to_string(), hb.clock.source.to_string());
    }
    if ha.hops != hb.hops {
        let names = |h: &TraceHeader| h.hops.iter().map(|(_, d)| d.name.clone()).collect::<Vec<_>>().join(", ");
        return differ("declares hops", names(ha), names(hb));
    }
    if ha.threads != hb.threads {
        return differ("declares thread roles", ha.threads.join(", "), hb.threads.join(", "));
    }
    if ha.readings != hb.readings {
        return differ("takes readings", ha.readings.join(", "), hb.readings.join(", "));
    }
    let info = |h: &TraceHeader, lane: u16| {
        h.lane_info(lane).map_or_else(String::new, |l| format!("{} ({:?} build)", l.role, l.variant))
    };
    if info(ha, lane_a) != info(hb, lane_b) {
        return differ("runs the lane as", info(ha, lane_a), info(hb, lane_b));
    }
    Ok(())
}

/// The combined trace's header: build A's, with the three arms as its
/// lanes and what each build is among its run facts (`builds`: the
/// pass's launches as given, each naming its build's own file).
fn merged(
    followers: &[Follower],
    builds: &[Launch; 3],
    lanes: &[u16],
    meta: BTreeMap<String, String>,
    planned: u64,
    passes: u32,
) -> TraceHeader {
    let first = &followers[0].header;
    let lane_name = first.lanes[usize::from(lanes[0])].clone();
    let mut header = first.clone();
    // Not build a's `commit` either: that is its working directory's HEAD,
    // not what it was built from (a receipt read it as build a's commit).
    header.run.retain(|k, _| {
        !matches!(
            k.parse(),
            Ok(RunFact::LaneDescription(_)
                | RunFact::Lane(..)
                | RunFact::FollowProtocol
                | RunFact::FollowHarness
                | RunFact::Commit)
        )
    });
    header.lanes.clear();
    header.lane_info.clear();
    for ((&(role, arm), built), (follower, &lane)) in ARMS.iter().zip(builds).zip(followers.iter().zip(lanes)) {
        let name = format!("{arm}/{lane_name}");
        let info = follower.header.lane_info(lane);
        header.lane_info.push(LaneInfo {
            role,
            variant: info.as_ref().and_then(|l| l.variant),
            code: info.map_or_else(|| lane_name.clone(), |l| l.code),
            reference: false,
            baseline: false,
        });
        let run = &follower.header.run;
        let described = run.fact(&RunFact::LaneDescription(lane_name.clone())).unwrap_or_default();
        header.run.record(RunFact::LaneDescription(name.clone()), format!("{}: {described}", follower.launch.build));
        for fact in LaneFact::ALL {
            if let Some(value) = run.fact(&RunFact::Lane(lane_name.clone(), fact)) {
                header.run.record(RunFact::Lane(name.clone(), fact), value);
            }
        }
        let arm_fact = |fact| RunFact::LockstepArm((*arm).to_owned(), fact);
        // The build's own file, not the pass's copy it ran from.
        let facts = [(ArmFact::Program, Some(built.program.display().to_string()))]
            .into_iter()
            // Not the follower's `commit`: that is its working directory's
            // HEAD, the coordinator's, not the commit the program was built
            // from (`--commits` records that itself).
            .chain(
                [(ArmFact::Build, RunFact::Build), (ArmFact::HopscopeVersion, RunFact::HopscopeVersion)]
                    .map(|(arm_fact, fact)| (arm_fact, run.fact(&fact).map(str::to_owned))),
            );
        for (fact, value) in facts {
            if let Some(value) = value {
                header.run.record(arm_fact(fact), value);
            }
        }
        header.run.record(arm_fact(ArmFact::NsPerTick), follower.header.clock.ns_per_tick.to_string());
        header.lanes.push(name);
    }
    header.run.record(RunFact::LockstepLane, lane_name);
    header.run.record(
        RunFact::LockstepClock,
        format!("every build's raw {} ticks, converted with build a's calibration", first.clock.source),
    );
    header.run.record(RunFact::PlannedBlocks, planned.to_string());
    // The analysis counts passes, not rounds, as a verdict's replicates.
    header.run.record(RunFact::LockstepProcesses, generations::FRESH_PER_PASS);
    header.run.record(RunFact::LockstepFiles, FRESH_COPY_PER_PASS);
    header.run.record(RunFact::LockstepPasses, passes.to_string());
    header.run.extend(meta);
    header
}
