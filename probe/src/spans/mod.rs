//! `tracing` spans as hop marks (feature `tracing`).
//!
//! Code instrumented with `tracing` gets hopscope's decomposition without
//! touching the probe API. Name the spans to watch, the side they run on
//! and what their inside is: [`HopLayer::caller`] and [`HopLayer::writer`]
//! for the subject's own code, [`HopLayer::database`] for the database
//! call, [`HopLayer::wait`] for a caller waiting on the writer,
//! [`HopLayer::owned_by`] for anything else. Each becomes two hops, its
//! enter and its exit, named after it (`execute.enter`, `execute.exit`), or
//! map spans onto hops of your own table ([`HopLayer::span`]). The
//! declaration decides the slice's owner in every receipt: the time
//! between a `database` span's enter and exit is SQLite's, a `writer`
//! span's is the writer's own work. The operation
//! id comes from a span field (`op` by default), given when the span is
//! created or recorded later with `Span::record`; spans on the caller and
//! the writer thread that carry the same id join into one operation.
//!
//! **One call.** [`HopLayer::capture`] returns the layer and a guard that
//! writes a `.hop` trace when dropped; the harness takes a layer as it is
//! ([`HopLayer::collector`] is how it drains marks at block ends). No thread
//! has to attach a buffer or hand its marks in: a thread's first mark gives
//! it a ring of its own ([`Collector`]), drained from outside.
//!
//! **Async.** A future's span is entered on every poll. By default
//! ([`Edges::FirstEnterLastExit`]) a span marks its first enter and its last
//! exit, whatever thread polled it, so an operation carries each hop once.
//! Both ticks are kept in the span's slot and handed over when it closes.
//!
//! **Cost.** Nothing is allocated per span: a span's binding lives in a
//! fixed table of atomics ([`live`]), and whether a span is watched is
//! decided once per callsite ([`callsites`]), not per span. What the span
//! machinery itself adds inside a slice (the Registry creating and closing
//! spans, this layer's callbacks) is measured by [`machinery`], and which
//! span events lie inside each slice is counted as they run, per thread
//! (`events`), so a slice of any shape is stated as the sum of its events.

mod callsites;
mod capture;
mod events;
mod layer;
mod live;
pub mod machinery;
mod marking;
mod segments;
mod subscriber;
mod subscriber_switch;
mod switch;

pub use crate::collector::{Collector, DEFAULT_RING_MARKS, Drained, MAX_RING_MARKS, ThreadMarks};
pub use capture::SpanCapture;
pub use layer::{Edges, HopLayer, MAX_LIVE_SPANS, MAX_WATCHES, SERVES_FIELD, SpanCounts};
pub use subscriber::HopSubscriber;
pub use subscriber_switch::{MAX_SUBSCRIBERS, SubscriberSwitch};
pub use switch::LayerSwitch;

#[cfg(test)]
mod tests;
