//! `hopscope ab SPEC`: run a pre-registered A/B experiment on the reference
//! writer's knobs (or a peer) through the harness and give its verdict;
//! `hopscope ab SPEC --analyze DIR` re-judges an earlier run under the rule
//! it recorded, and says if the spec was edited since.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::ab_trace::AbTrace;
use hopscope_analyze::experiment::{self, Experiment};
use hopscope_analyze::net::Net;
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::warning::Warning;
use hopscope_harness::gate::{self, FailOn};
use hopscope_harness::{ExperimentSpec, Harness, RunArgs, sha256_hex};
use hopscope_probe::{RunFact, RunFacts};

use hopscope_workloads::LaneSpec;
use hopscope_workloads::experiments::ab_spec::AbSpec;

/// Flags of `hopscope ab`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The experiment spec (TOML), e.g. experiments/reply-persistent.toml;
    /// with --builds optional (its `[run]` sizes and `[rule]`; the default
    /// is written into the run directory).
    #[arg(required_unless_present_any = ["builds", "commits", "analyze"])]
    spec: Option<PathBuf>,
    /// Judge two builds of a harness program (yours, or hopscope itself)
    /// against each other, run in lockstep: BIN_A twice (arm a and the
    /// control), BIN_B once (arm b), block by block, interleaved in time.
    #[arg(long, num_args = 2, value_names = ["BIN_A", "BIN_B"], conflicts_with = "analyze")]
    builds: Option<Vec<PathBuf>>,
    /// Judge two revisions of the git repository you are in: each is built
    /// in a worktree of its own (cached under target/hopscope/builds/ by
    /// commit and build command), then judged as --builds judges.
    #[arg(long, num_args = 2, value_names = ["REV_A", "REV_B"], conflicts_with_all = ["analyze", "builds"])]
    commits: Option<Vec<String>>,
    /// With --commits: the build command, run by `sh -c` in each worktree
    /// with CARGO_TARGET_DIR set (default: `cargo build --release --locked
    /// --bin BIN`).
    #[arg(long, value_name = "CMD", requires = "commits")]
    build: Option<String>,
    /// With --commits: REV_B's own build command (default: --build's), to
    /// judge a compiler flag or profile setting, e.g. `--commits HEAD HEAD
    /// --build-b "CARGO_PROFILE_RELEASE_LTO=false cargo build --release"`.
    #[arg(long = "build-b", value_name = "CMD", requires = "commits")]
    build_b: Option<String>,
    /// With --commits: the program the build makes, a name under the target
    /// directory's release/ or a path below the target directory (default:
    /// the root package's name).
    #[arg(long, value_name = "NAME", requires = "commits")]
    bin: Option<String>,
    /// With --commits: build each revision N times (2–8), each with the
    /// program's functions in another link order (LLD's
    /// --shuffle-sections), run the layouts in turn and state how far
    /// builds of one commit differ by layout alone; a change no larger is
    /// not called.
    #[arg(long, value_name = "N", requires = "commits")]
    layouts: Option<u32>,
    /// With --builds or --commits: the lane both builds run (a name their
    /// tables print, e.g. `kv-writer-probed`); default: the subject's
    /// probed build.
    #[arg(long)]
    lane: Option<String>,
    /// With --builds or --commits: also run lane LANE in lockstep (into
    /// minus-LANE/ of the run directory) and judge --lane's change net of
    /// LANE's, e.g. `--lane writer --minus floor`: the library's own cost.
    /// Written to net.json and net.md; --fail-on then gates the net verdict.
    #[arg(long, value_name = "LANE")]
    minus: Option<String>,
    /// With --builds or --commits: seconds a follower may take to answer
    /// one block before it is stopped and the run with it (default 60).
    #[arg(long, value_name = "SECONDS")]
    deadline: Option<f64>,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not run: re-judge the trace in this run directory, under the
    /// rule it recorded (give SPEC too to be told if it was edited since).
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    analyze: Option<PathBuf>,
    /// Exit 3 when the verdict is that `b` is slower than `a` (reproduced),
    /// 5 when drift is suspected; with `any`, also 4 when `b` is faster.
    /// An inconclusive verdict exits 0.
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
    /// Print the result as JSON on stdout (`hopscope.ab-run/1`: the run
    /// directory and the experiment) instead of the summary.
    #[arg(long)]
    json: bool,
}

/// The JSON `--json` prints: where the run is, its experiment, and the
/// net change when `--minus` asked for one.
pub(crate) fn print_json(dir: &Path, experiment: &Experiment, net: Option<&Net>) -> anyhow::Result<()> {
    let mut out = serde_json::json!({ "schema": "hopscope.ab-run/1", "dir": dir, "experiment": experiment });
    if let Some(net) = net {
        out["net"] = serde_json::to_value(net).context("cannot write JSON")?;
    }
    println!("{}", serde_json::to_string_pretty(&out).context("cannot write JSON")?);
    Ok(())
}

/// The exit status of a lockstep run that stopped: a signal's (130, 143),
/// else 1, whatever its partial verdict (a gate must tell a broken run
/// from a regression).
fn stopped() -> ExitCode {
    ExitCode::from(hopscope_harness::interrupt::requested().map_or(1, |s| s.exit_status()))
}

/// An A/B verdict as a gate reads it: `b` against `a`.
fn gate(experiment: &Experiment, fail_on: Option<FailOn>) -> ExitCode {
    ExitCode::from(gate::ab_status(experiment, fail_on))
}

/// What `hopscope ab` will do, its flags checked against each other
/// before anything is built or run.
enum Plan {
    /// Judge two builds in lockstep (`--builds`, `--commits`), each block
    /// given `deadline` at most.
    Lockstep { builds: Builds, deadline: Option<std::time::Duration> },
    /// Re-judge the run in this directory under the rule it recorded
    /// (`--analyze`).
    Rejudge(PathBuf),
    /// Run the experiment spec's arms through the harness.
    Spec(PathBuf),
}

/// The two builds a lockstep run judges.
enum Builds {
    /// Programs the user gave (`--builds`), build a's first.
    Given([PathBuf; 2]),
    /// Revisions to build first (`--commits`).
    Commits(crate::commits::Commits),
}

impl Plan {
    /// The plan `args` ask for; a flag out of place or out of range is
    /// refused here, before anything runs.
    fn of(args: &Args) -> anyhow::Result<Plan> {
        refuse_misplaced(args)?;
        let deadline = deadline(args)?;
        let layouts = layouts(args)?;
        if let Some(builds) = &args.builds {
            let given = [program_path(&builds[0]), program_path(&builds[1])];
            return Ok(Plan::Lockstep { builds: Builds::Given(given), deadline });
        }
        if let Some(revisions) = &args.commits {
            let commits = crate::commits::Commits {
                revisions: [revisions[0].clone(), revisions[1].clone()],
                build: args.build.clone(),
                build_b: args.build_b.clone(),
                bin: args.bin.clone(),
                layouts,
            };
            return Ok(Plan::Lockstep { builds: Builds::Commits(commits), deadline });
        }
        if let Some(dir) = &args.analyze {
            return Ok(Plan::Rejudge(dir.clone()));
        }
        let spec = args.spec.clone().context("give an experiment spec, or --builds BIN_A BIN_B")?;
        Ok(Plan::Spec(spec))
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    match Plan::of(args)? {
        Plan::Lockstep { builds, deadline } => run_lockstep(args, builds, deadline),
        Plan::Rejudge(dir) => rejudge(args, &dir),
        Plan::Spec(path) => run_spec(args, &path),
    }
}

/// Refuse flags that belong to a mode not asked for: the build flags
/// without `--commits`, `--lane` and `--minus` without builds to run.
fn refuse_misplaced(args: &Args) -> anyhow::Result<()> {
    // Checked here as well as by clap: its `requires` is skipped when the
    // required flag conflicts with one present (clap issue 4520), and
    // `--builds` conflicts with `--commits`.
    if args.commits.is_none() {
        let given = [("--build", args.build.is_some()), ("--build-b", args.build_b.is_some())]
            .into_iter()
            .chain([("--bin", args.bin.is_some()), ("--layouts", args.layouts.is_some())])
            .find(|(_, given)| *given);
        if let Some((flag, _)) = given {
            anyhow::bail!("{flag} is for --commits: it says how hopscope builds the revisions");
        }
    }
    if args.lane.is_some() && args.builds.is_none() && args.commits.is_none() {
        anyhow::bail!("--lane picks the lane of --builds or --commits; an experiment spec's arms name their lanes");
    }
    if let Some(minus) = &args.minus {
        if args.builds.is_none() && args.commits.is_none() {
            anyhow::bail!("--minus is for --builds and --commits: it runs a second lane of both builds");
        }
        if args.layouts.is_some() {
            anyhow::bail!(
                "--minus with --layouts: a net change does not take off the layouts' spread yet; judge each lane with --layouts on its own"
            );
        }
        crate::net::check(minus, args.lane.as_deref(), args.spec.as_deref())?;
    }
    Ok(())
}

/// `--deadline` as a duration: seconds in (0, 3600], and only for builds
/// run in lockstep.
fn deadline(args: &Args) -> anyhow::Result<Option<std::time::Duration>> {
    Ok(match args.deadline {
        Some(s) if !(s > 0.0 && s <= 3_600.0) => {
            anyhow::bail!("--deadline {s}: a number of seconds above 0 and at most 3600")
        }
        Some(_) if args.builds.is_none() && args.commits.is_none() => {
            anyhow::bail!("--deadline is for --builds and --commits; a spec run takes its deadline from the harness")
        }
        Some(s) => Some(std::time::Duration::from_secs_f64(s)),
        None => None,
    })
}

/// Builds of each revision `--layouts` asks for: 2 to the most, else 1.
fn layouts(args: &Args) -> anyhow::Result<u32> {
    Ok(match args.layouts {
        Some(n) if !(2..=crate::commits::MAX_LAYOUTS).contains(&n) => {
            anyhow::bail!("--layouts {n}: between 2 and {} builds of each revision", crate::commits::MAX_LAYOUTS)
        }
        Some(n) => n,
        None => 1,
    })
}

/// Judge two builds in lockstep (and, with `--minus`, a second lane of
/// both, net of it); the exit status a gate reads.
fn run_lockstep(args: &Args, builds: Builds, deadline: Option<std::time::Duration>) -> anyhow::Result<ExitCode> {
    let (programs, origins) = match builds {
        Builds::Given([a, b]) => ([vec![a], vec![b]], None),
        Builds::Commits(commits) => build_commits(args, &commits)?,
    };
    let request = crate::builds::Request {
        programs,
        spec: args.spec.clone(),
        lane: args.lane.clone(),
        out: args.out.clone(),
        json: args.json,
        origins,
        minus: args.minus.clone(),
        deadline,
    };
    let experiment = crate::builds::run(&request)?;
    let Some((dir, e, true)) = experiment else { return Ok(stopped()) };
    let Some(minus) = &args.minus else {
        if args.json {
            print_json(&dir, &e, None)?;
        }
        return Ok(gate(&e, args.fail_on));
    };
    let Some(net) = crate::net::run(&request, &dir, &e, minus)? else { return Ok(stopped()) };
    if args.json {
        print_json(&dir, &e, Some(&net))?;
    }
    let status = if net.contended { gate::NO_VERDICT } else { gate::exit_status(net.verdict, args.fail_on) };
    Ok(ExitCode::from(status))
}

/// Build (or find cached) both revisions' programs, one per layout, and
/// say where each side came from.
fn build_commits(
    args: &Args,
    commits: &crate::commits::Commits,
) -> anyhow::Result<([Vec<PathBuf>; 2], Option<crate::builds::Origins>)> {
    // A spec that would be refused is refused before anything is built.
    if let Some(path) = &args.spec {
        hopscope_harness::ExperimentSpec::load(path)?;
    }
    hopscope_harness::interrupt::install().context("cannot handle signals")?;
    let [a, b] = crate::commits::programs(commits)?;
    // Two builds of one commit are told apart by b's command.
    let name_b = match &args.build_b {
        Some(command) => format!("{}, built by `{command}`", b.revision.label()),
        None => b.revision.label(),
    };
    let origins = crate::builds::Origins {
        names: [a.revision.label(), name_b],
        commits: [a.revision.commit, b.revision.commit],
        commands: [a.command, b.command],
    };
    Ok(([a.programs, b.programs], Some(origins)))
}

/// `--analyze DIR`: judge the run in `dir` again, write its results, and
/// print them.
fn rejudge(args: &Args, dir: &Path) -> anyhow::Result<ExitCode> {
    let current = args.spec.as_deref().map(AbSpec::load).transpose()?;
    let experiment = reanalyze(current.as_ref(), dir)?;
    let written = hopscope_reports::write_experiment(dir, &experiment)
        .with_context(|| format!("cannot write the results in {}", dir.display()))?;
    if args.json {
        print_json(dir, &experiment, None)?;
    } else {
        print!("{}", hopscope_reports::terminal::experiment(&experiment));
        print!("\n{written}");
    }
    Ok(gate(&experiment, args.fail_on))
}

/// Run the experiment spec at `spec_path`: its arms through the harness,
/// side by side in one process.
fn run_spec(args: &Args, spec_path: &Path) -> anyhow::Result<ExitCode> {
    // Parse before anything else: a bad spec must fail before measuring.
    let spec = AbSpec::load(spec_path)?;
    let (a, b) = spec.lanes()?;
    let run = RunArgs { out: args.out.clone(), ..RunArgs::default() };
    let mut harness = Harness::with_args(&format!("ab-{}", safe(&spec.experiment.name)), run);
    for (key, value) in hopscope_workloads::run_facts(spec.shape, hopscope_workloads::DbConfig::default()) {
        harness = harness.meta(&key.to_string(), value);
    }
    if let Some(hops) = LaneSpec::hops_for(&spec.arms) {
        harness = harness.hops(hops);
    }
    if args.json {
        harness = harness.quiet();
    }
    let outcome = harness.run_experiment(&spec.experiment, a, b)?;
    if let (true, Some(line)) = (args.json, &outcome.stopped) {
        eprintln!("hopscope: {line}");
    }
    match (&outcome.experiment, outcome.stopped.is_none()) {
        (Some(experiment), true) => {
            if args.json {
                print_json(&outcome.dir, experiment, None)?;
            }
            Ok(gate(experiment, args.fail_on))
        }
        _ => Ok(outcome.exit_code()),
    }
}

/// A build given as a bare name that is a file here is that file, made
/// absolute (`ab --builds old new` typed where both lie: a shell would look
/// them up on PATH, and say only that there is no such file); any other
/// bare name is looked up on PATH.
fn program_path(given: &Path) -> PathBuf {
    if given.components().count() == 1 && given.is_file() {
        std::path::absolute(given).unwrap_or_else(|_| given.to_path_buf())
    } else {
        given.to_path_buf()
    }
}

/// `name` as a directory-name fragment.
fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).take(64).collect()
}

/// Judge an existing run under the rule its trace recorded; warn if the
/// spec given (`current`) no longer matches it.
fn reanalyze(current: Option<&AbSpec>, dir: &Path) -> anyhow::Result<Experiment> {
    let path = dir.join("trace.hop");
    // Streamed: the header first, then the blocks one at a time.
    let trace = AbTrace::read_file(&path).with_context(|| format!("cannot analyze {}", path.display()))?;
    let recorded_text = trace
        .header
        .run
        .fact(&RunFact::SpecText)
        .with_context(|| format!("{} is not an A/B trace (it records no spec)", path.display()))?;
    let label = current.map_or_else(|| dir.join("spec.toml"), |c| c.experiment.path.clone());
    // Only the rule is judged by: a lockstep run's spec names no lanes.
    let recorded = ExperimentSpec::parse(&label, recorded_text).context("the spec recorded in the trace")?;
    let mut experiment = experiment::judge_trace(&trace, &recorded.rule);
    if let Some(current) = current
        && sha256_hex(recorded_text) != current.experiment.sha256
    {
        experiment.warnings.push(Recorded::Typed(Warning::SpecEdited {
            recorded: recorded.sha256[..12].to_owned(),
            path: current.experiment.path.display().to_string(),
            now: current.experiment.sha256[..12].to_owned(),
        }));
    }
    Ok(experiment)
}
