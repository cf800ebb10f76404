//! A/B verdicts under a decision rule fixed before the data exists.
//!
//! An A/B run has three lanes: arm `a`, arm `b`, and `control`, an inert copy
//! of `a`. Each pass runs the arms in a fixed order, flipped from one pass to
//! the next (`a→b`, then `b→a`), one block per arm per round. Per pass, the
//! effect is the median over rounds of the paired difference `b − a`, with
//! the sign test's 95% CI; the control's `control − a` shows how much the harness
//! itself moves. [`verdict`] then says:
//!
//! - `drift-suspected` when the control moved beyond the rule's limit, when
//!   one arm's spread is at least `max_spread_ratio` times the other's, or
//!   when flipping the order flipped the sign of a clear effect;
//! - `reproduced` when every pass shows an effect of the same sign whose CI
//!   excludes zero and that clears both thresholds (and both orders ran, if
//!   the rule asks for it);
//! - `inconclusive` otherwise.

use std::collections::BTreeMap;

use hopscope_probe::{Role, Trace, TraceHeader};
use serde::{Deserialize, Serialize};

use crate::ab_reason::AbReason;
use crate::lanes::{self, Difference, LaneBlocks};
use crate::recorded::Recorded;
use crate::slice_verdict::MinEffect;
use crate::stats::{Confidence, Samples};

/// The keys of the arms in an experiment's description (`a`, `b`,
/// `control`), and hopscope's lane names for them before roles existed.
pub const ARM_A: &str = "a";
/// Arm B's key.
pub const ARM_B: &str = "b";
/// The inert control arm's key.
pub const CONTROL: &str = "control";

/// The trace lanes of an A/B run's arms, found by their roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arms {
    /// Arm A.
    pub a: u16,
    /// Arm B.
    pub b: u16,
    /// The control, if the run had one.
    pub control: Option<u16>,
}

impl Arms {
    /// The arms a trace's `header` declares, or `None` if it lacks arm A
    /// or arm B.
    pub fn of(header: &TraceHeader) -> Option<Arms> {
        let find =
            |role: Role| (0..header.lanes.len() as u16).find(|&i| header.lane_info(i).is_some_and(|l| l.role == role));
        Some(Arms { a: find(Role::ArmA)?, b: find(Role::ArmB)?, control: find(Role::Control) })
    }

    /// `(key, lane)` of every arm the run had.
    pub fn keyed(&self) -> Vec<(&'static str, u16)> {
        let mut arms = vec![(ARM_A, self.a), (ARM_B, self.b)];
        arms.extend(self.control.map(|c| (CONTROL, c)));
        arms
    }
}

/// The decision rule, written in the spec before the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Smallest effect that counts, percent of arm A.
    pub min_effect_pct: f64,
    /// Smallest effect that counts, µs per operation.
    pub min_effect_us: f64,
    /// Whether the effect must show in both orders (`a→b` and `b→a`).
    #[serde(default = "yes")]
    pub both_orders: bool,
    /// Largest tolerated movement of the control arm, percent of arm A.
    pub max_control_drift_pct: f64,
    /// Largest tolerated ratio between the arms' robust spreads.
    #[serde(default = "four")]
    pub max_spread_ratio: f64,
    /// A control's move or an arm's spread past its limit voids the
    /// verdict only when it could explain the effect. When every pass's
    /// effect clears the rule, with one sign, and in each pass is at least
    /// this many times the control's move and at least the wider arm's
    /// whole spread (the arms' blocks then barely overlap), the drift is
    /// stated and the effect judged: a batching arm's blocks run at two
    /// paces and spread 20 % where its partner's spread 2 %, beside a
    /// −55 % effect in every pass.
    #[serde(default = "three")]
    pub drift_dwarfed_by: f64,
    /// Smallest change a slice verdict claims, ns per operation; absent:
    /// the default of [`MinEffect::default_for`] the run's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_slice_effect_ns: Option<f64>,
    /// Smallest change a slice verdict claims, percent of the slice;
    /// absent: the default of [`MinEffect::default_for`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_slice_effect_pct: Option<f64>,
    /// The level, percent (95 or 99), of the CI a verdict across fresh
    /// processes needs clear of zero; absent: 95.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_pct: Option<f64>,
}

fn yes() -> bool {
    true
}

fn four() -> f64 {
    4.0
}

fn three() -> f64 {
    3.0
}

impl Rule {
    /// Refuse a rule whose numbers cannot mean anything.
    pub fn check(&self) -> Result<(), RuleError> {
        let fields = [
            ("min_effect_pct", self.min_effect_pct, 0.0),
            ("min_effect_us", self.min_effect_us, 0.0),
            ("max_control_drift_pct", self.max_control_drift_pct, 0.0),
            ("max_spread_ratio", self.max_spread_ratio, 1.0),
            ("drift_dwarfed_by", self.drift_dwarfed_by, 1.0),
        ];
        let slice = [
            self.min_slice_effect_ns.map(|v| ("min_slice_effect_ns", v, 0.0)),
            self.min_slice_effect_pct.map(|v| ("min_slice_effect_pct", v, 0.0)),
        ];
        for (field, value, at_least) in fields.into_iter().chain(slice.into_iter().flatten()) {
            if !value.is_finite() || value < at_least {
                return Err(RuleError::Range { field, value, at_least });
            }
        }
        if let Some(pct) = self.confidence_pct.filter(|&pct| Confidence::from_pct(pct).is_none()) {
            return Err(RuleError::Confidence(pct));
        }
        Ok(())
    }

    /// The level of the CI a verdict across passes is drawn at.
    pub fn confidence(&self) -> Confidence {
        self.confidence_pct.and_then(Confidence::from_pct).unwrap_or_default()
    }

    /// The smallest slice change this rule claims on a clock of grain
    /// `grain_ns`: its own figures where it names them, the defaults
    /// otherwise.
    pub fn slice_min_effect(&self, grain_ns: Option<f64>) -> MinEffect {
        let default = MinEffect::default_for(grain_ns);
        MinEffect {
            ns: self.min_slice_effect_ns.unwrap_or(default.ns),
            share: self.min_slice_effect_pct.map_or(default.share, |pct| pct / 100.0),
        }
    }
}

/// A rule field that cannot mean anything.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// A threshold that is negative, not finite, or a spread ratio below 1.
    #[error("rule.{field} must be a number ≥ {at_least}, got {value}")]
    Range {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
        /// The least it may be.
        at_least: f64,
    },
    /// A confidence level other than the two a verdict is drawn at.
    #[error("rule.confidence_pct must be 95 or 99, got {0}")]
    Confidence(f64),
}

/// What an A/B run concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Same sign, above both thresholds, in every pass and order.
    Reproduced,
    /// No clear effect, or one that does not hold in every pass.
    Inconclusive,
    /// The harness moved: the control drifted, the arms' spreads differ
    /// wildly, or the order decided the sign.
    DriftSuspected,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Inconclusive => "inconclusive",
            Verdict::DriftSuspected => "drift-suspected",
        })
    }
}

/// One pass's block figures, µs per op keyed by sample.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PassBlocks {
    /// Pass index.
    pub pass: u32,
    /// Whether `b` ran before `a` in this pass.
    pub b_first: bool,
    /// Arm A.
    pub a: BTreeMap<u32, f64>,
    /// Arm B.
    pub b: BTreeMap<u32, f64>,
    /// The control arm, if the run had one.
    pub control: BTreeMap<u32, f64>,
}

/// One pass's effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassEffect {
    /// Pass index.
    pub pass: u32,
    /// `a→b` or `b→a`.
    pub order: String,
    /// Median of arm A, µs per op.
    pub a_us: f64,
    /// Median of arm B, µs per op.
    pub b_us: f64,
    /// `b − a`, paired by round.
    pub delta_us: Difference,
    /// `delta / a`, percent.
    pub delta_pct: f64,
    /// `control − a`, paired by round, if there is a control.
    pub control_us: Option<Difference>,
    /// `control / a`, percent.
    pub control_pct: Option<f64>,
    /// Robust spread (1.4826 × MAD / median) of arm A's blocks.
    pub spread_a: f64,
    /// Robust spread of arm B's blocks.
    pub spread_b: f64,
    /// Whether this pass alone clears the rule: CI excludes 0 and both
    /// thresholds are met.
    pub clear: bool,
}

/// Which figure of each block an A/B verdict judged: the arms' wall time
/// per operation, or, when both arms were probed, each block's median
/// latency per operation. With one caller they come near each other; with
/// several at once, wall time per operation is a throughput and latency
/// is what each operation waited (a batching arm can halve the one and
/// double the other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A block's wall time ÷ its operations (clean arms).
    WallPerOp,
    /// A block's median per-operation latency, first mark to last (probed
    /// arms).
    LatencyMedian,
}

/// The figure an A/B verdict judged, and how many callers drove the arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbFigure {
    /// Which figure.
    pub kind: FigureKind,
    /// Callers at once in each arm (arm A's; the spec gives both the same).
    pub callers: u32,
}

/// The outcome of an A/B run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbOutcome {
    /// Per pass, in run order.
    pub passes: Vec<PassEffect>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, as data (the receipt says each in words); an outcome written
    /// before reasons were data holds sentences.
    pub reasons: Vec<Recorded<AbReason>>,
    /// The effect judged across passes, when every pass ran on fresh
    /// processes ([`crate::generations`]); the verdict is then its.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across: Option<crate::generations::AcrossPasses>,
    /// The figure of each block judged (absent in outcomes written before
    /// it was recorded, and in a verdict judged from bare passes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<AbFigure>,
    /// The smallest lane change this run could tell from none, µs: half
    /// its CI across passes, or the widest pass's
    /// ([`crate::slice_account::resolution_us`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_us: Option<f64>,
    /// What the slices the verdicts flagged account for, when they all
    /// moved one way ([`crate::slice_account`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_slices: Option<crate::slice_account::SliceAccount>,
    /// The estimate the verdict states, and the figure it is read from
    /// ([`crate::slice_account::estimate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<crate::slice_account::Estimate>,
}

impl AbOutcome {
    /// An outcome of `passes` judged `verdict` for `reasons`, before the
    /// figures drawn after the verdict (across passes, the figure judged,
    /// the resolution, the slices' account, the estimate).
    pub fn judged(passes: Vec<PassEffect>, verdict: Verdict, reasons: Vec<Recorded<AbReason>>) -> AbOutcome {
        AbOutcome {
            passes,
            verdict,
            reasons,
            across: None,
            figure: None,
            resolution_us: None,
            by_slices: None,
            estimate: None,
        }
    }

    /// Whether B came out slower than A: by the flagged slices' sum when
    /// they decided the verdict, else by the lane's effect.
    pub fn slower(&self) -> bool {
        let by_slices = self.typed_reasons().any(|r| matches!(r, AbReason::BySlices { .. }));
        match (&self.by_slices, &self.across) {
            (Some(account), _) if by_slices => account.delta_us > 0.0,
            (_, Some(across)) => across.delta.mean_us > 0.0,
            _ => self.passes.iter().map(|p| p.delta_us.median).sum::<f64>() > 0.0,
        }
    }
}

impl AbOutcome {
    /// The reasons as data (an older outcome's sentences left out).
    pub fn typed_reasons(&self) -> impl Iterator<Item = &AbReason> {
        self.reasons.iter().filter_map(Recorded::typed)
    }
}

/// Scale of the MAD that makes it estimate a standard deviation.
const MAD_TO_SD: f64 = 1.4826;

/// Judge `passes` under `rule`. Pure; `seed` makes every CI reproducible.
pub fn verdict(passes: &[PassBlocks], rule: &Rule) -> AbOutcome {
    let effects: Vec<PassEffect> = passes.iter().filter_map(|p| effect(p, rule)).collect();
    let mut drift = Vec::new();
    let mut notes = Vec::new();
    for e in &effects {
        if let Some(pct) = e.control_pct
            && pct.abs() > rule.max_control_drift_pct
        {
            drift.push(AbReason::ControlMoved {
                pass: e.pass,
                order: e.order.clone(),
                pct,
                max_pct: rule.max_control_drift_pct,
            });
        }
        let (lo, hi) = (e.spread_a.min(e.spread_b), e.spread_a.max(e.spread_b));
        if lo > 0.0 && hi >= rule.max_spread_ratio * lo {
            drift.push(AbReason::SpreadApart {
                pass: e.pass,
                order: e.order.clone(),
                spread_a: e.spread_a,
                spread_b: e.spread_b,
            });
        }
    }
    let signed: Vec<&PassEffect> = effects.iter().filter(|e| ci_excludes_zero(&e.delta_us)).collect();
    let flipped = signed.iter().any(|e| e.delta_us.median > 0.0) && signed.iter().any(|e| e.delta_us.median < 0.0);
    let orders = effects.iter().map(|e| e.order.as_str()).collect::<std::collections::BTreeSet<_>>();
    let both = !rule.both_orders || orders.len() > 1;
    // Drift the effect dwarfs is stated beside the verdict, not in its place.
    let dwarfed = (!flipped && both).then(|| dwarfed(&effects, &drift, rule)).flatten();
    if flipped {
        drift.push(AbReason::SignFlipped);
    }
    notes.extend(two_modes(passes));
    if let Some(reason) = dwarfed {
        notes.splice(0..0, drift.drain(..));
        notes.push(reason);
    }
    let verdict = if !drift.is_empty() {
        Verdict::DriftSuspected
    } else if effects.is_empty() {
        notes.push(AbReason::NoPass);
        Verdict::Inconclusive
    } else if rule.both_orders && orders.len() < 2 {
        notes.push(AbReason::OneOrder);
        Verdict::Inconclusive
    } else if effects.iter().all(|e| e.clear) {
        notes.push(AbReason::EveryPass { faster: effects[0].delta_us.median < 0.0 });
        Verdict::Reproduced
    } else {
        for e in effects.iter().filter(|e| !e.clear) {
            notes.push(AbReason::BelowRule {
                pass: e.pass,
                order: e.order.clone(),
                delta_us: e.delta_us,
                delta_pct: e.delta_pct,
            });
        }
        Verdict::Inconclusive
    };
    drift.extend(notes);
    let reasons = drift.into_iter().map(Recorded::Typed).collect();
    AbOutcome::judged(effects, verdict, reasons)
}

/// When every pass is clear with one sign and each pass's effect is at
/// least [`Rule::drift_dwarfed_by`] times the drift `drift` found in it
/// (the control's move, the wider arm's spread), the reason that says so.
fn dwarfed(effects: &[PassEffect], drift: &[AbReason], rule: &Rule) -> Option<AbReason> {
    if drift.is_empty() || effects.is_empty() || !effects.iter().all(|e| e.clear) {
        return None;
    }
    let faster = effects[0].delta_us.median < 0.0;
    if effects.iter().any(|e| (e.delta_us.median < 0.0) != faster) {
        return None;
    }
    let mut largest = 0.0f64;
    for reason in drift {
        // The drift, percent, and how many times the effect must be it.
        let (pass, pct, times) = match reason {
            AbReason::ControlMoved { pass, pct, .. } => (*pass, pct.abs(), rule.drift_dwarfed_by),
            AbReason::SpreadApart { pass, spread_a, spread_b, .. } => (*pass, spread_a.max(*spread_b) * 100.0, 1.0),
            _ => return None,
        };
        let effect = effects.iter().find(|e| e.pass == pass)?;
        if effect.delta_pct.abs() < times * pct {
            return None;
        }
        largest = largest.max(pct);
    }
    let smallest = effects.iter().map(|e| e.delta_pct.abs()).fold(f64::INFINITY, f64::min);
    Some(AbReason::DriftDwarfed {
        smallest_effect_pct: smallest,
        largest_drift_pct: largest,
        ratio: rule.drift_dwarfed_by,
    })
}

/// Each arm whose blocks ran at two paces over the run (a batching arm:
/// some blocks batch, some do not), with both paces: two clusters of at
/// least a tenth of the blocks each, an empty band of at least a tenth of
/// the median between them.
fn two_modes(passes: &[PassBlocks]) -> Vec<AbReason> {
    let arms: [(&str, Vec<f64>); 2] = [
        (ARM_A, passes.iter().flat_map(|p| p.a.values().copied()).collect()),
        (ARM_B, passes.iter().flat_map(|p| p.b.values().copied()).collect()),
    ];
    arms.into_iter().filter_map(|(arm, blocks)| modes(arm, blocks)).collect()
}

/// Arm `arm`'s two paces, when its `blocks` ran at two.
fn modes(arm: &str, mut blocks: Vec<f64>) -> Option<AbReason> {
    blocks.retain(|v| v.is_finite());
    blocks.sort_by(f64::total_cmp);
    let n = blocks.len();
    let least = n.div_ceil(10).max(2);
    if n < 2 * least {
        return None;
    }
    let median = blocks[n / 2];
    // The widest gap between neighbours with a tenth of the blocks each side.
    let (at, gap) = (least..=n - least).map(|i| (i, blocks[i] - blocks[i - 1])).max_by(|a, b| a.1.total_cmp(&b.1))?;
    if median <= 0.0 || gap < 0.1 * median {
        return None;
    }
    let (low, high) = blocks.split_at(at);
    Some(AbReason::TwoModes {
        arm: arm.to_owned(),
        low_us: low[low.len() / 2],
        high_us: high[high.len() / 2],
        low_blocks: low.len(),
        high_blocks: high.len(),
    })
}

/// One pass's effect under `rule`; `None` without both arms.
pub(crate) fn effect(p: &PassBlocks, rule: &Rule) -> Option<PassEffect> {
    let a = blocks(&p.a);
    let b = blocks(&p.b);
    let delta_us = lanes::difference(&b, &a)?;
    let a_samples = Samples::new(p.a.values().copied().collect()).ok()?;
    let b_samples = Samples::new(p.b.values().copied().collect()).ok()?;
    let a_us = a_samples.median();
    let pct = |us: f64| if a_us > 0.0 { us / a_us * 100.0 } else { 0.0 };
    let control_us = if p.control.is_empty() { None } else { lanes::difference(&blocks(&p.control), &a) };
    let delta_pct = pct(delta_us.median);
    let clear = ci_excludes_zero(&delta_us)
        && delta_us.median.abs() >= rule.min_effect_us
        && delta_pct.abs() >= rule.min_effect_pct;
    Some(PassEffect {
        pass: p.pass,
        order: if p.b_first { "b→a" } else { "a→b" }.to_owned(),
        a_us,
        b_us: b_samples.median(),
        delta_us,
        delta_pct,
        control_pct: control_us.map(|c| pct(c.median)),
        control_us,
        spread_a: spread(&a_samples),
        spread_b: spread(&b_samples),
        clear,
    })
}

fn blocks(figures: &BTreeMap<u32, f64>) -> LaneBlocks {
    LaneBlocks { us_per_op: figures.iter().map(|(&s, &v)| ((0, s), v)).collect(), ..LaneBlocks::default() }
}

fn spread(s: &Samples) -> f64 {
    let median = s.median();
    if median > 0.0 { MAD_TO_SD * s.mad() / median } else { 0.0 }
}

fn ci_excludes_zero(d: &Difference) -> bool {
    d.ci95[0] > 0.0 || d.ci95[1] < 0.0
}

/// Collect the per-pass blocks of an A/B trace held in memory
/// ([`crate::ab_trace::AbTrace::pass_blocks`]).
pub fn pass_blocks(trace: &Trace) -> Vec<PassBlocks> {
    crate::ab_trace::AbTrace::read(&mut { trace }).map(|t| t.pass_blocks()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Rule {
        Rule {
            min_effect_pct: 2.0,
            min_effect_us: 0.1,
            both_orders: true,
            max_control_drift_pct: 2.0,
            max_spread_ratio: 4.0,
            drift_dwarfed_by: 3.0,
            min_slice_effect_ns: None,
            min_slice_effect_pct: None,
            confidence_pct: None,
        }
    }

    /// A pass with 20 rounds: A around `a`, B around `b`, control around
    /// `control`, each with the same small deterministic wobble.
    fn pass(index: u32, b_first: bool, a: f64, b: f64, control: f64) -> PassBlocks {
        let wobble = |s: u32| f64::from((s * 7919) % 11) * 0.01;
        PassBlocks {
            pass: index,
            b_first,
            a: (0..20).map(|s| (s, a + wobble(s))).collect(),
            b: (0..20).map(|s| (s, b + wobble(s + 3))).collect(),
            control: (0..20).map(|s| (s, control + wobble(s + 5))).collect(),
        }
    }

    #[test]
    fn the_same_sign_in_both_orders_is_reproduced() {
        let out = verdict(&[pass(0, false, 10.0, 9.0, 10.0), pass(1, true, 10.0, 9.0, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::Reproduced, "{:?}", out.reasons);
        assert!(out.passes.iter().all(|p| p.clear));
        assert_eq!(out.passes[1].order, "b→a");
    }

    #[test]
    fn a_flipped_sign_is_drift() {
        let out = verdict(&[pass(0, false, 10.0, 9.0, 10.0), pass(1, true, 10.0, 11.0, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::DriftSuspected);
        assert!(out.typed_reasons().any(|r| *r == AbReason::SignFlipped), "{:?}", out.reasons);
    }

    #[test]
    fn a_moved_control_is_drift() {
        let out = verdict(&[pass(0, false, 10.0, 9.0, 10.5), pass(1, true, 10.0, 9.0, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::DriftSuspected);
        assert!(out.typed_reasons().any(|r| matches!(r, AbReason::ControlMoved { pass: 0, .. })), "{:?}", out.reasons);
    }

    #[test]
    fn an_effect_below_the_threshold_is_inconclusive() {
        // 1% and 0.1 µs: real (the CI excludes 0) but under the 2% rule.
        let out = verdict(&[pass(0, false, 10.0, 9.9, 10.0), pass(1, true, 10.0, 9.9, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::Inconclusive, "{:?}", out.reasons);
        assert!(out.typed_reasons().any(|r| matches!(r, AbReason::BelowRule { .. })), "{:?}", out.reasons);
    }

    #[test]
    fn no_effect_is_inconclusive_and_one_order_is_not_enough() {
        let out = verdict(&[pass(0, false, 10.0, 10.0, 10.0), pass(1, true, 10.0, 10.0, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::Inconclusive);
        let one = verdict(&[pass(0, false, 10.0, 9.0, 10.0)], &rule());
        assert_eq!(one.verdict, Verdict::Inconclusive);
        assert!(one.typed_reasons().any(|r| *r == AbReason::OneOrder), "{:?}", one.reasons);
    }

    #[test]
    fn wildly_different_spreads_are_drift() {
        let mut noisy = pass(0, false, 10.0, 9.0, 10.0);
        for (s, v) in noisy.b.iter_mut() {
            *v += if s % 2 == 0 { 2.0 } else { -2.0 };
        }
        let out = verdict(&[noisy, pass(1, true, 10.0, 9.0, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::DriftSuspected);
        assert!(out.typed_reasons().any(|r| matches!(r, AbReason::SpreadApart { pass: 0, .. })), "{:?}", out.reasons);
    }

    /// A batching arm B: half its rounds at one pace, half at another, both
    /// far below A (a group commit under several callers).
    fn bimodal(index: u32, b_first: bool, control: f64) -> PassBlocks {
        let mut p = pass(index, b_first, 20.0, 9.0, control);
        for (s, v) in p.b.iter_mut() {
            *v = if s % 2 == 0 { 7.0 } else { 11.0 } + f64::from(*s) * 0.001;
        }
        p
    }

    #[test]
    fn drift_a_large_consistent_effect_dwarfs_is_stated_and_the_effect_judged() {
        // B's spread is ~10× A's and the control moved 2.5 % in one pass,
        // beside a −55 % effect in every pass.
        let passes = [bimodal(0, false, 20.5), bimodal(1, true, 20.0), bimodal(2, false, 20.0), bimodal(3, true, 20.0)];
        let out = verdict(&passes, &rule());
        assert_eq!(out.verdict, Verdict::Reproduced, "{:?}", out.reasons);
        let reasons: Vec<&AbReason> = out.typed_reasons().collect();
        assert!(reasons.iter().any(|r| matches!(r, AbReason::ControlMoved { pass: 0, .. })), "{reasons:?}");
        assert!(reasons.iter().any(|r| matches!(r, AbReason::SpreadApart { .. })), "the spread is still said");
        assert!(reasons.iter().any(|r| matches!(r, AbReason::DriftDwarfed { .. })), "{reasons:?}");
        let [AbReason::TwoModes { arm, low_us, high_us, low_blocks, high_blocks }] =
            reasons.iter().filter(|r| matches!(r, AbReason::TwoModes { .. })).copied().collect::<Vec<_>>()[..]
        else {
            panic!("one arm at two paces: {reasons:?}")
        };
        assert_eq!(arm, "b");
        assert!((low_us - 7.0).abs() < 0.1 && (high_us - 11.0).abs() < 0.1, "{low_us} {high_us}");
        assert_eq!((*low_blocks, *high_blocks), (40, 40));
    }

    #[test]
    fn drift_an_effect_does_not_dwarf_still_voids_the_verdict() {
        // A 5 % effect beside a control that moved 3 %: the drift could
        // explain much of it.
        let out = verdict(&[pass(0, false, 10.0, 9.5, 10.3), pass(1, true, 10.0, 9.5, 10.0)], &rule());
        assert_eq!(out.verdict, Verdict::DriftSuspected, "{:?}", out.reasons);
        assert!(!out.typed_reasons().any(|r| matches!(r, AbReason::DriftDwarfed { .. })));
        // A flipped sign is never dwarfed.
        let flipped = verdict(&[bimodal(0, false, 25.0), pass(1, true, 10.0, 30.0, 10.0)], &rule());
        assert_eq!(flipped.verdict, Verdict::DriftSuspected);
    }

    #[test]
    fn rules_with_meaningless_numbers_are_refused() {
        assert!(Rule { min_effect_pct: -1.0, ..rule() }.check().unwrap_err().to_string().contains("min_effect_pct"));
        assert!(Rule { max_spread_ratio: 0.5, ..rule() }.check().unwrap_err().to_string().contains("max_spread_ratio"));
        assert!(Rule { drift_dwarfed_by: 0.9, ..rule() }.check().unwrap_err().to_string().contains("drift_dwarfed_by"));
        assert!(rule().check().is_ok());
    }
}
