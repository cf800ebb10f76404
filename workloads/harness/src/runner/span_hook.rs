//! The runner's one seam, per block, with lanes probed by `tracing`
//! spans: before a block the lane's span layer is switched on (or every
//! layer off, for a lane without one); after it, the marks its spans made
//! join the block's streams and the machinery is measured again. Built
//! without the `tracing` feature, the hook does nothing, and the block
//! runner does not know the difference.

use std::thread::ThreadId;

use hopscope_probe::trace::Stream;

use crate::readings::SpanReadings;

/// A lane's span layer as the block runner sees it.
#[derive(Default)]
pub(crate) struct SpanHook {
    #[cfg(feature = "tracing")]
    lane: Option<crate::spans::SpanLane>,
}

impl SpanHook {
    /// The hook of a lane running under `lane` (`None`: a lane without
    /// span marks).
    #[cfg(feature = "tracing")]
    pub(crate) fn new(lane: Option<crate::spans::SpanLane>) -> SpanHook {
        SpanHook { lane }
    }

    /// Before a block: this lane's layer on, every other one off.
    pub(crate) fn before_block(&self) {
        #[cfg(feature = "tracing")]
        match &self.lane {
            Some(spans) => spans.before_block(),
            None => crate::spans::none_active(),
        }
    }

    /// After a block: the marks the lane's spans made, added to `streams`
    /// (a caller's under its trace thread: `callers` pairs each caller
    /// thread with its index), and what the span machinery adds to the
    /// block's readings.
    // A `Vec` because the span lane appends streams for threads the
    // session did not know; without `tracing` nothing is appended.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables, clippy::ptr_arg))]
    pub(crate) fn after_block(&mut self, streams: &mut Vec<Stream>, callers: &[(ThreadId, u16)]) -> SpanReadings {
        #[cfg(feature = "tracing")]
        if let Some(spans) = &mut self.lane {
            return spans.after_block(streams, &callers.iter().copied().collect());
        }
        SpanReadings::default()
    }
}
