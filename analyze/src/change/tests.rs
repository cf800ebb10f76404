//! The change rule on synthetic runs whose truth is known: unchanged,
//! slower slices, even and uneven drift, both directions.

use super::*;
use crate::decomposition::LaneRun;

/// The change's findings, every one typed (a fresh change holds no
/// sentence).
fn typed(c: &Change) -> Vec<&ChangeFinding> {
    c.findings
        .iter()
        .map(|f| match f {
            Recorded::Typed(f) => f,
            Recorded::Sentence(s) => panic!("a fresh change said a sentence: {s}"),
        })
        .collect()
}

/// Whether a figure called `call` moved, named `name`.
fn moved(c: &Change, name: &str, call: Call) -> Option<FigureChange> {
    typed(c).into_iter().find_map(|f| match f {
        ChangeFinding::Moved(f) if f.name == name && f.call == call => Some(f.clone()),
        _ => None,
    })
}

/// A run whose lanes' blocks scatter around their given µs per op
/// (a fixed ±2% pattern) and whose subject has two slices.
fn run(scale: f64, writer_extra: f64, slice_extra: f64) -> RunSamples {
    let wobble = |i: u32| 1.0 + 0.02 * (f64::from(i % 7) - 3.0) / 3.0;
    let lane = |us: f64| -> BTreeMap<(u32, u32), f64> {
        (0..60).map(|i| ((i / 30, i % 30), us * scale * wobble(i))).collect()
    };
    let slice = |us: f64| -> Vec<f64> { (0..60).map(|i| us * scale * wobble(i + 3)).collect() };
    RunSamples {
        lanes: BTreeMap::from([
            ("inline".to_owned(), lane(12.0)),
            ("floor".to_owned(), lane(17.5)),
            ("writer".to_owned(), lane(18.0 + writer_extra)),
            ("handoff".to_owned(), lane(5.0)),
        ]),
        subject: Some("writer".into()),
        subjects: vec!["writer".into(), "writer-probed".into()],
        runs: ["inline", "floor", "writer", "handoff"]
            .map(|lane| (lane.to_owned(), LaneRun { lane: lane.to_owned(), probed: false, callers: 1 }))
            .into(),
        slices_lane: Some("writer-probed".into()),
        baseline: Some("inline".into()),
        floor: Some("floor".into()),
        handoff: Some("handoff".into()),
        slices: vec![("locked→built".into(), slice(0.06 + slice_extra)), ("sent→woke".into(), slice(4.0))],
        // The floor marks sent→woke as well: beyond it, the subject's
        // extra work in its own slices does not show, only a wake's change.
        beyond_floor: vec![("sent→woke".into(), (0..60).map(|i| 0.1 + 0.01 * f64::from(i % 5)).collect())],
        floor_slices: BTreeMap::from([("sent→woke".to_owned(), slice(3.9))]),
        floor_slices_lane: Some("floor-probed".into()),
        floor_stands: true,
        slice_sharing: BTreeMap::new(),
        batch_means: BTreeMap::new(),
        settings: BTreeMap::from([
            ("order".to_owned(), "Balanced".to_owned()),
            ("ops_per_block".to_owned(), "20".to_owned()),
        ]),
        contended: None,
        figure: crate::ab::FigureKind::WallPerOp,
    }
}

#[test]
fn runs_made_differently_say_how_first() {
    let same = compare(&run(1.0, 0.0, 0.0), &run(1.0, 0.0, 0.0), "a", "b");
    assert!(!typed(&same).iter().any(|f| matches!(f, ChangeFinding::MadeDifferently { .. })), "{:#?}", same.findings);
    let mut rotated = run(1.0, 0.0, 0.0);
    rotated.settings.insert("order".to_owned(), "Rotate".to_owned());
    // A fact only one run recorded (an older result) is not a difference.
    rotated.settings.insert("shape".to_owned(), "single-insert".to_owned());
    let c = compare(&rotated, &run(1.0, 0.0, 0.0), "a", "b");
    let order = SettingMove { fact: "order".into(), a: "Rotate".into(), b: "Balanced".into() };
    assert_eq!(typed(&c)[0], &ChangeFinding::MadeDifferently { settings: vec![order] });
}

#[test]
fn the_same_run_twice_is_no_change() {
    let c = compare(&run(1.0, 0.0, 0.0), &run(1.0, 0.0, 0.0), "a", "b");
    assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.findings);
    assert!(c.controls.iter().all(|c| c.drift == 0.0), "{:?}", c.controls);
    assert_eq!(c.controls.len(), 2, "inline and floor both stand as controls");
    assert!(c.figures.iter().all(|f| f.call == Call::NoChange));
    let derived: Vec<&str> =
        c.figures.iter().filter(|f| f.kind == FigureKind::Derived).map(|f| f.name.as_str()).collect();
    assert_eq!(derived, ["hop", "boundary", "switches", "machinery", "library"]);
    let machinery = c.figures.iter().find(|f| f.name == "machinery").expect("machinery");
    assert!((machinery.a_us - (17.5 - 12.0 - 5.0)).abs() < 0.05, "floor − inline − handoff: {machinery:?}");
}

#[test]
fn a_slower_slice_is_a_regression_that_names_it() {
    let c = compare(&run(1.0, 0.0, 0.0), &run(1.0, 0.5, 0.5), "a", "b");
    assert_eq!(c.verdict, Verdict::Regression);
    let slice = c.figures.iter().find(|f| f.name == "locked→built").expect("slice");
    assert_eq!(slice.call, Call::Slower);
    assert!(slice.ci95[0] > 0.0 && (slice.delta_us - 0.5).abs() < 0.05, "{slice:?}");
    assert_eq!(c.figures.iter().find(|f| f.name == "sent→woke").map(|f| f.call), Some(Call::NoChange));
    assert!(moved(&c, "locked→built", Call::Slower).is_some_and(|f| f.kind == FigureKind::Slice), "{:#?}", c.findings);
    let faster = compare(&run(1.0, 0.5, 0.5), &run(1.0, 0.0, 0.0), "a", "b");
    assert_eq!(faster.verdict, Verdict::Improvement);
}

#[test]
fn a_contended_run_gets_no_verdict_however_large_the_change() {
    let mut slowed = run(1.0, 0.5, 0.5);
    let waited = crate::contention::ContendedRun {
        rounds: 20,
        contended_rounds: 12,
        lane: "writer".into(),
        contended_blocks: 12,
        blocks: 20,
        waits_us: 11.0,
        wall_us: 18.0,
        share: 0.61,
        placed: None,
    };
    slowed.contended = Some(waited.clone());
    let c = compare(&run(1.0, 0.0, 0.0), &slowed, "a", "b");
    assert_eq!(c.verdict, Verdict::DriftSuspected);
    assert_eq!(c.contended, [ContendedSide { run: "b".into(), waited }]);
    assert_eq!(typed(&c)[0], &ChangeFinding::Contended(c.contended[0].clone()), "first, before the rest");
}

#[test]
fn the_library_gates_and_names_the_slice_that_carried_it() {
    // The writer 0.5 µs slower in its execute slice, which the floor marks
    // too: beyond the floor's, that slice moved; the library gates.
    let mut slow = run(1.0, 0.5, 0.0);
    slow.beyond_floor = vec![("woke→executed".into(), (0..60).map(|i| 0.55 + 0.01 * f64::from(i % 5)).collect())];
    let mut base = run(1.0, 0.0, 0.0);
    base.beyond_floor = vec![("woke→executed".into(), (0..60).map(|i| 0.05 + 0.01 * f64::from(i % 5)).collect())];
    let c = compare(&base, &slow, "a", "b");
    let library = c.figures.iter().find(|f| f.name == "library").expect("library");
    assert!(library.gated && library.call == Call::Slower, "{library:?}");
    assert_eq!(c.verdict, Verdict::Regression);
    let carried = library.carried_by.as_ref().expect("the slice named");
    assert_eq!(carried.slice, "woke→executed");
    assert!((carried.delta_us - 0.5).abs() < 0.02 && carried.ci95[0] > 0.0, "{carried:?}");
    let library = typed(&c).into_iter().find_map(|f| match f {
        ChangeFinding::Moved(f) if f.name == "library" => f.carried_by.clone(),
        _ => None,
    });
    assert_eq!(library.map(|m| m.slice), Some("woke→executed".to_owned()), "{:#?}", c.findings);
    // A floor that cannot stand for the boundary in either run: no library.
    slow.floor_stands = false;
    let c = compare(&base, &slow, "a", "b");
    assert!(c.figures.iter().all(|f| f.name != "library"), "{:#?}", c.figures);
}

#[test]
fn a_machine_that_got_slower_everywhere_is_drift_not_a_regression() {
    // Everything 6% slower: above the 5% minimum effect on its own,
    // but the control lane moved as much.
    let c = compare(&run(1.0, 0.0, 0.0), &run(1.06, 0.0, 0.0), "a", "b");
    assert!(c.controls.iter().all(|c| (c.drift - 0.06).abs() < 1e-9), "{:?}", c.controls);
    assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.figures);
    let writer = c.figures.iter().find(|f| f.name == "writer").expect("writer");
    assert_eq!(writer.call, Call::Drift, "{writer:?}");
    // What is left once the drift is off is said, beside the bar.
    let net = writer.net_of_drift.expect("net of drift");
    assert!(net.delta_us.abs() < net.bar_us, "{net:?}");
    // A figure that moved less than the machine did is drift too, not
    // a slowdown (nor, once the drift is off, a speed-up).
    let mut b = run(1.15, 0.0, 0.0);
    b.slices[1].1.iter_mut().for_each(|v| *v *= 1.07 / 1.15);
    let c = compare(&run(1.0, 0.0, 0.0), &b, "a", "b");
    assert_eq!(c.figures.iter().find(|f| f.name == "sent→woke").map(|f| f.call), Some(Call::Drift));
    assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.findings);
    // A real regression on top of the drift is still one.
    let c = compare(&run(1.0, 0.0, 0.0), &run(1.06, 3.0, 0.0), "a", "b");
    assert_eq!(c.verdict, Verdict::Regression, "{:#?}", c.figures);
    // Up to a 25% drift the machine's even slowdown is taken off;
    // past it nothing is judged.
    let c = compare(&run(1.0, 0.0, 0.0), &run(1.2, 0.0, 0.0), "a", "b");
    assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.findings);
    let c = compare(&run(1.0, 0.0, 0.0), &run(1.3, 3.0, 0.0), "a", "b");
    assert_eq!(c.verdict, Verdict::DriftSuspected);
    assert!(matches!(typed(&c)[0], ChangeFinding::ControlMoved { refused: true, .. }), "{:#?}", c.findings);
}

#[test]
fn a_control_moving_within_its_own_noise_still_has_its_drift_taken_off() {
    // A short run: blocks scatter ±40%, so a 15% move of every lane is
    // inside each control's CI. It is still the best estimate of the
    // drift, and the subject moved exactly as much.
    let noisy = |scale: f64| {
        let mut r = run(scale, 0.0, 0.0);
        for blocks in r.lanes.values_mut() {
            for (i, v) in blocks.values_mut().enumerate() {
                *v *= 1.0 + 0.4 * (((i * 37) % 11) as f64 - 5.0) / 5.0;
            }
        }
        r.lanes.values_mut().for_each(|b| b.retain(|(_, sample), _| *sample < 4));
        r
    };
    let c = compare(&noisy(1.0), &noisy(1.15), "a", "b");
    assert!(c.controls.iter().all(|c| !c.significant && (c.drift - 0.15).abs() < 1e-9), "{:?}", c.controls);
    assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.figures);
    let first = typed(&c)[0];
    assert!(
        matches!(first, ChangeFinding::ControlMoved { control, refused: false, .. } if !control.significant),
        "{first:?}"
    );
}

#[test]
fn controls_that_disagree_refuse_the_verdict() {
    // SQLite alone 2% slower, the bare boundary 14% slower: no one
    // share describes how the machine moved.
    let mut b = run(1.02, 0.0, 0.0);
    b.lanes.insert("floor".to_owned(), run(1.14, 0.0, 0.0).lanes["floor"].clone());
    let c = compare(&run(1.0, 0.0, 0.0), &b, "a", "b");
    assert_eq!(c.verdict, Verdict::DriftSuspected, "{:#?}", c.findings);
    assert!(typed(&c).iter().any(|f| matches!(f, ChangeFinding::ControlsApart { .. })), "{:#?}", c.findings);
    assert!(c.figures.iter().all(|f| matches!(f.call, Call::Drift | Call::NoChange)), "{:#?}", c.figures);
}

#[test]
fn a_drift_is_refused_or_not_the_same_from_either_end() {
    // 22% faster one way is 28% slower the other: past the 25% both ways.
    let (a, b) = (run(1.0, 0.0, 0.0), run(0.78, 0.0, 0.0));
    assert_eq!(compare(&a, &b, "a", "b").verdict, Verdict::DriftSuspected);
    assert_eq!(compare(&b, &a, "b", "a").verdict, Verdict::DriftSuspected);
    // 18% faster is 22% slower: within it both ways, and a real change
    // on top reads as opposite calls.
    let (a, b) = (run(1.0, 0.0, 0.0), run(0.82, 8.0, 0.0));
    assert_eq!(compare(&a, &b, "a", "b").verdict, Verdict::Regression);
    assert_eq!(compare(&b, &a, "b", "a").verdict, Verdict::Improvement);
}

/// `run` whose subject's wake slice (and, when `floor_too`, the floor's
/// same slice) takes `share` longer, its lanes as they were.
fn wake_moved(share: f64, floor_too: bool) -> RunSamples {
    let mut r = run(1.0, 0.0, 0.0);
    let scale = |v: &mut Vec<f64>| v.iter_mut().for_each(|x| *x *= 1.0 + share);
    scale(&mut r.slices[1].1);
    if floor_too {
        r.floor_slices.values_mut().for_each(scale);
    }
    r
}

#[test]
fn a_slice_that_moved_with_the_floors_same_slice_is_drift() {
    // Unchanged reruns: the reply's wake moved +17% in both lanes while
    // the lanes as a whole moved a few percent.
    let c = compare(&run(1.0, 0.0, 0.0), &wake_moved(0.17, true), "a", "b");
    let wake = c.figures.iter().find(|f| f.name == "sent→woke").expect("the wake slice");
    assert_eq!((wake.call, wake.control.as_deref()), (Call::Drift, Some("floor-probed: sent→woke")), "{wake:?}");
    assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.findings);
    let drift = moved(&c, "sent→woke", Call::Drift).expect("the wake slice's drift is a finding");
    assert_eq!(drift.control.as_deref(), Some("floor-probed: sent→woke"));
    // The same move in the subject alone is the subject's.
    let c = compare(&run(1.0, 0.0, 0.0), &wake_moved(0.17, false), "a", "b");
    let wake = c.figures.iter().find(|f| f.name == "sent→woke").expect("the wake slice");
    assert_eq!(wake.call, Call::Slower, "{wake:?}");
    assert_eq!(c.verdict, Verdict::Regression);
}

/// A run of one subject lane (a user's program, no baseline or floor):
/// its blocks around `us`, and one slice.
fn lone_subject(us: f64) -> RunSamples {
    let blocks = (0..40).map(|i| ((i / 20, i % 20), us * (1.0 + 0.01 * f64::from(i % 5)))).collect();
    RunSamples {
        lanes: BTreeMap::from([("ingest".to_owned(), blocks)]),
        subjects: vec!["ingest".into()],
        runs: BTreeMap::from([("ingest".to_owned(), LaneRun { lane: "ingest".into(), probed: true, callers: 8 })]),
        slices: vec![("queued→drained".into(), (0..40).map(|i| 3.0 + 0.01 * f64::from(i % 3)).collect())],
        slices_lane: Some("ingest".into()),
        ..RunSamples::default()
    }
}

#[test]
fn a_run_of_one_subject_lane_is_judged_on_it_and_says_so() {
    // A user's batching service: 22 µs per event before, 10 after. With
    // no baseline there is no lane arithmetic; the subject still gates.
    let c = compare(&lone_subject(22.0), &lone_subject(10.0), "live-txn1", "live60");
    assert_eq!(c.verdict, Verdict::Improvement, "{:#?}", c.figures);
    assert_eq!(c.decided_by.as_deref(), Some("ingest"));
    let judged = c.judged.as_ref().expect("what it judged");
    assert_eq!(judged.lanes, [LaneRun { lane: "ingest".into(), probed: true, callers: 8 }]);
    assert_eq!(judged.figure, crate::ab::FigureKind::WallPerOp);
    assert_eq!((judged.slices_of.as_deref(), judged.slices), (Some("ingest"), 1));
    let lane = c.figures.iter().find(|f| f.name == "ingest").expect("the lane");
    assert!(lane.gated && lane.call == Call::Faster, "{lane:?}");
    // Its slices are compared too.
    assert!(c.figures.iter().any(|f| f.kind == FigureKind::Slice && f.name == "queued→drained"));
    // Unchanged, it is no change, decided by nothing.
    let same = compare(&lone_subject(22.0), &lone_subject(22.0), "a", "b");
    assert_eq!((same.verdict, same.decided_by), (Verdict::NoChange, None));
}

#[test]
fn a_lane_probed_in_one_run_and_clean_in_the_other_is_said() {
    let mut clean = lone_subject(22.0);
    clean.runs.get_mut("ingest").expect("ran").probed = false;
    let c = compare(&clean, &lone_subject(22.0), "a", "b");
    let said = typed(&c).into_iter().find_map(|f| match f {
        ChangeFinding::LaneRanDifferently { a, b } => Some((a.probed, b.probed)),
        _ => None,
    });
    assert_eq!(said, Some((false, true)), "{:#?}", c.findings);
    let same = compare(&lone_subject(22.0), &lone_subject(22.0), "a", "b");
    assert!(!typed(&same).iter().any(|f| matches!(f, ChangeFinding::LaneRanDifferently { .. })));
}

#[test]
fn a_subject_only_one_build_of_which_both_runs_ran_is_the_one_judged() {
    // Run B ran the probed build alone (a `--lanes` subset): the clean
    // build cannot be compared, the probed one is, and gates.
    let mut b = run(1.0, 3.0, 0.0);
    b.lanes.insert("writer-probed".to_owned(), b.lanes["writer"].clone());
    b.lanes.remove("writer");
    let mut a = run(1.0, 0.0, 0.0);
    a.lanes.insert("writer-probed".to_owned(), a.lanes["writer"].clone());
    let c = compare(&a, &b, "a", "b");
    let probed = c.figures.iter().find(|f| f.name == "writer-probed").expect("compared");
    assert!(probed.gated && probed.call == Call::Slower, "{probed:?}");
    assert_eq!(c.verdict, Verdict::Regression);
}

/// A batching lane whose statement slice and the wait after it grew by
/// `own` and `wait` µs, batching `batch` operations per interval.
fn batching(own: f64, wait: f64, batch: f64) -> RunSamples {
    let mut run = lone_subject(22.0);
    let blocks = |base: f64| (0..40).map(|i| base * (1.0 + 0.01 * f64::from(i % 3))).collect::<Vec<f64>>();
    run.slices =
        vec![("matching→executed".into(), blocks(1.0 + own)), ("executed→txn_close".into(), blocks(2.0 + wait))];
    run.slice_sharing = BTreeMap::from([
        ("matching→executed".to_owned(), crate::join::Sharing::Own),
        ("executed→txn_close".to_owned(), crate::join::Sharing::Siblings),
    ]);
    run.batch_means = BTreeMap::from([("ingest".to_owned(), batch)]);
    run
}

#[test]
fn a_statement_that_grew_decides_before_the_wait_on_the_batch_it_also_grew() {
    // A user's 240 ns in the statement: the wait after it, on the batch's
    // others, grew 340 ns. The lane held; the statement is what changed.
    let c = compare(&batching(0.0, 0.0, 3.2), &batching(0.24, 0.34, 3.2), "a", "b");
    assert_eq!(c.verdict, Verdict::Regression);
    assert_eq!(c.decided_by.as_deref(), Some("matching→executed"), "{:#?}", c.figures);
    assert!(moved(&c, "executed→txn_close", Call::Slower).is_some(), "the wait is still reported");
    assert!(!typed(&c).iter().any(|f| matches!(f, ChangeFinding::BatchesMoved { .. })), "3.2 against 3.2");
}

#[test]
fn batches_that_moved_and_slices_marked_another_way_are_said() {
    let c = compare(&batching(0.0, 0.0, 3.2), &batching(0.0, 0.0, 1.0), "m32", "m1");
    let batches = typed(&c).into_iter().find_map(|f| match f {
        ChangeFinding::BatchesMoved { lane, a, b } => Some((lane.clone(), *a, *b)),
        _ => None,
    });
    assert_eq!(batches, Some(("ingest".into(), 3.2, 1.0)));
    // Spans against direct marks: every slice named apart.
    let mut spans = batching(0.0, 0.0, 3.2);
    spans.slices = vec![("submit.enter→reply.exit".into(), vec![1.0; 40])];
    let c = compare(&batching(0.0, 0.0, 3.2), &spans, "marks", "spans");
    assert!(typed(&c).iter().any(|f| matches!(f, ChangeFinding::SlicesApart { a: 2, b: 1 })), "{:#?}", c.findings);
    assert!(c.figures.iter().all(|f| f.kind != FigureKind::Slice));
    let same = compare(&batching(0.0, 0.0, 3.2), &batching(0.0, 0.0, 3.2), "a", "b");
    assert!(!typed(&same).iter().any(|f| matches!(f, ChangeFinding::SlicesApart { .. })));
}
