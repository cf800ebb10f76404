//! A/B verdicts where every pass ran on fresh processes (`hopscope ab
//! --builds`): the process, not the round, is what a verdict counts.
//!
//! Two processes of one build differ by more than most changes: where each
//! one's memory and database file sit is fixed for its life and moves a
//! write by a few percent (measured on kv-writer: 100–200 ns of 7 µs,
//! mostly in SQLite's slice). Rounds of one set of processes all carry the
//! same such difference, so a CI over rounds excludes zero for two builds
//! of the same code. Here each pass is a fresh set of processes (`a`, `b`
//! and the control, a second process of `a`), and:
//!
//! - a pass's figure is its median over rounds of the paired `b − a`
//!   ([`crate::ab`]'s per-pass effect);
//! - the effect is the mean of the passes' figures, with a Student-t 95% CI
//!   over passes: what one process's layout does is part of the spread;
//! - `control − a`, computed the same way, is the process-to-process noise
//!   floor measured in the same run; the control moving more than the rule
//!   allows, or one arm's spread (the median over passes) `max_spread_ratio`
//!   times the other's, is `drift-suspected`;
//! - `reproduced` needs the CI clear of zero, both thresholds met and, when
//!   the rule asks for both orders, the passes of each order (`a→b`,
//!   `b→a`) moving the same way;
//! - per slice, each pass's median `b − a` over rounds is one paired value
//!   of the signed-rank test, and Holm's procedure runs across slices
//!   ([`crate::slice_verdict::judge_paired`]), the orders as its passes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ab::{self, AbOutcome, PassBlocks, PassEffect, Rule, Verdict};
use crate::join::LaneOps;
use crate::slice_verdict::{self, MinEffect, PairedSlice, SliceVerdicts};
use crate::stats::{median_of_unsorted, student_t_975};

/// Run fact naming how processes were used; with [`FRESH_PER_PASS`] the
/// analysis judges across passes.
pub const PROCESSES_META: &str = "lockstep.processes";

/// The value of [`PROCESSES_META`] when every pass ran on fresh processes.
pub const FRESH_PER_PASS: &str = "fresh-per-pass";

/// Fewest passes with both arms whose spread can judge anything.
pub const MIN_PASSES: usize = 3;

/// Whether a trace's run facts say every pass ran on fresh processes.
pub fn applies(run: &BTreeMap<String, String>) -> bool {
    run.get(PROCESSES_META).map(String::as_str) == Some(FRESH_PER_PASS)
}

/// A mean over passes with its Student-t 95% CI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassMean {
    /// Mean of the per-pass figures, µs per op.
    pub mean_us: f64,
    /// Student-t 95% CI of the mean, µs.
    pub ci95: [f64; 2],
    /// Standard deviation of the per-pass figures, µs.
    pub sd_us: f64,
    /// The mean as a percentage of arm A's mean figure.
    pub pct: f64,
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
    /// Mean `b − a` of the passes of each order (`a→b`, `b→a`), µs.
    pub by_order: BTreeMap<String, f64>,
}

/// The mean and CI of `figures`, as a share of `level` (µs); `None` with
/// fewer than two.
fn pass_mean(figures: &[f64], level: f64) -> Option<PassMean> {
    let n = figures.len();
    if n < 2 {
        return None;
    }
    let mean = figures.iter().sum::<f64>() / n as f64;
    let var = figures.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    let half = student_t_975(n - 1) * sd / (n as f64).sqrt();
    let pct = if level > 0.0 { mean / level * 100.0 } else { 0.0 };
    Some(PassMean { mean_us: mean, ci95: [mean - half, mean + half], sd_us: sd, pct })
}

/// Judge `passes` (each by fresh processes) under `rule`.
pub fn verdict(passes: &[PassBlocks], rule: &Rule) -> AbOutcome {
    let effects: Vec<PassEffect> = passes.iter().filter_map(|p| ab::effect(p, rule)).collect();
    let mut reasons = Vec::new();
    let deltas: Vec<f64> = effects.iter().map(|e| e.delta_us.median).collect();
    let level = effects.iter().map(|e| e.a_us).sum::<f64>() / effects.len().max(1) as f64;
    let controls: Vec<f64> = effects.iter().filter_map(|e| e.control_us.map(|c| c.median)).collect();
    let mut by_order: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for e in &effects {
        by_order.entry(e.order.clone()).or_default().push(e.delta_us.median);
    }
    let by_order: BTreeMap<String, f64> =
        by_order.into_iter().map(|(order, v)| (order, v.iter().sum::<f64>() / v.len() as f64)).collect();
    let (Some(delta), true) = (pass_mean(&deltas, level), effects.len() >= MIN_PASSES) else {
        reasons.push(format!(
            "{} pass(es) have both arms measured; a verdict across processes needs at least {MIN_PASSES}",
            effects.len()
        ));
        return AbOutcome { passes: effects, verdict: Verdict::Inconclusive, reasons, across: None };
    };
    let control = pass_mean(&controls, level);
    let across = AcrossPasses { passes: effects.len(), delta, control, by_order };
    let mut drift = Vec::new();
    if let Some(c) = &control
        && c.pct.abs() > rule.max_control_drift_pct
    {
        drift.push(format!(
            "the control (a second process of build A) differs from A by {:+.1}% on average over {} passes, more \
             than the {:.1}% allowed",
            c.pct,
            controls.len(),
            rule.max_control_drift_pct
        ));
    }
    let spread = |pick: fn(&PassEffect) -> f64| {
        let mut v: Vec<f64> = effects.iter().map(pick).collect();
        median_of_unsorted(&mut v)
    };
    let (sa, sb) = (spread(|e| e.spread_a), spread(|e| e.spread_b));
    let (lo, hi) = (sa.min(sb), sa.max(sb));
    if lo > 0.0 && hi >= rule.max_spread_ratio * lo {
        drift.push(format!(
            "one arm's blocks spread {:.1}× the other's ({:.1}% vs {:.1}%, medians over passes)",
            hi / lo,
            sa * 100.0,
            sb * 100.0
        ));
    }
    let excludes_zero = delta.ci95[0] > 0.0 || delta.ci95[1] < 0.0;
    let clears = excludes_zero && delta.mean_us.abs() >= rule.min_effect_us && delta.pct.abs() >= rule.min_effect_pct;
    let orders_agree = across.by_order.values().all(|m| m.signum() == delta.mean_us.signum());
    let verdict = if !drift.is_empty() {
        reasons.extend(drift);
        Verdict::DriftSuspected
    } else if rule.both_orders && across.by_order.len() < 2 {
        reasons.push("the rule asks for both orders and only one ran".to_owned());
        Verdict::Inconclusive
    } else if clears && rule.both_orders && !orders_agree {
        let orders: Vec<String> = across.by_order.iter().map(|(o, m)| format!("{o} {:+.3} µs", m)).collect();
        reasons.push(format!("the orders disagree ({}): the effect follows the order", orders.join(", ")));
        Verdict::Inconclusive
    } else if clears {
        let direction = if delta.mean_us < 0.0 { "faster" } else { "slower" };
        reasons.push(format!(
            "B is {direction} than A by {:+.3} µs per write (95% CI {:+.3}…{:+.3}) over {} passes, each by fresh \
             processes, beyond the rule's thresholds",
            delta.mean_us, delta.ci95[0], delta.ci95[1], across.passes
        ));
        Verdict::Reproduced
    } else {
        reasons.push(format!(
            "Δ {:+.3} µs ({:+.2}%), 95% CI {:+.3}…{:+.3} over {} passes: below the rule",
            delta.mean_us, delta.pct, delta.ci95[0], delta.ci95[1], across.passes
        ));
        Verdict::Inconclusive
    };
    AbOutcome { passes: effects, verdict, reasons, across: Some(across) }
}

/// Verdicts per slice across passes: per pass, the median over its rounds
/// of each slice's `b − a`; the signed-rank test over those, Holm across
/// slices, and the same sign in both orders. `b_first` says each pass's
/// order. `None` without a slice measured in two passes or more.
pub fn slices(a: &LaneOps, b: &LaneOps, b_first: &BTreeMap<u32, bool>, min_effect: MinEffect) -> Option<SliceVerdicts> {
    let pooled: Vec<PairedSlice> = slice_verdict::paired(a, b)
        .into_iter()
        .filter_map(|s| {
            let mut per_pass: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for (pass, d) in &s.diffs {
                per_pass.entry(*pass).or_default().push(*d);
            }
            // The orders stand where passes stood: the same-sign check
            // becomes "both orders agree".
            let mut diffs: Vec<(u32, f64)> = per_pass
                .into_iter()
                .map(|(pass, mut v)| {
                    (u32::from(b_first.get(&pass).copied().unwrap_or(false)), median_of_unsorted(&mut v))
                })
                .collect();
            diffs.sort_by_key(|(order, _)| *order);
            (diffs.len() >= 2).then_some(PairedSlice { diffs, ..s })
        })
        .collect();
    let mut verdicts = slice_verdict::judge_paired(&pooled, min_effect)?;
    verdicts.method = "Holm (Wilcoxon signed-rank per slice, one value per pass of fresh processes)".to_owned();
    Some(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passes of `rounds` rounds where `a` is 7 µs plus a per-process
    /// offset and `b` is `a` plus `effect` plus its own offset.
    fn passes(n: u32, effect: f64, offsets: impl Fn(u32) -> (f64, f64, f64)) -> Vec<PassBlocks> {
        (0..n)
            .map(|pass| {
                let (oa, ob, oc) = offsets(pass);
                let round = |base: f64| (0..6u32).map(|s| (s, base + 0.001 * f64::from(s % 3))).collect();
                PassBlocks {
                    pass,
                    b_first: pass % 2 == 1,
                    a: round(7.0 + oa),
                    b: round(7.0 + oa + effect + ob),
                    control: round(7.0 + oa + oc),
                }
            })
            .collect()
    }

    fn rule() -> Rule {
        Rule {
            min_effect_pct: 0.0,
            min_effect_us: 0.02,
            both_orders: true,
            max_control_drift_pct: 2.0,
            max_spread_ratio: 4.0,
            min_slice_effect_ns: None,
            min_slice_effect_pct: None,
        }
    }

    /// A fixed zig-zag of process offsets, ±0.1 µs: what two processes of
    /// one build differ by.
    fn zigzag(pass: u32) -> (f64, f64, f64) {
        let x = |k: u32| f64::from((pass * 7 + k) % 5) * 0.05 - 0.1;
        (x(0), x(2), x(4))
    }

    #[test]
    fn a_process_offset_that_every_round_shares_is_not_a_change() {
        // One pass's rounds all agree (CI excluding zero): judged over
        // passes, the offsets are spread, not effect.
        let outcome = verdict(&passes(12, 0.0, zigzag), &rule());
        assert!(outcome.passes.iter().any(|p| p.delta_us.ci95[0] > 0.0 || p.delta_us.ci95[1] < 0.0));
        assert_eq!(outcome.verdict, Verdict::Inconclusive, "{:?}", outcome.reasons);
        let across = outcome.across.expect("judged across passes");
        assert!(across.delta.ci95[0] < 0.0 && across.delta.ci95[1] > 0.0, "{across:?}");
        assert!(across.control.expect("a control").sd_us > 0.05);
    }

    #[test]
    fn an_effect_beyond_the_process_spread_is_reproduced() {
        let outcome = verdict(&passes(12, 0.3, zigzag), &rule());
        assert_eq!(outcome.verdict, Verdict::Reproduced, "{:?}", outcome.reasons);
        let across = outcome.across.expect("judged across passes");
        assert!((across.delta.mean_us - 0.3).abs() < 0.1, "{across:?}");
        assert!(across.by_order.values().all(|m| *m > 0.0));
    }

    #[test]
    fn too_few_passes_or_a_moving_control_get_no_verdict() {
        let outcome = verdict(&passes(2, 0.3, zigzag), &rule());
        assert_eq!(outcome.verdict, Verdict::Inconclusive);
        assert!(outcome.reasons[0].contains("at least 3"), "{:?}", outcome.reasons);
        let drifting = verdict(&passes(8, 0.3, |p| (0.0, 0.0, 0.2 + 0.01 * f64::from(p))), &rule());
        assert_eq!(drifting.verdict, Verdict::DriftSuspected, "{:?}", drifting.reasons);
        assert!(drifting.reasons[0].contains("second process of build A"), "{:?}", drifting.reasons);
    }

    #[test]
    fn an_effect_that_follows_the_order_is_not_the_builds() {
        // b is much slower when it runs second, a little faster when first:
        // the mean clears the rule, the orders disagree.
        let flip = verdict(&passes(12, 0.0, |p| (0.0, if p % 2 == 0 { 0.6 } else { -0.05 }, 0.0)), &rule());
        assert_eq!(flip.verdict, Verdict::Inconclusive, "{:?}", flip.reasons);
        assert!(flip.reasons[0].contains("follows the order"), "{:?}", flip.reasons);
    }
}
