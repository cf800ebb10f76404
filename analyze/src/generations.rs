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
//! - the effect is the 20%-trimmed mean of the passes' figures ([`TRIM`]),
//!   with its CI over passes (95%, or the rule's `confidence_pct`): what
//!   one process's layout does is part of
//!   the spread;
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
//!
//! With several builds of each side (`--layouts N`: the same commit linked
//! in N function orders), passes run the layouts in turn, two passes each
//! (one per order: [`layout_of`]), arms a and b the same layout `k` of
//! their side and the control build A's next layout, `k + 1 mod N`. Then
//! `b − a` averages over layouts, and the control's passes, grouped by
//! layout pair, say how far two builds of one commit differ by their
//! layout alone ([`LayoutSpread`]); a change no larger than that is not
//! called.

use std::collections::BTreeMap;

use hopscope_probe::{RunFact, RunFacts};

use crate::ab::{self, AbOutcome, PassBlocks, PassEffect, Rule, Verdict};
pub use crate::ab_outcome::{AcrossPasses, LayoutPair, LayoutSpread, PassMean};
use crate::ab_reason::AbReason;
use crate::join::LaneOps;
use crate::recorded::Recorded;
use crate::slice_verdict::{self, MinEffect, PairedSlice, SliceVerdicts};
use crate::stats::{Confidence, median_of_unsorted, trimmed_mean_ci};

/// The value of [`RunFact::LockstepProcesses`] when every pass ran on
/// fresh processes: the analysis then judges across passes.
pub const FRESH_PER_PASS: &str = "fresh-per-pass";

/// Fewest passes with both arms whose spread can judge anything.
pub const MIN_PASSES: usize = 3;

/// The layout (0-based) pass `pass` runs when the passes cycle through
/// `layouts`: two passes each, so every layout runs in both orders (the
/// order alternates pass by pass).
pub fn layout_of(pass: u32, layouts: usize) -> usize {
    (pass as usize / 2) % layouts.max(1)
}

/// How many layouts a trace's run facts say the passes cycle through (1
/// when not said or not a number ≥ 1).
pub fn layouts(run: &BTreeMap<String, String>) -> usize {
    // How many builds (layouts) of each side the passes cycle through;
    // absent or 1 without `--layouts`.
    run.parsed(&RunFact::LockstepLayouts).filter(|&n: &usize| n >= 1).unwrap_or(1)
}

/// Whether a trace's run facts say every pass ran on fresh processes.
pub fn applies(run: &BTreeMap<String, String>) -> bool {
    run.fact(&RunFact::LockstepProcesses) == Some(FRESH_PER_PASS)
}

/// The layout spread of `effects` when they cycled through `layouts`
/// builds: a pass ran layout `k` ([`layout_of`]) as `a` and `k + 1 mod N`
/// as the control.
fn layout_spread(effects: &[PassEffect], layouts: usize) -> Option<LayoutSpread> {
    if layouts < 2 {
        return None;
    }
    let mut by_pair: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for e in effects {
        if let Some(c) = e.control_us {
            by_pair.entry(layout_of(e.pass, layouts)).or_default().push(c.median);
        }
    }
    let pairs: Vec<LayoutPair> = by_pair
        .into_iter()
        .map(|(a, v)| LayoutPair {
            control: (a + 1) % layouts + 1,
            a: a + 1,
            mean_us: trimmed_mean(&v),
            passes: v.len(),
        })
        .collect();
    let spread_us = pairs.iter().map(|p| p.mean_us.abs()).fold(0.0, f64::max);
    (!pairs.is_empty()).then_some(LayoutSpread { builds: layouts, pairs, spread_us })
}

/// Share of the passes set aside at each end before the mean is taken.
///
/// Now and then the host slows one process of a pass and not its partner
/// for part of the pass (kv-writer, 100 null passes: most pass differences
/// within ±0.2 µs, a few at ±0.5–0.9 µs): a plain mean's CI grew to
/// ±0.11 µs on them, five times what the middle passes say. A 20%-trimmed
/// mean keeps the middle passes' answer; the CI stays honest (Tukey and
/// McLaughlin's, from the winsorized variance).
pub const TRIM: f64 = 0.2;

/// The [`TRIM`]-trimmed mean of `values` (nothing trimmed below five, the
/// one value of one, NaN of none): every figure checked beside the verdict
/// reads its passes as the verdict does.
fn trimmed_mean(values: &[f64]) -> f64 {
    trimmed_mean_ci(values, TRIM, Confidence::P95).map_or_else(|| values.first().copied().unwrap_or(f64::NAN), |t| t.0)
}

/// The trimmed mean and CI of `figures` ([`TRIM`]), as a share of `level`
/// (µs); `None` with fewer than two.
fn pass_mean(figures: &[f64], level: f64, confidence: Confidence) -> Option<PassMean> {
    let (mean, lo, hi, sd) = trimmed_mean_ci(figures, TRIM, confidence)?;
    let pct = if level > 0.0 { mean / level * 100.0 } else { 0.0 };
    Some(PassMean { mean_us: mean, ci: [lo, hi], level_pct: confidence.pct(), sd_us: sd, pct })
}

/// Judge `passes` (each by fresh processes, cycling through `layouts`
/// builds of each side) under `rule`.
pub fn verdict(passes: &[PassBlocks], rule: &Rule, layouts: usize) -> AbOutcome {
    let effects: Vec<PassEffect> = passes.iter().filter_map(|p| ab::effect(p, rule)).collect();
    let mut reasons = Vec::new();
    let deltas: Vec<f64> = effects.iter().map(|e| e.delta_us.median).collect();
    let level = effects.iter().map(|e| e.a_us).sum::<f64>() / effects.len().max(1) as f64;
    let controls: Vec<f64> = effects.iter().filter_map(|e| e.control_us.map(|c| c.median)).collect();
    let mut by_order: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for e in &effects {
        by_order.entry(e.order.clone()).or_default().push(e.delta_us.median);
    }
    let by_order: BTreeMap<String, f64> = by_order.into_iter().map(|(order, v)| (order, trimmed_mean(&v))).collect();
    let (Some(delta), true) = (pass_mean(&deltas, level, rule.confidence()), effects.len() >= MIN_PASSES) else {
        reasons.push(AbReason::TooFewPasses { passes: effects.len(), min: MIN_PASSES });
        let reasons = reasons.into_iter().map(Recorded::Typed).collect();
        return AbOutcome::judged(effects, Verdict::Inconclusive, reasons);
    };
    let control = pass_mean(&controls, level, rule.confidence());
    let layouts = layout_spread(&effects, layouts);
    let across = AcrossPasses { passes: effects.len(), delta, control, by_order, layouts };
    let mut drift = Vec::new();
    if let Some(c) = &control
        && c.pct.abs() > rule.max_control_drift_pct
    {
        drift.push(AbReason::ControlAcross { pct: c.pct, passes: controls.len(), max_pct: rule.max_control_drift_pct });
    }
    let spread = |pick: fn(&PassEffect) -> f64| {
        let mut v: Vec<f64> = effects.iter().map(pick).collect();
        median_of_unsorted(&mut v)
    };
    let (sa, sb) = (spread(|e| e.spread_a), spread(|e| e.spread_b));
    let (lo, hi) = (sa.min(sb), sa.max(sb));
    if lo > 0.0 && hi >= rule.max_spread_ratio * lo {
        drift.push(AbReason::SpreadAcross { spread_a: sa, spread_b: sb });
    }
    let excludes_zero = delta.ci[0] > 0.0 || delta.ci[1] < 0.0;
    let clears = excludes_zero && delta.mean_us.abs() >= rule.min_effect_us && delta.pct.abs() >= rule.min_effect_pct;
    let orders_agree = across.by_order.values().all(|m| m.signum() == delta.mean_us.signum());
    let within_layouts = across.layouts.as_ref().filter(|l| delta.mean_us.abs() <= l.spread_us);
    let verdict = if !drift.is_empty() {
        reasons.extend(drift);
        Verdict::DriftSuspected
    } else if rule.both_orders && across.by_order.len() < 2 {
        reasons.push(AbReason::OneOrder);
        Verdict::Inconclusive
    } else if clears && rule.both_orders && !orders_agree {
        let by_order = across.by_order.iter().map(|(o, m)| (o.clone(), *m)).collect();
        reasons.push(AbReason::OrdersDisagree { by_order });
        Verdict::Inconclusive
    } else if let (true, Some(l)) = (clears, within_layouts) {
        reasons.push(AbReason::WithinLayouts {
            mean_us: delta.mean_us,
            ci: delta.ci,
            level_pct: rule.confidence().pct(),
            spread_us: l.spread_us,
            pairs: l.pairs.len(),
        });
        Verdict::Inconclusive
    } else if clears {
        reasons.push(AbReason::Across {
            mean_us: delta.mean_us,
            ci: delta.ci,
            level_pct: rule.confidence().pct(),
            passes: across.passes,
        });
        Verdict::Reproduced
    } else {
        reasons.push(AbReason::BelowRuleAcross {
            mean_us: delta.mean_us,
            pct: delta.pct,
            ci: delta.ci,
            level_pct: rule.confidence().pct(),
            passes: across.passes,
        });
        Verdict::Inconclusive
    };
    let reasons = reasons.into_iter().map(Recorded::Typed).collect();
    AbOutcome { across: Some(across), ..AbOutcome::judged(effects, verdict, reasons) }
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
    let mut verdicts = slice_verdict::shared_as_in(slice_verdict::judge_paired(&pooled, min_effect)?, a);
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
            drift_dwarfed_by: 3.0,
            min_slice_effect_ns: None,
            min_slice_effect_pct: None,
            confidence_pct: None,
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
        let outcome = verdict(&passes(12, 0.0, zigzag), &rule(), 1);
        assert!(outcome.passes.iter().any(|p| p.delta_us.ci95[0] > 0.0 || p.delta_us.ci95[1] < 0.0));
        assert_eq!(outcome.verdict, Verdict::Inconclusive, "{:?}", outcome.reasons);
        let across = outcome.across.expect("judged across passes");
        assert!(across.delta.ci[0] < 0.0 && across.delta.ci[1] > 0.0, "{across:?}");
        assert!(across.control.expect("a control").sd_us > 0.05);
    }

    #[test]
    fn an_effect_beyond_the_process_spread_is_reproduced() {
        let outcome = verdict(&passes(12, 0.3, zigzag), &rule(), 1);
        assert_eq!(outcome.verdict, Verdict::Reproduced, "{:?}", outcome.reasons);
        let across = outcome.across.expect("judged across passes");
        assert!((across.delta.mean_us - 0.3).abs() < 0.1, "{across:?}");
        assert!(across.by_order.values().all(|m| *m > 0.0));
    }

    #[test]
    fn too_few_passes_or_a_moving_control_get_no_verdict() {
        let outcome = verdict(&passes(2, 0.3, zigzag), &rule(), 1);
        assert_eq!(outcome.verdict, Verdict::Inconclusive);
        assert!(
            matches!(outcome.reasons[0].typed(), Some(AbReason::TooFewPasses { min: 3, .. })),
            "{:?}",
            outcome.reasons
        );
        let drifting = verdict(&passes(8, 0.3, |p| (0.0, 0.0, 0.2 + 0.01 * f64::from(p))), &rule(), 1);
        assert_eq!(drifting.verdict, Verdict::DriftSuspected, "{:?}", drifting.reasons);
        assert!(matches!(drifting.reasons[0].typed(), Some(AbReason::ControlAcross { .. })), "{:?}", drifting.reasons);
    }

    #[test]
    fn an_effect_that_follows_the_order_is_not_the_builds() {
        // b is much slower when it runs second, a little faster when first:
        // the mean clears the rule, the orders disagree.
        let flip = verdict(&passes(24, 0.0, |p| (0.0, if p % 2 == 0 { 0.6 } else { -0.05 }, 0.0)), &rule(), 1);
        assert_eq!(flip.verdict, Verdict::Inconclusive, "{:?}", flip.reasons);
        assert!(matches!(flip.reasons[0].typed(), Some(AbReason::OrdersDisagree { .. })), "{:?}", flip.reasons);
    }

    #[test]
    fn a_few_slowed_processes_do_not_make_the_orders_disagree() {
        // B is 0.05 µs slower in every pass but two of order b→a, where the
        // host slowed A's process by 1 µs: that order's plain mean turns
        // negative, its middle passes (and the verdict's estimator) do not.
        let slowed = |p: u32| if p == 1 || p == 3 { 1.0 } else { 0.0 };
        let outcome = verdict(&passes(24, 0.05, |p| (slowed(p), -slowed(p), 0.0)), &rule(), 1);
        let b_first: Vec<f64> = (0..24u32).filter(|p| p % 2 == 1).map(|p| 0.05 - slowed(p)).collect();
        assert!(b_first.iter().sum::<f64>() < 0.0, "the plain mean of b→a is negative");
        assert_eq!(outcome.verdict, Verdict::Reproduced, "{:?}", outcome.reasons);
        let across = outcome.across.expect("judged across passes");
        assert!(across.by_order.values().all(|m| (m - 0.05).abs() < 0.01), "{:?}", across.by_order);
    }

    /// Passes cycling through `layouts` builds of each side: layout `k`
    /// of either side costs `step × k` µs more, and B adds `effect`.
    fn layout_passes(n: u32, layouts: usize, step: f64, effect: f64) -> Vec<PassBlocks> {
        let at = |k: usize| step * (k % layouts) as f64;
        passes(n, effect, |p| {
            let k = layout_of(p, layouts);
            (at(k), 0.0, at(k + 1) - at(k))
        })
    }

    #[test]
    fn every_layout_runs_in_both_orders() {
        for layouts in 1..=4 {
            let mut seen = std::collections::BTreeSet::new();
            for pass in 0..(4 * layouts as u32) {
                seen.insert((layout_of(pass, layouts), pass % 2));
            }
            assert_eq!(seen.len(), 2 * layouts, "{layouts} layouts: {seen:?}");
        }
    }

    #[test]
    fn a_change_no_larger_than_the_layouts_differ_is_not_called() {
        // Two layouts 0.2 µs apart, B 0.1 µs slower: clear of zero across
        // passes, but within what layout alone moves.
        let rule = Rule { max_control_drift_pct: 50.0, ..rule() };
        let within = verdict(&layout_passes(12, 2, 0.2, 0.1), &rule, 2);
        let spread = within.across.as_ref().and_then(|a| a.layouts.clone()).expect("a layout spread");
        assert_eq!(spread.builds, 2);
        assert_eq!(spread.pairs.iter().map(|p| (p.control, p.a)).collect::<Vec<_>>(), [(2, 1), (1, 2)]);
        assert!((spread.spread_us - 0.2).abs() < 0.01, "{spread:?}");
        assert_eq!(within.verdict, Verdict::Inconclusive, "{:?}", within.reasons);
        assert!(matches!(within.reasons[0].typed(), Some(AbReason::WithinLayouts { .. })), "{:?}", within.reasons);
        // A change beyond the layouts' spread is called.
        let beyond = verdict(&layout_passes(12, 2, 0.2, 0.5), &rule, 2);
        assert_eq!(beyond.verdict, Verdict::Reproduced, "{:?}", beyond.reasons);
        // The same passes read as one layout: no spread, called.
        let one = verdict(&layout_passes(12, 2, 0.2, 0.1), &rule, 1);
        assert!(one.across.as_ref().is_some_and(|a| a.layouts.is_none()));
    }
}
