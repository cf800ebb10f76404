//! The one-call set-up: a layer and a guard that streams its marks to a
//! `.hop` trace while the program runs.
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
//! receipt can state its share of each slice. Then it is a live capture
//! ([`crate::live`]) of the layer's marks: a background drain empties the
//! rings, holds each operation until it is done and writes a block per
//! stretch of each window, in memory bounded by the options whatever the
//! run's length; sampling, windows and ring sizes are the options'
//! ([`HopLayer::capture_with`]). Each thread that marked becomes a thread
//! role named after the thread.

use std::path::Path;
use std::time::Duration;

use super::HopLayer;
use crate::capture::Capture;
use crate::live::{CaptureSummary, LiveCapture, LiveOptions};
use crate::trace::TraceError;

/// Empty span operations the machinery is measured over at set-up.
const MACHINERY_SAMPLES: usize = 20_000;

/// How long finishing waits for spans still open on other threads.
const SETTLE: Duration = Duration::from_millis(200);

/// Streams the marks of a [`HopLayer`] to a trace until finished or
/// dropped.
#[derive(Debug)]
pub struct SpanCapture {
    live: LiveCapture,
}

impl HopLayer {
    /// The one-call set-up: this layer, and a guard that streams the marks
    /// it makes to a trace at `path` until finished or dropped. Refuses a
    /// layer with a [`HopLayer::problem`], and a path it cannot create,
    /// before anything runs.
    pub fn capture(self, path: impl AsRef<Path>) -> Result<(HopLayer, SpanCapture), TraceError> {
        let options = self.live_options(path.as_ref());
        self.capture_with(options)
    }

    /// A live capture's default options, with the ring this layer was
    /// given if it was given one ([`HopLayer::ring_marks`]).
    fn live_options(&self, path: &Path) -> LiveOptions {
        let options = Capture::live(path);
        match self.collector().ring_marks() {
            crate::collector::DEFAULT_RING_MARKS => options,
            ring => options.ring_marks(ring),
        }
    }

    /// [`HopLayer::capture`] with the options of a live capture: its
    /// sampling, windows, rings, callers (the hop table is the layer's).
    pub fn capture_with(self, options: LiveOptions) -> Result<(HopLayer, SpanCapture), TraceError> {
        self.capture_through(options, super::machinery::Calibrator::private, "hopscope_probe::HopLayer::capture")
    }

    /// [`HopLayer::capture`] for the profiling path: this layer's watches
    /// as a [`HopSubscriber`](super::HopSubscriber) (set it as the global
    /// default), and the guard; the span machinery is measured through
    /// that path and the trace says so.
    pub fn capture_profiling(self, path: impl AsRef<Path>) -> Result<(super::HopSubscriber, SpanCapture), TraceError> {
        let options = self.live_options(path.as_ref());
        self.capture_profiling_with(options)
    }

    /// [`HopLayer::capture_profiling`] with the options of a live capture.
    pub fn capture_profiling_with(
        self,
        options: LiveOptions,
    ) -> Result<(super::HopSubscriber, SpanCapture), TraceError> {
        let (layer, capture) = self.capture_through(
            options,
            super::machinery::Calibrator::profiling,
            "hopscope_probe::HopLayer::capture_profiling",
        )?;
        Ok((layer.subscriber(), capture))
    }

    fn capture_through(
        mut self,
        options: LiveOptions,
        calibrator: fn() -> super::machinery::Calibrator,
        how: &str,
    ) -> Result<(HopLayer, SpanCapture), TraceError> {
        if let Some(problem) = self.problem().or(options.problem()) {
            return Err(TraceError::Unwritable { reason: format!("span layer: {problem}") });
        }
        let options = options.hops(self.hops().clone());
        // Before the program's subscriber exists, on this thread: what the
        // span machinery holds inside each kind of slice (~40 ms).
        let machinery = calibrator().measure(MACHINERY_SAMPLES);
        self.collector = options.collector();
        let settling = self.clone();
        let before_last = Box::new(move || settling.settle(SETTLE, &mut Vec::new()));
        let live = options.start_draining(self.collector.clone(), how, Some(machinery), Some(before_last))?;
        Ok((self, SpanCapture { live }))
    }
}

impl SpanCapture {
    /// Where the trace goes.
    pub fn path(&self) -> &Path {
        self.live.path()
    }

    /// Stop, drain what is left and write the trace's end; returns what it
    /// holds (printed on standard error too).
    pub fn finish(self) -> Result<CaptureSummary, TraceError> {
        self.live.finish()
    }
}
