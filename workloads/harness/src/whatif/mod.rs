//! What-if runs: what would making one slice of a lane faster buy it?
//!
//! A what-if run first decomposes the lane's probed build briefly (its
//! slices, which thread each runs on, their medians), then runs the same
//! build block after block, each block under one arm: one slice virtually
//! faster by a share of its median (coz's rule, `hopscope_probe::whatif`),
//! really slower by a share (so linearity shows beside the speedups), or the
//! reference (an experiment that changes nothing: both sides of every
//! comparison pay the same bookkeeping). The arms take turns in an order
//! shuffled every round. The samples go to
//! [`hopscope_analyze::causal::profile`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hopscope_analyze::Decomposition;
use hopscope_analyze::causal::{
    Arm, ArmBlock, CAUSAL_SAMPLES_SCHEMA, CausalSamples, CausalWarning, MIN_ROUNDS, SliceBase,
};
use hopscope_analyze::join::{Sharing, SliceSide};
use hopscope_analyze::recorded::Recorded;
use hopscope_probe::whatif::{Change, Experiment};
use hopscope_probe::{Hop, HostInfo, RunFact, RunFacts, SliceName, TraceHeader, TraceReader, Variant};

use crate::args::FlagError;
use crate::lane::Lane;
use crate::outcome::HarnessError;
use crate::placement::Placement;
use crate::plan::Plan;
use crate::whatif_flags::WhatIfArgs;

pub(crate) mod front;

/// Most arms in one run (slices × changes + the reference).
pub const MAX_ARMS: usize = 256;

/// Largest change, percent of a slice's median (a slowdown of 100 % doubles
/// it; a speedup of 100 % would make it free, which no code is).
pub const MAX_CHANGE_PCT: f64 = 100.0;

/// The link to the newest what-if run, beside `latest` (which names the
/// newest decomposition).
pub const LATEST_WHAT_IF: &str = "latest-what-if";

/// Most rounds.
pub const MAX_ROUNDS: u32 = 100_000;

/// Fewest operations per caller in a what-if block. A block's throughput
/// includes its start, when callers fill the writer's queue, and its end,
/// when they drain it; with four callers and the careful 20 operations a
/// block (5 each), a 25 % faster statement read +10 % (CI +5…+18) where
/// blocks of 100 read +27 % (CI +25…+29).
pub const OPS_PER_CALLER: u64 = crate::plan::MIN_OPS_PER_CALLER;

/// What a what-if run tries.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIf {
    /// Slices to change, each `from→to` or its closing hop; empty: every
    /// slice on the operation's path.
    pub slices: Vec<String>,
    /// Virtual speedups, percent of each slice's median.
    pub speedups_pct: Vec<f64>,
    /// Real slowdowns, percent of each slice's median.
    pub slowdowns_pct: Vec<f64>,
    /// Rounds: each runs every arm once.
    pub rounds: u32,
    /// Divide [`WhatIf::rounds`] by the lane's callers (at least
    /// [`MIN_ROUNDS`]): each block runs at least [`OPS_PER_CALLER`]
    /// operations per caller, so a lane of many callers needs fewer rounds
    /// for the same operations. The defaults do; an explicit `--rounds`
    /// does not.
    pub scale_rounds: bool,
    /// Fewest rounds left after [`WhatIf::scale_rounds`] divides them. A
    /// lane of several callers can run a block at one of two paces (the
    /// reference writer's four callers on one core: about a third of the
    /// blocks at 20 µs per operation rather than 8.5, whatever the arm),
    /// and a median over rounds needs enough of them that the rounds run
    /// at one pace by both arms hold its middle: 25 rounds read a 25 %
    /// faster statement at +6 % (CI −48…+15) where the careful run read
    /// +19 % (CI +14…+26).
    pub least_scaled_rounds: u32,
    /// Samples per pass of the short decomposition that measures the
    /// slices first (one pass).
    pub decompose_samples: u32,
    /// Seed of the arms' order.
    pub seed: u64,
}

impl WhatIf {
    /// A careful answer: 0 (the reference), 10, 25 and 50 % faster, 25 %
    /// slower, 400 rounds (the reference writer's ten slices on a 2-vCPU
    /// VM: about 28 s with one caller, CIs about ±2 % of throughput; 23 s
    /// with four callers and 42 s with eight, 100 rounds each).
    pub fn careful() -> WhatIf {
        WhatIf {
            slices: Vec::new(),
            speedups_pct: vec![10.0, 25.0, 50.0],
            slowdowns_pct: vec![25.0],
            rounds: 400,
            scale_rounds: true,
            least_scaled_rounds: 100,
            decompose_samples: 60,
            seed: 0x5eed_c0a5,
        }
    }

    /// A quick look: 25 and 50 % faster, 100 rounds (the reference
    /// writer on a 2-vCPU VM: 4 s with one caller, 5 s with four callers
    /// and 9 s with eight, 40 rounds each; 12 rounds had left CIs of ±50 %).
    pub fn quick() -> WhatIf {
        WhatIf {
            speedups_pct: vec![25.0, 50.0],
            slowdowns_pct: Vec::new(),
            rounds: 100,
            least_scaled_rounds: 40,
            decompose_samples: 20,
            ..WhatIf::careful()
        }
    }

    /// The careful or `--quick` defaults with `flags` applied over them;
    /// refuses a value out of range, naming the flag.
    pub fn from_flags(flags: &WhatIfArgs, quick: bool) -> Result<WhatIf, FlagError> {
        let mut w = if quick { WhatIf::quick() } else { WhatIf::careful() };
        w.slices.clone_from(&flags.what_if_slices);
        if !flags.speedups.is_empty() {
            w.speedups_pct.clone_from(&flags.speedups);
        }
        match flags.slowdowns.as_slice() {
            [] => {}
            [zero] if *zero == 0.0 => w.slowdowns_pct.clear(),
            some => w.slowdowns_pct = some.to_vec(),
        }
        if let Some(rounds) = flags.rounds {
            w.rounds = rounds;
            w.scale_rounds = false;
        }
        w.check().map_err(|reason| FlagError { flag: "--what-if", reason })?;
        Ok(w)
    }

    /// Refuse sizes and changes the run cannot carry out.
    pub fn check(&self) -> Result<(), String> {
        let bad = |v: &f64| !(v.is_finite() && *v > 0.0 && *v <= MAX_CHANGE_PCT);
        if let Some(v) = self.speedups_pct.iter().chain(&self.slowdowns_pct).find(|v| bad(v)) {
            return Err(format!("a change of {v} %: each is above 0 and at most {MAX_CHANGE_PCT} % of a slice"));
        }
        if self.speedups_pct.is_empty() {
            return Err("at least one speedup is needed".to_owned());
        }
        if !(MIN_ROUNDS..=MAX_ROUNDS as usize).contains(&(self.rounds as usize)) {
            return Err(format!("{} rounds: from {MIN_ROUNDS} to {MAX_ROUNDS}", self.rounds));
        }
        if self.decompose_samples == 0 {
            return Err("the short decomposition needs at least one sample".to_owned());
        }
        Ok(())
    }
}

/// Decompose `lane`'s probed build briefly under `plan`, then run every arm
/// of `what_if` on it for its rounds, under `dir` (the decomposition's
/// trace stays in `dir/decomposition/`). `progress` draws a bar.
pub fn run(
    plan: &Plan,
    lane: &Lane,
    what_if: &WhatIf,
    dir: &Path,
    meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<CausalSamples, HarnessError> {
    what_if.check().map_err(HarnessError::Usage)?;
    plan.validate()?;
    let started = Instant::now();
    let host = HostInfo::detect();
    let probed = probed_build(lane)?;
    measurable(&probed)?;
    let plan = &arms_plan(plan, &probed);
    let short = decompose_briefly(plan, &probed, what_if, dir, meta.clone(), progress)?;
    let profile = Profile::plan(&short, &probed, plan, what_if)?;
    let blocks = run_arms(plan, &probed, &profile, what_if.seed, dir, meta.clone(), progress)?;
    let decomposition = &short.decomposition;
    let decomposition_ns_per_op = decomposition
        .lanes
        .get(decomposition.insitu_lane.as_deref().unwrap_or(&probed.name))
        .and_then(|l| l.us_per_op.as_ref())
        .map(|u| u.median * 1e3);
    let mut meta = meta;
    meta.record(RunFact::Rounds, profile.rounds.to_string());
    meta.record(RunFact::OpsPerBlock, plan.ops_per_block.to_string());
    meta.record(RunFact::Decomposition, short.path.display().to_string());
    Ok(CausalSamples {
        schema: CAUSAL_SAMPLES_SCHEMA.to_owned(),
        lane: decomposition.insitu_lane.clone().unwrap_or_else(|| probed.name.clone()),
        callers: probed.callers,
        serial: profile.serial,
        slices: profile.chosen.into_iter().map(|s| s.base).collect(),
        arms: profile.arms,
        blocks,
        host,
        clock: decomposition.clock.clone(),
        meta,
        seconds: started.elapsed().as_secs_f64(),
        notes: profile.notes,
        decomposition_ns_per_op,
    })
}

/// The plan the arms run under: blocks of at least [`OPS_PER_CALLER`]
/// operations per caller of `probed`.
fn arms_plan(plan: &Plan, probed: &Lane) -> Plan {
    let callers = probed.callers.max(1) as u64;
    Plan {
        ops_per_block: plan.ops_per_block.max(OPS_PER_CALLER * callers).min(crate::plan::MAX_OPS_PER_BLOCK),
        ..plan.clone()
    }
}

/// The short decomposition a what-if run starts with: its trace, the
/// trace's header and what it found.
struct Short {
    path: PathBuf,
    header: TraceHeader,
    decomposition: Decomposition,
}

/// Decompose `probed` briefly (`what_if`'s samples, one pass) under
/// `plan`, into `dir/decomposition/`.
fn decompose_briefly(
    plan: &Plan,
    probed: &Lane,
    what_if: &WhatIf,
    dir: &Path,
    meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<Short, HarnessError> {
    // The short decomposition runs blocks of the arms' size: its slices'
    // medians, of which each change is a share, are then measured at the
    // pace the arms run (with four callers, blocks of five operations each
    // had run 31 µs per operation where the arms ran 10.6).
    let short = Plan { samples: what_if.decompose_samples, passes: 1, ..plan.clone() };
    let decomposed =
        crate::runner::run(&short, std::slice::from_ref(probed), &dir.join("decomposition"), meta, progress)?;
    let path = decomposed.trace;
    let header = TraceReader::open(&path)
        .map(|r| r.header().clone())
        .map_err(|source| HarnessError::Trace { path: path.clone(), source })?;
    let decomposition = hopscope_analyze::decompose_file(&path)
        .map_err(|source| HarnessError::Analyze { path: path.clone(), source })?;
    Ok(Short { path, header, decomposition })
}

/// What a what-if run runs: the slices it changes and what it says of
/// them, its arms (the reference, then each slice's changes) and their
/// experiments, its rounds, and whether the serial rule holds.
struct Profile {
    chosen: Vec<Sliced>,
    notes: Vec<Recorded<CausalWarning>>,
    arms: Vec<Arm>,
    experiments: Vec<Experiment>,
    rounds: u32,
    serial: bool,
}

impl Profile {
    /// The profile of `probed` under `plan` that `what_if` asks for, on
    /// the slices the short decomposition found.
    fn plan(short: &Short, probed: &Lane, plan: &Plan, what_if: &WhatIf) -> Result<Profile, HarnessError> {
        refuse_siblings(&short.decomposition.slices, &what_if.slices)?;
        let known = known_slices(short);
        // Every thread of the lane on one core: the serial rule (no pauses).
        let serial = probed.placement.unwrap_or(plan.placement) == Placement::SameCore;
        let (chosen, notes) = offer(&known, &what_if.slices, probed.callers > 1)?;
        // Every cross-thread slice of the lane is an edge a waiting thread
        // inherits its waker's payments across, whichever slice is changed.
        let edges: Vec<(Hop, Hop)> =
            known.iter().filter(|s| s.base.side == SliceSide::Cross).map(|s| (s.from, s.to)).collect();
        let (arms, experiments) = arms_for(&chosen, what_if, &edges, serial);
        if arms.len() > MAX_ARMS {
            return Err(HarnessError::Usage(format!(
                "{} arms ({} slices × {} changes + the reference): at most {MAX_ARMS}; name fewer slices or changes",
                arms.len(),
                chosen.len(),
                what_if.speedups_pct.len() + what_if.slowdowns_pct.len()
            )));
        }
        let callers = probed.callers.max(1) as u64;
        let rounds = if what_if.scale_rounds {
            (what_if.rounds / callers as u32)
                .max(what_if.least_scaled_rounds.min(what_if.rounds))
                .max(MIN_ROUNDS as u32)
        } else {
            what_if.rounds
        };
        Ok(Profile { chosen, notes, arms, experiments, rounds, serial })
    }
}

/// The slices on the operation's path the short decomposition found, each
/// with the figure a change is a share of.
fn known_slices(short: &Short) -> Vec<Sliced> {
    short
        .decomposition
        .slices
        .iter()
        // A wait on a batch's other operations is their work, not a step
        // of its own to make faster: their own slices are on the list.
        .filter(|s| s.on_path && s.sharing != Sharing::Siblings)
        .filter_map(|s| {
            let base_us = if s.side == SliceSide::Cross { s.p10_us } else { s.median_us };
            Sliced::of(&short.header, &s.name, s.side, s.median_us * 1e3, base_us * 1e3)
        })
        .collect()
}

/// Run every arm of `profile` on `probed` for its rounds (orders shuffled
/// from `seed`), under `dir/what-if/`, removed after; a bar drawn when
/// `progress`. A signal ends the run after the block in progress.
fn run_arms(
    plan: &Plan,
    probed: &Lane,
    profile: &Profile,
    seed: u64,
    dir: &Path,
    meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<Vec<ArmBlock>, HarnessError> {
    let total = u64::from(profile.rounds) * profile.arms.len() as u64 + u64::from(plan.warmup_blocks);
    let bar = crate::progress::bar(progress, total);
    let (blocks, interrupted) = crate::runner::arms::run(
        plan,
        probed,
        &profile.experiments,
        crate::runner::arms::Schedule { rounds: profile.rounds, seed },
        &dir.join("what-if"),
        meta,
        || bar.inc(1),
    )?;
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(dir.join("what-if"));
    if let Some(signal) = interrupted {
        eprintln!("interrupted by {signal}: the profile covers the rounds completed");
    }
    Ok(blocks)
}

/// The slices a run changes (`wanted`, or every one known) and what the
/// run says about them. `crowded`: several callers share the writer, so a
/// hand-off's time is mostly waiting, which no faster hand-off removes,
/// and the marks cannot tell its own cost apart: on one core the other
/// threads' turns (four callers: 25 % of an `idle→received`'s fastest
/// tenth still read +27 % throughput), across cores the queue behind a
/// busy writer (a new user's four callers: a `sent→woke` whose fastest
/// tenth was 62 µs of queueing read +22 %, and the headline named it).
/// Cross-thread slices are then left out unless named.
fn offer(
    known: &[Sliced],
    wanted: &[String],
    crowded: bool,
) -> Result<(Vec<Sliced>, Vec<Recorded<CausalWarning>>), HarnessError> {
    let offered: Vec<Sliced> = if crowded && wanted.is_empty() {
        known.iter().filter(|s| s.base.side != SliceSide::Cross).cloned().collect()
    } else {
        known.to_vec()
    };
    let chosen = choose(&offered, wanted).map_err(|e| HarnessError::Flag(format!("--what-if-slices: {e}")))?;
    let mut notes = Vec::new();
    if crowded {
        let named: Vec<&str> =
            chosen.iter().filter(|s| s.base.side == SliceSide::Cross).map(|s| s.base.name.as_str()).collect();
        notes.push(Recorded::Typed(if named.is_empty() {
            CausalWarning::CrossSlicesLeftOut
        } else {
            CausalWarning::CrossSlicesCrowded { slices: named.into_iter().map(str::to_owned).collect() }
        }));
    }
    Ok((chosen, notes))
}

/// A wanted slice as the results name it: `from->to` is taken for
/// `from→to` (not every keyboard has the arrow); a hop's name stays as it
/// is (the slice that ends there).
fn as_written(wanted: &str) -> String {
    wanted.parse::<SliceName>().map_or_else(|_| wanted.to_owned(), |s| s.to_string())
}

/// Refuse a named slice that is a wait on a batch's other operations, in
/// one line naming the slices that hold their work.
fn refuse_siblings(slices: &[hopscope_analyze::slices::SliceFigures], wanted: &[String]) -> Result<(), HarnessError> {
    for w in wanted.iter().map(|w| as_written(w)) {
        let Some(s) = slices.iter().find(|s| s.name == w && s.sharing == Sharing::Siblings) else { continue };
        let theirs: Vec<&str> = slices
            .iter()
            .filter(|o| o.on_path && o.sharing == Sharing::Own && o.side == s.side)
            .map(|o| o.name.as_str())
            .collect();
        return Err(HarnessError::Flag(format!(
            "--what-if-slices: `{w}` is a wait on the batch's other operations, not work of its own: make their own \
             slices faster ({})",
            theirs.join(", ")
        )));
    }
    Ok(())
}

/// The reference and every change of `what_if` to every chosen slice: the
/// arms as the profile names them, and the experiments that run them.
fn arms_for(chosen: &[Sliced], what_if: &WhatIf, edges: &[(Hop, Hop)], serial: bool) -> (Vec<Arm>, Vec<Experiment>) {
    let experiment = |end, change| Experiment { end, change, edges: edges.to_vec(), serial };
    let mut arms = vec![Arm { slice: None, change_pct: 0.0, change_ns: 0.0 }];
    let mut experiments = vec![experiment(Hop::ENTER, Change::Faster(0.0))];
    for (i, s) in chosen.iter().enumerate() {
        let changes = what_if.slowdowns_pct.iter().map(|p| -p).chain(what_if.speedups_pct.iter().copied());
        for pct in changes {
            let ns = s.base.base_ns.max(0.0) * pct.abs() / 100.0;
            arms.push(Arm { slice: Some(i), change_pct: pct, change_ns: ns });
            let change = if pct > 0.0 { Change::Faster(ns) } else { Change::Slower(ns) };
            experiments.push(experiment(s.to, change));
        }
    }
    (arms, experiments)
}

/// Refuse a lane whose passes a what-if run cannot time.
pub(crate) fn measurable(lane: &Lane) -> Result<(), HarnessError> {
    // A span's marks are written when it closes, with the times it kept:
    // its passes cannot be timed as they happen (a first trial counted
    // spans closed around the block's hand-in as passes inside it).
    #[cfg(feature = "tracing")]
    {
        let by_spans = lane.span_layer().is_some()
            || lane.builds.iter().any(|b| b.variant == Some(Variant::Probed) && b.dispatch.is_some());
        if by_spans {
            return Err(HarnessError::Usage(format!(
                "lane `{}` is probed by tracing spans, which a what-if run cannot time yet (a span's marks are \
             written at its close): probe it with `hop!` marks or SQLite's trace hook",
                lane.name
            )));
        }
    }
    let _ = lane;
    Ok(())
}

/// The lane with its probed build alone.
fn probed_build(lane: &Lane) -> Result<Lane, HarnessError> {
    let mut probed = lane.clone();
    probed.builds.retain(|b| b.variant == Some(Variant::Probed));
    if probed.builds.is_empty() {
        return Err(HarnessError::Usage(format!(
            "lane `{}` has no probed build: a what-if run changes slices, which need marks",
            lane.name
        )));
    }
    Ok(probed)
}

/// A slice as the what-if run knows it: its figures and its two hops.
#[derive(Debug, Clone)]
struct Sliced {
    base: SliceBase,
    from: Hop,
    to: Hop,
}

impl Sliced {
    /// The slice named `from→to` in `header`'s hops.
    fn of(header: &TraceHeader, name: &str, side: SliceSide, median_ns: f64, base_ns: f64) -> Option<Sliced> {
        let slice = name.parse::<SliceName>().ok()?;
        Some(Sliced {
            base: SliceBase { name: name.to_owned(), side, median_ns, base_ns },
            from: header.hops.find(&slice.from)?,
            to: header.hops.find(&slice.to)?,
        })
    }
}

/// The slices `wanted` names (`from→to` or the closing hop), every one of
/// `known` when it names none; a name that matches none is refused with
/// the list.
fn choose(known: &[Sliced], wanted: &[String]) -> Result<Vec<Sliced>, String> {
    if known.is_empty() {
        return Err("the short decomposition found no slice on the operation's path: is the build probed?".to_owned());
    }
    if wanted.is_empty() {
        return Ok(known.to_vec());
    }
    wanted
        .iter()
        .map(|w| as_written(w))
        .map(|w| {
            known.iter().find(|s| s.base.name == w || SliceName::ends_at(&s.base.name, &w)).cloned().ok_or_else(|| {
                let names: Vec<&str> = known.iter().map(|s| s.base.name.as_str()).collect();
                format!("no slice `{w}` on the lane's path; it has {}", names.join(", "))
            })
        })
        .collect()
}
