//! A lane's change as its slices account for it, and the run's resolution.
//!
//! An operation's path slices add up to its whole time, so a lane's
//! change is the sum of its slices' changes. Judged whole, the lane
//! carries every slice's noise: across fresh processes SQLite's slice of
//! kv-writer moves ±290 ns per pass (where each process's memory and file
//! sit) while the slice that holds a 100 ns change moves ±56, so the lane's
//! 99 % CI reads ±35 ns where the changed slice's reads ±7, and on a
//! user's writer ±120 ns: a 120 ns change the slices flagged in two runs
//! out of two read once "inconclusive". The slice verdicts (signed ranks
//! per slice, Holm across them, a bar per slice) hold their own false
//! alarms down. When they flag slices that all moved one way and the
//! lane's own CI cannot tell, the lane is judged by what those slices
//! account for: the sum of their effects, its interval the sum of theirs.
//! Slices no verdict flagged count as unchanged, so a change spread thin
//! over many slices, each below its bar, is left to the lane's own CI.

use crate::ab::{AbOutcome, Rule, Verdict};
pub use crate::ab_outcome::{Estimate, EstimateSource, SliceAccount};
use crate::ab_reason::AbReason;
use crate::recorded::Recorded;
use crate::slice_verdict::SliceVerdicts;

/// The estimate an outcome's verdict line states: the flagged slices'
/// sum when they decided the verdict or account for the lane's change,
/// else the lane's mean across passes of fresh processes; `None` for a
/// run judged pass by pass within one process. Across processes the lane
/// carries every slice's noise: kv-writer, a 120.6 ns change in one slice
/// (the program's own clock), 7 decisions: the lane read +86…+156 ns
/// (99 % CI ±38…83), the slices +112…+137 (95 % CI ±7…35).
pub fn estimate(outcome: &AbOutcome) -> Option<Estimate> {
    let decided = outcome.typed_reasons().any(|r| matches!(r, AbReason::BySlices { .. }));
    let across = outcome.across.as_ref();
    match (&outcome.by_slices, across) {
        (Some(a), lane) if decided || lane.is_some_and(|l| a.explains(l.delta.ci)) => {
            Some(Estimate { delta_us: a.delta_us, ci_us: a.ci_us, level_pct: 95.0, source: EstimateSource::Slices })
        }
        (_, Some(l)) => Some(Estimate {
            delta_us: l.delta.mean_us,
            ci_us: l.delta.ci,
            level_pct: l.delta.level_pct,
            source: EstimateSource::Lane,
        }),
        _ => None,
    }
}

/// What the flagged slices of `v` account for, when every one moved the
/// same way; `None` when none was flagged, or they moved both ways.
pub fn account(v: &SliceVerdicts) -> Option<SliceAccount> {
    let changed: Vec<_> = v.changed().collect();
    let first = changed.first()?;
    let up = first.delta_ns > 0.0;
    if changed.iter().any(|s| (s.delta_ns > 0.0) != up) {
        return None;
    }
    let sum = |flagged: bool, f: &dyn Fn(&crate::slice_verdict::SliceEffect) -> f64| {
        v.slices.iter().filter(|s| s.changed == flagged).map(f).sum::<f64>() / 1e3
    };
    Some(SliceAccount {
        slices: changed.iter().map(|s| s.name.clone()).collect(),
        delta_us: sum(true, &|s| s.delta_ns),
        ci_us: [sum(true, &|s| s.ci95_ns[0]), sum(true, &|s| s.ci95_ns[1])],
        rest_us: sum(false, &|s| s.delta_ns),
        rest_ci_us: [sum(false, &|s| s.ci95_ns[0]), sum(false, &|s| s.ci95_ns[1])],
    })
}

/// The smallest lane change this run could tell from none: its CI's
/// half-width across passes of fresh processes, else the widest pass's
/// (within one process every pass must clear), µs.
pub fn resolution_us(outcome: &AbOutcome) -> Option<f64> {
    if let Some(across) = &outcome.across {
        return Some((across.delta.ci[1] - across.delta.ci[0]) / 2.0);
    }
    outcome.passes.iter().map(|p| (p.delta_us.ci95[1] - p.delta_us.ci95[0]) / 2.0).reduce(f64::max)
}

/// Across passes of fresh processes, hold a lane's own call to its
/// slices: a lane that moved with no slice flagged its way moved by where
/// each process's memory and files sat, not by its code (kv-writer, two
/// copies of one build: the lane called −42 and −34 ns at 99 % in 2 of 10
/// runs, no slice flagged; a build 75 ns slower in one slice called −34 ns
/// faster once). Such a call becomes inconclusive, said why, in place of
/// the lane's own reason. One flagged slice the lane's way is enough: a
/// change also moves other slices, some the other way (a user's ledger,
/// 135 ns more validation per write: one slice +135, another −40, the
/// lane's latency +621 with three callers queued behind each other).
/// `verdicts`: the run's slice verdicts (none: nothing to hold it to).
pub fn hold_to_slices(outcome: &mut AbOutcome, verdicts: Option<&SliceVerdicts>) {
    let (Some(v), Some(across)) = (verdicts, &outcome.across) else { return };
    if outcome.verdict != Verdict::Reproduced {
        return;
    }
    let lane_us = across.delta.mean_us;
    if v.changed().any(|s| (s.delta_ns > 0.0) == (lane_us > 0.0)) {
        return;
    }
    let against: Vec<String> = v.changed().map(|s| s.name.clone()).collect();
    outcome.verdict = Verdict::Inconclusive;
    outcome.reasons.retain(|r| !matches!(r.typed(), Some(AbReason::Across { .. })));
    outcome.reasons.insert(0, Recorded::Typed(AbReason::Unaccounted { lane_us, ci_us: across.delta.ci, against }));
}

/// Judge the lane by `account` where its own figure could not (its CI
/// spans zero, or [`hold_to_slices`] set its call aside): an
/// inconclusive outcome whose flagged slices' sum clears the rule (its
/// interval clear of zero, at least the rule's µs and percent of arm A's
/// `level_us`) is reproduced, said why. A verdict drawn already, or
/// refused for drift, stands.
pub fn judge(outcome: &mut AbOutcome, account: SliceAccount, rule: &Rule, level_us: f64) {
    outcome.by_slices = Some(account.clone());
    let account = &account;
    if outcome.verdict != Verdict::Inconclusive {
        return;
    }
    let clear = account.ci_us[0] > 0.0 || account.ci_us[1] < 0.0;
    let pct = if level_us > 0.0 { account.delta_us / level_us * 100.0 } else { 0.0 };
    if !(clear && account.delta_us.abs() >= rule.min_effect_us && pct.abs() >= rule.min_effect_pct) {
        return;
    }
    outcome.verdict = Verdict::Reproduced;
    outcome.reasons.insert(
        0,
        Recorded::Typed(AbReason::BySlices {
            slices: account.slices.clone(),
            delta_us: account.delta_us,
            ci_us: account.ci_us,
            lane_half_width_us: resolution_us(outcome),
            rest_us: account.rest_us,
            rest_ci_us: account.rest_ci_us,
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slice_verdict::{MinEffect, SliceEffect};

    fn slice(name: &str, delta_ns: f64, half_ns: f64, changed: bool) -> SliceEffect {
        SliceEffect {
            name: name.into(),
            level_ns: 2_000.0,
            min_effect_ns: 10.0,
            delta_ns,
            ci95_ns: [delta_ns - half_ns, delta_ns + half_ns],
            pass_delta_ns: vec![delta_ns, delta_ns],
            p_value: if changed { 1e-9 } else { 0.5 },
            adjusted_p: if changed { 1e-8 } else { 1.0 },
            changed,
            rounds: 800,
            sharing: crate::join::Sharing::Own,
        }
    }

    fn verdicts(slices: Vec<SliceEffect>) -> SliceVerdicts {
        SliceVerdicts { alpha: 0.05, method: "Holm".into(), min_effect: MinEffect { ns: 10.0, share: 0.005 }, slices }
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
            confidence_pct: Some(99.0),
        }
    }

    fn inconclusive() -> AbOutcome {
        AbOutcome::judged(Vec::new(), Verdict::Inconclusive, Vec::new())
    }

    #[test]
    fn flagged_slices_that_moved_one_way_decide_a_lane_its_own_ci_could_not() {
        // A 120 ns change in one slice, flagged (±7 ns); SQLite's slice
        // moved +30 ns unflagged, within its noise: not counted.
        let v =
            verdicts(vec![slice("insert.enter→execute.enter", 120.0, 7.0, true), slice("execute", 30.0, 90.0, false)]);
        let account = account(&v).expect("flagged");
        assert_eq!(account.slices, ["insert.enter→execute.enter"]);
        assert!((account.delta_us - 0.120).abs() < 1e-12 && (account.ci_us[0] - 0.113).abs() < 1e-12);
        let mut outcome = inconclusive();
        judge(&mut outcome, account, &rule(), 20.0);
        assert_eq!(outcome.verdict, Verdict::Reproduced);
        assert!(matches!(outcome.reasons[0].typed(), Some(AbReason::BySlices { .. })), "{:?}", outcome.reasons);
        assert!(outcome.slower());
    }

    /// An outcome reproduced across passes of fresh processes, the lane
    /// `lane_ns` per operation.
    fn across(lane_ns: f64) -> AbOutcome {
        let delta = crate::generations::PassMean {
            mean_us: lane_ns / 1e3,
            ci: [lane_ns / 1e3 - 0.03, lane_ns / 1e3 + 0.03],
            level_pct: 99.0,
            sd_us: 0.1,
            pct: lane_ns / 200.0,
        };
        let across = crate::generations::AcrossPasses {
            passes: 200,
            delta,
            control: None,
            by_order: Default::default(),
            layouts: None,
        };
        AbOutcome { verdict: Verdict::Reproduced, across: Some(across), ..inconclusive() }
    }

    #[test]
    fn a_lane_call_across_processes_no_slice_accounts_for_is_set_aside() {
        // Two copies of one build: the lane −42 ns at 99 %, no slice flagged.
        let mut null = across(-42.0);
        hold_to_slices(&mut null, Some(&verdicts(vec![slice("execute", -40.0, 90.0, false)])));
        assert_eq!(null.verdict, Verdict::Inconclusive);
        assert!(matches!(null.reasons[0].typed(), Some(AbReason::Unaccounted { against, .. }) if against.is_empty()));
        // The lane −34 ns while the one flagged slice rose 66: set aside,
        // then judged by the slices.
        let v = verdicts(vec![slice("insert", 66.0, 6.0, true), slice("execute", -90.0, 90.0, false)]);
        let mut against = across(-34.0);
        hold_to_slices(&mut against, Some(&v));
        assert_eq!(against.verdict, Verdict::Inconclusive);
        judge(&mut against, account(&v).expect("flagged"), &rule(), 20.0);
        assert_eq!(against.verdict, Verdict::Reproduced);
        assert!(against.slower(), "slower, as the slices say");
        // A lane call its slices agree with stands.
        let mut agreed = across(60.0);
        hold_to_slices(&mut agreed, Some(&v));
        assert_eq!(agreed.verdict, Verdict::Reproduced);
        assert!(agreed.reasons.is_empty());
        // One flagged slice the lane's way holds it, whatever other slices
        // the change moved the other way (a user's ledger: +135 and −40 ns
        // flagged, the lane +621 with three callers).
        let mixed = verdicts(vec![slice("validate", 135.0, 4.0, true), slice("reply", -40.0, 15.0, true)]);
        let mut ledger = across(621.0);
        hold_to_slices(&mut ledger, Some(&mixed));
        assert_eq!(ledger.verdict, Verdict::Reproduced, "{:?}", ledger.reasons);
    }

    #[test]
    fn the_estimate_is_the_slices_sum_only_where_it_accounts_for_the_lane() {
        // The lane +100 ns (99 % CI +70…+130), one slice +120 ±7 flagged,
        // the rest not told from zero: the slices' sum, the narrower.
        let v = verdicts(vec![slice("insert", 120.0, 7.0, true), slice("execute", -20.0, 60.0, false)]);
        let mut outcome = across(100.0);
        outcome.by_slices = account(&v);
        let est = estimate(&outcome).expect("an estimate");
        assert_eq!(est.source, EstimateSource::Slices);
        assert!((est.delta_us - 0.120).abs() < 1e-12 && est.level_pct == 95.0);
        // The rest of the operation moved (its CI clear of zero): the lane's.
        let moved = verdicts(vec![slice("insert", 120.0, 7.0, true), slice("execute", -40.0, 10.0, false)]);
        outcome.by_slices = account(&moved);
        assert_eq!(estimate(&outcome).map(|e| e.source), Some(EstimateSource::Lane));
        // The slices' sum outside the lane's CI: the lane's.
        let mut far = across(40.0);
        far.by_slices = account(&v);
        assert_eq!(estimate(&far).map(|e| e.source), Some(EstimateSource::Lane));
    }

    #[test]
    fn slices_that_moved_both_ways_or_below_the_rule_decide_nothing() {
        let both = verdicts(vec![slice("x", 120.0, 7.0, true), slice("y", -80.0, 7.0, true)]);
        assert_eq!(account(&both), None);
        assert_eq!(account(&verdicts(vec![slice("x", 120.0, 7.0, false)])), None, "nothing flagged");
        // Flagged, but below the rule's 0.2 µs.
        let small = account(&verdicts(vec![slice("x", 120.0, 7.0, true)])).expect("flagged");
        let mut outcome = inconclusive();
        judge(&mut outcome, small.clone(), &Rule { min_effect_us: 0.2, ..rule() }, 20.0);
        assert_eq!(outcome.verdict, Verdict::Inconclusive);
        // A verdict already drawn (drift) stands.
        let mut drift = AbOutcome { verdict: Verdict::DriftSuspected, ..inconclusive() };
        judge(&mut drift, small, &rule(), 20.0);
        assert_eq!(drift.verdict, Verdict::DriftSuspected);
    }
}
