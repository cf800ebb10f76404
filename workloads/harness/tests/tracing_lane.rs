//! Span lanes: a lane probed by a `HopLayer` runs clean (no span created)
//! and probed in one process; the probed build's spans become marks on the
//! caller and on threads the lane's code spawns itself, with no code of the
//! user's on them, and join into slices named after the spans; the clean
//! build records nothing. A layer inside a dispatcher of the user's own
//! works too, on the threads that run under it.

#![cfg(feature = "tracing")]

use std::sync::Mutex;

use crossbeam_channel::{Sender, bounded, unbounded};
use hopscope_harness::{BoxError, Harness, Lane, Plan, TRACED_ROLE};
use hopscope_probe::{Hop, HopLayer};
use tracing_subscriber::layer::SubscriberExt;

/// The global span switch is one per process: runs in this file take turns.
static ONE_RUN: Mutex<()> = Mutex::new(());

fn plan() -> Plan {
    Plan { ops_per_block: 50, samples: 4, passes: 2, warmup_blocks: 1, ..Plan::quick() }
}

fn inline() -> Lane {
    Lane::baseline("inline", |_s| Ok::<_, BoxError>(()), |_: &mut (), _op| Ok::<_, BoxError>(())).into()
}

/// A writer thread the lane's set-up spawns: the harness never touches it.
struct Writer {
    tx: Sender<(u64, Sender<()>)>,
}

fn spawn_writer() -> Writer {
    let (tx, rx) = unbounded::<(u64, Sender<()>)>();
    std::thread::Builder::new()
        .name("user-writer".into())
        .spawn(move || {
            for (op, reply) in rx {
                tracing::info_span!("serve", op).in_scope(|| {
                    let _ = reply.send(());
                });
            }
        })
        .expect("spawn");
    Writer { tx }
}

#[test]
fn a_span_lane_marks_threads_it_never_touched_and_names_slices_after_the_spans() {
    let _one = ONE_RUN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let layer = HopLayer::new().caller("write").writer("serve");
    let lane = Lane::subject(
        "spans",
        |_s| Ok::<_, BoxError>(spawn_writer()),
        |w: &mut Writer, op| {
            let _write = tracing::info_span!("write", op = op.index()).entered();
            let (reply, done) = bounded(1);
            w.tx.send((op.index(), reply))?;
            done.recv()?;
            Ok::<_, BoxError>(())
        },
    )
    .probed_by_spans(layer);
    let dir = std::env::temp_dir().join(format!("hopscope-span-lane-{}", std::process::id()));
    let outcome =
        Harness::new("span-lane").plan(plan()).out(&dir).quiet().lane(inline()).lane(lane).run().expect("run");
    let d = outcome.decomposition.expect("decomposition");
    assert_eq!(d.drops.complete_ops["spans-probed"], u64::from(2 * 4 - left_out(&d)) * 50, "{:?}", d.drops);
    assert_eq!(d.drops.complete_ops["spans"], 0, "the clean build creates no span");
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["write.enter→serve.enter", "serve.enter→serve.exit", "serve.exit→write.exit"]);
    let trace = hopscope_probe::Trace::read(&outcome.trace).expect("trace");
    // The writer thread's marks: on a role of their own, declared as the
    // first traced slot and renamed after the thread when the run ended.
    let traced: Vec<u16> = trace
        .blocks
        .iter()
        .filter(|b| b.lane == 2)
        .flat_map(|b| &b.streams)
        .filter(|s| trace.header.threads[usize::from(s.thread)] != "caller")
        .map(|s| s.thread)
        .collect();
    assert!(!traced.is_empty() && traced.iter().all(|t| *t == traced[0]), "one thread, one role: {traced:?}");
    assert_eq!(trace.header.threads[usize::from(traced[0])], "user-writer", "{:?}", trace.header.threads);
    assert!(trace.header.threads.contains(&format!("{TRACED_ROLE}-2")), "unused slots keep their names");
    assert!(trace.header.span_machinery.is_some(), "the machinery is measured for a span lane");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_hop_layer_inside_the_users_own_dispatcher_is_drained_too() {
    let _one = ONE_RUN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let layer = HopLayer::new().span("write", Hop::ENTER, Some(Hop::DONE)).span("work", Hop::BUILT, Some(Hop::SENT));
    let probed = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let lane = Lane::subject(
        "spans",
        |_s| Ok::<_, BoxError>(0u64),
        |n: &mut u64, op| {
            let _write = tracing::info_span!("write", op = op.index()).entered();
            tracing::info_span!("work", op = op.index()).in_scope(|| *n += 1);
            Ok::<_, BoxError>(())
        },
    )
    .probed_by(probed);
    let dir = std::env::temp_dir().join(format!("hopscope-tracing-lane-{}", std::process::id()));
    let outcome =
        Harness::new("tracing-lane").plan(plan()).out(&dir).quiet().lane(inline()).lane(lane).run().expect("run");
    let d = outcome.decomposition.expect("decomposition");
    assert_eq!(d.drops.complete_ops["spans-probed"], u64::from(2 * 4 - left_out(&d)) * 50, "{:?}", d.drops);
    assert_eq!(d.drops.complete_ops["spans"], 0);
    let names: Vec<&str> = d.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["enter→built", "built→sent", "sent→done"]);
    assert!(d.observer_effect.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rounds the run left out of every figure (another process held their
/// CPUs): their operations are not joined.
fn left_out(d: &hopscope_analyze::Decomposition) -> u32 {
    d.contention.as_ref().map_or(0, |c| c.rounds_left_out())
}
