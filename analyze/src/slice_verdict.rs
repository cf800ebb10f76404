//! Verdicts per slice: an A/B change looked for in every slice as well as in
//! the lane, with the false-positive rate of the whole family held at α.
//!
//! A slice sees a change the lane's noise hides: a 25 ns cost in a 40 ns
//! slice is plain in that slice and lost in an 18 µs write. Per round, each
//! arm's block is reduced to each slice's interquartile mean (robust like a
//! median, yet finer than the clock's grain); `b − a` is paired by round.
//! Each slice gets a Wilcoxon signed-rank p-value over all its rounds, and
//! Holm's step-down procedure across the slices decides which changed: the
//! chance that any unchanged slice is flagged stays at most α. A flagged
//! slice must also move the same way in every pass (both orders), so a
//! change that follows the order is not taken for the arms', and its CI
//! must clear a smallest effect worth a verdict ([`MinEffect`]): two
//! identical writer instances differ by a few ns in short slices and by a
//! fraction of a percent in long ones (their objects and database files sit
//! elsewhere), real differences no experiment asked about, which hundreds
//! of paired rounds would otherwise flag.

use serde::{Deserialize, Serialize};

use crate::join::{LaneOps, Sharing};
use crate::stats::{median_ci95_order_statistics, median_of_unsorted};

/// The family-wise false-positive rate the slice verdicts keep.
pub const ALPHA: f64 = 0.05;

/// Smallest slice change claimed when the rule names none, ns. Measured on
/// the reference writer at 0 ns injected (2-vCPU VM, 8 repeats of 400
/// paired rounds): two identical instances differed by up to 6.7 ns in a
/// 43 ns slice.
pub const INSTANCE_NOISE_NS: f64 = 10.0;

/// Smallest slice change claimed when the rule names none, as a share of
/// the slice: in the same runs SQLite's ~7–11 µs `woke→executed` differed
/// by 30–65 ns (up to 0.7%) between identical instances.
pub const INSTANCE_NOISE_SHARE: f64 = 0.01;

/// The smallest change a slice verdict claims: a flagged slice's CI lies
/// wholly beyond the larger of `ns` and `share` of the slice's median in
/// arm A.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MinEffect {
    /// Absolute floor, ns.
    pub ns: f64,
    /// Share of the slice's own median (0.01 = 1%).
    pub share: f64,
}

impl MinEffect {
    /// The default: one clock grain (no finer step is seen per operation)
    /// and never under [`INSTANCE_NOISE_NS`], or [`INSTANCE_NOISE_SHARE`]
    /// of the slice.
    pub fn default_for(grain_ns: Option<f64>) -> MinEffect {
        let grain = grain_ns.filter(|g| g.is_finite()).unwrap_or(0.0);
        MinEffect { ns: grain.max(INSTANCE_NOISE_NS), share: INSTANCE_NOISE_SHARE }
    }

    /// No floor at all: every significant change is claimed.
    pub const NONE: MinEffect = MinEffect { ns: 0.0, share: 0.0 };

    /// The floor for a slice whose median is `level_ns`.
    pub fn of(&self, level_ns: f64) -> f64 {
        let relative = if level_ns.is_finite() { self.share * level_ns.abs() } else { 0.0 };
        self.ns.max(relative)
    }
}

/// One slice's A/B effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceEffect {
    /// `from→to`.
    pub name: String,
    /// The slice's median in arm A, ns.
    pub level_ns: f64,
    /// The smallest change claimed for this slice, ns ([`MinEffect::of`]).
    pub min_effect_ns: f64,
    /// Median over rounds of `b − a` (interquartile means), ns.
    pub delta_ns: f64,
    /// Distribution-free 95% CI of that median (the sign test's order
    /// statistics), ns.
    pub ci95_ns: [f64; 2],
    /// Per pass, in run order, the median of its rounds' `b − a`, ns.
    pub pass_delta_ns: Vec<f64>,
    /// Wilcoxon signed-rank p-value (two-sided, normal approximation with
    /// tie correction) over every round.
    pub p_value: f64,
    /// Holm-adjusted p-value across the slices.
    pub adjusted_p: f64,
    /// Flagged: adjusted p below α, the same sign in every pass, and the
    /// CI beyond [`Self::min_effect_ns`] on one side.
    pub changed: bool,
    /// Rounds paired.
    pub rounds: usize,
    /// How the slice is shared, in arm A: a wait on a batch's others
    /// moves with their steps, so a change to each operation's own step
    /// shows in it once per other operation waited for.
    #[serde(default, skip_serializing_if = "is_own")]
    pub sharing: Sharing,
}

fn is_own(sharing: &Sharing) -> bool {
    *sharing == Sharing::Own
}

/// Every slice's effect in one A/B run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceVerdicts {
    /// The family-wise α.
    pub alpha: f64,
    /// The multiple-comparison control used.
    pub method: String,
    /// The smallest change a flag claims.
    pub min_effect: MinEffect,
    /// Per slice, in arm A's slice order.
    pub slices: Vec<SliceEffect>,
}

impl SliceVerdicts {
    /// The flagged slices.
    pub fn changed(&self) -> impl Iterator<Item = &SliceEffect> {
        self.slices.iter().filter(|s| s.changed)
    }
}

/// One slice's rounds, paired.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedSlice {
    /// `from→to`.
    pub name: String,
    /// The slice's median in arm A, ns (what a relative floor scales).
    pub level_ns: f64,
    /// Per round, `(pass, b − a)` in ns.
    pub diffs: Vec<(u32, f64)>,
}

/// Per-round `b − a` of each slice both arms mark, by name, in `a`'s order.
pub(crate) fn paired(a: &LaneOps, b: &LaneOps) -> Vec<PairedSlice> {
    a.slices
        .iter()
        .enumerate()
        .filter_map(|(sa, def)| {
            let sb = b.slices.iter().position(|d| d.name == def.name)?;
            let diffs: Vec<(u32, f64)> = a
                .blocks
                .iter()
                .filter_map(|ba| {
                    let bb = b.blocks.iter().find(|x| x.pass == ba.pass && x.sample == ba.sample)?;
                    Some((
                        ba.pass,
                        bb.slice_iqm_ns.get(sb).copied().flatten()? - ba.slice_iqm_ns.get(sa).copied().flatten()?,
                    ))
                })
                .collect();
            let level_ns = a.slice_ns.get(sa).and_then(|d| d.quantile(0.5)).unwrap_or(f64::NAN);
            (!diffs.is_empty()).then(|| PairedSlice { name: def.name.clone(), level_ns, diffs })
        })
        .collect()
}

/// Judge every slice of arm `a` against arm `b` (their joined operations),
/// claiming no change smaller than `min_effect`. `None` when no slice has a
/// paired round.
pub fn judge(a: &LaneOps, b: &LaneOps, min_effect: MinEffect) -> Option<SliceVerdicts> {
    judge_paired(&paired(a, b), min_effect).map(|v| shared_as_in(v, a))
}

/// `verdicts` with each slice's sharing as arm `a` marks it.
pub(crate) fn shared_as_in(mut verdicts: SliceVerdicts, a: &LaneOps) -> SliceVerdicts {
    for effect in &mut verdicts.slices {
        effect.sharing = a.slices.iter().find(|d| d.name == effect.name).map_or(Sharing::Own, |d| d.sharing);
    }
    verdicts
}

/// The rule itself, on slices already paired by round: a p-value per
/// slice, Holm across them, the same sign in every pass. `None` without a
/// slice. Deterministic: nothing here resamples.
pub fn judge_paired(pairs: &[PairedSlice], min_effect: MinEffect) -> Option<SliceVerdicts> {
    if pairs.is_empty() {
        return None;
    }
    let mut slices: Vec<SliceEffect> = pairs
        .iter()
        .map(|PairedSlice { name, level_ns, diffs }| {
            let values: Vec<f64> = diffs.iter().map(|(_, d)| *d).collect();
            let mut passes: Vec<u32> = diffs.iter().map(|(p, _)| *p).collect();
            passes.dedup();
            let pass_delta_ns = passes
                .iter()
                .map(|p| {
                    let mut v: Vec<f64> = diffs.iter().filter(|(q, _)| q == p).map(|(_, d)| *d).collect();
                    median_of_unsorted(&mut v)
                })
                .collect();
            let rounds = values.len();
            let p_value = signed_rank_p(&values);
            let mut sorted = values;
            let (lo, hi) = median_ci95_order_statistics(&mut sorted);
            SliceEffect {
                name: name.clone(),
                level_ns: *level_ns,
                min_effect_ns: min_effect.of(*level_ns),
                delta_ns: median_of_unsorted(&mut sorted),
                ci95_ns: [lo, hi],
                pass_delta_ns,
                p_value,
                adjusted_p: 1.0,
                changed: false,
                rounds,
                sharing: Sharing::Own,
            }
        })
        .collect();
    let adjusted = holm(&slices.iter().map(|s| s.p_value).collect::<Vec<_>>());
    for (s, adjusted_p) in slices.iter_mut().zip(adjusted) {
        s.adjusted_p = adjusted_p;
        let same_sign = s.pass_delta_ns.iter().all(|d| d.signum() == s.delta_ns.signum() && *d != 0.0);
        let clears = s.ci95_ns[0] > s.min_effect_ns || s.ci95_ns[1] < -s.min_effect_ns;
        s.changed = adjusted_p < ALPHA && same_sign && clears;
    }
    Some(SliceVerdicts { alpha: ALPHA, method: "Holm (Wilcoxon signed-rank per slice)".to_owned(), min_effect, slices })
}

/// Holm's step-down adjusted p-values, in the input's order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Two-sided p-value of the Wilcoxon signed-rank test that `diffs` are
/// centred on zero: zeros dropped, tied magnitudes given their mean rank,
/// the normal approximation with the tie-corrected variance and a
/// continuity correction. 1 when nothing is left to rank.
pub fn signed_rank_p(diffs: &[f64]) -> f64 {
    let mut nonzero: Vec<f64> = diffs.iter().copied().filter(|d| *d != 0.0 && d.is_finite()).collect();
    let n = nonzero.len();
    if n == 0 {
        return 1.0;
    }
    nonzero.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let mut w_plus = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nonzero[j + 1].abs() == nonzero[i].abs() {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean.
        let rank = (i + j + 2) as f64 / 2.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        w_plus += nonzero[i..=j].iter().filter(|d| **d > 0.0).count() as f64 * rank;
        i = j + 1;
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let variance = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((w_plus - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    (2.0 * normal_upper_tail(z)).min(1.0)
}

/// P(Z > z) for a standard normal Z (Abramowitz–Stegun 7.1.26 on erfc,
/// absolute error below 1.5e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_steps_down_and_stays_monotone() {
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.5]);
        // Sorted: 0.01×4, 0.03×3, 0.04×2, 0.5×1 → 0.04, 0.09, 0.09 (monotone), 0.5.
        let expected = [0.04, 0.09, 0.09, 0.5];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
    }

    #[test]
    fn signed_rank_p_values_match_the_textbook() {
        // All 20 positive and distinct: W+ = 210, mean 105, sd √717.5.
        let p = signed_rank_p(&(1..=20).map(f64::from).collect::<Vec<_>>());
        let z: f64 = (105.0 - 0.5) / 717.5f64.sqrt();
        assert!((p - 2.0 * normal_upper_tail(z)).abs() < 1e-12 && p < 1e-3, "{p}");
        // Symmetric about zero: no evidence at all.
        let p = signed_rank_p(&[-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]);
        assert!(p > 0.9, "{p}");
        assert_eq!(signed_rank_p(&[0.0, 0.0]), 1.0);
        assert!((normal_upper_tail(1.959_964) - 0.025).abs() < 1e-6);
    }
}
