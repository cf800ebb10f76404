//! The front door: a program declares its lanes, [`Harness::run`] measures
//! them alternately in one process and writes what `hopscope decompose`
//! writes (`trace.hop`, `result.json`, `receipt.md`, `report.html`, charts),
//! or, with `--ab SPEC`, judges two of them as A/B arms.
//!
//! A lane that fails mid-run stops it cleanly: the blocks measured before
//! are analyzed and written as usual, with the failure as a warning, and
//! the run ends with one line naming the lane and the block and a non-zero
//! exit status.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use hopscope_analyze::Partial;
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::source::TraceFile;
use hopscope_analyze::warning::Warning;
use hopscope_probe::{RunFact, RunFacts};
use hopscope_reports::{ChartOptions, Finished, RunResult, Written};

use crate::args::RunArgs;
use crate::error::RunError;
use crate::interrupt::Signal;
use crate::lane::Lane;
pub use crate::outcome::{HarnessError, Outcome};
use crate::plan::Plan;
use crate::record::Recorder;
use crate::runner::{self, RunSummary};
use crate::spec::{ExperimentSpec, SpecError};
use crate::{ab, rundir, summary};

/// A program's lanes and how to run them: see the [crate docs](crate).
#[derive(Debug)]
pub struct Harness {
    name: String,
    args: RunArgs,
    plan: Option<Plan>,
    hops: Option<hopscope_probe::HopTable>,
    lanes: Vec<Lane>,
    meta: BTreeMap<String, String>,
    charts: ChartOptions,
    progress: Option<bool>,
    quiet: bool,
}

/// The command line of a harness program: [`RunArgs`].
#[derive(Debug, Parser)]
#[command(about = "Decompose this program's write path with hopscope's harness.")]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

/// The run the flags ask for, chosen once the plan and the lanes are
/// ready.
enum Job {
    /// `--follow SOCKET`: a coordinator's blocks.
    Follow(PathBuf),
    /// `--ab SPEC`: two lanes judged as A/B arms.
    Ab(PathBuf),
    /// `--what-if`: a causal profile of one lane.
    WhatIf,
    /// A decomposition of every lane.
    Decompose,
}

impl Harness {
    /// A harness for the program `name` (the run directory's prefix), with
    /// the careful plan and no flags.
    pub fn new(name: &str) -> Harness {
        Harness::with_args(name, RunArgs::default())
    }

    /// A harness configured by `args` (hopscope's own commands flatten
    /// [`RunArgs`] into theirs).
    pub fn with_args(name: &str, args: RunArgs) -> Harness {
        Harness {
            name: name.to_owned(),
            args,
            plan: None,
            hops: None,
            lanes: Vec::new(),
            meta: BTreeMap::new(),
            charts: ChartOptions::default(),
            progress: None,
            quiet: false,
        }
    }

    /// A harness configured by the process's command line (`--quick`,
    /// `--out`, `--placement`, `--samples`, `--ab`, ...; `--help` lists
    /// them). A bad flag is one line on stderr and exit status 2.
    pub fn from_args(name: &str) -> Harness {
        Harness::with_args(name, crate::args::parse_flags::<Cli>(name).run)
    }

    /// As [`Harness::from_args`], from `args` (the first is the program):
    /// for a program that takes flags of its own out of its command line
    /// first. `--help` prints and exits 0; a mistake is one line and exit
    /// status 2.
    pub fn from_args_of<I, T>(name: &str, args: I) -> Harness
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Harness::with_args(name, crate::args::parse_flags_from::<Cli, _, _>(name, args).run)
    }

    /// As [`Harness::from_args_of`], handing every parse outcome back,
    /// `--help` included (clap's `DisplayHelp`: print it with
    /// [`clap::Error::exit`]).
    pub fn try_from_args<I, T>(name: &str, args: I) -> Result<Harness, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Ok(Harness::with_args(name, Cli::try_parse_from(args)?.run))
    }

    /// Declare a lane. Lanes take turns block by block in the plan's order
    /// ([`crate::Order`]: balanced by default, so each lane follows every
    /// other equally often); the declaration order names them in reports.
    pub fn lane(mut self, lane: impl Into<Lane>) -> Harness {
        self.lanes.push(lane.into());
        self
    }

    /// This program's default plan, in place of the careful and `--quick`
    /// ones; flags still override its sizes.
    pub fn plan(mut self, plan: Plan) -> Harness {
        self.plan = Some(plan);
        self
    }

    /// This program's hop table (its own hops and their owners) in place of
    /// the standard one, keeping the careful and `--quick` sizes (a plan
    /// given with [`Harness::plan`] takes this table too): a program that
    /// only adds hops need not choose its sizes.
    pub fn hops(mut self, table: hopscope_probe::HopTable) -> Harness {
        self.hops = Some(table);
        self
    }

    /// Write into `dir` (as `--out` does; the flag wins).
    pub fn out(mut self, dir: &Path) -> Harness {
        self.args.out.get_or_insert_with(|| dir.to_owned());
        self
    }

    /// Record `key = value` in the trace header and the receipt.
    pub fn meta(mut self, key: &str, value: impl Into<String>) -> Harness {
        self.meta.insert(key.to_owned(), value.into());
        self
    }

    /// Chart options (logarithmic distributions).
    pub fn charts(mut self, options: ChartOptions) -> Harness {
        self.charts = options;
        self
    }

    /// Draw a progress bar (default: when stderr is a terminal).
    pub fn progress(mut self, on: bool) -> Harness {
        self.progress = Some(on);
        self
    }

    /// Print nothing (for tests and programs that read the [`Outcome`]).
    pub fn quiet(mut self) -> Harness {
        self.quiet = true;
        self
    }

    /// Run, print a one-line error on failure, and return the exit status:
    /// the body of a harness program's `main`. A bad flag value exits 2
    /// (as clap's own refusals do), any other failure 1.
    pub fn main(self) -> ExitCode {
        let name = self.name.clone();
        match self.run() {
            Ok(outcome) => outcome.exit_code(),
            Err(err) => {
                eprintln!("{name}: {err}");
                match err {
                    HarnessError::Flag(_) => ExitCode::from(2),
                    _ => ExitCode::FAILURE,
                }
            }
        }
    }

    /// Measure, analyze, write the result files and print where they are.
    /// SIGINT or SIGTERM stops the run after the block in progress, and
    /// what was measured is analyzed and written as `partial`; a second
    /// signal exits at once.
    pub fn run(mut self) -> Result<Outcome, HarnessError> {
        crate::interrupt::install().map_err(|e| HarnessError::Usage(format!("cannot handle signals: {e}")))?;
        let plan = self.plan_of_flags()?;
        let declared = self.prepare_lanes(&plan)?;
        if self.args.json {
            self.quiet = true;
        }
        match self.job() {
            Job::Follow(socket) => self.follow(&socket, &plan, &declared),
            Job::Ab(spec) => {
                let meta = std::mem::take(&mut self.meta);
                self.run_ab(&spec, meta)
            }
            Job::WhatIf => self.run_what_if(&plan),
            Job::Decompose => self.decompose(&plan),
        }
    }

    /// The plan the flags make of the program's (or the careful one), with
    /// the program's hops; flags that size a what-if run refused without
    /// `--what-if`, and those of other runs refused with it.
    fn plan_of_flags(&self) -> Result<Plan, HarnessError> {
        let base = self.plan.clone();
        let mut plan = match base {
            Some(base) => self.args.apply(base),
            None => self.args.plan(),
        }
        .map_err(|e| HarnessError::Flag(e.to_string()))?;
        if let Some(hops) = &self.hops {
            plan.hops = hops.clone();
        }
        if let Some(flag) = self.args.what_if.stray() {
            return Err(HarnessError::Flag(format!("{flag}: sizes a what-if run; give --what-if too")));
        }
        if let Some(flag) = self.args.beside_what_if() {
            return Err(HarnessError::Flag(format!(
                "{flag}: not with --what-if (a what-if run is neither an A/B run nor a decomposition to save, \
                 compare or gate)"
            )));
        }
        Ok(plan)
    }

    /// The lanes as the flags want them: `--lanes` kept, placement twins
    /// added, `--span-path` taken; a placement this process's CPUs cannot
    /// give refused. Every trace lane name declared before `--lanes` chose.
    fn prepare_lanes(&mut self, plan: &Plan) -> Result<Vec<String>, HarnessError> {
        let declared = self.trace_lane_names();
        self.select_lanes()?;
        crate::twins::add(&mut self.lanes, self.args.twin_placements());
        #[cfg(feature = "tracing")]
        if let Some(path) = self.args.span_path {
            let path = match path {
                crate::args::SpanPathFlag::Registry => hopscope_probe::SpanPath::Registry,
                crate::args::SpanPathFlag::Subscriber => hopscope_probe::SpanPath::Subscriber,
            };
            for lane in &mut self.lanes {
                lane.take_span_path(path);
            }
            // The receipt says the path was the flag's, not the code's.
            self.meta.record(RunFact::SpanPathFlag, path.to_string());
        }
        // A placement this process's CPUs cannot give is refused before a
        // directory is made or a line printed.
        let placements = std::iter::once(plan.placement).chain(self.lanes.iter().filter_map(|l| l.placement));
        if let Some(why) = placements.filter_map(crate::placement::unachievable).next() {
            return Err(HarnessError::Usage(why));
        }
        Ok(declared)
    }

    /// Which run the flags ask for.
    fn job(&self) -> Job {
        if let Some(socket) = &self.args.follow {
            return Job::Follow(socket.clone());
        }
        if let Some(spec) = &self.args.ab {
            return Job::Ab(spec.clone());
        }
        if self.args.what_if.what_if.is_some() {
            return Job::WhatIf;
        }
        Job::Decompose
    }

    /// `--follow`: run the blocks a coordinator asks for, over `socket`.
    fn follow(mut self, socket: &Path, plan: &Plan, declared: &[String]) -> Result<Outcome, HarnessError> {
        let mut meta = rundir::metadata();
        meta.extend(std::mem::take(&mut self.meta));
        meta.record(RunFact::Harness, self.name.clone());
        // Every lane, not only the one opened: a coordinator that will
        // ask for another lane later checks it now.
        let listed = serde_json::to_string(declared).unwrap_or_default();
        meta.record(RunFact::DeclaredLanes, listed);
        crate::follower::serve(&self.name, socket, plan, &self.lanes, self.args.out.as_deref(), meta)
    }

    /// A decomposition: measure the lanes under `plan`, analyze what was
    /// measured, write the files, and record the run in the index.
    fn decompose(mut self, plan: &Plan) -> Result<Outcome, HarnessError> {
        let recorder = Recorder::prepare(self.args.gating())?;
        let mut meta = rundir::metadata();
        meta.extend(std::mem::take(&mut self.meta));
        meta.record(RunFact::Harness, self.name.clone());
        let dir = rundir::create(self.args.out.as_deref(), &self.name, rundir::LATEST)?;
        let n = trace_lanes(&self.lanes);
        self.say(&format!("measuring {n} lane{} into {}", if n == 1 { "" } else { "s" }, dir.display()));
        let (mut outcome, blocks) = self.measure(plan, &self.lanes, dir, meta)?;
        if blocks > 0 {
            self.analyze(&mut outcome, blocks, &recorder)?;
        }
        self.finish(&outcome);
        if let (Some(d), None) = (&outcome.decomposition, &outcome.stopped) {
            let recorded = recorder.record(self.args.gating(), &outcome.dir, d, outcome.change.take())?;
            for line in &recorded.lines {
                self.say(line);
            }
            outcome.run_id = recorded.run_id;
            outcome.gate = recorded.gate;
            outcome.change = recorded.change;
        }
        if self.args.json {
            self.print_json(&outcome)?;
        }
        Ok(outcome)
    }

    /// Decompose the `blocks` measured into `outcome`'s trace, with the
    /// change against the baseline (a run that completed), write the
    /// result files and print the summary.
    fn analyze(&self, outcome: &mut Outcome, blocks: u64, recorder: &Recorder) -> Result<(), HarnessError> {
        let partial = outcome.stopped.as_ref().map(|line| Partial::stopped(blocks, line));
        // Streamed from the file: a long run's trace is never held whole.
        let mut file = TraceFile::open(&outcome.trace)
            .map_err(|source| HarnessError::Trace { path: outcome.trace.clone(), source })?;
        // Joined once: the change against a baseline reads the same join.
        let (mut d, samples) = hopscope_analyze::decompose_source_with_samples(&mut file, partial)
            .map_err(|source| HarnessError::Analyze { path: outcome.trace.clone(), source })?;
        if outcome.pin_failures > 0 {
            d.warnings.push(Recorded::Typed(Warning::PinsRefused { count: outcome.pin_failures }));
        }
        let change = match &outcome.stopped {
            None => recorder.change(&outcome.dir, &samples)?,
            Some(_) => None,
        };
        let finished = Finished {
            result: RunResult::Decomposition(&d, self.charts),
            trace: Some(&outcome.trace),
            change: change.as_ref(),
        };
        outcome.written = hopscope_reports::finish(&outcome.dir, &finished)
            .map_err(|source| HarnessError::Report { dir: outcome.dir.clone(), source })?;
        self.say(&summary::decomposition(&d));
        #[cfg(feature = "tracing")]
        {
            let polls = crate::spans::polls(&self.lanes);
            if !polls.is_empty() {
                self.say(&polls);
            }
        }
        outcome.decomposition = Some(d);
        outcome.change = change;
        Ok(())
    }

    /// `--json`: one object on stdout (`hopscope.decompose/1` or
    /// `hopscope.ab-run/1`); what stopped the run, on stderr.
    fn print_json(&self, outcome: &Outcome) -> Result<(), HarnessError> {
        if let Some(line) = &outcome.stopped {
            eprintln!("{}: {line}", self.name);
        }
        let out = match &outcome.experiment {
            Some(e) => serde_json::json!({ "schema": "hopscope.ab-run/1", "dir": outcome.dir, "experiment": e }),
            None => serde_json::json!({
                "schema": "hopscope.decompose/1",
                "dir": outcome.dir,
                "run_id": outcome.run_id,
                "result": outcome.decomposition,
                "change": outcome.change,
            }),
        };
        let text = serde_json::to_string_pretty(&out).map_err(|e| HarnessError::Usage(e.to_string()))?;
        println!("{text}");
        Ok(())
    }

    /// Run `lanes` under `plan` into `dir`; the outcome so far, and how
    /// many blocks were measured.
    fn measure(
        &self,
        plan: &Plan,
        lanes: &[Lane],
        dir: PathBuf,
        meta: BTreeMap<String, String>,
    ) -> Result<(Outcome, u64), HarnessError> {
        let progress = self.progress.unwrap_or_else(rundir::show_progress);
        let (summary, stopped, signal) = stopped_or(runner::run(plan, lanes, &dir, meta, progress))?;
        let blocks = summary.blocks;
        let outcome = Outcome {
            dir,
            trace: summary.trace,
            decomposition: None,
            experiment: None,
            causal: None,
            written: Written::default(),
            stopped,
            signal,
            pin_failures: summary.pin_failures,
            run_id: None,
            change: None,
            gate: 0,
        };
        Ok((outcome, blocks))
    }

    /// `--what-if`: a causal profile of one lane instead of a decomposition.
    #[cfg(feature = "what-if")]
    fn run_what_if(mut self, plan: &Plan) -> Result<Outcome, HarnessError> {
        crate::whatif::front::what_if(crate::whatif::front::Front {
            name: &self.name,
            args: &self.args,
            lanes: &self.lanes,
            plan,
            meta: std::mem::take(&mut self.meta),
            progress: self.progress.unwrap_or_else(rundir::show_progress),
            quiet: self.quiet,
        })
    }

    /// `--what-if` in a build without the feature: refused.
    #[cfg(not(feature = "what-if"))]
    fn run_what_if(self, _plan: &Plan) -> Result<Outcome, HarnessError> {
        Err(HarnessError::Usage(
            "--what-if: this program's hopscope-harness is built without its `what-if` feature (on by default)"
                .to_owned(),
        ))
    }

    /// An A/B run of the two declared lanes `spec` names.
    fn run_ab(mut self, spec: &Path, meta: BTreeMap<String, String>) -> Result<Outcome, HarnessError> {
        let spec = ExperimentSpec::load(spec)?;
        let find = |arm: usize| -> Result<Lane, HarnessError> {
            let name = spec.arm_lane(arm)?;
            self.lanes.iter().find(|l| l.name() == name).cloned().ok_or_else(|| {
                HarnessError::Spec(SpecError {
                    path: spec.path.clone(),
                    reason: format!("{}.lane: `{name}` is not a declared lane ({})", spec.arms[arm].0, self.declared()),
                })
            })
        };
        let (a, b) = (find(0)?, find(1)?);
        self.meta = meta;
        self.run_experiment(&spec, a, b)
    }

    /// Judge `a` against `b` as the A/B arms of `spec` (with `a` again as
    /// the control), under the rule the spec fixed: the sizes are the
    /// spec's, the flags only pick the directory and the deadline.
    pub fn run_experiment(mut self, spec: &ExperimentSpec, a: Lane, b: Lane) -> Result<Outcome, HarnessError> {
        let lanes = ab::arms(spec, a, b);
        let deadline =
            self.args.apply(spec.plan.clone()).map_err(|e| HarnessError::Flag(e.to_string()))?.block_deadline;
        let mut plan = Plan { block_deadline: deadline, ..spec.plan.clone() };
        // The sizes are the spec's; the hops are the program's.
        if let Some(hops) = self.hops.clone().or_else(|| self.plan.as_ref().map(|p| p.hops.clone())) {
            plan.hops = hops;
        }
        let dir = rundir::create(self.args.out.as_deref(), &format!("{}-ab", self.name), "latest-ab")?;
        let mut meta = rundir::metadata();
        meta.extend(std::mem::take(&mut self.meta));
        meta.record(RunFact::Harness, self.name.clone());
        meta.extend(spec.meta());
        self.say(&format!(
            "{}: {} lanes into {} (spec sha256 {})",
            spec.name,
            lanes.len(),
            dir.display(),
            &spec.sha256[..12.min(spec.sha256.len())]
        ));
        let (mut outcome, blocks) = self.measure(&plan, &lanes, dir, meta)?;
        if blocks > 0 {
            // Streamed: one block in memory at a time.
            let trace = hopscope_analyze::ab_trace::AbTrace::read_file(&outcome.trace)
                .map_err(|source| HarnessError::Analyze { path: outcome.trace.clone(), source })?;
            let mut e = hopscope_analyze::experiment::judge_trace(&trace, &spec.rule);
            if let Some(line) = &outcome.stopped {
                let partial = Partial::stopped(trace.blocks.len() as u64, line);
                e.warnings.insert(0, Recorded::Typed(Warning::Partial(partial)));
            }
            let finished = Finished { result: RunResult::Experiment(&e), trace: Some(&outcome.trace), change: None };
            outcome.written = hopscope_reports::finish(&outcome.dir, &finished)
                .map_err(|source| HarnessError::Report { dir: outcome.dir.clone(), source })?;
            self.say(&ab::summary(&e));
            if outcome.stopped.is_none() {
                outcome.gate = crate::gate::ab_status(&e, self.args.fail_on);
            }
            outcome.experiment = Some(e);
        }
        self.finish(&outcome);
        if self.args.json {
            self.print_json(&outcome)?;
        }
        Ok(outcome)
    }

    /// Keep only the lanes `--lanes` names, refusing an unknown name: a
    /// declared name keeps each of its builds, a name the tables print
    /// (`name-probed`) that build alone.
    fn select_lanes(&mut self) -> Result<(), HarnessError> {
        if self.lanes.is_empty() {
            return Err(HarnessError::Usage("no lanes declared: add some with Harness::lane".to_owned()));
        }
        let wanted = &self.args.lanes;
        if wanted.is_empty() {
            return Ok(());
        }
        let known = |w: &String| self.lanes.iter().any(|l| &l.name == w || l.trace_lanes().any(|(n, _)| &n == w));
        if let Some(unknown) = wanted.iter().find(|w| !known(w)) {
            return Err(HarnessError::Flag(format!("--lanes: no lane `{unknown}` ({})", self.declared())));
        }
        for lane in &mut self.lanes {
            // A placement twin is picked by its own name or with the lane
            // it repeats (`--lanes writer` keeps `unpinned/writer`).
            let base = lane.twin_of.clone().unwrap_or_else(|| lane.name.clone());
            if wanted.contains(&lane.name) || wanted.contains(&base) {
                continue;
            }
            let as_base = |name: &str| name.replacen(&lane.name, &base, 1);
            let keep: Vec<bool> = lane
                .trace_lanes()
                .map(|(name, _)| wanted.contains(&name) || wanted.contains(&as_base(&name)))
                .collect();
            let mut keep = keep.into_iter();
            lane.builds.retain(|_| keep.next().unwrap_or(false));
        }
        self.lanes.retain(|l| !l.builds.is_empty());
        Ok(())
    }

    /// Every lane name the run's tables can print (each declared lane's
    /// builds).
    fn trace_lane_names(&self) -> Vec<String> {
        self.lanes.iter().flat_map(|l| l.trace_lanes().map(|(n, _)| n)).collect()
    }

    /// Every lane name the run's tables can print, for a refusal: each
    /// declared lane, and its builds' names where they are not its own (a
    /// probed-only lane runs as `name-probed`; either name is taken).
    fn declared(&self) -> String {
        let each = self.lanes.iter().map(|l| {
            let builds: Vec<String> = l.trace_lanes().map(|(n, _)| n).collect();
            if builds.contains(&l.name) {
                builds.join(", ")
            } else {
                format!("{} (runs as {})", l.name, builds.join(", "))
            }
        });
        format!("declared: {}", each.collect::<Vec<_>>().join(", "))
    }

    fn say(&self, text: &str) {
        if !self.quiet {
            println!("{}", text.trim_end());
        }
    }

    /// Print where the files went, and the failure that stopped the run.
    fn finish(&self, outcome: &Outcome) {
        if self.quiet {
            return;
        }
        if outcome.written.files.is_empty() {
            println!("trace:   {}", outcome.trace.display());
        } else {
            println!("\n{}", outcome.written.to_string().trim_end());
        }
        if let Some(line) = &outcome.stopped {
            eprintln!("{}: {line}", self.name);
        }
    }
}

/// A run's summary, or the kept part of a run stopped early with what
/// stopped it (and the signal, if one did).
type Kept = (RunSummary, Option<String>, Option<Signal>);

fn stopped_or(result: Result<RunSummary, RunError>) -> Result<Kept, HarnessError> {
    match result {
        Ok(summary) => Ok((summary, None, None)),
        Err(RunError::Stopped(stopped)) => {
            let line = stopped.to_string();
            Ok((stopped.kept, Some(line), None))
        }
        Err(RunError::Interrupted { signal, kept }) => {
            let line = format!("interrupted by {signal} after {} measured blocks", kept.blocks);
            Ok((kept, Some(line), Some(signal)))
        }
        Err(other) => Err(other.into()),
    }
}

fn trace_lanes(lanes: &[Lane]) -> usize {
    lanes.iter().map(|l| l.builds.len()).sum()
}
