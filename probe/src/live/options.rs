//! What a live capture is asked to be, checked before anything runs, and
//! how it starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::capture::LiveCapture;
use super::engine::{BeforeLast, Engine, Settings, Totals};
use super::facts;
use super::held::Held;
use super::host::HostReadings;
use super::roles::{self, Roles};
use super::windows::Windows;
use crate::capture::Capture;
use crate::clock;
use crate::collector::{Collector, MAX_RING_MARKS, Sampling, route};
use crate::hop::HopTable;
use crate::machinery::SpanMachinery;
use crate::role::LaneInfo;
use crate::run_fact::{LiveFact, RunFact, RunFacts};
use crate::trace::{TraceError, TraceHeader, TraceWriter};

/// Marks of each thread's first ring unless asked otherwise (384 KiB): a
/// ring is woken half full and grows when a burst outruns the drain, so a
/// small one costs a steady program little memory and loses nothing.
pub const DEFAULT_LIVE_RING_MARKS: usize = 1 << 14;

/// Seconds per window unless asked otherwise.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(10);
/// How long an operation's marks wait after its last before it counts as
/// done, unless asked otherwise: above any pause between two hops of one
/// operation a healthy writer shows (a queue wait, a checkpoint).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(250);
/// Largest ring a thread's may grow to unless asked otherwise: 24 MiB.
pub const DEFAULT_RING_CAP: usize = 1 << 20;
/// Marks held for unfinished operations at most, unless asked otherwise
/// (24 MiB): past it they are handed on unsettled and counted as cut.
pub const DEFAULT_HELD_MARKS: usize = 1 << 20;
/// Thread roles a capture has room for unless asked otherwise.
pub const DEFAULT_MAX_THREADS: usize = 256;
/// Most thread roles a capture may have room for.
pub const MAX_THREADS: usize = 4_096;

/// Marks a block holds before it is written early: a window of a busy
/// program becomes several blocks of about this many (0.5 MiB held, 0.3
/// MiB encoded), so what a capture holds stays a few MiB.
const BLOCK_MARKS: usize = 1 << 14;

/// The options of a live capture ([`Capture::live`]): set what differs
/// from the defaults, then [`LiveOptions::start`].
#[derive(Debug, Clone)]
pub struct LiveOptions {
    path: PathBuf,
    lane: String,
    hops: HopTable,
    callers: Option<u32>,
    sampling: Sampling,
    window: Duration,
    settle: Duration,
    ring_marks: usize,
    ring_cap: usize,
    held_marks: usize,
    max_threads: usize,
    problem: Option<String>,
}

impl Capture {
    /// A live capture of this program to `path`: its `hop!` marks, on every
    /// thread that attached no buffer of its own, streamed to the trace by
    /// a background drain. See [`crate::live`].
    pub fn live(path: impl AsRef<Path>) -> LiveOptions {
        LiveOptions {
            path: path.as_ref().to_owned(),
            lane: "capture".to_owned(),
            hops: HopTable::standard(),
            callers: None,
            sampling: Sampling::ALL,
            window: super::DEFAULT_WINDOW,
            settle: DEFAULT_SETTLE,
            ring_marks: DEFAULT_LIVE_RING_MARKS,
            ring_cap: DEFAULT_RING_CAP,
            held_marks: DEFAULT_HELD_MARKS,
            max_threads: DEFAULT_MAX_THREADS,
            problem: None,
        }
    }
}

impl LiveOptions {
    /// Note the first problem; later setters keep it.
    fn refuse(mut self, problem: String) -> LiveOptions {
        self.problem.get_or_insert(problem);
        self
    }

    /// The name of the program's one lane (`capture` by default).
    pub fn lane(mut self, name: &str) -> LiveOptions {
        if name.is_empty() || name.contains('.') || name.len() > 64 {
            return self.refuse(format!("lane name `{name}`: 1 to 64 bytes, no dot"));
        }
        name.clone_into(&mut self.lane);
        self
    }

    /// The program's own hop table: its hops' names, sides and owners, as
    /// its marks use them (the standard table by default).
    pub fn hops(mut self, hops: HopTable) -> LiveOptions {
        if hops.len() > crate::MAX_HOPS {
            return self.refuse(format!("{} hops, past {}", hops.len(), crate::MAX_HOPS));
        }
        self.hops = hops;
        self
    }

    /// How many caller threads drive the program at once: the receipt
    /// reads a throughput and a latency with it.
    pub fn callers(mut self, callers: u32) -> LiveOptions {
        if callers == 0 {
            return self.refuse("0 callers (at least 1)".to_owned());
        }
        self.callers = Some(callers);
        self
    }

    /// Keep one operation in `every` (1, the default, keeps all).
    pub fn sample_every(mut self, every: u32) -> LiveOptions {
        match Sampling::one_in(every) {
            Some(sampling) => {
                self.sampling = sampling;
                self
            }
            None => self.refuse(format!("sampling one in {every} (1 to {})", crate::collector::MAX_SAMPLE_EVERY)),
        }
    }

    /// The length of a window, 100 ms to a day (10 s by default).
    pub fn window(mut self, window: Duration) -> LiveOptions {
        if !(Duration::from_millis(100)..=Duration::from_secs(86_400)).contains(&window) {
            return self.refuse(format!("a window of {window:?} (100 ms to a day)"));
        }
        self.window = window;
        self
    }

    /// How long an operation's marks are held after its last one before it
    /// counts as done, 1 ms to 60 s (250 ms by default). Longer than the
    /// longest pause between two hops of one operation, or that operation
    /// is split; the longer, the more marks held.
    pub fn settle(mut self, settle: Duration) -> LiveOptions {
        if !(Duration::from_millis(1)..=Duration::from_secs(60)).contains(&settle) {
            return self.refuse(format!("a settle time of {settle:?} (1 ms to 60 s)"));
        }
        self.settle = settle;
        self
    }

    /// Marks each thread's first ring holds (16,384 by default, 384 KiB).
    pub fn ring_marks(mut self, marks: usize) -> LiveOptions {
        if !(1..=MAX_RING_MARKS).contains(&marks) {
            return self.refuse(format!("a ring of {marks} marks (1 to {MAX_RING_MARKS})"));
        }
        self.ring_marks = marks;
        self.ring_cap = self.ring_cap.max(marks);
        self
    }

    /// Marks a thread's ring may grow to when a burst outruns the drain
    /// (1,048,576 by default, 24 MiB); at least the first ring's size.
    pub fn ring_cap(mut self, marks: usize) -> LiveOptions {
        if !(self.ring_marks..=MAX_RING_MARKS).contains(&marks) {
            let least = self.ring_marks;
            return self.refuse(format!("a ring cap of {marks} marks ({least} to {MAX_RING_MARKS})"));
        }
        self.ring_cap = marks;
        self
    }

    /// Marks held for unfinished operations at most (1,048,576 by default).
    pub fn held_marks(mut self, marks: usize) -> LiveOptions {
        if !(1_024..=MAX_RING_MARKS).contains(&marks) {
            return self.refuse(format!("{marks} held marks (1,024 to {MAX_RING_MARKS})"));
        }
        self.held_marks = marks;
        self
    }

    /// Thread roles to make room for (256 by default): marks of threads
    /// past them are dropped and counted. A thread that exited frees its
    /// role for a later thread of its name (or a later unnamed one), so
    /// this is the threads marking at once, not over the run.
    pub fn max_threads(mut self, threads: usize) -> LiveOptions {
        if !(1..=MAX_THREADS).contains(&threads) {
            return self.refuse(format!("room for {threads} threads (1 to {MAX_THREADS})"));
        }
        self.max_threads = threads;
        self
    }

    /// What is wrong with these options, if anything: [`LiveOptions::start`]
    /// refuses them with this line.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Start the capture of `hop!` marks: create the trace, start the
    /// drain, and route the marks of every thread that attached no buffer
    /// to it. One such capture runs at a time in a process.
    pub fn start(self) -> Result<LiveCapture, TraceError> {
        let collector = self.collector();
        if !route::install(&collector) {
            return Err(TraceError::Unwritable {
                reason: "another live capture is running in this process".to_owned(),
            });
        }
        match self.start_draining(collector.clone(), "hopscope_probe::Capture::live", None, None) {
            Ok(mut capture) => {
                capture.routes = true;
                capture.routed = true;
                Ok(capture)
            }
            Err(e) => {
                route::uninstall(&collector);
                Err(e)
            }
        }
    }

    /// The collector these options ask for: rings, growth, sampling.
    pub(crate) fn collector(&self) -> Collector {
        Collector::growing(self.ring_marks, self.ring_cap, self.sampling)
    }

    /// Start a drain of `collector` into the trace: `how` names the capture
    /// in the trace, `machinery` is the span machinery measured at set-up,
    /// `before_last` runs before the last drain.
    pub(crate) fn start_draining(
        self,
        collector: Collector,
        how: &str,
        machinery: Option<SpanMachinery>,
        before_last: Option<BeforeLast>,
    ) -> Result<LiveCapture, TraceError> {
        if let Some(problem) = self.problem {
            return Err(TraceError::Unwritable { reason: format!("live capture: {problem}") });
        }
        let mut header = self.header(how, machinery);
        let host_key = u16::try_from(header.readings.len()).unwrap_or(u16::MAX);
        header.readings.extend(super::host::names());
        let room = self.max_threads * (roles::MAX_NAME_BYTES + 8) + 16_384;
        // An I/O error stays one (its kind intact), naming the path.
        let writer = TraceWriter::create_with_room(&self.path, header, room).map_err(|e| match e {
            TraceError::Io(io) => {
                TraceError::Io(std::io::Error::new(io.kind(), format!("cannot create {}: {io}", self.path.display())))
            }
            other => other,
        })?;
        let ns_per_tick = writer.header().clock.ns_per_tick;
        let clock_info = writer.header().clock.clone();
        let window_ticks = (self.window.as_nanos() as f64 / ns_per_tick.max(f64::MIN_POSITIVE)) as u64;
        let start = clock::now().0;
        let engine = Engine {
            collector: collector.clone(),
            before_last,
            writer,
            settings: Settings {
                path: self.path.clone(),
                settle_ns: u64::try_from(self.settle.as_nanos()).unwrap_or(u64::MAX),
                held_marks: self.held_marks,
            },
            clock: clock_info,
            roles: Roles::new(self.max_threads),
            held: Held::default(),
            windows: Windows::new(start, window_ticks, BLOCK_MARKS),
            started: Instant::now(),
            totals: Totals::default(),
            last_sweep: 0,
            // One look per block's stretch (a window's twentieth): a look
            // reads a file per thread, and costs the program more than its
            // marks when taken at every sweep.
            host: HostReadings::start(window_ticks / 20),
            host_key,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let drain = {
            let stop = stop.clone();
            std::thread::Builder::new().name("hopscope-drain".to_owned()).spawn(move || engine.run(&stop))?
        };
        collector.wake(drain.thread().clone());
        Ok(LiveCapture { path: self.path, collector, routes: false, routed: false, stop, drain: Some(drain) })
    }

    /// The header: one lane (the program), room for the thread roles, the
    /// program's hops, and the facts of how the capture is taken.
    fn header(&self, how: &str, machinery: Option<SpanMachinery>) -> TraceHeader {
        let threads: Vec<String> = (0..self.max_threads).map(roles::placeholder).collect();
        let thread_refs: Vec<&str> = threads.iter().map(String::as_str).collect();
        let mut header = TraceHeader::for_this_host(&[self.lane.as_str()], &thread_refs);
        header.hops = self.hops.clone();
        header.lane_info = vec![LaneInfo::program(&self.lane)];
        header.span_machinery = machinery;
        // What a mark costs here, kept or left out by the sampling: the
        // receipt prices each operation's marks with them.
        let (kept_ns, left_out_ns) = super::cost::measure();
        header.mark_ns = Some(kept_ns);
        header.run.record(RunFact::Live(LiveFact::LeftOutMarkNs), format!("{left_out_ns:.2}"));
        facts::record_start(&mut header.run, how, &self.lane, self.callers, self.sampling, self.settings_facts());
        header
    }

    fn settings_facts(&self) -> facts::Asked {
        facts::Asked {
            window: self.window,
            settle: self.settle,
            ring_marks: self.ring_marks,
            ring_cap: self.ring_cap,
            held_marks: self.held_marks,
            max_threads: self.max_threads,
        }
    }
}
