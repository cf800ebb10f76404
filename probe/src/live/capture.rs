//! The guard of a running live capture: it stops the drain and finishes
//! the trace when asked, or when dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use super::summary::CaptureSummary;
use crate::collector::{Collector, route};
use crate::trace::TraceError;

/// A live capture running: the drain writes its trace until
/// [`LiveCapture::finish`], or until it is dropped.
#[derive(Debug)]
pub struct LiveCapture {
    pub(super) path: PathBuf,
    pub(super) collector: Collector,
    /// Whether it captures `hop!` marks (not a layer's spans).
    pub(super) routes: bool,
    /// Whether `hop!` marks of unattached threads are routed to it now.
    pub(super) routed: bool,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) drain: Option<JoinHandle<Result<CaptureSummary, TraceError>>>,
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
