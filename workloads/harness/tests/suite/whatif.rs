//! `--what-if` on a harness program, as a user runs it: a probed lane's
//! slices are each sped up and slowed down, and the profile's files are
//! written; flags that cannot be carried out are refused in one line.
//! What the profile says is measured (`cargo bench -p hopscope-harness
//! --bench whatif_truth`), not asserted here.

use crate::common;

use common::busy;
use hopscope_harness::{BoxError, Harness, HarnessError, Lane};
use hopscope_probe::{Hop, hop};

/// A lane of one thread whose two slices busy-wait, probed only.
fn lane() -> Lane {
    let lane: Lane = Lane::subject(
        "busy",
        |_s| Ok::<_, BoxError>(()),
        |_: &mut (), op| {
            let id = op.id();
            hop!(id, Hop::ENTER);
            busy(2_000);
            hop!(id, Hop::BUILT);
            busy(1_000);
            hop!(id, Hop::DONE);
            Ok::<_, BoxError>(())
        },
    )
    .into();
    lane.probed_only()
}

fn run(args: &[&str], dir: &std::path::Path) -> Result<hopscope_harness::Outcome, HarnessError> {
    let mut argv = vec!["prog", "--out", dir.to_str().expect("utf-8 path")];
    argv.extend_from_slice(args);
    Harness::try_from_args("whatif-test", argv).expect("flags parse").quiet().progress(false).lane(lane()).run()
}

#[test]
fn a_what_if_run_profiles_every_slice_and_writes_its_files() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-whatif-{}", std::process::id()));
    let outcome = run(&["--what-if", "--quick", "--rounds", "6", "--slowdowns", "25"], &dir).expect("what-if runs");
    let profile = outcome.causal.expect("a profile");
    assert_eq!(profile.lane, "busy-probed");
    assert_eq!(profile.rounds, 6);
    let mut names: Vec<&str> = profile.slices.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["built→done", "enter→built"]);
    for s in &profile.slices {
        let changes: Vec<f64> = s.points.iter().map(|p| p.change_pct).collect();
        assert_eq!(changes, [-25.0, 25.0, 50.0], "{}", s.name);
        assert!(s.points.iter().all(|p| p.virtual_speedup == (p.change_pct > 0.0)));
    }
    for file in ["causal.json", "receipt.md", "report.html", "causal.png", "samples.json"] {
        assert!(dir.join(file).is_file(), "{file} written");
    }
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("`enter→built`") && receipt.starts_with("# hopscope what-if: `busy-probed`"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_if_flags_that_cannot_be_carried_out_are_refused_naming_them() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-whatif-refused-{}", std::process::id()));
    let err = |args: &[&str]| run(args, &dir).expect_err("refused").to_string();
    assert!(err(&["--speedups", "10"]).starts_with("--speedups: sizes a what-if run"));
    let unknown = err(&["--what-if", "--quick", "--what-if-slices", "nowhere"]);
    assert!(
        unknown.starts_with("--what-if-slices: no slice `nowhere`") && unknown.contains("enter→built"),
        "{unknown}"
    );
    // The refused run wrote no profile, so `latest-what-if` does not name it.
    let link = std::fs::canonicalize(hopscope_harness::rundir::runs_dir().join("latest-what-if")).ok();
    assert_ne!(link, std::fs::canonicalize(&dir).ok(), "latest-what-if names a refused run");
    // A slice named with an ASCII arrow is the slice.
    let named =
        run(&["--what-if", "--quick", "--rounds", "5", "--what-if-slices", "enter->built"], &dir).expect("runs");
    let names: Vec<String> = named.causal.expect("profile").slices.into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["enter→built"]);
    assert!(err(&["--what-if", "--speedups", "150"]).contains("at most 100"));
    assert!(err(&["--what-if", "--rounds", "2"]).contains("2 rounds"));
    assert!(err(&["--what-if=elsewhere"]).contains("no lane `elsewhere`"));
    // A flag a what-if run cannot honour is refused, not ignored, before
    // anything is read or run.
    let beside = err(&["--what-if", "--ab", "/nonexistent/spec.toml"]);
    assert!(beside.starts_with("--ab: not with --what-if"), "{beside}");
    assert!(err(&["--what-if", "--save-baseline", "x"]).starts_with("--save-baseline: not with --what-if"));
    // A probed-only lane is named as declared, with the name it runs as.
    assert_eq!(err(&["--lanes", "nope"]), "--lanes: no lane `nope` (declared: busy (runs as busy-probed))");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that only adds a hop of its own gives its table with
/// `Harness::hops` and keeps the careful and `--quick` sizes (a plan of
/// its own had replaced them, so `--quick` ran careful).
#[test]
fn a_program_with_a_hop_of_its_own_keeps_quick() {
    let _turn = crate::common::serial();
    use hopscope_probe::{HopTable, Side};
    let mut table = HopTable::standard();
    let checked = table.add("checked", Side::Caller);
    let lane: Lane = Lane::subject(
        "checks",
        |_s| Ok::<_, BoxError>(()),
        move |_: &mut (), op| {
            let id = op.id();
            hop!(id, Hop::ENTER);
            busy(1_000);
            hop!(id, checked);
            busy(500);
            hop!(id, Hop::DONE);
            Ok::<_, BoxError>(())
        },
    )
    .into();
    let dir = std::env::temp_dir().join(format!("hopscope-own-hop-{}", std::process::id()));
    let argv = ["prog", "--quick", "--ops", "20", "--out", dir.to_str().expect("utf-8 path")];
    let outcome = Harness::try_from_args("own-hop", argv)
        .expect("flags parse")
        .quiet()
        .progress(false)
        .hops(table)
        .lane(lane.probed_only())
        .run()
        .expect("runs");
    let d = outcome.decomposition.expect("a decomposition");
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["enter→checked", "checked→done"]);
    let quick = hopscope_harness::Plan::quick();
    assert_eq!(d.lanes["checks-probed"].blocks_us.len(), (quick.samples * quick.passes) as usize, "--quick's sizes");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A batching writer (common::batch_writer): four callers pipelining eight
/// requests each, exactly eight per transaction.
fn batched_lane() -> Lane {
    use common::batch_writer::{BatchWriter, Steps};
    let steps = Steps { build: 200, begin: 500, statement: 1_000, commit: 4_000 };
    Lane::new(hopscope_harness::Role::Subject, "batched", move |s| {
        Ok::<_, BoxError>(BatchWriter::spawn(s, steps, 8, 4, 8))
    })
    .threads(&["writer"])
    .callers(4)
    .probed_only()
}

#[test]
fn a_shared_interval_is_sped_up_once_per_interval_and_a_wait_on_siblings_is_refused() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-whatif-batched-{}", std::process::id()));
    let run = |args: &[&str]| {
        // 512 operations a block: 128 per caller, whole windows of eight.
        let mut argv = vec!["prog", "--out", dir.to_str().expect("utf-8 path"), "--ops", "512"];
        argv.extend_from_slice(args);
        Harness::try_from_args("whatif-batched", argv)
            .expect("flags parse")
            .hops(common::batch_writer::hops())
            .quiet()
            .progress(false)
            .lane(batched_lane())
            .run()
    };
    let slices = "commit→committed,executing→executed";
    let outcome = run(&["--what-if", "--quick", "--rounds", "5", "--what-if-slices", slices]).expect("runs");
    let profile = outcome.causal.expect("profile");
    let point = |name: &str| {
        let s = profile.slices.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name} profiled"));
        s.points.iter().find(|p| p.change_pct == 25.0).cloned().expect("25 %")
    };
    // The COMMIT's end passes once per eight requests (to the clock's
    // tick, which the change is rounded to): an eighth of its
    // change is taken off each; a request's own statement passes once each.
    let commit = point("commit→committed");
    assert!((commit.taken_ns * 8.0 - commit.change_ns).abs() < 1e-3 * commit.change_ns, "{commit:?}");
    let statement = point("executing→executed");
    assert!((statement.taken_ns - statement.change_ns).abs() < 1e-3 * statement.change_ns, "{statement:?}");
    // A wait on the batch's other requests is theirs to make faster.
    let err = run(&["--what-if", "--quick", "--what-if-slices", "began→executing"]).expect_err("refused").to_string();
    assert!(err.contains("a wait on the batch's other operations") && err.contains("executing→executed"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
