//! A batching writer marked with `tracing` spans only, through the harness
//! as a user runs it: each request's `write` span on its caller, an
//! `execute` span per request's statement on the writer, and one `commit`
//! span per batch that records every request it serves
//! (`HopLayer::shared`). Every request joins its batch's COMMIT, batch
//! sizes are exact, and the COMMIT's cost is divided among the requests.

#![cfg(feature = "tracing")]

mod common;

use common::busy;
use hopscope_analyze::join::Sharing;
use hopscope_harness::{BoxError, Harness, Lane, Ops, Placement, Plan, Role, Workload};
use hopscope_probe::{HopLayer, Owner};

/// Requests per transaction: the callers' count, so every batch fills.
const BATCH: usize = 4;

/// The writer thread and each caller's reply channel.
struct Writer {
    requests: Option<crossbeam_channel::Sender<(u64, usize)>>,
    replies: Vec<crossbeam_channel::Receiver<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Gathers exactly [`BATCH`] requests, runs each one's statement in an
    /// `execute` span, then one `commit` span for all, then replies.
    fn spawn() -> Writer {
        let (requests, inbox) = crossbeam_channel::unbounded::<(u64, usize)>();
        let (senders, replies): (Vec<_>, Vec<_>) = (0..BATCH).map(|_| crossbeam_channel::unbounded()).unzip();
        let thread = std::thread::spawn(move || {
            let mut gathered: Vec<(u64, usize)> = Vec::with_capacity(BATCH);
            for request in inbox {
                gathered.push(request);
                if gathered.len() < BATCH {
                    continue;
                }
                for (op, _) in &gathered {
                    tracing::info_span!("execute", op).in_scope(|| busy(1_000));
                }
                let commit = tracing::info_span!("commit", serves = tracing::field::Empty);
                for (op, _) in &gathered {
                    commit.record("serves", op);
                }
                commit.in_scope(|| busy(6_000));
                drop(commit);
                for (_, caller) in gathered.drain(..) {
                    let _ = senders[caller].send(());
                }
            }
        });
        Writer { requests: Some(requests), replies, thread: Some(thread) }
    }
}

impl Workload for Writer {
    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let requests = self.requests.as_ref().ok_or("stopped")?;
        let reply = self.replies.get(caller).ok_or("no such caller")?;
        let mut done = 0;
        for op in ops {
            let _write = tracing::info_span!("write", op = op.index()).entered();
            requests.send((op.index(), caller))?;
            reply.recv()?;
            done += 1;
        }
        Ok(done)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_span_marked_batching_writer_joins_every_request_to_its_commit() {
    let dir = std::env::temp_dir().join(format!("hopscope-span-batches-{}", std::process::id()));
    let layer = HopLayer::new().caller("write").database("execute").shared("commit").owned_by("commit", Owner::Sqlite);
    let lane = Lane::new(Role::Subject, "span-batches", |_s| Ok::<_, BoxError>(Writer::spawn()))
        .callers(BATCH)
        .probed_by_spans(layer);
    let plan = Plan {
        ops_per_block: 64,
        samples: 4,
        passes: 1,
        warmup_blocks: 1,
        placement: Placement::Unpinned,
        ..Plan::quick()
    };
    let outcome = Harness::new("span-batches").plan(plan).out(&dir).quiet().lane(lane).run().expect("run");
    assert!(outcome.stopped.is_none(), "{:?}", outcome.stopped);
    let d = outcome.decomposition.expect("decomposition");
    let name = d.insitu_lane.clone().expect("sliced");
    assert_eq!(d.drops.incomplete_ops[&name], 0, "every request joins its COMMIT");
    let batches = d.lanes[&name].batches.as_ref().expect("batch sizes");
    assert_eq!(batches.sizes, [(BATCH as u64, d.drops.complete_ops[&name] / BATCH as u64)]);
    let commit = d.slices.iter().find(|s| s.name == "commit.enter→commit.exit").expect("the COMMIT's slice");
    assert_eq!(commit.sharing, Sharing::Shared);
    let (wait, cost) = (commit.mean_us.expect("mean"), commit.cost_us.expect("cost"));
    assert!((cost * BATCH as f64 - wait).abs() <= 0.05 * wait, "a quarter each: cost {cost} of {wait}");
    let _ = std::fs::remove_dir_all(&dir);
}
