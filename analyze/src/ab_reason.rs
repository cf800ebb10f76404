//! Why an A/B verdict is what it is, as data: each reason with the figures
//! it rests on, so `ab.json` carries what the receipt says. The reports
//! say each in words.

use serde::{Deserialize, Serialize};

use crate::lanes::Difference;

/// One reason of an A/B outcome (within-process passes, or passes by
/// fresh processes judged across them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum AbReason {
    /// Another process held the run's CPUs: no verdict.
    Contended(crate::contention::ContendedRun),
    /// One pass's control moved more than the rule allows.
    ControlMoved {
        /// The pass.
        pass: u32,
        /// Its order (`a→b` or `b→a`).
        order: String,
        /// The control's move against A, percent.
        pct: f64,
        /// The rule's limit, percent.
        max_pct: f64,
    },
    /// In one pass one arm's blocks spread far more than the other's.
    SpreadApart {
        /// The pass.
        pass: u32,
        /// Its order.
        order: String,
        /// Arm A's robust spread, as a fraction.
        spread_a: f64,
        /// Arm B's.
        spread_b: f64,
    },
    /// Flipping the order flipped the sign of the effect.
    SignFlipped,
    /// Across fresh processes the lane moved with no slice flagged its
    /// way: the processes' layout, not the code
    /// ([`crate::slice_account::hold_to_slices`]).
    Unaccounted {
        /// The lane's effect, µs per operation.
        lane_us: f64,
        /// Its CI, µs.
        ci_us: [f64; 2],
        /// Flagged slices, every one moved the other way (empty: none flagged).
        against: Vec<String>,
    },
    /// The lane's own CI could not tell, and the slices the verdicts
    /// flagged, all moved one way, account for a change that clears the
    /// rule ([`crate::slice_account`]).
    BySlices {
        /// The flagged slices.
        slices: Vec<String>,
        /// Their effects summed, µs per operation.
        delta_us: f64,
        /// Their CIs' bounds summed, µs.
        ci_us: [f64; 2],
        /// Half the lane's own CI, µs: what it could tell.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lane_half_width_us: Option<f64>,
        /// The unflagged slices' effects summed, µs, and their CIs' bounds.
        #[serde(default)]
        rest_us: f64,
        /// Those CIs' bounds summed, µs.
        #[serde(default)]
        rest_ci_us: [f64; 2],
    },
    /// The drift found (a control's move, an arm's spread past the rule)
    /// is too small to explain the effect: every pass's effect clears the
    /// rule, with one sign, at least `ratio` times the drift in it.
    DriftDwarfed {
        /// The smallest effect over the passes, percent of A.
        smallest_effect_pct: f64,
        /// The largest drift beyond the rule, percent.
        largest_drift_pct: f64,
        /// The rule's `drift_dwarfed_by`.
        ratio: f64,
    },
    /// One arm's blocks ran at two paces (its figures cluster in two).
    TwoModes {
        /// The arm (`a` or `b`).
        arm: String,
        /// The lower cluster's median figure, µs per operation.
        low_us: f64,
        /// The higher figure's median, µs per operation.
        high_us: f64,
        /// Blocks at the lower figure.
        low_blocks: usize,
        /// Blocks at the higher figure.
        high_blocks: usize,
    },
    /// No pass has both arms measured.
    NoPass,
    /// The rule asks for both orders and only one ran.
    OneOrder,
    /// B beyond the rule's thresholds in every pass.
    EveryPass {
        /// Whether B is faster (else slower).
        faster: bool,
    },
    /// One pass's effect below the rule.
    BelowRule {
        /// The pass.
        pass: u32,
        /// Its order.
        order: String,
        /// `b − a`, paired by round, µs.
        delta_us: Difference,
        /// `delta / a`, percent.
        delta_pct: f64,
    },
    /// Too few passes by fresh processes for a verdict across them.
    TooFewPasses {
        /// Passes with both arms measured.
        passes: usize,
        /// The fewest a verdict needs.
        min: usize,
    },
    /// The control process differs from A by more than the rule allows,
    /// on average over the passes.
    ControlAcross {
        /// Its difference from A, percent.
        pct: f64,
        /// Passes with a control.
        passes: usize,
        /// The rule's limit, percent.
        max_pct: f64,
    },
    /// One arm's blocks spread far more than the other's (medians over
    /// passes).
    SpreadAcross {
        /// Arm A's spread, as a fraction.
        spread_a: f64,
        /// Arm B's.
        spread_b: f64,
    },
    /// The orders disagree: the effect follows the order.
    OrdersDisagree {
        /// Each order's mean effect, µs.
        by_order: Vec<(String, f64)>,
    },
    /// The effect is no larger than two builds of A's commit differ by
    /// their layout alone: not called.
    WithinLayouts {
        /// `B − A` across passes, µs.
        mean_us: f64,
        /// Its CI, µs.
        ci: [f64; 2],
        /// The CI's level, percent.
        level_pct: f64,
        /// The largest layout pair's difference, µs.
        spread_us: f64,
        /// Layout pairs compared.
        pairs: usize,
    },
    /// B beyond the rule's thresholds across passes by fresh processes.
    Across {
        /// `B − A` across passes, µs.
        mean_us: f64,
        /// Its CI, µs.
        ci: [f64; 2],
        /// The CI's level, percent.
        level_pct: f64,
        /// Passes.
        passes: usize,
    },
    /// The effect across passes is below the rule.
    BelowRuleAcross {
        /// `B − A` across passes, µs.
        mean_us: f64,
        /// As a percentage of A.
        pct: f64,
        /// Its CI, µs.
        ci: [f64; 2],
        /// The CI's level, percent.
        level_pct: f64,
        /// Passes.
        passes: usize,
    },
}
