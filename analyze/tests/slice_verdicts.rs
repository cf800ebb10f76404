//! The per-slice verdict rule on synthetic experiments whose truth is
//! known: over many null experiments (no slice changed) the chance that any
//! slice is flagged stays at most 5%, whatever the noise looks like, and a
//! change in one slice is found there and nowhere else.

#[path = "common/rng.rs"]
mod rng;

use hopscope_analyze::slice_verdict::{ALPHA, MinEffect, PairedSlice, judge_paired};
use rng::Rng;

/// Noise of one of several shapes, scale `sd`: normal, heavy-tailed
/// (Laplace), or quantised to a 10 ns clock grain.
fn noise(rng: &mut Rng, shape: u64, sd: f64) -> f64 {
    match shape % 3 {
        0 => sd * rng.normal(),
        1 => {
            let u = rng.uniform() - 0.5;
            -sd / std::f64::consts::SQRT_2 * u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln()
        }
        _ => (sd * rng.normal() / 10.0).round() * 10.0,
    }
}

const SLICES: usize = 11;
const PASSES: u32 = 2;
const ROUNDS: u32 = 20;

/// One experiment: `shift_ns` added to slice 1's `b − a` in every round.
fn experiment(rng: &mut Rng, shift_ns: f64) -> Vec<PairedSlice> {
    (0..SLICES)
        .map(|s| {
            // Slices differ in how noisy they are (a wake is noisier than a
            // 40 ns step).
            let sd = [3.0, 8.0, 40.0, 300.0][s % 4];
            let shape = rng.next();
            let diffs = (0..PASSES)
                .flat_map(|p| (0..ROUNDS).map(move |_| p))
                .map(|p| (p, noise(rng, shape, sd) + if s == 1 { shift_ns } else { 0.0 }))
                .collect();
            PairedSlice { name: format!("slice-{s}"), level_ns: 40.0, diffs }
        })
        .collect()
}

#[test]
fn null_experiments_flag_a_slice_at_most_five_percent_of_the_time() {
    let mut rng = Rng(20_261_201);
    let runs = 2_000;
    let flagged = (0..runs)
        .filter(|_| {
            let v = judge_paired(&experiment(&mut rng, 0.0), MinEffect::NONE).expect("verdicts");
            v.changed().next().is_some()
        })
        .count();
    let rate = flagged as f64 / runs as f64;
    println!("null experiments with any slice flagged: {flagged} of {runs} ({:.2}%)", rate * 100.0);
    assert!(rate <= ALPHA, "family-wise false-positive rate {rate}");
}

#[test]
fn an_order_effect_alone_is_not_a_change() {
    // The second order adds 20 ns to slice 1 and the first takes 20 off:
    // a real difference between passes, but not between the arms.
    let mut rng = Rng(7);
    let runs = 400;
    let flagged = (0..runs)
        .filter(|_| {
            let mut e = experiment(&mut rng, 0.0);
            for (pass, d) in &mut e[1].diffs {
                *d += if *pass == 0 { -20.0 } else { 20.0 };
            }
            judge_paired(&e, MinEffect::NONE).expect("verdicts").changed().next().is_some()
        })
        .count();
    assert!(flagged as f64 / runs as f64 <= ALPHA, "{flagged} of {runs}");
}

#[test]
fn a_change_is_found_in_its_own_slice_and_sized() {
    let mut rng = Rng(42);
    let runs = 400;
    let mut found = 0;
    let mut elsewhere = 0;
    let mut estimates = Vec::new();
    for _ in 0..runs {
        let v = judge_paired(&experiment(&mut rng, 25.0), MinEffect::NONE).expect("verdicts");
        found += usize::from(v.slices[1].changed && v.slices[1].delta_ns > 0.0);
        elsewhere += usize::from(v.changed().any(|s| s.name != "slice-1"));
        estimates.push(v.slices[1].delta_ns);
    }
    estimates.sort_by(f64::total_cmp);
    let median = estimates[estimates.len() / 2];
    println!("25 ns in a slice with 8 ns noise: found {found} of {runs}, median estimate {median:.1} ns");
    assert!(found as f64 >= 0.95 * runs as f64, "found {found} of {runs}");
    assert!(elsewhere as f64 <= ALPHA * runs as f64, "flagged elsewhere {elsewhere} of {runs}");
    assert!((median - 25.0).abs() <= 5.0, "median estimate {median}");
}

#[test]
fn a_real_change_below_the_smallest_effect_is_not_claimed() {
    // 3 ns in a 1 ns-noise, 40 ns slice: plain to the test, below 5 ns.
    let shifted = |shift: f64, level_ns: f64| {
        vec![PairedSlice {
            name: "small".to_owned(),
            level_ns,
            diffs: (0..400u32).map(|i| (i / 200, shift + f64::from(i % 7) / 7.0 - 0.5)).collect(),
        }]
    };
    let strict = judge_paired(&shifted(3.0, 40.0), MinEffect::NONE).expect("verdicts");
    assert!(strict.slices[0].changed && strict.slices[0].adjusted_p < 1e-6);
    let floor = MinEffect { ns: 5.0, share: 0.01 };
    let v = judge_paired(&shifted(3.0, 40.0), floor).expect("verdicts");
    assert!(!v.slices[0].changed && v.slices[0].min_effect_ns == 5.0, "{:?}", v.slices[0]);
    // 8 ns clears 5 ns in a 40 ns slice, not 1% of a 10 µs one.
    assert!(judge_paired(&shifted(8.0, 40.0), floor).expect("verdicts").slices[0].changed);
    let long = judge_paired(&shifted(8.0, 10_000.0), floor).expect("verdicts");
    assert!(!long.slices[0].changed && long.slices[0].min_effect_ns == 100.0);
    // A change the same size in the other direction is claimed alike.
    assert!(judge_paired(&shifted(-8.0, 40.0), floor).expect("verdicts").slices[0].changed);
}
