//! A writer thread the user's opener starts with plain `std::thread::spawn`
//! (no `ThreadInit::enter`) runs where the run's placement puts a lane's own
//! thread, not on the caller's core it would otherwise inherit.

use std::sync::mpsc;

use hopscope_harness::placement::{Affinity, Placement, allowed_cpus};
use hopscope_harness::{BoxError, Harness, Lane, Plan};

/// The CPUs a thread spawned by the lane's opener may run on, for a run
/// under `placement`.
fn writer_cpus(placement: Placement) -> Vec<usize> {
    let dir = std::env::temp_dir().join(format!("hopscope-placement-{}-{placement}", std::process::id()));
    let (report, seen) = mpsc::channel::<Vec<usize>>();
    let inline = Lane::baseline("inline", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(()));
    let writer = Lane::subject(
        "own-writer",
        move |_s| {
            let report = report.clone();
            let thread = std::thread::Builder::new()
                .name("own-writer".into())
                .spawn(move || {
                    let cpus = Affinity::current().map(|a| a.cpus()).unwrap_or_default();
                    let _ = report.send(cpus);
                })
                .map_err(BoxError::from)?;
            thread.join().map_err(|_| BoxError::from("writer thread panicked"))?;
            Ok::<_, BoxError>(())
        },
        |_: &mut (), _op| Ok::<_, BoxError>(()),
    );
    let plan = Plan { ops_per_block: 10, samples: 2, passes: 1, warmup_blocks: 0, placement, ..Plan::quick() };
    Harness::new("placement").plan(plan).out(&dir).quiet().lane(inline).lane(writer).run().expect("run");
    let _ = std::fs::remove_dir_all(&dir);
    seen.try_recv().expect("the opener's thread reported its CPUs")
}

#[test]
fn a_thread_started_by_the_opener_runs_where_the_lane_s_own_threads_do() {
    let _turn = crate::common::serial();
    let allowed = allowed_cpus().to_vec();
    assert_eq!(writer_cpus(Placement::SameCore), [allowed[0]], "same-core: the callers' core");
    assert_eq!(writer_cpus(Placement::Unpinned), allowed, "unpinned: free, not the callers' pin");
    if allowed.len() >= 2 {
        assert_eq!(writer_cpus(Placement::DifferentCores), [allowed[1]], "different-cores: the other core");
    }
}
