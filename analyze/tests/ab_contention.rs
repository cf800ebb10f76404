//! An A/B verdict on rounds another process held: it pairs each round's
//! arms, so it keeps those rounds (and says so) while few are contended,
//! and draws no verdict once half or more are.

mod common;

use std::collections::BTreeMap;

use hopscope_analyze::ab::Verdict;
use hopscope_analyze::ab_trace::AbTrace;
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::warning::Warning;
use hopscope_analyze::{experiment, resolution};
use hopscope_probe::{Block, Reading, Ticks, Trace, TraceHeader};

/// Arm lanes by their legacy names: `a`, `b` and the `control`.
const LANES: [&str; 3] = ["a", "b", "control"];
const OPS: u64 = 10;
const PASSES: u32 = 4;
const SAMPLES: u32 = 5;

/// Per-op wall time of each arm, ns, with a few ns of round-to-round
/// variation so every spread is non-zero.
fn wall_ns(lane: u16, pass: u32, sample: u32) -> u64 {
    let base = if lane == 1 { 10_500 } else { 10_000 };
    base + u64::from((pass * 7 + sample * 3 + u32::from(lane)) % 5) * 10
}

/// Passes of unprobed arm blocks, each carrying the process's run-queue
/// delay: 1 µs per op, and 2 ms in arm `a`'s block of each round in
/// `waited` (its wall time stretched by as much).
fn trace(waited: &[(u32, u32)]) -> Trace {
    let header = TraceHeader {
        readings: vec!["process.cpu_ns".into(), "process.run_queue_ns".into()],
        run: BTreeMap::from([("shape".to_owned(), "single-insert".to_owned())]),
        ..common::header(&LANES, &["caller"])
    };
    let mut blocks = Vec::new();
    let mut t = 1_000_000;
    for pass in 0..PASSES {
        for sample in 0..SAMPLES {
            // Both orders, pass by pass.
            let order: [u16; 3] = if pass % 2 == 0 { [0, 1, 2] } else { [1, 0, 2] };
            for lane in order {
                let held = lane == 0 && waited.contains(&(pass, sample));
                let wall = OPS * wall_ns(lane, pass, sample) + if held { 2_000_000 } else { 0 };
                blocks.push(Block {
                    lane,
                    pass,
                    sample,
                    op_count: OPS,
                    start: Ticks(t),
                    end: Ticks(t + wall),
                    streams: Vec::new(),
                    readings: vec![
                        // The process ran its operations; the wait is not CPU time.
                        Reading { key: 0, value: OPS * wall_ns(lane, pass, sample) },
                        Reading { key: 1, value: if held { 2_000_000 } else { 1_000 * OPS } },
                    ],
                });
                t += wall + 1_000;
            }
        }
    }
    Trace { header, blocks }
}

#[test]
fn a_few_contended_rounds_are_kept_in_the_verdict_and_said() {
    let waited = [(0, 1), (2, 3)];
    let trace = trace(&waited);
    let e = experiment::judge(&trace, &resolution::detection_rule());
    let c = e.contention.as_ref().expect("run-queue delay recorded");
    assert_eq!((c.contended_rounds, c.rounds), (2, 20), "{c:?}");
    assert!(!c.contended, "2 of 20 rounds do not make the run contended");
    // The record does not claim what the verdict did not do.
    assert!(!c.dropped_rounds, "{c:?}");
    assert_eq!(c.rounds_left_out(), 0);
    let kept = Warning::ContendedKept { waited: 2, rounds: 20 };
    assert!(e.warnings.contains(&Recorded::Typed(kept.clone())), "{:?}", e.warnings);
    let line = hopscope_reports::receipt::warning(&Recorded::Typed(kept));
    assert!(line.starts_with("2 of 20 rounds waited for another process; an A/B verdict keeps them"), "{line}");
    assert_ne!(e.outcome.verdict, Verdict::DriftSuspected, "{:?}", e.outcome.reasons);
    // Kept indeed: every pass pairs all its rounds, the held ones too.
    let passes = AbTrace::of(&trace).pass_blocks();
    assert_eq!(passes.len(), PASSES as usize);
    for p in &passes {
        assert_eq!((p.a.len(), p.b.len(), p.control.len()), (5, 5, 5), "pass {}", p.pass);
    }
    let held = passes[0].a[&1];
    assert!(held > 200.0, "the held block's figure carries its 2 ms wait: {held} µs per op");
}

#[test]
fn a_run_contended_in_half_its_rounds_gets_no_verdict() {
    let waited: Vec<(u32, u32)> = (0..PASSES).flat_map(|p| (0..3).map(move |s| (p, s))).collect();
    let e = experiment::judge(&trace(&waited), &resolution::detection_rule());
    let c = e.contention.as_ref().expect("run-queue delay recorded");
    assert!(c.contended && c.contended_rounds == 12, "{c:?}");
    assert_eq!(e.outcome.verdict, Verdict::DriftSuspected);
    let first = hopscope_reports::receipt::reason(&e.outcome.reasons[0]);
    assert!(first.starts_with("no verdict: another process held this run's CPUs: 12 of 20 rounds"), "{first}");
}

#[test]
fn a_run_without_run_queue_readings_says_nothing_of_contention() {
    let mut quiet = trace(&[]);
    quiet.header.readings.truncate(1);
    for b in &mut quiet.blocks {
        b.readings.truncate(1);
    }
    let e = experiment::judge(&quiet, &resolution::detection_rule());
    assert!(e.contention.is_none());
    let kept = |w: &&Recorded<Warning>| matches!(w.typed(), Some(Warning::ContendedKept { .. }));
    assert!(!e.warnings.iter().any(|w| kept(&w)), "{:?}", e.warnings);
}
