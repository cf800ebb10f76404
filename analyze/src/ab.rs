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

use hopscope_probe::Trace;

pub use crate::ab_outcome::{
    ARM_A, ARM_B, AbFigure, AbOutcome, Arms, CONTROL, FigureKind, PassBlocks, PassEffect, Rule, RuleError, Verdict,
};
use crate::ab_reason::AbReason;
use crate::lanes::{self, Difference, LaneBlocks};
use crate::recorded::Recorded;
use crate::stats::Samples;

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
