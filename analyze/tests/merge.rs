//! The merge analysis on synthetic traces whose every import time is known:
//! the speed-up, each step's saving and share, and verdicts that follow the
//! data (a real saving is reproduced, none is inconclusive, a moving control
//! is drift).

mod common;

use std::collections::BTreeMap;

use hopscope_analyze::ab::Verdict;
use hopscope_analyze::ab_trace::AbTrace;
use hopscope_analyze::merge::{MergeResult, analyze};
use hopscope_probe::{Block, Ticks, Trace, TraceHeader};

// The names a merge run records (`naive-control` is the control).
const ARMS: [&str; 5] = ["naive", "tuned", "fast_step", "null_step", "naive-control"];
const PHASES: [&str; 2] = ["cold", "again"];
const CHANGES_PER_PART: u64 = 100;
const PARTS: u32 = 40;

/// µs per change of `arm` in `phase`; `control_drift` moves the control.
fn us(arm: &str, phase: &str, control_drift: f64) -> f64 {
    let naive = if phase == "cold" { 50.0 } else { 10.0 };
    match arm {
        "tuned" => naive / 10.0,
        "fast_step" => naive * 0.7,
        "null_step" | "naive" => naive,
        _ => naive * (1.0 + control_drift),
    }
}

fn lane_name(arm: &str, phase: &str) -> String {
    format!("{arm}/{phase}")
}

/// A trace with a 1 ns tick: every part of every arm's import, arms in an
/// order that flips every part (so both A→B and B→A passes exist), with a
/// ±2% wobble that differs per part and arm so intervals are not degenerate.
fn trace(control_drift: f64) -> Trace {
    let lanes: Vec<String> = ARMS.iter().flat_map(|a| PHASES.map(|p| lane_name(a, p))).collect();
    let header = TraceHeader {
        lanes,
        run: BTreeMap::from([
            ("changes".to_owned(), (CHANGES_PER_PART * u64::from(PARTS)).to_string()),
            ("rounds".to_owned(), "1".to_owned()),
        ]),
        ..common::header(&[], &["merger"])
    };

    let mut blocks = Vec::new();
    let mut t = 0u64;
    for (phase_index, phase) in PHASES.iter().enumerate() {
        for sample in 0..PARTS {
            let mut order: Vec<usize> = (0..ARMS.len()).collect();
            if sample % 2 == 1 {
                order.reverse();
            }
            for arm in order {
                let wobble = 1.0 + 0.02 * (((sample as usize * 7 + arm * 3) % 5) as f64 - 2.0) / 2.0;
                let ns = (us(ARMS[arm], phase, control_drift) * wobble * 1_000.0) as u64 * CHANGES_PER_PART;
                blocks.push(Block {
                    lane: (arm * PHASES.len() + phase_index) as u16,
                    pass: 0,
                    sample,
                    op_count: CHANGES_PER_PART,
                    start: Ticks(t),
                    end: Ticks(t + ns),
                    streams: Vec::new(),
                    readings: Vec::new(),
                });
                t += ns + 1_000;
            }
        }
    }
    Trace { header, blocks }
}

fn step<'a>(r: &'a MergeResult, step: &str, phase: &str) -> &'a hopscope_analyze::merge::StepEffect {
    r.steps.iter().find(|s| s.step == step && s.phase == phase).expect("step analysed")
}

#[test]
fn speedup_savings_and_shares_come_out_as_built() {
    let r = analyze(&AbTrace::of(&trace(0.0)), 7);
    assert_eq!(r.changes, 4_000);
    for phase in PHASES {
        let speedup = r.speedup[phase];
        assert!((speedup - 10.0).abs() < 0.5, "{phase}: naive ÷ tuned = {speedup}");
        let naive = r.arms["naive"][phase].us_per_change.median;
        let fast = step(&r, "fast_step", phase);
        // 30% of naive saved, out of a 90% gap: a third of it.
        assert!((fast.saving_us.median - 0.3 * naive).abs() < 0.03 * naive, "{phase}: {:?}", fast.saving_us);
        assert!((fast.share_of_gap - 1.0 / 3.0).abs() < 0.05, "{phase}: share {}", fast.share_of_gap);
        assert_eq!(fast.verdict, Verdict::Reproduced, "{phase}: {:?}", fast.reasons);
        let null = step(&r, "null_step", phase);
        assert_eq!(null.verdict, Verdict::Inconclusive, "{phase}: {:?}", null.reasons);
    }
    // Only real steps are judged: naive, tuned and the control are arms, not steps.
    assert!(r.steps.iter().all(|s| ["fast_step", "null_step"].contains(&s.step.as_str())));
    assert_eq!(r.steps.len(), 4);
}

#[test]
fn a_control_that_moves_makes_every_verdict_drift() {
    let r = analyze(&AbTrace::of(&trace(0.10)), 7);
    for phase in PHASES {
        let fast = step(&r, "fast_step", phase);
        assert_eq!(fast.verdict, Verdict::DriftSuspected, "{phase}: {:?}", fast.reasons);
        let first = hopscope_reports::receipt::reason(&fast.reasons[0]);
        assert!(first.contains("the control moved"), "{first}");
    }
}

#[test]
fn the_receipt_names_every_arm_step_and_verdict() {
    let r = analyze(&AbTrace::of(&trace(0.0)), 7);
    let receipt = hopscope_reports::receipt::merge::markdown(&r);
    for arm in ARMS {
        assert!(receipt.contains(&format!("| {arm} |")), "{arm} in\n{receipt}");
    }
    assert!(receipt.contains("| fast_step | cold |") && receipt.contains("reproduced"));
    assert!(receipt.contains("cold import: naive ÷ tuned = **"));
}
