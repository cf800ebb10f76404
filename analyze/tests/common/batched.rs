//! A synthetic group-commit writer whose every step has a known length:
//! callers hand in requests, the writer drains a batch, runs BEGIN, each
//! request's statement, one COMMIT, and replies to each. The batch's BEGIN,
//! COMMIT and return to waiting are marked once, under the batch's own id,
//! and linked to every request they serve.

#![allow(dead_code)]

use hopscope_probe::{Block, Hop, HopTable, Mark, OpId, Owner, Side, Stream, Ticks, TraceHeader};

/// The steps' lengths, ns (the clock runs at 1 ns per tick).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Steps {
    /// A caller's `enter→sent`.
    pub build: u64,
    /// The writer taking one more queued request (`woke` to the next `woke`).
    pub drain: u64,
    /// After the last `woke`, before BEGIN.
    pub open: u64,
    /// BEGIN (`begin→began`).
    pub begin: u64,
    /// Before each statement (`began` or the last `executed` to `executing`).
    pub bind: u64,
    /// One request's statement (`executing→executed`).
    pub statement: u64,
    /// After the last statement, before COMMIT.
    pub close: u64,
    /// COMMIT (`commit→committed`).
    pub commit: u64,
    /// Before each reply (`committed` or the last `replied` to `replied`).
    pub reply: u64,
    /// After the last reply, before the writer waits again (`→idle`).
    pub settle: u64,
    /// A reply's way back (`replied→received`).
    pub back: u64,
    /// A caller's `received→done`.
    pub finish: u64,
}

impl Steps {
    /// Lengths of different sizes, so a slice taken for another shows.
    pub(crate) const KNOWN: Steps = Steps {
        build: 300,
        drain: 40,
        open: 90,
        begin: 700,
        bind: 60,
        statement: 2_000,
        close: 50,
        commit: 9_000,
        reply: 80,
        settle: 110,
        back: 1_500,
        finish: 25,
    };
}

/// The hops the batched writer declares beyond the standard ones, in
/// order: BEGIN's two edges, a request's statement start, COMMIT's two.
pub(crate) const EXTRA: [(&str, Side, Option<Owner>); 5] = [
    ("begin", Side::Writer, None),
    ("began", Side::Writer, Some(Owner::Sqlite)),
    ("executing", Side::Writer, None),
    ("commit", Side::Writer, None),
    ("committed", Side::Writer, Some(Owner::Sqlite)),
];

/// The standard hops and [`EXTRA`].
pub(crate) fn hops() -> HopTable {
    let mut table = HopTable::standard();
    for (name, side, owner) in EXTRA {
        let hop = table.add(name, side);
        if let Some(owner) = owner {
            table.set_owner(hop, owner).expect("declarable");
        }
    }
    table
}

/// `header` with the batched writer's hops.
pub(crate) fn with_hops(header: TraceHeader) -> TraceHeader {
    TraceHeader { hops: hops(), ..header }
}

/// Caller threads of a block: request `i` of a batch is made on caller
/// thread `i` (trace thread 0 for the first, then [`FIRST_EXTRA`] on).
pub(crate) const CALLERS: usize = 64;
/// The trace thread index of the second caller (the writer is 1).
const FIRST_EXTRA: u16 = 2;

/// The thread roles a batched trace declares: `caller`, `writer`, then
/// one per further caller.
pub(crate) fn threads() -> Vec<String> {
    let mut threads = vec!["caller".to_owned(), "writer".to_owned()];
    threads.extend((1..CALLERS).map(|i| format!("caller-{i}")));
    threads
}

/// One batch's marks, on each request's caller thread and the writer
/// thread.
struct Batch<'a> {
    steps: &'a Steps,
    table: HopTable,
    /// Per caller, its marks.
    callers: Vec<Vec<Mark>>,
    writer: Vec<Mark>,
}

impl Batch<'_> {
    fn hop(&self, name: &str) -> Hop {
        self.table.find(name).expect("declared hop")
    }

    /// Requests `ops` sent at `sent[i]`, the writer starting at `start`;
    /// the batch's id is `batch`. Returns when the writer goes idle.
    fn run(&mut self, batch: OpId, ops: &[OpId], sent: &[u64], start: u64) -> u64 {
        let s = *self.steps;
        let mut t = start;
        for (i, op) in ops.iter().enumerate() {
            if i > 0 {
                t += s.drain;
            }
            self.writer.push(Mark::new(*op, Hop::WOKE, Ticks(t)));
            self.writer.push(Mark::serves(batch, *op));
        }
        let (begin, began) = (self.hop("begin"), self.hop("began"));
        t += s.open;
        self.writer.push(Mark::new(batch, begin, Ticks(t)));
        t += s.begin;
        self.writer.push(Mark::new(batch, began, Ticks(t)));
        let executing = self.hop("executing");
        for op in ops {
            t += s.bind;
            self.writer.push(Mark::new(*op, executing, Ticks(t)));
            t += s.statement;
            self.writer.push(Mark::new(*op, Hop::EXECUTED, Ticks(t)));
        }
        t += s.close;
        self.writer.push(Mark::new(batch, self.hop("commit"), Ticks(t)));
        t += s.commit;
        self.writer.push(Mark::new(batch, self.hop("committed"), Ticks(t)));
        for (i, (op, sent)) in ops.iter().zip(sent).enumerate() {
            t += s.reply;
            self.writer.push(Mark::new(*op, Hop::REPLIED, Ticks(t)));
            let received = t + s.back;
            let caller = &mut self.callers[i % CALLERS];
            caller.push(Mark::new(*op, Hop::ENTER, Ticks(sent - s.build)));
            caller.push(Mark::new(*op, Hop::SENT, Ticks(*sent)));
            caller.push(Mark::new(*op, Hop::RECEIVED, Ticks(received)));
            caller.push(Mark::new(*op, Hop::DONE, Ticks(received + s.finish)));
        }
        t += s.settle;
        self.writer.push(Mark::new(batch, Hop::IDLE, Ticks(t)));
        t
    }
}

/// A block of `batches` batches of `size` requests each, every request
/// sent at least `queued` ns before its batch's writer starts.
pub(crate) fn block(lane: u16, sample: u32, steps: &Steps, size: usize, batches: usize, queued: u64) -> Block {
    let mut marks = Batch { steps, table: hops(), callers: vec![Vec::new(); CALLERS], writer: Vec::new() };
    let first = (u64::from(sample) + 1) << 32;
    let mut t = 1_000_000;
    let start = t;
    for b in 0..batches {
        let ops: Vec<OpId> = (0..size).map(|i| OpId(first + (b * size + i) as u64)).collect();
        // Sent one tick apart, the last `queued` ns before the writer takes
        // the first (`queued` must exceed the batch's size).
        let sent: Vec<u64> = (0..size).map(|i| t - queued - (size - 1 - i) as u64).collect();
        let batch = OpId((1 << 62) | first | b as u64);
        t = marks.run(batch, &ops, &sent, t) + 10_000;
    }
    let mut streams = vec![Stream { thread: 1, dropped: 0, marks: marks.writer }];
    for (i, mut caller) in marks.callers.into_iter().enumerate().filter(|(_, c)| !c.is_empty()) {
        caller.sort_by_key(|m| m.ticks);
        let thread = if i == 0 { 0 } else { FIRST_EXTRA + i as u16 - 1 };
        streams.push(Stream { thread, dropped: 0, marks: caller });
    }
    streams.sort_by_key(|s| s.thread);
    Block {
        lane,
        pass: 0,
        sample,
        op_count: (size * batches) as u64,
        start: Ticks(start - queued - size as u64 - steps.build),
        end: Ticks(t),
        streams,
        readings: Vec::new(),
    }
}
