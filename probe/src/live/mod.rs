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

mod capture;
mod cost;
mod engine;
mod facts;
mod held;
mod host;
mod options;
mod roles;
mod summary;
mod windows;

pub use capture::LiveCapture;
pub use options::{
    DEFAULT_HELD_MARKS, DEFAULT_LIVE_RING_MARKS, DEFAULT_MAX_THREADS, DEFAULT_RING_CAP, DEFAULT_SETTLE, DEFAULT_WINDOW,
    LiveOptions, MAX_THREADS,
};
pub use summary::{CaptureSummary, ThreadDrops};
