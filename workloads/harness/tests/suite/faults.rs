//! Bad user code: a lane that panics, returns an error, reports more than it
//! did, blocks past its deadline, or misses a hand-in. Each stops the run
//! with one line naming the lane and the block; every block measured before
//! is kept in a complete trace that reads back and analyzes.

use std::path::PathBuf;
use std::time::Duration;

use hopscope_harness::{BoxError, Harness, HarnessError, Lane, Outcome, Plan, RunError};
use hopscope_probe::Trace;

/// Operations per block in these runs.
const OPS: u64 = 10;

/// The operation (counted per lane instance, warm-up included) at which a
/// faulty lane misbehaves: in its third measured block (one warm-up block
/// of 10 ops, then two good measured blocks).
const FAULT_AT: u64 = 3 * OPS + 4;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-harness-faults-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn plan() -> Plan {
    Plan {
        ops_per_block: OPS,
        samples: 6,
        passes: 1,
        warmup_blocks: 1,
        block_deadline: Duration::from_secs(2),
        ..Plan::quick()
    }
}

/// A baseline that always works, beside `faulty`.
fn run(name: &str, faulty: impl Into<Lane>) -> Result<Outcome, HarnessError> {
    let good = Lane::baseline(
        "good",
        |_s| Ok::<_, BoxError>(0u64),
        |n: &mut u64, _op| {
            *n += 1;
            Ok::<_, BoxError>(())
        },
    );
    Harness::new(name).plan(plan()).out(&temp_dir(name)).quiet().lane(good).lane(faulty).run()
}

/// A subject that counts its operations and calls `fault` on each.
fn faulty<R: hopscope_harness::Reported + 'static>(
    fault: impl Fn(u64) -> Result<R, BoxError> + Send + Sync + 'static,
) -> hopscope_harness::ClosureLane<u64> {
    Lane::subject(
        "bad",
        |_s| Ok::<_, BoxError>(0u64),
        move |n: &mut u64, _op| {
            *n += 1;
            fault(*n)
        },
    )
}

/// The stopped run's line names the lane and the block and says `what`;
/// the trace keeps the blocks before it and analyzes.
fn check_stopped(outcome: &Outcome, what: &str) {
    let line = outcome.stopped.as_deref().expect("the run stopped");
    assert!(line.starts_with("lane `bad`, block pass 0, sample "), "{line}");
    assert!(line.contains(what), "`{what}` not in: {line}");
    assert!(!line.contains('\n'), "not one line: {line:?}");
    assert_eq!(outcome.exit_code(), std::process::ExitCode::FAILURE);
    let trace = Trace::read(&outcome.trace).expect("the kept trace reads back");
    assert!(trace.blocks.len() >= 4, "only {} blocks kept", trace.blocks.len());
    let d = outcome.decomposition.as_ref().expect("what was measured is analyzed");
    let warnings = hopscope_reports::receipt::warnings(d);
    assert!(warnings[0].starts_with("partial: ") && warnings[0].contains("the run stopped"), "{warnings:?}");
    let partial = d.partial.as_ref().expect("the result says it is partial");
    assert_eq!(partial.blocks_kept, trace.blocks.len() as u64);
    assert!(d.lanes["bad"].us_per_op.is_some() && d.lanes["good"].us_per_op.is_some());
    assert!(outcome.written.get("receipt").is_some_and(|p| p.exists()));
    let again = hopscope_analyze::decompose(&trace).expect("the kept trace analyzes again");
    assert_eq!(again.lanes["bad"].blocks, d.lanes["bad"].blocks);
}

#[test]
fn a_lane_that_panics_stops_the_run_with_its_message_and_place() {
    let _turn = crate::common::serial();
    let outcome = run(
        "panic",
        faulty(|n| {
            if n == FAULT_AT {
                panic!("the writer exploded at op {n}");
            }
            Ok(())
        }),
    )
    .expect("a stopped run still has an outcome");
    check_stopped(&outcome, "panicked: the writer exploded at op 34 (at ");
    assert!(outcome.stopped.as_deref().is_some_and(|l| l.contains("faults.rs")));
}

#[test]
fn a_lane_that_returns_an_error_stops_the_run_with_that_error() {
    let _turn = crate::common::serial();
    let outcome = run("error", faulty(|n| if n == FAULT_AT { Err(BoxError::from("disk on fire")) } else { Ok(()) }))
        .expect("outcome");
    check_stopped(&outcome, "returned an error: disk on fire");
}

#[test]
fn a_lane_that_reports_more_than_it_did_is_caught_by_its_count() {
    let _turn = crate::common::serial();
    // Rows "written" go into the state; the operation reports two per op
    // from FAULT_AT on, but writes one.
    let lane = Lane::subject(
        "bad",
        |_s| Ok::<_, BoxError>((0u64, 0u64)),
        |state: &mut (u64, u64), _op| {
            state.0 += 1;
            state.1 += 1;
            Ok::<_, BoxError>(if state.0 >= FAULT_AT { 2u64 } else { 1u64 })
        },
    )
    .reset(|state| {
        state.1 = 0;
        Ok::<_, BoxError>(())
    })
    .count(|state| Ok::<_, BoxError>(state.1));
    let outcome = run("overreport", lane).expect("outcome");
    check_stopped(&outcome, "its operations reported 17 done, but its count says 10");
}

#[test]
fn a_lane_whose_operations_break_their_declared_report_is_stopped() {
    let _turn = crate::common::serial();
    let lane = faulty(|n| Ok::<u64, BoxError>(if n >= FAULT_AT { 0 } else { 1 })).per_op(1);
    let outcome = run("per-op", lane).expect("outcome");
    check_stopped(&outcome, "its 10 operations reported 3 done, where they do 10");
}

#[test]
fn a_lane_that_blocks_is_stopped_at_its_deadline_and_left_behind() {
    let _turn = crate::common::serial();
    let started = std::time::Instant::now();
    let outcome = run(
        "deadline",
        faulty(|n| {
            if n == FAULT_AT {
                loop {
                    std::thread::park();
                }
            }
            Ok(())
        }),
    )
    .expect("outcome");
    check_stopped(&outcome, "did not finish within the 2-second deadline");
    assert!(started.elapsed() < Duration::from_secs(30), "the run waited for the blocked lane");
}

#[test]
fn a_lane_that_fails_to_open_is_refused_before_anything_is_measured() {
    let _turn = crate::common::serial();
    let lane = Lane::subject(
        "bad",
        |_s| Err::<u64, _>(BoxError::from("no such database")),
        |_n: &mut u64, _op| Ok::<_, BoxError>(()),
    );
    let err = run("open", lane).expect_err("nothing to measure");
    let HarnessError::Run(RunError::Open { lane, .. }) = &err else { panic!("wrong error: {err}") };
    assert_eq!(lane, "bad");
    assert_eq!(err.to_string(), "lane `bad` could not open: returned an error: no such database");
}

#[test]
fn a_declared_thread_that_never_hands_in_is_named() {
    let _turn = crate::common::serial();
    let lane = faulty(|_| Ok(())).threads(&["flusher"]);
    let outcome = run("hand-in", lane).expect("outcome");
    // It fails in its first (warm-up) block: nothing measured, nothing kept.
    let line = outcome.stopped.as_deref().expect("stopped");
    assert!(line.contains("lane `bad`, warm-up block 0 (hand-in)"), "{line}");
    assert!(line.contains("did not collect thread role(s) flusher"), "{line}");
    assert!(outcome.decomposition.is_none());
    assert_eq!(Trace::read(&outcome.trace).expect("an empty, complete trace").blocks.len(), 0);
}

#[test]
fn bad_declarations_are_refused_in_one_line_naming_the_lane() {
    let _turn = crate::common::serial();
    for (lane, what) in [
        (Lane::from(faulty(|_| Ok(()))).renamed("has space"), "lane name `has space`"),
        (Lane::from(faulty(|_| Ok(()))).threads(&["caller"]), "reserved"),
        (Lane::from(faulty(|_| Ok(()))).callers(0), "0 callers"),
        (Lane::from(faulty(|_| Ok(()))).callers(4), "4 callers on a lane made of closures over one state"),
        (Lane::from(faulty(|_| Ok(()))).renamed("good"), "`good` is used twice"),
    ] {
        let err = run("declarations", lane).expect_err("refused").to_string();
        assert!(err.contains(what), "`{what}` not in: {err}");
        assert!(!err.contains('\n'));
    }
}

/// A bad flag value is the user's, not the code's: `Harness::run` says so
/// with [`HarnessError::Flag`] (a harness program's `main` exits 2 on it, as
/// for clap's own refusals) before any directory is made.
#[test]
fn a_bad_flag_value_is_a_usage_error_before_anything_is_made() {
    let _turn = crate::common::serial();
    let out = temp_dir("bad-flag");
    let out_arg = out.to_str().expect("utf-8 path");
    let lane = || Lane::baseline("good", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(()));
    for (flags, says) in
        [(&["--lanes", "nope"][..], "--lanes: no lane `nope` (declared: good)"), (&["--ops", "0"], "--ops")]
    {
        let args = ["program", "--out", out_arg].into_iter().chain(flags.iter().copied());
        let harness = Harness::try_from_args("flags", args).expect("clap parses it").quiet().lane(lane());
        match harness.run() {
            Err(HarnessError::Flag(text)) => assert!(text.contains(says), "{text}"),
            other => panic!("{flags:?}: {:?}", other.map(|o| o.dir)),
        }
        assert!(!out.exists(), "{flags:?} made the run directory");
    }
}
