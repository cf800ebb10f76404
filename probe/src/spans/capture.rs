//! The one-call set-up: a layer and a guard that writes its marks to a
//! `.hop` trace when the program is done.
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//!
//! # fn main() -> Result<(), hopscope_probe::TraceError> {
//! let (layer, capture) = hopscope_probe::HopLayer::new().caller("write").writer("execute").capture("app.hop")?;
//! tracing_subscriber::registry().with(layer).init();
//! // ... the program runs; its spans carry `op` ...
//! capture.finish()?; // or let it drop at the end of main
//! # Ok(())
//! # }
//! ```
//!
//! Setting up measures the span machinery (about 40 ms), so the trace's
//! receipt can state its share of each slice. A background thread drains the layer's [`Collector`] every few
//! milliseconds, so no marking thread's ring fills up however long the
//! program runs, and the marks are held until the guard finishes. Then each
//! operation goes, whole, into one of up to [`BLOCKS`] blocks, by the time
//! of its first mark: no operation is split between blocks. Each thread
//! that marked becomes a thread role named after the thread.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use super::{Collector, HopLayer};
use crate::hop::Mark;
use crate::machinery::SpanMachinery;
use crate::role::LaneInfo;
use crate::trace::{Block, Stream, TraceError, TraceHeader, TraceWriter};

/// Blocks a capture's operations are spread over (fewer when there are
/// fewer operations): enough for the analyzer's confidence intervals.
pub const BLOCKS: usize = 40;

/// Marks a capture holds at most (384 MiB); later marks are counted as dropped.
pub const MAX_HELD_MARKS: usize = 1 << 24;

/// How often the background thread drains the rings.
const DRAIN_EVERY: Duration = Duration::from_millis(20);

/// Empty span operations the machinery is measured over at set-up.
const MACHINERY_SAMPLES: usize = 20_000;

/// How long finishing waits for spans still open on other threads.
const SETTLE: Duration = Duration::from_millis(200);

/// Writes the marks of a [`HopLayer`] to a trace when finished or dropped.
#[derive(Debug)]
pub struct SpanCapture {
    path: PathBuf,
    layer: HopLayer,
    held: Arc<Mutex<Held>>,
    stop: Arc<AtomicBool>,
    drainer: Option<JoinHandle<()>>,
    machinery: Option<SpanMachinery>,
    finished: bool,
}

/// Marks drained so far, per thread in the order threads first marked.
#[derive(Debug, Default)]
struct Held {
    threads: Vec<(ThreadId, String, Vec<Mark>, u64)>,
    marks: usize,
    dropped_elsewhere: u64,
}

impl Held {
    fn take(&mut self, collector: &Collector) {
        let drained = collector.drain();
        self.dropped_elsewhere += drained.dropped_elsewhere;
        for t in drained.threads {
            let at = match self.threads.iter().position(|(id, ..)| *id == t.thread) {
                Some(at) => at,
                None => {
                    self.threads.push((t.thread, t.name, Vec::new(), 0));
                    self.threads.len() - 1
                }
            };
            let (_, _, marks, dropped) = &mut self.threads[at];
            let room = MAX_HELD_MARKS.saturating_sub(self.marks).min(t.marks.len());
            marks.extend_from_slice(&t.marks[..room]);
            self.marks += room;
            *dropped += t.dropped + (t.marks.len() - room) as u64;
        }
    }
}

impl HopLayer {
    /// The one-call set-up: this layer, and a guard that writes the marks
    /// it makes to a trace at `path` when finished or dropped. Refuses a
    /// layer with a [`HopLayer::problem`], and a path it cannot create,
    /// before anything runs.
    pub fn capture(self, path: impl AsRef<Path>) -> Result<(HopLayer, SpanCapture), TraceError> {
        self.capture_through(path.as_ref(), super::machinery::Calibrator::private)
    }

    /// [`HopLayer::capture`] for the profiling path: this layer's watches
    /// as a [`HopSubscriber`](super::HopSubscriber) (set it as the global
    /// default), and the guard; the span machinery is measured through
    /// that path and the trace says so.
    pub fn capture_profiling(self, path: impl AsRef<Path>) -> Result<(super::HopSubscriber, SpanCapture), TraceError> {
        let (layer, capture) = self.capture_through(path.as_ref(), super::machinery::Calibrator::profiling)?;
        Ok((layer.subscriber(), capture))
    }

    fn capture_through(
        self,
        path: &Path,
        calibrator: fn() -> super::machinery::Calibrator,
    ) -> Result<(HopLayer, SpanCapture), TraceError> {
        let path = path.to_owned();
        if let Some(problem) = self.problem() {
            return Err(TraceError::Unwritable { reason: format!("span layer: {problem}") });
        }
        // Fail now, not when the program is done.
        std::fs::File::create(&path)?;
        // Before the program's subscriber exists, on this thread: what the
        // span machinery holds inside each kind of slice (~40 ms).
        let machinery = calibrator().measure(MACHINERY_SAMPLES);
        let held = Arc::new(Mutex::new(Held::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let drainer = {
            let (collector, held, stop) = (self.collector().clone(), held.clone(), stop.clone());
            std::thread::Builder::new().name("hopscope-drain".to_owned()).spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(DRAIN_EVERY);
                    held.lock().unwrap_or_else(PoisonError::into_inner).take(&collector);
                }
            })?
        };
        let capture = SpanCapture {
            path,
            layer: self.clone(),
            held,
            stop,
            drainer: Some(drainer),
            machinery: Some(machinery),
            finished: false,
        };
        Ok((self, capture))
    }
}

impl SpanCapture {
    /// Where the trace goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stop collecting and write the trace; returns its path.
    pub fn finish(mut self) -> Result<PathBuf, TraceError> {
        self.write()?;
        Ok(self.path.clone())
    }

    fn write(&mut self) -> Result<(), TraceError> {
        self.finished = true;
        self.stop.store(true, Ordering::Relaxed);
        if let Some(drainer) = self.drainer.take() {
            let _ = drainer.join();
        }
        self.layer.settle(SETTLE, &mut Vec::new());
        let mut held = std::mem::take(&mut *self.held.lock().unwrap_or_else(PoisonError::into_inner));
        held.take(self.layer.collector());
        let roles = role_names(&held);
        let role_refs: Vec<&str> = roles.iter().map(String::as_str).collect();
        let lane = "capture";
        let mut header = TraceHeader::for_this_host(&[lane], &role_refs);
        header.hops = self.layer.hops().clone();
        header.span_machinery = self.machinery.take();
        header.lane_info = vec![LaneInfo::program(lane)];
        crate::RunFacts::record(
            &mut header.run,
            crate::RunFact::Command,
            std::env::args().collect::<Vec<_>>().join(" "),
        );
        crate::RunFacts::record(&mut header.run, crate::RunFact::Capture, "hopscope_probe::HopLayer::capture");
        let mut writer = TraceWriter::create(&self.path, header)?;
        for block in blocks(&held) {
            writer.write_block(&block)?;
        }
        writer.finish().map(drop)
    }
}

impl Drop for SpanCapture {
    fn drop(&mut self) {
        if !self.finished
            && let Err(e) = self.write()
        {
            // A guard dropped at the end of `main` has no caller to return
            // to: say it once.
            eprintln!("hopscope: cannot write span trace {}: {e}", self.path.display());
        }
    }
}

/// Thread role names: each marking thread's name, made unique with `#2`,
/// `#3` ... in order of first mark.
fn role_names(held: &Held) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, name, ..) in &held.threads {
        let mut candidate = name.clone();
        let mut n = 1;
        while names.contains(&candidate) {
            n += 1;
            candidate = format!("{name}#{n}");
        }
        names.push(candidate);
    }
    if names.is_empty() {
        names.push("main".to_owned());
    }
    names
}

/// The held marks as blocks: operations ordered by their first mark, cut
/// into up to [`BLOCKS`] runs of equal count, each operation whole in one.
fn blocks(held: &Held) -> Vec<Block> {
    // op -> (first tick, last tick)
    let mut span: HashMap<u64, (u64, u64)> = HashMap::new();
    for (_, _, marks, _) in &held.threads {
        for m in marks {
            let e = span.entry(m.op.0).or_insert((m.ticks.0, m.ticks.0));
            e.0 = e.0.min(m.ticks.0);
            e.1 = e.1.max(m.ticks.0);
        }
    }
    let mut ops: Vec<(u64, u64)> = span.iter().map(|(op, (first, _))| (*first, *op)).collect();
    ops.sort_unstable();
    let per_block = ops.len().div_ceil(BLOCKS).max(1);
    let block_of: HashMap<u64, usize> = ops.iter().enumerate().map(|(i, (_, op))| (*op, i / per_block)).collect();
    let count = ops.len().div_ceil(per_block).max(1);
    let mut out: Vec<Block> =
        (0..count).map(|i| Block { lane: 0, pass: 0, sample: i as u32, ..Block::default() }).collect();
    for (thread, (_, _, marks, dropped)) in held.threads.iter().enumerate() {
        let mut per: BTreeMap<usize, Vec<Mark>> = BTreeMap::new();
        for m in marks {
            per.entry(block_of[&m.op.0]).or_default().push(*m);
        }
        for (b, marks) in per {
            out[b].streams.push(Stream { thread: thread as u16, dropped: 0, marks });
        }
        // Drops cannot be placed in time: the first block carries them.
        if *dropped > 0 {
            add_dropped(&mut out[0], thread as u16, *dropped);
        }
    }
    if held.dropped_elsewhere > 0 {
        add_dropped(&mut out[0], 0, held.dropped_elsewhere);
    }
    for (i, block) in out.iter_mut().enumerate() {
        let in_block = ops.iter().skip(i * per_block).take(per_block);
        let (start, end) = in_block.fold((u64::MAX, 0), |(s, e), (_, op)| {
            let (first, last) = span[op];
            (s.min(first), e.max(last))
        });
        block.op_count = ops.len().saturating_sub(i * per_block).min(per_block) as u64;
        block.start = crate::clock::Ticks(if start == u64::MAX { 0 } else { start });
        block.end = crate::clock::Ticks(end.max(block.start.0));
        block.streams.sort_by_key(|s| s.thread);
    }
    out
}

fn add_dropped(block: &mut Block, thread: u16, dropped: u64) {
    match block.streams.iter_mut().find(|s| s.thread == thread) {
        Some(stream) => stream.dropped += dropped,
        None => block.streams.push(Stream { thread, dropped, marks: Vec::new() }),
    }
}
