//! Live captures: a running program's marks streamed to a `.hop` trace by a
//! background drain, in bounded memory, for as long as it runs.
//!
//! ```no_run
//! use std::time::Duration;
//! use hopscope_probe::{Capture, HopTable};
//!
//! # fn main() -> Result<(), hopscope_probe::TraceError> {
//! let capture = Capture::live("ingest.hop")
//!     .hops(HopTable::standard()) // the program's own table, owners and all
//!     .callers(8)
//!     .sample_every(16) // one operation in 16, every hop of it
//!     .window(Duration::from_secs(10))
//!     .start()?;
//! // ... the program runs; `hop!` marks on any thread that attached no
//! // buffer of its own reach the capture ...
//! let summary = capture.finish()?; // or let it drop at the end of main
//! println!("{summary}");
//! # Ok(())
//! # }
//! ```
//!
//! How it holds up:
//! - **Memory is bounded** by what the options state: each marking thread's
//!   ring ([`LiveOptions::ring_marks`], growing up to
//!   [`LiveOptions::ring_cap`] only when a burst outruns the drain), the
//!   marks of operations not yet done ([`LiveOptions::held_marks`]) and one
//!   block per open window. Nothing grows with the length of the run.
//! - **Nothing is lost silently.** A marking thread wakes the drain when its
//!   ring is half full; a ring that fills anyway moves on to one twice the
//!   size, up to the cap; past it a mark is dropped and counted, per
//!   thread, in the trace, the summary and the line printed at the end.
//!   The last marks of a short program are drained when it finishes.
//! - **Each operation whole in one block**: an operation is done once no
//!   mark of it has arrived for [`LiveOptions::settle`]; a batch and the
//!   operations it serves are done together.
//! - **Windows**: blocks carry their window (every
//!   [`LiveOptions::window`]) as their pass, so a long capture is analysed
//!   and compared window by window.
//! - **Sampling** keeps one operation in N, decided from its id, so every
//!   thread keeps the same operations and an unsampled one costs a hash
//!   and a compare, no clock read ([`crate::collector::Sampling`]).

mod engine;
mod facts;
mod held;
mod options;
mod roles;
mod windows;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

pub(crate) use options::Settings;
pub use options::{
    DEFAULT_HELD_MARKS, DEFAULT_LIVE_RING_MARKS, DEFAULT_MAX_THREADS, DEFAULT_RING_CAP, DEFAULT_SETTLE, DEFAULT_WINDOW,
    LiveOptions, MAX_THREADS,
};

use crate::collector::{Collector, route};
use crate::trace::TraceError;

/// A live capture running: the drain writes its trace until
/// [`LiveCapture::finish`], or until it is dropped.
#[derive(Debug)]
pub struct LiveCapture {
    path: PathBuf,
    collector: Collector,
    /// Whether it captures `hop!` marks (not a layer's spans).
    routes: bool,
    /// Whether `hop!` marks of unattached threads are routed to it now.
    routed: bool,
    stop: Arc<AtomicBool>,
    drain: Option<JoinHandle<Result<CaptureSummary, TraceError>>>,
}

/// Marks one thread dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadDrops {
    /// The thread's role name (its name), or `(no thread)`.
    pub thread: String,
    /// Marks it dropped.
    pub dropped: u64,
}

/// What a finished capture wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureSummary {
    /// The trace.
    pub path: PathBuf,
    /// Operations written (shared intervals not counted).
    pub operations: u64,
    /// Marks written.
    pub marks: u64,
    /// Marks dropped, all threads.
    pub dropped: u64,
    /// Marks dropped, per thread that dropped any.
    pub dropped_by_thread: Vec<ThreadDrops>,
    /// Threads that marked.
    pub threads: usize,
    /// Windows the capture spans.
    pub windows: u32,
    /// Blocks written.
    pub blocks: u32,
    /// Operations handed on before they settled (held marks at their cap).
    pub cut: u64,
    /// Marks of hops the capture's table does not declare, left out (give
    /// the capture the program's table: [`LiveOptions::hops`]).
    pub undeclared_hops: u64,
    /// One operation in this many was kept.
    pub sample_every: u32,
    /// How long it ran, s.
    pub seconds: f64,
    /// The most marks held at once for unfinished operations.
    pub peak_held_marks: usize,
    /// The largest ring of a thread still marking at the end, marks.
    pub largest_ring_marks: usize,
}

impl fmt::Display for CaptureSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sampled =
            if self.sample_every > 1 { format!(" (1 in {} sampled)", self.sample_every) } else { String::new() };
        write!(
            f,
            "captured {} operations{sampled} from {} threads in {:.1} s, {} windows → {}; ",
            self.operations,
            self.threads,
            self.seconds,
            self.windows,
            self.path.display()
        )?;
        if self.dropped == 0 {
            f.write_str("no mark dropped")?;
        } else {
            let per: Vec<String> =
                self.dropped_by_thread.iter().map(|d| format!("{} {}", d.thread, d.dropped)).collect();
            write!(f, "{} marks DROPPED ({})", self.dropped, per.join(", "))?;
        }
        if self.undeclared_hops > 0 {
            write!(
                f,
                "; {} marks of hops the table does not declare LEFT OUT (give the capture the program's hop table)",
                self.undeclared_hops
            )?;
        }
        if self.cut > 0 {
            write!(f, "; {} operations cut before they settled (held marks at their cap)", self.cut)?;
        }
        Ok(())
    }
}

impl LiveCapture {
    /// Where the trace goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The collector the capture drains (a span capture's is its layer's).
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// Stop routing `hop!` marks to the capture until
    /// [`LiveCapture::resume`]: marks made meanwhile cost a thread-local
    /// look-up and a relaxed load, and are counted as made on a thread with
    /// no buffer. For paired runs of the same program, capture on and off.
    pub fn pause(&mut self) {
        if self.routed {
            route::uninstall(&self.collector);
            self.routed = false;
        }
    }

    /// Route `hop!` marks to the capture again after a
    /// [`LiveCapture::pause`]; false when another live capture took the
    /// route meanwhile, or this one captures a layer's spans.
    pub fn resume(&mut self) -> bool {
        self.routed
            || (self.routes && route::install(&self.collector) && {
                self.routed = true;
                true
            })
    }

    /// Stop, drain what is left, write the trace's end and return what it
    /// holds. The summary is printed on standard error too, so a program
    /// that ignores it still says what it captured.
    pub fn finish(mut self) -> Result<CaptureSummary, TraceError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<CaptureSummary, TraceError> {
        if self.routed {
            route::uninstall(&self.collector);
            self.routed = false;
        }
        let Some(drain) = self.drain.take() else {
            return Err(TraceError::Unwritable { reason: "the capture was finished already".to_owned() });
        };
        self.stop.store(true, Ordering::Release);
        drain.thread().unpark();
        let summary = drain
            .join()
            .map_err(|_| TraceError::Unwritable { reason: "the capture's drain thread panicked".to_owned() })??;
        eprintln!("hopscope: {summary}");
        Ok(summary)
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        if self.drain.is_some()
            && let Err(e) = self.stop_and_join()
        {
            // A guard dropped at the end of `main` has no caller to return
            // to: say it once.
            eprintln!("hopscope: cannot finish the capture {}: {e}", self.path.display());
        }
    }
}
