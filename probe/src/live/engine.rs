//! The drain: the background thread that empties the rings, holds each
//! operation until it is done, and writes blocks as windows close.
//!
//! It wakes every [`DRAIN_EVERY`] or when a marking thread finds its ring
//! half full, so a ring rarely fills; it sweeps the held marks about twice
//! per settle time; at the end it waits for spans still open (a span
//! capture), drains once more, hands on everything it holds, names the
//! threads in the header and states the capture's totals there.

use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::held::{Held, Sweep};
use super::host::HostReadings;
use super::roles::Roles;
use super::summary::{CaptureSummary, ThreadDrops};
use super::windows::Windows;
use crate::clock::{self, ClockInfo};
use crate::collector::{Collector, Drained, ThreadMarks};
use crate::trace::{TraceError, TraceWriter};

/// How often the drain empties the rings when nobody wakes it.
pub(super) const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// What runs once before the last drain: a span capture waits for spans
/// still open on other threads.
pub(super) type BeforeLast = Box<dyn FnOnce() + Send>;

/// The checked settings the drain runs with.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) path: std::path::PathBuf,
    pub(super) settle_ns: u64,
    pub(super) held_marks: usize,
}

/// The drain thread's state.
pub(super) struct Engine {
    pub(super) collector: Collector,
    pub(super) before_last: Option<BeforeLast>,
    pub(super) writer: TraceWriter<BufWriter<File>>,
    pub(super) settings: Settings,
    pub(super) clock: ClockInfo,
    pub(super) roles: Roles,
    pub(super) held: Held,
    pub(super) windows: Windows,
    pub(super) started: Instant,
    pub(super) totals: Totals,
    pub(super) last_sweep: u64,
    /// The program's and the host's CPU, read at each sweep.
    pub(super) host: HostReadings,
    /// The header's key of the first of them.
    pub(super) host_key: u16,
}

/// What the capture has seen so far.
#[derive(Debug, Default)]
pub(super) struct Totals {
    pub(super) marks: u64,
    pub(super) cut: u64,
    /// Per role, marks dropped.
    pub(super) dropped: Vec<u64>,
    /// Marks of no thread (made while a thread tore down).
    pub(super) dropped_elsewhere: u64,
    /// Marks of threads that found every role taken.
    pub(super) past_roles: u64,
    /// Marks of hops the table does not declare, left out.
    pub(super) undeclared: u64,
}

impl Engine {
    /// Run until `stop`, then finish the trace. An error (the disk full)
    /// is said at once, not only when the program finishes the capture.
    pub(super) fn run(self, stop: &Arc<AtomicBool>) -> Result<CaptureSummary, TraceError> {
        let path = self.settings.path.clone();
        self.drain_until(stop).inspect_err(|e| {
            eprintln!("hopscope: the live capture stopped writing {}: {e}", path.display());
        })
    }

    fn drain_until(mut self, stop: &Arc<AtomicBool>) -> Result<CaptureSummary, TraceError> {
        loop {
            std::thread::park_timeout(DRAIN_EVERY);
            let stopping = stop.load(Ordering::Acquire);
            if stopping && let Some(before_last) = self.before_last.take() {
                before_last();
            }
            let drained = self.collector.drain();
            self.hold(drained);
            let now = self.now();
            let sweep_due = now.saturating_sub(self.last_sweep) >= self.settings.settle_ns / 2;
            let over_cap = self.held.len() > self.settings.held_marks;
            let sweep = match (stopping, over_cap) {
                (true, _) => Some(Sweep::AtEnd),
                (false, true) => Some(Sweep::AtCap),
                (false, false) => sweep_due.then_some(Sweep::Settled),
            };
            if let Some(sweep) = sweep {
                self.sweep(now, sweep)?;
            }
            if stopping {
                return self.finish();
            }
        }
    }

    /// Nanoseconds since the capture started: when marks arrive.
    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Hold what a drain took, each thread's marks under its role. Roles
    /// of threads that exited are freed first (a thread registered after
    /// one ended may take its role in this same drain), and a thread that
    /// marked and exited within this drain frees its role once its marks
    /// are held.
    fn hold(&mut self, drained: Drained) {
        let now = self.now();
        let tick = clock::now().0;
        self.totals.dropped_elsewhere += drained.dropped_elsewhere;
        for exit in &drained.exited {
            self.roles.exited(exit.thread, exit.registered_by_then);
        }
        for thread in drained.threads {
            let Some(role) = self.roles.of(thread.thread, &thread.name, thread.order) else {
                self.totals.past_roles += thread.marks.len() as u64 + thread.dropped;
                continue;
            };
            if let Some(exit) = drained.exited.iter().find(|e| e.thread == thread.thread) {
                self.roles.exited(exit.thread, exit.registered_by_then);
            }
            self.hold_thread(role, thread, now, tick);
        }
    }

    /// Hold one thread's marks under `role`, counting its drops.
    fn hold_thread(&mut self, role: u16, thread: ThreadMarks, now: u64, tick: u64) {
        let at = usize::from(role);
        if self.totals.dropped.len() <= at {
            self.totals.dropped.resize(at + 1, 0);
        }
        self.totals.dropped[at] += thread.dropped;
        self.windows.add_dropped(role, thread.dropped, tick);
        let hops = self.writer.header().hops.len();
        let before = thread.marks.len();
        let mut marks = thread.marks;
        // A mark of a hop the table does not declare would make the block
        // unwritable: left out, and counted.
        marks.retain(|m| m.is_link() || usize::from(m.hop.0) < hops);
        self.totals.undeclared += (before - marks.len()) as u64;
        self.totals.marks += marks.len() as u64;
        self.held.add(role, &marks, now);
    }

    /// Hand on the operations that are done (all of them when `all`), and
    /// write the blocks of windows that have closed.
    fn sweep(&mut self, now: u64, all: Sweep) -> Result<(), TraceError> {
        self.last_sweep = now;
        let windows = &self.windows;
        self.host.read_if_due(|tick| windows.window_of(tick));
        self.totals.cut += self.held.sweep(now, self.settings.settle_ns, all, &mut self.windows);
        let settle_ticks = (self.settings.settle_ns as f64 / self.clock.ns_per_tick.max(f64::MIN_POSITIVE)) as u64;
        let settled = clock::now().0.saturating_sub(settle_ticks);
        let mut blocks = self.windows.ready(settled);
        if blocks.is_empty() {
            return Ok(());
        }
        for block in &mut blocks {
            self.host.attach(block, self.host_key);
        }
        if self.roles.take_new() {
            self.name_threads()?;
        }
        for block in &blocks {
            self.writer.write_block(block)?;
        }
        Ok(())
    }

    /// Rewrite the header with the names of the roles taken so far.
    fn name_threads(&mut self) -> Result<(), TraceError> {
        let mut header = self.writer.header().clone();
        header.threads = self.roles.header_threads(header.threads.len());
        self.writer.rewrite_header(header)?;
        Ok(())
    }

    /// Write what is left, then the header as it ends (the roles taken, the
    /// totals), and the end record.
    fn finish(mut self) -> Result<CaptureSummary, TraceError> {
        let mut all = self.windows.rest();
        let windows = &self.windows;
        self.host.read(|tick| windows.window_of(tick));
        for block in &mut all {
            self.host.attach(block, self.host_key);
        }
        if let Some(last) = all.last_mut() {
            self.host.attach_rest(last, self.host_key);
        }
        if !all.is_empty() {
            self.roles.take_new();
            self.name_threads()?;
        }
        for block in &all {
            self.writer.write_block(block)?;
        }
        let seconds = self.started.elapsed().as_secs_f64();
        let summary = self.summary(seconds);
        let mut header = self.writer.header().clone();
        header.threads = self.roles.header_threads(self.roles.len().max(1));
        super::facts::record_totals(&mut header.run, &summary);
        if !self.writer.rewrite_header(header)? {
            return Err(TraceError::Unwritable {
                reason: "the capture's header outgrew the room left for it".to_owned(),
            });
        }
        self.writer.finish()?;
        Ok(summary)
    }

    fn summary(&self, seconds: f64) -> CaptureSummary {
        let mut dropped_by_thread: Vec<ThreadDrops> = self
            .roles
            .names()
            .iter()
            .zip(self.totals.dropped.iter().chain(std::iter::repeat(&0)))
            .filter(|&(_, &dropped)| dropped > 0)
            .map(|(name, &dropped)| ThreadDrops { thread: name.clone(), dropped })
            .collect();
        if self.totals.past_roles > 0 {
            let thread = format!("(threads past the {} roles)", self.roles.max());
            dropped_by_thread.push(ThreadDrops { thread, dropped: self.totals.past_roles });
        }
        if self.totals.dropped_elsewhere > 0 {
            dropped_by_thread
                .push(ThreadDrops { thread: "(no thread)".to_owned(), dropped: self.totals.dropped_elsewhere });
        }
        CaptureSummary {
            path: self.settings.path.clone(),
            operations: self.windows.operations(),
            marks: self.totals.marks,
            dropped: dropped_by_thread.iter().map(|d| d.dropped).sum(),
            dropped_by_thread,
            threads: self.roles.len(),
            windows: self.windows.windows(),
            blocks: self.windows.written(),
            cut: self.totals.cut,
            undeclared_hops: self.totals.undeclared,
            sample_every: self.collector.sampling().every(),
            seconds,
            peak_held_marks: self.held.peak,
            largest_ring_marks: self.collector.ring_sizes().iter().map(|(_, n)| *n).max().unwrap_or(0),
        }
    }
}
