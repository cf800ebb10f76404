//! Causal profiles judged on samples whose truth is known: a writer-side
//! speedup that reaches the lane whole, a caller-side one that does not
//! reach it at all, noise that both share by round, and samples that do
//! not fit together refused with a clear error.

#[path = "common/rng.rs"]
mod rng;

use std::collections::BTreeMap;

use hopscope_analyze::causal::{
    Arm, ArmBlock, CAUSAL_SAMPLES_SCHEMA, CausalError, CausalSamples, CausalWarning, SliceBase, profile,
};
use hopscope_analyze::join::SliceSide;
use hopscope_analyze::recorded::Recorded;
use hopscope_probe::{ClockInfo, HostInfo};
use rng::Rng;

/// A writer-bound lane: 10 µs per operation, of which the writer's
/// statement (4 µs median) sets the pace and the callers' build (2 µs)
/// runs beside it. Each round's host speed scales every arm of the round
/// alike (what pairing is for); each block adds its own small noise.
fn samples(rounds: u32) -> CausalSamples {
    samples_with(rounds, 11_000.0)
}

/// [`samples`] with the writer's real 25 % slowdown costing `slower_ns`
/// per operation (11 000: in proportion, as its speedups).
fn samples_with(rounds: u32, slower_ns: f64) -> CausalSamples {
    let slices = vec![
        SliceBase { name: "woke→executed".into(), side: SliceSide::Writer, median_ns: 4_000.0, base_ns: 4_000.0 },
        SliceBase { name: "locked→built".into(), side: SliceSide::Caller, median_ns: 2_000.0, base_ns: 2_000.0 },
    ];
    let arm = |slice, pct: f64, median: f64| Arm { slice, change_pct: pct, change_ns: median * pct.abs() / 100.0 };
    let arms = vec![
        arm(None, 0.0, 0.0),
        arm(Some(0), 25.0, 4_000.0),
        arm(Some(0), -25.0, 4_000.0),
        arm(Some(1), 25.0, 2_000.0),
        arm(Some(1), 10.0, 2_000.0),
        arm(Some(0), 10.0, 4_000.0),
    ];
    // What each arm truly costs per operation: the writer's change reaches
    // the lane whole, the callers' not at all.
    let truth = [10_000.0, 9_000.0, slower_ns, 10_000.0, 10_000.0, 9_600.0];
    let mut rng = Rng(7);
    let mut blocks = Vec::new();
    for round in 0..rounds {
        let host = 1.0 + 0.2 * rng.uniform();
        for (a, ns) in truth.iter().enumerate() {
            let ops = 400;
            let per_op = ns * host * (1.0 + 0.002 * rng.normal());
            // The wall is already virtual; what was owed is for the record.
            let inserted = if arms[a].is_virtual() { arms[a].change_ns * ops as f64 } else { 0.0 };
            blocks.push(ArmBlock {
                round,
                arm: a,
                ops,
                wall_ns: per_op * ops as f64,
                inserted_ns: inserted,
                waited_ns: 0.0,
                // Not counted: samples of a build before passes were.
                taken_ns: 0.0,
            });
        }
    }
    CausalSamples {
        schema: CAUSAL_SAMPLES_SCHEMA.into(),
        lane: "writer-probed".into(),
        callers: 4,
        serial: false,
        slices,
        arms,
        blocks,
        host: HostInfo::detect(),
        clock: ClockInfo::measure(),
        meta: BTreeMap::new(),
        seconds: 1.0,
        notes: Vec::new(),
        decomposition_ns_per_op: Some(10_500.0),
    }
}

#[test]
fn a_writer_side_speedup_reaches_the_lane_and_a_caller_side_one_does_not() {
    let p = profile(&samples(60), 1).expect("profiles");
    assert_eq!(p.rounds, 60);
    let writer = p.slices.iter().find(|s| s.name == "woke→executed").expect("writer slice");
    let caller = p.slices.iter().find(|s| s.name == "locked→built").expect("caller slice");
    let at = |s: &hopscope_analyze::causal::SliceProfile, pct: f64| {
        s.points.iter().find(|p| p.change_pct == pct).cloned().expect("point")
    };
    let faster = at(writer, 25.0);
    assert!(faster.virtual_speedup);
    // 10 µs → 9 µs: +11.1 % throughput, within the host's spread.
    assert!((faster.throughput_pct.median - 11.1).abs() < 3.0, "{:?}", faster.throughput_pct);
    assert!(faster.throughput_pct.excludes_zero());
    assert!((faster.reach - 1.0).abs() < 0.25, "reach {}", faster.reach);
    // Four callers wait 1 µs less each: latency −4 µs per operation.
    assert!((faster.latency_us.median + 4.0).abs() < 1.0, "{:?}", faster.latency_us);
    let slower = at(writer, -25.0);
    assert!(!slower.virtual_speedup && slower.throughput_pct.median < 0.0);
    assert!((slower.reach - 1.0).abs() < 0.25, "a slowdown's reach reads positive: {}", slower.reach);
    let beside = at(caller, 25.0);
    assert!(beside.reach.abs() < 0.25, "reach {}", beside.reach);
    assert!(beside.saved_ns.ci95[0] <= 0.0 && beside.saved_ns.ci95[1] >= 0.0, "{:?}", beside.saved_ns);
    // Ranked by the 10 % speedup: the writer's slice first.
    assert_eq!(p.slices[0].name, "woke→executed");
    assert_eq!(p.slices[0].ranking_point().map(|p| p.change_pct), Some(10.0));
    // Points run slowest to fastest.
    let changes: Vec<f64> = writer.points.iter().map(|p| p.change_pct).collect();
    assert_eq!(changes, vec![-25.0, 10.0, 25.0]);
}

#[test]
fn only_rounds_in_which_every_arm_ran_are_paired() {
    let mut s = samples(10);
    // The last round was cut short after its first two arms.
    s.blocks.retain(|b| b.round < 9 || b.arm < 2);
    assert_eq!(profile(&s, 1).expect("profiles").rounds, 9);
    s.blocks.retain(|b| b.round < 4);
    assert_eq!(profile(&s, 1), Err(CausalError::TooFewRounds { got: 4 }));
}

#[test]
fn samples_that_do_not_fit_together_are_refused_saying_why() {
    let mut s = samples(6);
    s.schema = "hopscope.causal-samples/0".into();
    assert!(matches!(profile(&s, 1), Err(CausalError::Schema(_))));

    let mut s = samples(6);
    s.arms.swap(0, 1);
    assert_eq!(profile(&s, 1), Err(CausalError::NoReference));

    let mut s = samples(6);
    s.arms[2].slice = Some(9);
    let err = profile(&s, 1).expect_err("refused").to_string();
    assert!(err.contains("arm 2 names no slice"), "{err}");

    let mut s = samples(6);
    s.blocks[3].arm = 40;
    let err = profile(&s, 1).expect_err("refused").to_string();
    assert!(err.contains("names arm 40"), "{err}");

    let mut s = samples(6);
    s.blocks[0].wall_ns = f64::NAN;
    assert!(profile(&s, 1).expect_err("refused").to_string().contains("no time"));
}

#[test]
fn a_slice_whose_slowdown_reaches_the_lane_far_more_than_its_speedup_is_named() {
    let linear = profile(&samples(30), 1).expect("profiles");
    assert!(linear.warnings.is_empty(), "{:?}", linear.warnings);
    // Really 25 % slower costs 2 µs, twice the 1 µs it added: reach 2
    // against the speedups' 1.
    let bent = profile(&samples_with(30, 12_000.0), 1).expect("profiles");
    assert_eq!(bent.warnings.len(), 1, "{:?}", bent.warnings);
    let w = hopscope_reports::receipt::causal::warning(&bent.warnings[0]);
    assert!(w.starts_with("`woke→executed` reaches the lane 2.") && w.contains("when really 25 % slower"), "{w}");
    assert!(w.ends_with("read the speedup as a lower bound, not a slope"), "{w}");
}

#[test]
fn a_reference_that_ran_at_two_paces_is_named_with_its_rounds() {
    // A third of the blocks, whatever their arm, ran 2.3 times slower (a
    // lock convoy among callers on one core): every arm's pairs straddle
    // the two paces in some rounds.
    let mut s = samples(60);
    let mut rng = Rng(11);
    for b in &mut s.blocks {
        if rng.uniform() < 0.34 {
            b.wall_ns *= 2.3;
        }
    }
    let p = profile(&s, 1).expect("profiles");
    let paces: Vec<_> = p
        .warnings
        .iter()
        .filter_map(|w| match w {
            Recorded::Typed(w @ CausalWarning::TwoPaces { .. }) => Some(w.clone()),
            _ => None,
        })
        .collect();
    let [CausalWarning::TwoPaces { slow_rounds, rounds, slow_ns_per_op, fast_ns_per_op, callers }] = paces.as_slice()
    else {
        panic!("one two-paces warning: {:?}", p.warnings)
    };
    assert_eq!(*rounds, 60);
    assert_eq!(*callers, 4);
    let slow_in_truth = s.blocks.iter().filter(|b| b.arm == 0 && b.wall_ns / 400.0 > 16_000.0).count();
    assert_eq!(*slow_rounds, slow_in_truth);
    assert!((*slow_ns_per_op / *fast_ns_per_op - 2.3).abs() < 0.3, "{slow_ns_per_op} / {fast_ns_per_op}");
    let said = hopscope_reports::receipt::causal::warning(&Recorded::Typed(paces[0].clone()));
    assert!(said.starts_with(&format!("the lane ran at two paces: {slow_in_truth} of 60 reference rounds")), "{said}");
    let headline = hopscope_reports::receipt::causal::sentence(&p);
    assert!(
        headline.contains(&format!(
            "throughput; a 25 % faster `locked→built` (2.00 µs) buys nothing measurable: +0.1 % (CI -0.1…+0.2). Read \
             it with care: the lane ran at two paces ({slow_in_truth} of 60 reference rounds slow)."
        )),
        "{headline}"
    );

    // Two paces 1.23 apart, the faster the fewer (a third of the rounds at
    // 44 µs, the rest at 54): below the slow tail's 1.6, found by the
    // empty band between them.
    let mut near = samples(60);
    let mut rng = Rng(13);
    for round in 0..60 {
        let pace = if rng.uniform() < 0.33 { 44_000.0 } else { 54_000.0 };
        let jitter = 1.0 + 0.01 * rng.normal();
        for b in near.blocks.iter_mut().filter(|b| b.round == round) {
            // Every arm of the round at that pace, less what its change saved.
            let saved = if b.arm == 1 { 1_000.0 } else { 0.0 };
            b.wall_ns = (pace - saved) * jitter * b.ops as f64;
        }
    }
    let fast_rounds = near.blocks.iter().filter(|b| b.arm == 0 && b.wall_ns / 400.0 < 49_000.0).count();
    let p = profile(&near, 1).expect("profiles");
    let found = p.warnings.iter().find_map(|w| match w {
        Recorded::Typed(CausalWarning::TwoPaces { slow_rounds, fast_ns_per_op, slow_ns_per_op, .. }) => {
            Some((*slow_rounds, *fast_ns_per_op, *slow_ns_per_op))
        }
        _ => None,
    });
    let (slow_rounds, fast, slow) = found.expect("two paces found");
    assert_eq!(slow_rounds, 60 - fast_rounds);
    assert!((fast / 44_000.0 - 1.0).abs() < 0.02 && (slow / 54_000.0 - 1.0).abs() < 0.02, "{fast} {slow}");

    // The host's own spread (up to 1.2 between rounds) is one pace.
    assert!(
        !profile(&samples(60), 1)
            .expect("profiles")
            .warnings
            .iter()
            .any(|w| matches!(w, Recorded::Typed(CausalWarning::TwoPaces { .. }))),
    );
}

#[test]
fn the_headline_names_what_pays_and_never_a_tiny_change_that_read_large() {
    let headline = |s: &CausalSamples| hopscope_reports::receipt::causal::sentence(&profile(s, 1).expect("profiles"));
    // Four callers on more than one core: the writer's statement pays, the
    // callers' build does not, and the figures are the part in proportion.
    let said = headline(&samples(60));
    assert!(said.starts_with("With 4 callers, a 25 % faster `woke→executed` (4.00 µs) buys +1"), "{said}");
    assert!(said.contains("; a 25 % faster `locked→built` (2.00 µs) buys nothing measurable: "), "{said}");
    assert!(said.ends_with("Across cores these are the part in proportion: a real change may buy more, where a hand-off's cost moves with the time between hand-offs."), "{said}");

    // The callers' build read with a CI far wider than what its whole
    // change would buy (about ±5.5 % against 4.8 %): no evidence of
    // nothing, so not named as buying nothing.
    let mut wide = samples(60);
    let mut rng = Rng(5);
    for b in wide.blocks.iter_mut().filter(|b| b.arm == 3) {
        b.wall_ns *= 1.0 + 0.5 * (rng.uniform() - 0.5);
    }
    let said = headline(&wide);
    assert!(!said.contains("`locked→built`"), "{said}");

    // One caller: every slice is on its path, so no slice is named as not
    // paying; on one core, no word on cores.
    let mut one = samples(60);
    one.callers = 1;
    one.serial = true;
    let said = headline(&one);
    assert!(!said.contains("nothing measurable") && !said.contains("cores"), "{said}");

    // The callers' build, said to have lost 4 ns, reads 20 % faster: a
    // round's noise, not a finding, so neither ranked first nor named.
    let mut tiny = samples(60);
    tiny.arms[3].change_ns = 4.0;
    for b in tiny.blocks.iter_mut().filter(|b| b.arm == 3) {
        b.wall_ns /= 1.2;
    }
    let p = profile(&tiny, 1).expect("profiles");
    assert_eq!(p.slices[0].name, "woke→executed");
    let point = p.slices[1].points.iter().find(|q| q.change_pct == 25.0).expect("25 %");
    assert!(point.throughput_pct.excludes_zero() && !point.tells_an_effect(), "{point:?}");
    let said = headline(&tiny);
    assert!(said.starts_with("With 4 callers, a 25 % faster `woke→executed`"), "{said}");
}

#[test]
fn slice_medians_measured_at_another_pace_than_the_arms_ran_are_named() {
    let elsewhere = |ns: Option<f64>| {
        let mut s = samples(30);
        s.decomposition_ns_per_op = ns;
        profile(&s, 1)
            .expect("profiles")
            .warnings
            .into_iter()
            .filter(|w| matches!(w, Recorded::Typed(CausalWarning::MediansElsewhere { .. })))
            .collect::<Vec<_>>()
    };
    // The reference runs about 11 µs per operation (10 µs × the host's
    // 1.0–1.2).
    assert!(elsewhere(Some(12_000.0)).is_empty());
    assert!(elsewhere(None).is_empty(), "an older run's samples have no decomposition figure");
    let slow = elsewhere(Some(31_000.0));
    let [w] = slow.as_slice() else { panic!("one warning: {slow:?}") };
    let said = hopscope_reports::receipt::causal::warning(w);
    assert!(
        said.contains("short decomposition at 31.00 µs per operation, and the arms' reference ran at 10.87:"),
        "{said}"
    );
    assert_eq!(elsewhere(Some(5_000.0)).len(), 1, "a decomposition much faster than the arms too");
}

/// A batching writer: its COMMIT (8 µs, shared by eight operations) is one
/// slice of every operation's path, but a 25 % faster COMMIT takes 2 µs off
/// each transaction, 250 ns off each operation. The lane is writer-bound:
/// 4 µs per operation, and the faster COMMIT saves those 250 ns.
fn batched(counted: bool) -> CausalSamples {
    let mut s = samples(40);
    s.slices = vec![SliceBase {
        name: "commit→committed".into(),
        side: SliceSide::Writer,
        median_ns: 8_000.0,
        base_ns: 8_000.0,
    }];
    s.arms = vec![
        Arm { slice: None, change_pct: 0.0, change_ns: 0.0 },
        Arm { slice: Some(0), change_pct: 25.0, change_ns: 2_000.0 },
        Arm { slice: Some(0), change_pct: -25.0, change_ns: 2_000.0 },
    ];
    let truth = [4_000.0, 3_750.0, 4_250.0];
    let mut rng = Rng(11);
    s.blocks.clear();
    for round in 0..40 {
        let host = 1.0 + 0.1 * rng.uniform();
        for (a, ns) in truth.iter().enumerate() {
            let ops: u32 = 800;
            // One pass of the COMMIT's end per eight operations.
            let taken = if a == 0 || !counted { 0.0 } else { 2_000.0 * f64::from(ops / 8) };
            s.blocks.push(ArmBlock {
                round,
                arm: a,
                ops: u64::from(ops),
                wall_ns: ns * host * (1.0 + 0.001 * rng.normal()) * f64::from(ops),
                inserted_ns: if a == 1 { taken } else { 0.0 },
                waited_ns: 0.0,
                taken_ns: taken,
            });
        }
    }
    s
}

#[test]
fn a_shared_interval_is_judged_against_what_it_took_off_each_operation() {
    let p = profile(&batched(true), 1).expect("profiles");
    let commit = &p.slices[0];
    for point in &commit.points {
        assert!((point.taken_ns - 250.0).abs() < 1e-9, "an eighth of each change: {point:?}");
        assert!((point.reach - 1.0).abs() < 0.1, "the writer's whole time: reach {}", point.reach);
        assert!(point.tells_an_effect(), "{point:?}");
    }
    // Without the passes counted (an older build's samples), the change
    // per pass stands for the time taken off: the reach reads an eighth.
    let old = profile(&batched(false), 1).expect("profiles");
    let faster = old.slices[0].points.iter().find(|p| p.virtual_speedup).expect("speedup");
    assert!((faster.reach - 0.125).abs() < 0.02, "reach {}", faster.reach);
    assert_eq!(faster.taken(), 2_000.0);
}
