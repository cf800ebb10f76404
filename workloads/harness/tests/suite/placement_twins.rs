//! `--placement same-core,unpinned`: every program lane runs again under
//! the second placement, side by side in the same rounds, as a twin that
//! really runs there; the references run once; the decomposition sets
//! each twin beside its lane and the receipt says what placement changed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hopscope_harness::placement::{Affinity, Placement, allowed_cpus};
use hopscope_harness::{BoxError, Harness, Lane, Plan, RunArgs};

type Seen = Arc<Mutex<BTreeMap<String, (Placement, Vec<usize>)>>>;

/// A subject whose opener starts a thread of its own and records, under
/// the lane's name, the placement the lane was opened with and the CPUs
/// that thread may use.
fn writer(seen: Seen) -> impl Into<Lane> {
    Lane::subject(
        "writer",
        move |setup| {
            let seen = seen.clone();
            let (lane, placement) = (setup.lane().to_owned(), setup.placement());
            let thread = std::thread::spawn(move || Affinity::current().map(|a| a.cpus()).unwrap_or_default());
            let cpus = thread.join().map_err(|_| BoxError::from("thread panicked"))?;
            seen.lock().map_err(|_| "poisoned")?.insert(lane, (placement, cpus));
            Ok::<_, BoxError>(())
        },
        |_: &mut (), _op| {
            std::hint::black_box((0..200u64).sum::<u64>());
            Ok::<_, BoxError>(())
        },
    )
}

#[test]
fn each_program_lane_runs_again_under_the_second_placement_beside_itself() {
    let _turn = crate::common::serial();
    let dir = std::env::temp_dir().join(format!("hopscope-twins-{}", std::process::id()));
    let seen: Seen = Arc::default();
    let inline = Lane::baseline("inline", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(()));
    let args = RunArgs { placement: vec![Placement::SameCore, Placement::Unpinned], ..RunArgs::default() };
    let plan = Plan { ops_per_block: 20, samples: 4, passes: 2, warmup_blocks: 0, ..Plan::quick() };
    let outcome = Harness::with_args("twins", args)
        .plan(plan)
        .out(&dir)
        .quiet()
        .lane(inline)
        .lane(writer(seen.clone()))
        .run()
        .expect("run");
    let d = outcome.decomposition.as_ref().expect("decomposition");

    let names: Vec<&str> = d.lane_order.iter().map(String::as_str).collect();
    assert!(names.contains(&"unpinned/writer"), "the subject's twin ran: {names:?}");
    assert!(!names.iter().any(|n| n.ends_with("/inline")), "the reference runs once: {names:?}");
    let seen = seen.lock().expect("seen").clone();
    let allowed = allowed_cpus().to_vec();
    assert_eq!(seen.get("writer").map(|s| s.0), Some(Placement::SameCore));
    assert_eq!(seen.get("unpinned/writer"), Some(&(Placement::Unpinned, allowed)), "the twin runs unpinned");
    assert_eq!(d.lanes["writer"].blocks, d.lanes["unpinned/writer"].blocks, "side by side: every round has both");

    let p = d.placements.as_ref().expect("the twins beside their lanes");
    assert_eq!(p.first, "same-core");
    let twin = p.twins.iter().find(|t| t.lanes[1] == "unpinned/writer").expect("the twin");
    assert_eq!(twin.lanes[0], "writer");
    assert_eq!(twin.placements, ["same-core".to_owned(), "unpinned".to_owned()]);
    assert_eq!(twin.difference.map(|d| d.rounds), Some(8), "paired in every round");
    // The lane arithmetic keeps one subject: the twin is no role's lane.
    assert_eq!(d.role_lane(hopscope_harness::Role::Subject), Some("writer"));

    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("## Placement"), "{receipt}");
    assert!(receipt.contains("| `unpinned/writer` | unpinned |"), "{receipt}");
    assert!(
        receipt.contains("Placement changed `writer`")
            || receipt.contains("No change from placement shown for `writer`")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_placements_are_refused_where_a_run_judges_one() {
    let _turn = crate::common::serial();
    for (extra, flag) in [(["--baseline", "main"], "--baseline"), (["--save-baseline", "main"], "--save-baseline")] {
        let args = ["prog", "--placement", "same-core,unpinned", extra[0], extra[1]];
        let err = Harness::from_args_of("twins", args).run().expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("--placement") && text.contains(flag), "{text}");
    }
    let err = Harness::from_args_of("twins", ["prog", "--placement", "unpinned,unpinned"]).run().expect_err("refused");
    assert!(err.to_string().contains("unpinned is named twice"), "{err}");
}
