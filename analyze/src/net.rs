//! A change net of another lane's change (`net.json`, schema
//! `hopscope.ab-net/1`): `b − a` of one lane minus `b − a` of another,
//! each judged in lockstep on its own. A figure that is a difference of
//! lanes — the library's own cost, writer − floor — is judged across two
//! builds this way: `(writer_b − writer_a) − (floor_b − floor_a)` is
//! `library_b − library_a`, and each lane's effect is already free of the
//! host's drift, so their difference is too.

use serde::{Deserialize, Serialize};

use crate::ab::{Rule, Verdict as AbVerdict};
use crate::change::Verdict;
use crate::experiment::Experiment;
use crate::generations::{PassMean, TRIM};
use crate::recorded::Recorded;
use crate::stats::Confidence;

/// Schema name and version of `net.json`.
pub const NET_SCHEMA: &str = "hopscope.ab-net/1";

/// The net change and the verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Net {
    /// Always [`NET_SCHEMA`].
    pub schema: String,
    /// The lane whose change is judged (`writer`).
    pub lane: String,
    /// The lane whose change is taken off it (`floor`).
    pub minus: String,
    /// `b − a` of [`Net::lane`], across passes.
    pub lane_delta: PassMean,
    /// `b − a` of [`Net::minus`], across passes.
    pub minus_delta: PassMean,
    /// `lane_delta − minus_delta`, µs per operation.
    pub mean_us: f64,
    /// Its CI at [`Net::level_pct`], µs.
    pub ci: [f64; 2],
    /// The CI's level, percent (the rule's).
    pub level_pct: f64,
    /// How the CI was had, in a sentence.
    pub method: String,
    /// Slower beyond the rule's smallest effect (regression), faster
    /// (improvement), neither (no change), or either lane's run gave no
    /// verdict (drift suspected).
    pub verdict: Verdict,
    /// Why, as data (the receipt says each in words); a net written
    /// before reasons were data holds sentences.
    pub reasons: Vec<Recorded<NetReason>>,
    /// Whether another process held either run's CPUs (then there is no
    /// verdict, whatever a gate asks).
    pub contended: bool,
}

/// Why a net change is what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NetReason {
    /// The runs of these lanes gave no verdict of their own.
    NoVerdict {
        /// The lanes whose runs gave none.
        lanes: Vec<String>,
    },
    /// The net change, beyond zero and the rule's smallest effect or not.
    Net {
        /// The lane.
        lane: String,
        /// The lane whose change is taken off.
        minus: String,
        /// The net change, µs.
        mean_us: f64,
        /// Its CI, µs.
        ci: [f64; 2],
        /// The CI's level, percent.
        level_pct: f64,
        /// The rule's smallest effect, µs.
        min_us: f64,
        /// Whether it clears zero and the rule.
        beyond: bool,
    },
}

/// Why two runs have no net change to state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// A run was not judged across passes of fresh processes (not a
    /// lockstep run of two builds).
    #[error("`{0}` was not judged across passes of fresh processes")]
    NotAcross(String),
    /// A run has too few passes for a CI.
    #[error("`{0}` has too few passes for a CI")]
    TooFewPasses(String),
}

/// Passes the trimmed mean keeps of `n`, as [`crate::stats::trimmed_mean_ci`] trims.
fn kept(n: usize) -> usize {
    if n < 5 { n } else { n - 2 * (TRIM * n as f64).floor() as usize }
}

/// `(delta, standard error, degrees of freedom)` of a run judged across
/// passes, its standard error recovered from its CI.
fn effect(lane: &str, e: &Experiment, level: Confidence) -> Result<(PassMean, f64, usize), NetError> {
    let across = e.outcome.across.as_ref().ok_or_else(|| NetError::NotAcross(lane.to_owned()))?;
    let df = kept(across.passes)
        .checked_sub(1)
        .filter(|df| *df > 0)
        .ok_or_else(|| NetError::TooFewPasses(lane.to_owned()))?;
    let d = &across.delta;
    let run_level = Confidence::from_pct(d.level_pct).unwrap_or(level);
    let se = (d.ci[1] - d.ci[0]) / 2.0 / run_level.t(df);
    Ok((*d, se, df))
}

/// The CI half-width of a difference of two independent means, each
/// `(standard error, degrees of freedom)`: the variances add, and
/// Student's t takes the smaller degrees of freedom (conservative beside
/// Welch–Satterthwaite).
fn half_width((se_l, df_l): (f64, usize), (se_m, df_m): (f64, usize), level: Confidence) -> f64 {
    level.t(df_l.min(df_m)) * (se_l * se_l + se_m * se_m).sqrt()
}

/// The net change of `lane` (its experiment) minus `minus`'s, under
/// `rule`: the difference of the two trimmed means, its CI from their
/// standard errors (independent runs: the variances add) on the smaller
/// run's degrees of freedom.
pub fn net(lane: (&str, &Experiment), minus: (&str, &Experiment), rule: &Rule) -> Result<Net, NetError> {
    let level = rule.confidence();
    let (lane_delta, se_l, df_l) = effect(lane.0, lane.1, level)?;
    let (minus_delta, se_m, df_m) = effect(minus.0, minus.1, level)?;
    let mean_us = lane_delta.mean_us - minus_delta.mean_us;
    let half = half_width((se_l, df_l), (se_m, df_m), level);
    let ci = [mean_us - half, mean_us + half];
    let mut reasons = Vec::new();
    let contended = [lane.1, minus.1].iter().any(|e| e.contention.as_ref().is_some_and(|c| c.contended));
    let no_verdict: Vec<&str> = [lane, minus]
        .iter()
        .filter(|(_, e)| {
            e.outcome.verdict == AbVerdict::DriftSuspected || e.contention.as_ref().is_some_and(|c| c.contended)
        })
        .map(|(name, _)| *name)
        .collect();
    let verdict = if !no_verdict.is_empty() {
        reasons.push(NetReason::NoVerdict { lanes: no_verdict.iter().map(|l| (*l).to_owned()).collect() });
        Verdict::DriftSuspected
    } else {
        let min_us = rule.min_effect_us;
        let beyond = (ci[0] > 0.0 || ci[1] < 0.0) && mean_us.abs() >= min_us;
        reasons.push(NetReason::Net {
            lane: lane.0.to_owned(),
            minus: minus.0.to_owned(),
            mean_us,
            ci,
            level_pct: level.pct(),
            min_us,
            beyond,
        });
        match (beyond, mean_us > 0.0) {
            (true, true) => Verdict::Regression,
            (true, false) => Verdict::Improvement,
            (false, _) => Verdict::NoChange,
        }
    };
    Ok(Net {
        schema: NET_SCHEMA.to_owned(),
        lane: lane.0.to_owned(),
        minus: minus.0.to_owned(),
        lane_delta,
        minus_delta,
        mean_us,
        ci,
        level_pct: level.pct(),
        method: format!(
            "difference of the two lanes' {:.0}%-trimmed means over passes; CI from their standard errors \
             (independent runs), Student's t on the smaller run's degrees of freedom",
            TRIM * 100.0
        ),
        verdict,
        reasons: reasons.into_iter().map(Recorded::Typed).collect(),
        contended,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variances_add_on_the_smaller_degrees_of_freedom() {
        let t = Confidence::P99.t(59);
        let half = half_width((0.03, 119), (0.04, 59), Confidence::P99);
        assert!((half - t * 0.05).abs() < 1e-12, "{half}");
        // A lane with no spread leaves the other's CI as it was.
        let alone = half_width((0.0, 119), (0.04, 119), Confidence::P95);
        assert!((alone - Confidence::P95.t(119) * 0.04).abs() < 1e-12);
    }

    #[test]
    fn kept_passes_follow_the_trim() {
        assert_eq!(kept(4), 4);
        assert_eq!(kept(200), 120);
        assert_eq!(kept(10), 6);
    }
}
