//! `hopscope ab --builds BIN_A BIN_B`: judge a code change by running two
//! builds of a harness program in lockstep ([`hopscope_harness::lockstep`])
//! under a rule fixed before the run, and write the A/B receipt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hopscope_analyze::Partial;
use hopscope_analyze::experiment::{self, Experiment};
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::warning::Warning;
use hopscope_harness::lockstep::{self, Launch, Lockstep};
use hopscope_harness::{ExperimentSpec, rundir};
use hopscope_probe::{ArmFact, RunFact, RunFacts};

/// The spec a lockstep run is held to when none is given: every block
/// pair counts, an effect must show in both orders with its 99% CI clear
/// of zero (at 95% a gate raises a false alarm on one clean merge in
/// twenty by design; in 40 null kv-writer decisions it raised 4, 99% would
/// have raised 2), and the second process of build A (the control) may move by at
/// most 2% — beyond that the processes differ by more than any change. A
/// slice is flagged when its CI clears 0.5% of the slice (and 10 ns): in
/// 20 null kv-writer decisions its slices moved by at most ±5 ns (2 µs
/// wake slices) and ±31 ns (11 µs SQLite), while the default 1% hid a
/// 27 ns change of a 2 µs slice in 4 of 13 decisions. 200 passes: at
/// 100 a 51 ns change of kv-writer cleared the lane rule in 13 of 20
/// decisions (its 99% CI ±36 ns), at 200 a 57 ns one in 20 of 20, each
/// decision 39–45 s on a 2-vCPU VM.
pub(crate) const DEFAULT_SPEC: &str = r#"# The rule `hopscope ab --builds` used: no spec was given.
name = "builds"
hypothesis = "Build B changes how long a write takes against build A (reproduced: a change, its direction said)."

[run]
samples = 4
pairs = 100
warmup = 1
placement = "same-core"
probed = true

[a]

[b]

[rule]
min_effect_pct = 0.0
min_effect_us = 0.02
both_orders = true
max_control_drift_pct = 2.0
max_spread_ratio = 4.0
min_slice_effect_pct = 0.5
confidence_pct = 99
"#;

/// How hopscope built builds a and b (`--commits`).
#[derive(Debug, Clone)]
pub(crate) struct Origins {
    /// How lines and the receipt name each build (its revision, and b's
    /// command when it has one of its own).
    pub(crate) names: [String; 2],
    /// The commit each was built from.
    pub(crate) commits: [String; 2],
    /// The command that built each.
    pub(crate) commands: [String; 2],
}

/// What `hopscope ab --builds` was asked.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// Build a's programs and build b's, one per layout (the same number
    /// of each; one without `--layouts`).
    pub(crate) programs: [Vec<PathBuf>; 2],
    pub(crate) spec: Option<PathBuf>,
    pub(crate) lane: Option<String>,
    pub(crate) out: Option<PathBuf>,
    pub(crate) json: bool,
    /// Where builds a and b came from, when hopscope built them
    /// (`--commits`); `None`: programs the user gave, named by their paths.
    pub(crate) origins: Option<Origins>,
    /// The lane `--minus` will run after this one: checked at the first
    /// handshake.
    pub(crate) minus: Option<String>,
    /// How long a follower may take to answer one block (`--deadline`).
    pub(crate) deadline: Option<std::time::Duration>,
}

impl Request {
    /// How build `arm` (0: a, 1: b) is named.
    fn name(&self, arm: usize) -> String {
        match &self.origins {
            Some(origins) => origins.names[arm].clone(),
            None => self.programs[arm].first().map(|p| p.display().to_string()).unwrap_or_default(),
        }
    }

    /// Builds of each side, one per layout.
    fn layouts(&self) -> usize {
        self.programs[0].len()
    }

    /// The three followers of each layout's passes: layout `k` of each
    /// side as arms a and b, build A's next layout as the control (so the
    /// control measures what layout alone moves; see
    /// [`hopscope_analyze::generations`]).
    fn launches(&self, args: &[String]) -> Vec<[Launch; 3]> {
        let n = self.layouts();
        let launch = |arm: &str, side: usize, k: usize| {
            let layout = if n > 1 { format!(", layout {}", k + 1) } else { String::new() };
            Launch {
                arm: arm.to_owned(),
                build: format!("build {arm} ({}{layout})", self.name(side)),
                program: self.programs[side][k].clone(),
                args: args.to_vec(),
            }
        };
        (0..n).map(|k| [launch("a", 0, k), launch("b", 1, k), launch("control", 0, (k + 1) % n)]).collect()
    }
}

/// The words before the follower's flags: `hopscope` itself follows as
/// `hopscope decompose`; a harness program takes its flags directly.
fn subcommand(program: &Path) -> Vec<String> {
    let hopscope = program.file_name().is_some_and(|f| f == "hopscope");
    if hopscope { vec!["decompose".to_owned()] } else { Vec::new() }
}

/// Run and judge; the run directory, the experiment and whether the run
/// completed (`None`: nothing was measured).
pub(crate) fn run(request: &Request) -> anyhow::Result<Option<(PathBuf, Experiment, bool)>> {
    hopscope_harness::interrupt::install().context("cannot handle signals")?;
    let (spec, lane) = checked(request)?;
    let dir = rundir::create(request.out.as_deref(), "ab-builds", "latest-ab")?;
    if request.spec.is_none() {
        let path = dir.join("spec.toml");
        std::fs::write(&path, DEFAULT_SPEC).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let planned = Planned::of(request, &spec, lane, &dir)?;
    let meta = run_facts(request, &spec, &planned);
    if !request.json {
        announce(request, &spec, &planned.lockstep, &dir);
    }
    run_and_judge(request, &spec, &planned, &dir, meta)
}

/// Everything the user gave, checked before a process starts: the spec
/// (or the default rule), the lane both builds run, and each program.
fn checked(request: &Request) -> anyhow::Result<(ExperimentSpec, Option<String>)> {
    let spec = match &request.spec {
        Some(path) => ExperimentSpec::load(path)?,
        None => ExperimentSpec::parse(Path::new("(default rule of ab --builds)"), DEFAULT_SPEC)?,
    };
    let lane = lane(&spec, request.lane.as_deref())?;
    if request.programs[0].is_empty() || request.programs[0].len() != request.programs[1].len() {
        anyhow::bail!("as many builds of each side, at least one");
    }
    for (arm, programs) in ["a", "b"].iter().zip(&request.programs) {
        for program in programs {
            check_program(arm, program)?;
        }
    }
    Ok((spec, lane))
}

/// A lockstep run planned: its passes and rounds, the followers each
/// layout's passes launch, and the operations per block they were given.
struct Planned {
    lockstep: Lockstep,
    launches: Vec<[Launch; 3]>,
    ops: u64,
}

impl Planned {
    /// The plan of `request` under `spec`: every layout in both orders,
    /// the followers' flags, and the operations per block (build A's
    /// program asked for its callers, into `dir`, when the spec sizes
    /// blocks per caller).
    fn of(request: &Request, spec: &ExperimentSpec, lane: Option<String>, dir: &Path) -> anyhow::Result<Planned> {
        let layouts = u32::try_from(request.layouts()).context("too many layouts")?;
        let lockstep = Lockstep {
            samples: spec.plan.samples,
            // Every layout runs in both orders: passes come in 2 × layouts.
            passes: spec.plan.passes.div_ceil(2 * layouts) * 2 * layouts,
            warmup: spec.plan.warmup_blocks,
            deadline: request.deadline.unwrap_or(spec.plan.block_deadline),
            lane,
            also: request.minus.iter().cloned().collect(),
        };
        let mut args = follower_args(&request.programs[0][0], spec, &lockstep);
        let lane = lockstep.lane.as_deref();
        let ops = block_ops(spec, &request.launches(&args), lane, dir, lockstep.deadline)?;
        set_ops(&mut args, ops);
        Ok(Planned { launches: request.launches(&args), lockstep, ops })
    }
}

/// The flags every follower runs with: the spec's block size and
/// placement, the block deadline, and the lane when one is named.
fn follower_args(program: &Path, spec: &ExperimentSpec, lockstep: &Lockstep) -> Vec<String> {
    let mut args = subcommand(program);
    args.extend([
        "--ops".to_owned(),
        spec.plan.ops_per_block.to_string(),
        "--placement".to_owned(),
        spec.plan.placement.to_string(),
        "--deadline".to_owned(),
        lockstep.deadline.as_secs_f64().to_string(),
    ]);
    if let Some(lane) = &lockstep.lane {
        args.extend(["--lanes".to_owned(), lane.clone()]);
    }
    args
}

/// The facts the trace's header records: the spec's, the command, the
/// lockstep plan's sizes, where the builds came from, and their layouts.
fn run_facts(request: &Request, spec: &ExperimentSpec, planned: &Planned) -> BTreeMap<String, String> {
    let mut meta = spec.meta();
    meta.record(RunFact::Command, rundir::command_line());
    meta.record(RunFact::Lockstep, "builds");
    // The run's sizes are the lockstep plan's, not a follower's own defaults.
    for (fact, value) in [
        (RunFact::OpsPerBlock, planned.ops.to_string()),
        (RunFact::Samples, spec.plan.samples.to_string()),
        (RunFact::Passes, planned.lockstep.passes.to_string()),
        (RunFact::WarmupBlocks, spec.plan.warmup_blocks.to_string()),
    ] {
        meta.record(fact, value);
    }
    if let Some(origins) = &request.origins {
        for (k, arm) in ["a", "b"].iter().enumerate() {
            meta.record(RunFact::LockstepArm((*arm).to_owned(), ArmFact::Commit), origins.commits[k].clone());
            meta.record(RunFact::LockstepArm((*arm).to_owned(), ArmFact::Build), origins.commands[k].clone());
        }
    }
    if request.layouts() > 1 {
        meta.record(RunFact::LockstepLayouts, request.layouts().to_string());
        meta.record(RunFact::LockstepLayoutMethod, crate::commits::LAYOUT_METHOD);
        for (arm, programs) in ["a", "b"].iter().zip(&request.programs) {
            for (k, program) in programs.iter().enumerate() {
                meta.record(RunFact::LockstepLayout((*arm).to_owned(), k + 1), program.display().to_string());
            }
        }
    }
    meta
}

/// The line a run starts with: which builds, how many passes and rounds,
/// and where.
fn announce(request: &Request, spec: &ExperimentSpec, lockstep: &Lockstep, dir: &Path) {
    let each = match request.layouts() {
        1 => String::new(),
        n => format!(", {n} layouts of each"),
    };
    eprintln!(
        "{}: {} against {} in lockstep{each}, {} passes × {} rounds, into {}",
        spec.name,
        request.name(1),
        request.name(0),
        lockstep.passes,
        lockstep.samples,
        dir.display()
    );
}

/// Run the plan in lockstep, judge the trace under the spec's rule, write
/// the results into `dir` and print them (`None`: nothing was measured).
fn run_and_judge(
    request: &Request,
    spec: &ExperimentSpec,
    planned: &Planned,
    dir: &Path,
    meta: BTreeMap<String, String>,
) -> anyhow::Result<Option<(PathBuf, Experiment, bool)>> {
    let run = lockstep::run(&planned.launches, &planned.lockstep, dir, meta)?;
    if let Some(line) = &run.stopped {
        eprintln!("hopscope: {line}");
    }
    if run.blocks == 0 {
        return Ok(None);
    }
    // Streamed: a long lockstep run's memory is one block at a time.
    let mut e = experiment::judge_file(&run.trace, &spec.rule)
        .with_context(|| format!("cannot read back {}", run.trace.display()))?;
    if let Some(line) = &run.stopped {
        let partial = Partial::stopped(run.blocks, line);
        e.warnings.insert(0, Recorded::Typed(Warning::Partial(partial)));
    }
    let written = hopscope_reports::write_experiment(dir, &e)
        .with_context(|| format!("cannot write the results in {}", dir.display()))?;
    if !request.json {
        print!("{}", hopscope_reports::terminal::experiment(&e));
        print!("\n{written}");
    }
    Ok(Some((dir.to_path_buf(), e, run.stopped.is_none())))
}

/// Operations per block: the spec's `ops` when it gives them; else the
/// default grown so each of the lane's callers gets its share (build A's
/// program asked once, before the run), as a decomposition sizes a lane
/// of several callers — 200 ops for 3 callers gave 66.7 each, and the
/// queue's filling and draining weighed on every block.
fn block_ops(
    spec: &ExperimentSpec,
    launches: &[[Launch; 3]],
    lane: Option<&str>,
    dir: &Path,
    deadline: std::time::Duration,
) -> anyhow::Result<u64> {
    if spec.plan.ops_per_caller.is_none() {
        return Ok(spec.plan.ops_per_block);
    }
    let Some(first) = launches.first() else { return Ok(spec.plan.ops_per_block) };
    let logs = dir.join("followers").join("sizing");
    let callers = lockstep::callers_of(&first[0], lane, &logs, deadline)?;
    Ok(spec.plan.ops_for(callers))
}

/// Give the followers' `--ops` the value `ops`.
fn set_ops(args: &mut [String], ops: u64) {
    if let Some(k) = args.iter().position(|a| a == "--ops")
        && let Some(value) = args.get_mut(k + 1)
    {
        *value = ops.to_string();
    }
}

/// The lane both builds run: `--lane`, or the one the spec's arms name
/// (the same in both), or the default (`None`).
pub(crate) fn lane(spec: &ExperimentSpec, flag: Option<&str>) -> anyhow::Result<Option<String>> {
    let mut named = Vec::new();
    for arm in 0..spec.arms.len() {
        named.extend(spec.named_lane(arm)?.map(str::to_owned));
    }
    named.dedup();
    if named.len() > 1 {
        anyhow::bail!(
            "spec {}: arms a and b name different lanes ({}): --builds runs the same lane of each build",
            spec.path.display(),
            named.join(", ")
        );
    }
    match (flag, named.pop()) {
        (Some(flag), Some(spec_lane)) if flag != spec_lane => {
            anyhow::bail!("--lane {flag}, but the spec's arms name `{spec_lane}`")
        }
        (Some(flag), _) => Ok(Some(flag.to_owned())),
        (None, lane) => Ok(lane),
    }
}

/// Refuse a program that is not there or cannot run, naming the build.
fn check_program(arm: &str, program: &Path) -> anyhow::Result<()> {
    let meta =
        std::fs::metadata(program).with_context(|| format!("build {arm}: no program at {}", program.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            anyhow::bail!("build {arm}: {} is not an executable file", program.display());
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(())
}
