//! The merge measurement's result: per arm and phase µs per merged change,
//! what each step saves on its own (paired against the naive path, with
//! its share of the naive→tuned gap), and the statement-level slices of
//! the naive and tuned paths from the marks inside execute. `merge.json`
//! holds it as schema `hopscope.merge/1` (`docs/merge-schema.md`).

use std::collections::BTreeMap;

use crate::ab_trace::AbTrace;
use hopscope_probe::{RunFact, RunFacts};
use serde::{Deserialize, Serialize};

use crate::ab::{self, PassBlocks, Rule};
use crate::ab_reason::AbReason;
use crate::lanes::{self, Difference};
use crate::recorded::Recorded;
use crate::slices::{self, SliceFigures};
use crate::stats::{Samples, Summary};

mod arm;

pub use arm::{Arm, ArmLane, Phase};

/// `merge.json`'s schema name.
pub const SCHEMA: &str = "hopscope.merge/1";

/// The decision rule every step is judged by, fixed before any data: at
/// least 3% of naive and 0.3 µs per change, in both orders, with the
/// second naive arm (the control) drifting at most 5%.
pub const RULE: Rule = Rule {
    min_effect_pct: 3.0,
    min_effect_us: 0.3,
    both_orders: true,
    max_control_drift_pct: 5.0,
    max_spread_ratio: 4.0,
    drift_dwarfed_by: 3.0,
    min_slice_effect_ns: None,
    min_slice_effect_pct: None,
    confidence_pct: None,
};

/// One arm in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseFigures {
    /// µs per merged change (median over every part of every import, CI).
    pub us_per_change: Summary,
    /// The whole import, seconds (median µs per change × changes).
    pub import_s: f64,
}

/// What one step saves when it alone is tuned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepEffect {
    /// The step (a field of `MergeKnobs`).
    pub step: String,
    /// `cold` or `again`.
    pub phase: String,
    /// `naive − step alone`, µs per change, paired by round.
    pub saving_us: Difference,
    /// The saving as a share of `naive − tuned` in the same phase.
    pub share_of_gap: f64,
    /// The A/B verdict under [`RULE`] (A = naive, B = this step alone,
    /// control = the second naive arm; rounds split by which ran first).
    pub verdict: ab::Verdict,
    /// Why, as the A/B machinery's reasons (an older result's are
    /// sentences).
    pub reasons: Vec<Recorded<AbReason>>,
}

/// Everything `hopscope merge` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Changes per import.
    pub changes: u64,
    /// Rounds measured.
    pub rounds: u32,
    /// `arm → phase → figures`; arms `naive`, `tuned` and one per step.
    pub arms: BTreeMap<String, BTreeMap<String, PhaseFigures>>,
    /// `naive ÷ tuned` per phase.
    pub speedup: BTreeMap<String, f64>,
    /// Each step alone against naive.
    pub steps: Vec<StepEffect>,
    /// Slices inside one merged change, per lane (`naive/cold`, ...).
    pub slices: BTreeMap<String, Vec<SliceFigures>>,
    /// The run's metadata.
    pub meta: BTreeMap<String, String>,
    /// The machine.
    pub host: hopscope_probe::HostInfo,
    /// The clock the trace was taken with.
    pub clock: hopscope_probe::ClockInfo,
}

/// Analyze a trace written by the merge runner.
pub fn analyze(trace: &AbTrace, seed: u64) -> MergeResult {
    let blocks = &trace.lanes;
    let find = |lane: &str| blocks.iter().find(|l| l.name == lane && l.ops > 0);
    let changes: u64 = trace.header.run.parsed(&RunFact::Changes).unwrap_or(0);
    let mut arms: BTreeMap<String, BTreeMap<String, PhaseFigures>> = BTreeMap::new();
    for lane in blocks {
        let Ok(ArmLane { arm, phase }) = lane.name.parse::<ArmLane>() else { continue };
        let Ok(samples) = Samples::new(lane.us_per_op.values().copied().collect()) else { continue };
        let us_per_change = samples.summary(seed);
        let import_s = us_per_change.median * changes as f64 / 1e6;
        arms.entry(arm.to_string()).or_default().insert(phase.to_string(), PhaseFigures { us_per_change, import_s });
    }
    let mut speedup = BTreeMap::new();
    let mut steps = Vec::new();
    for phase in Phase::ALL {
        let (Some(naive), Some(tuned)) = (find(&Arm::Naive.lane(phase)), find(&Arm::Tuned.lane(phase))) else {
            continue;
        };
        let median = |l: &lanes::LaneBlocks| Samples::new(l.us_per_op.values().copied().collect()).map(|s| s.median());
        let (Ok(naive_us), Ok(tuned_us)) = (median(naive), median(tuned)) else { continue };
        speedup.insert(phase.to_string(), naive_us / tuned_us);
        let gap = naive_us - tuned_us;
        for arm in arms.keys().filter_map(|a| a.parse::<Arm>().ok().filter(Arm::is_step)) {
            let Some(alone) = find(&arm.lane(phase)) else { continue };
            let Some(saving) = lanes::difference(naive, alone) else { continue };
            let outcome = ab::verdict(&ab_passes(trace, &arm, phase), &RULE);
            steps.push(StepEffect {
                step: arm.to_string(),
                phase: phase.to_string(),
                saving_us: saving,
                share_of_gap: if gap > 0.0 { saving.median / gap } else { 0.0 },
                verdict: outcome.verdict,
                reasons: outcome.reasons,
            });
        }
    }
    let slices = trace
        .joined
        .iter()
        .filter(|ops| ops.complete > 0)
        .filter_map(|ops| {
            let lane = trace.header.lanes.get(usize::from(ops.lane))?;
            let wanted = lane.parse::<ArmLane>().is_ok_and(|l| matches!(l.arm, Arm::Naive | Arm::Tuned));
            // Every block of a lane is one part of an import; slices pool them.
            wanted.then(|| (lane.clone(), slices::slice_figures(ops, seed)))
        })
        .collect();
    MergeResult {
        schema: SCHEMA.to_owned(),
        changes,
        rounds: trace.header.run.parsed(&RunFact::Rounds).unwrap_or(0),
        arms,
        speedup,
        steps,
        slices,
        meta: trace.header.run.clone(),
        host: trace.header.host.clone(),
        clock: trace.header.clock.clone(),
    }
}

/// One step's A/B passes: A = `naive/{phase}`, B = `{step}/{phase}`,
/// control = the second naive arm; a part goes to pass 0 when A's ran
/// before B's (the drawn order decides) and to pass 1 otherwise.
fn ab_passes(trace: &AbTrace, step: &Arm, phase: Phase) -> Vec<PassBlocks> {
    let lane = |arm: &Arm| trace.header.lane(&arm.lane(phase));
    let (Some(a), Some(b), control) = (lane(&Arm::Naive), lane(step), lane(&Arm::Control)) else { return Vec::new() };
    // Per sample (one part of every arm's import, the arms interleaved):
    // where A's and B's blocks are (which ran first), and every figure.
    let mut first: BTreeMap<u32, (Option<usize>, Option<usize>)> = BTreeMap::new();
    let mut figures: Vec<(u32, u16, f64)> = Vec::new();
    for block in &trace.blocks {
        let seen = first.entry(block.sample).or_default();
        if block.lane == a {
            seen.0.get_or_insert(block.index);
        } else if block.lane == b {
            seen.1.get_or_insert(block.index);
        }
        figures.push((block.sample, block.lane, block.wall_us));
    }
    let mut passes = [
        PassBlocks { pass: 0, b_first: false, ..PassBlocks::default() },
        PassBlocks { pass: 1, b_first: true, ..PassBlocks::default() },
    ];
    for (sample, lane, us) in figures {
        let Some((Some(a_at), Some(b_at))) = first.get(&sample).copied() else { continue };
        let pass = &mut passes[usize::from(b_at < a_at)];
        if lane == a {
            pass.a.insert(sample, us);
        } else if lane == b {
            pass.b.insert(sample, us);
        } else if Some(lane) == control {
            pass.control.insert(sample, us);
        }
    }
    passes.into_iter().filter(|p| !p.a.is_empty()).collect()
}
