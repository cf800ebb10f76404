//! The plainest user writer (std mpsc, a condvar slot per request, two
//! spans) through the harness as a new user declares it: what its receipt
//! says must be true of *this* program — its SQLite slice is SQLite's, it
//! claims no closed cycles, the time its spans do not cover is shown, its
//! peer is compared like with like — and a floor that cannot stand for the
//! boundary gets no library figure.

#![cfg(feature = "hopscope")]

use std::path::PathBuf;

use hopscope_harness::{BoxError, Harness, Lane, Plan};
use hopscope_probe::{HopLayer, Owner};
use kv_writer::decompose::{self, Opened};

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-kv-writer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A small plan that still gives every figure a CI.
fn harness(name: &str) -> (Harness, PathBuf) {
    let out = dir(name);
    let plan = Plan { ops_per_block: 40, samples: 6, passes: 2, warmup_blocks: 1, ..Plan::quick() };
    (Harness::new("kv-writer").plan(plan).out(&out).quiet(), out)
}

#[test]
fn the_users_writer_is_decomposed_as_its_declarations_say() {
    let (harness, out) = harness("full");
    let outcome = decompose::lanes(harness).run().expect("the store runs");
    let d = outcome.decomposition.expect("decomposition");
    assert_eq!(d.insitu_lane.as_deref(), Some("kv-writer-probed"));
    let owners: Vec<(&str, Owner)> = d.slices.iter().map(|s| (s.name.as_str(), s.owner)).collect();
    assert_eq!(
        owners,
        [
            ("insert.enter→execute.enter", Owner::Boundary),
            ("execute.enter→execute.exit", Owner::Sqlite),
            ("execute.exit→insert.exit", Owner::Boundary),
        ],
        "the span declared `database` is SQLite's"
    );
    // The spans close no cycle: the time outside them is stated, and the
    // shares are of the whole operation.
    let coverage = d.coverage.as_ref().expect("coverage");
    assert!(!coverage.closed);
    for s in &d.slices {
        let mean = s.mean_us.expect("mean");
        assert!((s.share - mean / coverage.op_mean_us).abs() < 1e-9, "{}: a share of the whole operation", s.name);
    }
    let shares: f64 = d.slices.iter().filter(|s| s.on_path).map(|s| s.share).sum::<f64>() + coverage.between_share;
    assert!((shares - 1.0).abs() < 0.05, "the slices and the time between marks make the whole: {shares}");
    let receipt = std::fs::read_to_string(out.join("receipt.md")).expect("receipt");
    assert!(receipt.starts_with("# hopscope receipt: kv-writer\n"), "titled by the program");
    assert!(!receipt.contains("close each thread's cycle (`idle`, `returned`)"), "no closed-cycle claim:\n{receipt}");
    assert!(receipt.contains("| *between marks* |"), "{receipt}");
    assert!(receipt.contains("These marks do not close each thread's cycle"), "{receipt}");
    assert!(!receipt.contains("reference writer"), "no sentence written for hopscope's own writer:\n{receipt}");
    if d.crosscheck.is_some() {
        // No slice of the subject's own code: no claim of an indirect cost.
        assert!(receipt.contains("Neither lane's marks give the subject's own code a slice of its own"), "{receipt}");
        assert!(!receipt.contains("larger footprint"), "{receipt}");
    }
    // The peer, clean and probed, against the subject's build of its kind.
    let c = d.comparison.as_ref().expect("peers compared");
    let pairs: Vec<(&str, Option<&str>)> = c.rows.iter().map(|r| (r.lane.as_str(), r.versus.as_deref())).collect();
    assert_eq!(
        pairs,
        [
            ("kv-writer", None),
            ("kv-writer-probed", None),
            ("crossbeam", Some("kv-writer")),
            ("crossbeam-probed", Some("kv-writer-probed")),
        ]
    );
    assert!(receipt.contains("## `kv-writer` and its peers"), "{receipt}");
    // The observer effect says how much of it the measured machinery explains.
    let o = d.observer_effect.as_ref().expect("observer effect");
    let instrument = o.instrument.as_ref().expect("instrument cost");
    assert_eq!((instrument.spans_per_op, instrument.marks_per_op), (2, 0));
    assert!((instrument.explained_us + instrument.unexplained_us - o.delta_us).abs() < 1e-9);
    assert!(receipt.contains("**explained**"), "{receipt}");
    // What the rest is called follows from the figures: unresolved when Δ's
    // CI includes zero, within it when the measured cost is, else not
    // explained.
    let [low, high] = o.delta_ci95;
    let rest = if low <= 0.0 && 0.0 <= high {
        "**the rest is not resolved**"
    } else if low <= instrument.explained_us && instrument.explained_us <= high {
        "**the rest is within Δ's CI**"
    } else {
        "**not explained by that measurement**"
    };
    assert!(receipt.contains(rest), "{rest}: {receipt}");
    // The trace names the program's own threads, as its timelines show them.
    let trace = hopscope_probe::Trace::read(&out.join("trace.hop")).expect("trace");
    for thread in ["kv-writer", "kv-floor", "kv-crossbeam"] {
        assert!(trace.header.threads.iter().any(|t| t == thread), "{thread}: {:?}", trace.header.threads);
    }
    let page = std::fs::read_to_string(out.join("report.html")).expect("report");
    assert!(page.contains("<title>hopscope report: kv-writer</title>"), "the page is titled by the program");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_floor_without_the_subjects_spans_gets_no_library_figure() {
    let (harness, out) = harness("unmarked-floor");
    let harness =
        harness.lane(decompose::inline()).lane(decompose::floor_clean()).lane(decompose::subject(decompose::layer()));
    let d = harness.run().expect("runs").decomposition.expect("decomposition");
    let derived = d.derived.as_ref().expect("lane arithmetic");
    // Every figure taken against a floor that is not one goes with it, and
    // the headline says the floor was refused, not that there is none.
    assert!(derived.boundary_us.is_none() && derived.library_us.is_none(), "{derived:?}");
    let unprobed =
        |r: &hopscope_analyze::floor::FloorRefusal| matches!(r, hopscope_analyze::floor::FloorRefusal::Unprobed { .. });
    assert!(derived.floor_refused.as_ref().and_then(|r| r.typed()).is_some_and(unprobed), "{derived:?}");
    let headline = hopscope_reports::receipt::headline(&d).expect("headline");
    assert!(headline.contains("the floor lane `floor` cannot be compared"), "{headline}");
    assert!(d.crosscheck.is_none());
    let warnings = hopscope_reports::receipt::warnings(&d);
    assert!(warnings.iter().any(|w| w.contains("`floor` has no probed build")), "{warnings:#?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_floor_slower_than_the_subject_gets_no_library_figure() {
    let (harness, out) = harness("slow-floor");
    // The floor's caller busy 150 µs before each write: it does more than
    // the subject.
    let slow = Lane::floor(
        "floor",
        |s| Ok::<_, BoxError>(Opened { writer: decompose::Floor::open(&s.path("kv.db"))?, db: s.path("kv.db") }),
        |f: &mut Opened<decompose::Floor>, op| {
            let until = std::time::Instant::now() + std::time::Duration::from_micros(150);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            f.writer.insert(op.index() as i64, kv_writer::value(op.index())).map(drop)
        },
    )
    .probed_by_spans(decompose::layer());
    let harness = harness.lane(decompose::inline()).lane(slow).lane(decompose::subject(decompose::layer()));
    let d = harness.run().expect("runs").decomposition.expect("decomposition");
    let derived = d.derived.as_ref().expect("lane arithmetic");
    assert!(derived.library_us.is_none() && derived.boundary_us.is_none(), "{derived:?}");
    assert!(d.crosscheck.is_none());
    let warnings = hopscope_reports::receipt::warnings(&d);
    let warning = warnings.iter().find(|w| w.contains("is slower than the subject")).expect("a warning says why");
    assert!(warning.contains("`floor`") && warning.contains("`kv-writer`"), "{warning}");
    let receipt = hopscope_reports::receipt::markdown(&d);
    assert!(!receipt.contains("writer's own work"), "no library figure in the headline:\n{receipt}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_writer_span_around_the_database_call_is_flagged_with_its_fix() {
    let (harness, out) = harness("writer-span");
    let layer = || HopLayer::new().caller("insert").writer("execute");
    let harness = harness.lane(decompose::inline()).lane(decompose::subject(layer()));
    let d = harness.run().expect("runs").decomposition.expect("decomposition");
    let execute = d.slices.iter().find(|s| s.name == "execute.enter→execute.exit").expect("slice");
    assert_eq!(execute.owner, Owner::Library, "declared the writer's own work, and left so");
    let warnings = hopscope_reports::receipt::warnings(&d);
    let warning = warnings.iter().find(|w| w.contains("execute.enter→execute.exit")).unwrap_or_else(|| {
        panic!(
            "no warning; slice {:.3} µs, inline {:?}: {:#?}",
            execute.median_us, d.lanes["inline"].us_per_op, warnings
        )
    });
    assert!(warning.contains("HopLayer::database(\"execute\")"), "{warning}");
    let _ = std::fs::remove_dir_all(&out);
}
