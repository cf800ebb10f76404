//! A toy group-commit writer whose every step is a busy-wait of known
//! length: callers pipeline a window of requests each, the writer takes
//! exactly `batch` of them, runs BEGIN, each request's statement and one
//! COMMIT, then replies to each. BEGIN, COMMIT and the writer's return to
//! waiting are marked once, under the batch's own id, and linked to every
//! request they serve (`serves!`), as a user's batching writer marks them.

#![allow(dead_code)]

use crossbeam_channel::{Receiver, Sender};
use hopscope_harness::{BoxError, HandIn, Ops, Setup, Workload};
use hopscope_probe::{Hop, HopTable, OpId, Owner, Side, hop, serves};

use super::busy;

/// The batch's hops beyond the standard ones.
pub(crate) const HOPS: [(&str, Side, Option<Owner>); 5] = [
    ("begin", Side::Writer, None),
    ("began", Side::Writer, Some(Owner::Sqlite)),
    ("executing", Side::Writer, None),
    ("commit", Side::Writer, None),
    ("committed", Side::Writer, Some(Owner::Sqlite)),
];

/// The standard hops and [`HOPS`].
pub(crate) fn hops() -> HopTable {
    let mut table = HopTable::standard();
    for (name, side, owner) in HOPS {
        let hop = table.add(name, side);
        if let Some(owner) = owner {
            table.set_owner(hop, owner).expect("declarable");
        }
    }
    table
}

/// The batch's hops by id, looked up once (a lookup between two marks
/// would be in the slice).
#[derive(Debug, Clone, Copy)]
struct BatchHops {
    begin: Hop,
    began: Hop,
    executing: Hop,
    commit: Hop,
    committed: Hop,
}

impl BatchHops {
    fn new() -> BatchHops {
        let table = hops();
        let hop = |name: &str| table.find(name).expect("declared");
        BatchHops {
            begin: hop("begin"),
            began: hop("began"),
            executing: hop("executing"),
            commit: hop("commit"),
            committed: hop("committed"),
        }
    }
}

/// The lengths of the steps, ns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Steps {
    /// A caller building one request (`enter→sent`).
    pub build: u64,
    /// BEGIN (`begin→began`).
    pub begin: u64,
    /// One request's statement (`executing→executed`).
    pub statement: u64,
    /// COMMIT (`commit→committed`).
    pub commit: u64,
}

/// What the writer thread is sent.
enum Message {
    Op { id: OpId, caller: usize },
    HandIn(HandIn, Sender<()>),
}

/// The writer thread and each caller's reply channel.
pub(crate) struct BatchWriter {
    requests: Option<Sender<Message>>,
    replies: Vec<Receiver<()>>,
    /// Requests a caller sends before it waits for their replies.
    window: usize,
    steps: Steps,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BatchWriter {
    /// A writer that runs exactly `batch` requests per transaction, for
    /// `callers` callers that each send `window` before waiting (the
    /// block's operations per caller must be a multiple of `window`, and
    /// `callers × window` a multiple of `batch`, for every batch to fill).
    pub(crate) fn spawn(setup: &Setup, steps: Steps, batch: usize, callers: usize, window: usize) -> BatchWriter {
        let (requests, inbox) = crossbeam_channel::unbounded::<Message>();
        let (senders, replies): (Vec<Sender<()>>, Vec<Receiver<()>>) =
            (0..callers).map(|_| crossbeam_channel::unbounded()).unzip();
        let init = setup.thread_init();
        let thread = std::thread::spawn(move || {
            init.enter();
            serve(&inbox, &senders, steps, batch.max(1));
        });
        BatchWriter { requests: Some(requests), replies, window: window.max(1), steps, thread: Some(thread) }
    }
}

/// The writer's loop: gather `batch` requests (a hand-in between blocks
/// ends a batch early), run them, reply.
fn serve(inbox: &Receiver<Message>, replies: &[Sender<()>], steps: Steps, batch: usize) {
    let hops = BatchHops::new();
    let mut group: Vec<(OpId, usize)> = Vec::with_capacity(batch);
    let mut batches = 0u64;
    for message in inbox {
        match message {
            Message::Op { id, caller } => {
                hop!(id, Hop::WOKE);
                group.push((id, caller));
                if group.len() == batch {
                    batches += 1;
                    run(&mut group, replies, (steps, hops), OpId((1 << 62) | batches));
                }
            }
            Message::HandIn(hand_in, done) => {
                if !group.is_empty() {
                    batches += 1;
                    run(&mut group, replies, (steps, hops), OpId((1 << 62) | batches));
                }
                hand_in.collect("writer");
                let _ = done.send(());
            }
        }
    }
}

/// One transaction: BEGIN, each statement, COMMIT, each reply.
fn run(group: &mut Vec<(OpId, usize)>, replies: &[Sender<()>], (steps, hops): (Steps, BatchHops), batch: OpId) {
    for (id, _) in group.iter() {
        serves!(batch, *id);
    }
    // The busy-wait's code and clock warmed before the first step's mark,
    // as they are before every later one.
    busy(0);
    hop!(batch, hops.begin);
    busy(steps.begin);
    hop!(batch, hops.began);
    for (id, _) in group.iter() {
        hop!(*id, hops.executing);
        busy(steps.statement);
        hop!(*id, Hop::EXECUTED);
    }
    hop!(batch, hops.commit);
    busy(steps.commit);
    hop!(batch, hops.committed);
    for (id, caller) in group.drain(..) {
        hop!(id, Hop::REPLIED);
        let _ = replies[caller].send(());
    }
    hop!(batch, Hop::IDLE);
}

impl Workload for BatchWriter {
    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let requests = self.requests.as_ref().ok_or("stopped")?;
        let replies = self.replies.get(caller).ok_or("no such caller")?;
        let mut window = Vec::with_capacity(self.window);
        let mut done = 0u64;
        let mut ops = ops.peekable();
        while ops.peek().is_some() {
            window.extend(ops.by_ref().take(self.window).map(|op| op.id()));
            for id in &window {
                hop!(*id, Hop::ENTER);
                busy(self.steps.build);
                hop!(*id, Hop::SENT);
                requests.send(Message::Op { id: *id, caller }).map_err(|_| "the writer is gone")?;
            }
            for id in window.drain(..) {
                replies.recv()?;
                hop!(id, Hop::RECEIVED);
                hop!(id, Hop::DONE);
                done += 1;
            }
        }
        Ok(done)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        let (done, answered) = crossbeam_channel::bounded(1);
        self.requests.as_ref().ok_or("stopped")?.send(Message::HandIn(hand_in.clone(), done))?;
        Ok(answered.recv()?)
    }
}

impl Drop for BatchWriter {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
