//! What an A/B experiment is judged by and what the judging finds, as
//! data: the rule fixed in advance, each pass's blocks and effect, the
//! outcome with its figures across passes and its slices' account. The
//! steps that judge (`ab`, `generations`, `slice_account`) all read and
//! fill these; none of the types reaches back into a step.

use std::collections::BTreeMap;

use hopscope_probe::{Role, TraceHeader};
use serde::{Deserialize, Serialize};

use crate::ab_reason::AbReason;
use crate::lanes::Difference;
use crate::recorded::Recorded;
use crate::slice_verdict::MinEffect;
use crate::stats::Confidence;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A block's wall time ÷ its operations (clean arms).
    #[default]
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

/// The changed slices' sum, µs per operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceAccount {
    /// The slices the verdicts flagged, all moved the same way.
    pub slices: Vec<String>,
    /// Their effects summed, µs per operation (`b − a`).
    pub delta_us: f64,
    /// Their CIs' bounds summed, µs (each slice's 95 % CI).
    pub ci_us: [f64; 2],
    /// The slices no verdict flagged, their effects summed, µs: counted
    /// as unchanged, and said beside (a layout that ran SQLite's slice
    /// 50 ns faster in build B shows here).
    #[serde(default)]
    pub rest_us: f64,
    /// Their CIs' bounds summed, µs.
    #[serde(default)]
    pub rest_ci_us: [f64; 2],
}

/// The verdict's estimate of `b − a`, µs per operation, and the figure
/// it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// `b − a`, µs per operation.
    pub delta_us: f64,
    /// Its interval, µs.
    pub ci_us: [f64; 2],
    /// The interval's confidence, percent.
    pub level_pct: f64,
    /// Where it comes from.
    pub source: EstimateSource,
}

/// Which figure an [`Estimate`] is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateSource {
    /// The flagged slices' sum: they decided the verdict, or they account
    /// for the lane's change (inside its CI, the rest of the operation not
    /// told from zero), and their interval is the narrower by far.
    Slices,
    /// The lane's own trimmed mean over passes.
    Lane,
}

impl SliceAccount {
    /// Whether the flagged slices account for a lane change whose CI is
    /// `lane_ci`: their sum lies inside it, and the slices no verdict
    /// flagged, summed, are not told from zero.
    pub fn explains(&self, lane_ci: [f64; 2]) -> bool {
        let rest_spans_zero = self.rest_ci_us[0] <= 0.0 && self.rest_ci_us[1] >= 0.0;
        rest_spans_zero && (lane_ci[0]..=lane_ci[1]).contains(&self.delta_us)
    }
}

/// A mean over passes with its CI (at the rule's level): the [`TRIM`](crate::generations::TRIM)-trimmed mean, with
/// Tukey and McLaughlin's CI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassMean {
    /// Trimmed mean of the per-pass figures, µs per op.
    pub mean_us: f64,
    /// CI of the trimmed mean at [`PassMean::level_pct`], µs.
    #[serde(alias = "ci95")]
    pub ci: [f64; 2],
    /// The CI's level, percent (the rule's `confidence_pct`).
    #[serde(default = "ninety_five")]
    pub level_pct: f64,
    /// Winsorized standard deviation of the per-pass figures, µs.
    pub sd_us: f64,
    /// The mean as a percentage of arm A's mean figure.
    pub pct: f64,
}

fn ninety_five() -> f64 {
    95.0
}

/// The effect judged across passes, each by fresh processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcrossPasses {
    /// Passes with both arms measured.
    pub passes: usize,
    /// `b − a`.
    pub delta: PassMean,
    /// `control − a`: two processes of build A, the run's own noise floor.
    pub control: Option<PassMean>,
    /// `b − a` of the passes of each order (`a→b`, `b→a`), µs: the
    /// [`TRIM`](crate::generations::TRIM)-trimmed mean, the verdict's own estimator (a plain mean let
    /// one slowed process flip an order's sign: 50 ns changes read
    /// "the orders disagree" with both orders' middle passes positive).
    pub by_order: BTreeMap<String, f64>,
    /// How far builds of one commit differ by layout alone, when the
    /// passes cycled through several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layouts: Option<LayoutSpread>,
}

/// The spread between builds of one commit that differ only in layout:
/// per pair of build A's layouts the control ran beside, the mean of
/// `control − a` over that pair's passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutSpread {
    /// Builds of each side.
    pub builds: usize,
    /// `layout j − layout i` of build A (1-based, as the builds are
    /// named), with its [`TRIM`](crate::generations::TRIM)-trimmed mean over the passes that ran the
    /// pair.
    pub pairs: Vec<LayoutPair>,
    /// The largest pair's mean, absolute, µs: a change no larger than this
    /// is not called.
    pub spread_us: f64,
}

/// One pair of build A's layouts, measured by the control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutPair {
    /// The control's layout (1-based).
    pub control: usize,
    /// Arm a's layout (1-based).
    pub a: usize,
    /// Mean `control − a` over the pair's passes, µs.
    pub mean_us: f64,
    /// Passes that ran the pair.
    pub passes: usize,
}
