//! The keep-warm sweep: for each thread placement, one process alternates
//! the inline lane, a parking writer and one writer per (mode, window)
//! setting on sequential single inserts, and prices each in wall time, CPU,
//! context switches and cross-core hops per write.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use hopscope_analyze::sweep::{self, BASELINE, INLINE, SweepRow};
use hopscope_harness::{
    DEFAULT_SETTLE, HarnessError, Lane, MAX_SETTLE, Placement, Plan, Role, RunSummary, Variant, runner,
};
use hopscope_probe::Trace;

use crate::db::DbConfig;
use crate::error::ParseError;
use crate::facts::run_facts;
use crate::knobs::{CpuBudget, Knobs, Wait};
use crate::lane::{Builds, LaneKind, LaneSpec};
use crate::shape::Shape;

/// Who spins while waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The writer spins for the window, then parks; callers park.
    Spin,
    /// The writer yields for the window, then parks; callers park.
    Yield,
    /// The writer and its callers both spin for the window.
    Both,
    /// The writer and its callers both sleep in short timer ticks for the
    /// window ([`Wait::Tick`]): the published keep-warm's timer lane.
    Tick,
    /// The writer and its callers both spin only when their recent waits
    /// were shorter than the window ([`Wait::Adaptive`]).
    Adaptive,
    /// Adaptive, with each thread's spin also capped by the sweep's CPU
    /// budget: its share of the thread's own work between waits.
    Budget,
}

impl Mode {
    /// (writer wait, caller wait) for a window of `window`; `budget` caps
    /// the budget mode's spins.
    pub fn waits(self, window: Duration, budget: CpuBudget) -> (Wait, Wait) {
        match self {
            Mode::Spin => (Wait::Spin(window), Wait::Park),
            Mode::Yield => (Wait::Yield(window), Wait::Park),
            Mode::Both => (Wait::Spin(window), Wait::Spin(window)),
            Mode::Tick => (Wait::Tick(window), Wait::Tick(window)),
            Mode::Adaptive => (Wait::Adaptive(window, None), Wait::Adaptive(window, None)),
            Mode::Budget => (Wait::Adaptive(window, Some(budget)), Wait::Adaptive(window, Some(budget))),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Spin => "spin",
            Mode::Yield => "yield",
            Mode::Both => "both",
            Mode::Tick => "tick",
            Mode::Adaptive => "adaptive",
            Mode::Budget => "budget",
        })
    }
}

impl FromStr for Mode {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Mode, ParseError> {
        match s {
            "spin" => Ok(Mode::Spin),
            "yield" => Ok(Mode::Yield),
            "both" => Ok(Mode::Both),
            "tick" => Ok(Mode::Tick),
            "adaptive" => Ok(Mode::Adaptive),
            "budget" => Ok(Mode::Budget),
            other => Err(ParseError::new(
                "keep-warm mode",
                other,
                "spin, yield, both, tick, adaptive or budget (parking always runs)",
            )),
        }
    }
}

/// What a sweep covers.
#[derive(Debug, Clone, PartialEq)]
pub struct KeepWarm {
    /// Windows, µs; 0 is the same as parking and is skipped.
    pub windows: Vec<u64>,
    /// Modes.
    pub modes: Vec<Mode>,
    /// Placements, each under the name its rows carry.
    pub placements: Vec<(String, Placement)>,
    /// Also every placement with the caller busy this long before each
    /// write (0: not).
    pub gap_us: u64,
    /// Samples per pass.
    pub samples: u32,
    /// Operations per block.
    pub ops: u64,
    /// The budget mode's CPU budget.
    pub cpu_budget: CpuBudget,
}

impl KeepWarm {
    /// `(label, writer wait, caller wait)` of every mode × window.
    pub fn settings(&self) -> Vec<(String, Wait, Wait)> {
        let mut out = Vec::new();
        for mode in &self.modes {
            for &window in self.windows.iter().filter(|w| **w > 0) {
                let (writer, caller) = mode.waits(Duration::from_micros(window), self.cpu_budget);
                let label = match mode {
                    // Lane names hold no '.': 1.5x reads `budget1_5x`.
                    Mode::Budget => format!("{mode}{}-{window}us", self.cpu_budget.to_string().replace('.', "_")),
                    _ => format!("{mode}-{window}us"),
                };
                out.push((label, writer, caller));
            }
        }
        out
    }

    /// Refuse a sweep that cannot run, before anything is created: its
    /// plans' sizes, at least one placement, windows within
    /// [`crate::knobs::MAX_WAIT_WINDOW_US`].
    pub fn validate(&self) -> Result<(), HarnessError> {
        if self.placements.is_empty() {
            return Err(HarnessError::Flag("--placement: at least one placement".to_owned()));
        }
        if let Some(w) = self.windows.iter().find(|w| **w > crate::knobs::MAX_WAIT_WINDOW_US) {
            let most = crate::knobs::MAX_WAIT_WINDOW_US;
            return Err(HarnessError::Flag(format!("--windows: {w} µs is more than {most}")));
        }
        let plan = Plan { ops_per_block: self.ops, samples: self.samples, ..Plan::careful() };
        plan.validate().map_err(HarnessError::Run)
    }

    /// Every run of the sweep: `(name, placement, caller gap ns)`.
    fn runs(&self) -> Vec<(String, Placement, u64)> {
        let mut runs: Vec<(String, Placement, u64)> = self.placements.iter().map(|(n, p)| (n.clone(), *p, 0)).collect();
        if self.gap_us > 0 {
            runs.extend(
                self.placements.iter().map(|(n, p)| (format!("{n}+gap{}us", self.gap_us), *p, self.gap_us * 1_000)),
            );
        }
        runs
    }
}

/// Run the sweep into `dir` (one sub-directory per placement), telling
/// `say` what runs; returns every row.
pub fn run(
    sweep: &KeepWarm,
    dir: &Path,
    meta: &BTreeMap<String, String>,
    progress: bool,
    say: impl Fn(&str),
) -> Result<Vec<SweepRow>, HarnessError> {
    let db = DbConfig::default();
    let mut rows = Vec::new();
    for (name, placement, gap_ns) in sweep.runs() {
        let inline = LaneSpec { placement, ..LaneSpec::new(INLINE, LaneKind::Inline, Builds::Clean) };
        // Every writer setting runs probed, under its own name: the parking
        // writer is the subject (the rows read its role as parking), the
        // others are compared with it as peers.
        let parking = writer(BASELINE, Wait::Park, Wait::Park, placement);
        let settings = sweep.settings().into_iter().map(|(label, w, c)| writer(&label, w, c, placement));
        let lane = |spec: &LaneSpec| spec.lane(Shape::SingleInsert, db);
        let built = || -> Result<Vec<_>, crate::error::RunError> {
            let mut lanes = vec![lane(&inline)?, lane(&parking)?.only(Variant::Probed)];
            for spec in settings {
                lanes.push(lane(&spec)?.only(Variant::Probed).with_role(Role::Peer));
            }
            Ok(lanes)
        };
        let lanes = built().map_err(|e| HarnessError::Usage(e.to_string()))?;
        let plan = Plan {
            ops_per_block: sweep.ops,
            samples: sweep.samples,
            passes: 2,
            warmup_blocks: 2,
            caller_gap_ns: gap_ns,
            placement,
            // A keep-warm lane's threads poll out their window after its
            // block's last write: let the longest window end before the
            // next lane's block, or that block shares a core with a spinner.
            settle: (Duration::from_micros(sweep.windows.iter().copied().max().unwrap_or(0)) + DEFAULT_SETTLE)
                .min(MAX_SETTLE),
            ..Plan::careful()
        };
        say(&format!("{name}: {} lanes", lanes.len()));
        let mut run_meta = meta.clone();
        run_meta.extend(run_facts(Shape::SingleInsert, db).map(|(k, v)| (k.to_string(), v)));
        let (summary, trace) = measure(&plan, &lanes, &dir.join(&name), run_meta, progress)?;
        let d = hopscope_analyze::decompose(&trace)
            .map_err(|source| HarnessError::Analyze { path: summary.trace.clone(), source })?;
        rows.extend(sweep::rows(&name, &trace, &d));
    }
    Ok(rows)
}

/// Run `lanes` under `plan` into `dir` and read the trace back; a lane
/// that stops the run is an error here (an experiment needs every block).
fn measure(
    plan: &Plan,
    lanes: &[Lane],
    dir: &Path,
    meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<(RunSummary, Trace), HarnessError> {
    let summary = runner::run(plan, lanes, dir, meta, progress)?;
    let trace =
        Trace::read(&summary.trace).map_err(|source| HarnessError::Trace { path: summary.trace.clone(), source })?;
    Ok((summary, trace))
}

/// A writer lane that waits as given.
fn writer(name: &str, writer_wait: Wait, caller_wait: Wait, placement: Placement) -> LaneSpec {
    let knobs = Knobs { writer_wait, caller_wait, placement, ..Knobs::default() };
    LaneSpec::new(name, LaneKind::Writer(knobs), Builds::Probed)
}
