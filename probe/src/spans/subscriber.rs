//! [`HopSubscriber`]: a `tracing` subscriber of hopscope's own, for a
//! profiling build that only wants hop marks from its spans.
//!
//! Through a `Registry` every span, watched or not, takes a slot in the
//! Registry's slab (its id, parent, field extensions, reference count) and
//! [`HopLayer`] then finds its binding by hashing that id. Here a span the
//! layer does not watch is disabled at its callsite (never created), and a
//! watched span's id *is* its binding: a slot of a fixed table of atomics,
//! claimed from where the creating thread last claimed, its index in the
//! id's low bits (as fastrace keeps a span's record in thread-local, fixed
//! storage rather than a global registry). Enter and exit are one clock
//! read and one load to find the slot; nothing is allocated.
//!
//! What it does not do: other layers (it is the whole subscriber), events
//! (dropped), `Span::current()` and parent lookups (no span stack is kept),
//! fields other than the operation id. Pick [`HopLayer`] under a `Registry`
//! when the program's spans also feed logs or other layers.

use std::sync::atomic::Ordering;

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

use super::HopLayer;
use crate::clock;

/// The id of a watched span that found no free slot: it marks nothing
/// (and is counted as unbound). No claim issues it: its slot bits name
/// the last slot with a generation no slot reaches.
const UNBOUND: u64 = u64::MAX;

/// A `tracing::Subscriber` that turns the spans a [`HopLayer`] watches into
/// hop marks and does nothing else ([`HopLayer::subscriber`]).
#[derive(Debug, Clone)]
pub struct HopSubscriber {
    layer: HopLayer,
}

impl HopLayer {
    /// This layer's watches as a subscriber of their own, without a
    /// `Registry`: the profiling path ([`HopSubscriber`]). Marks gather in
    /// the same [`HopLayer::collector`].
    pub fn subscriber(mut self) -> HopSubscriber {
        // A table of its own: its span ids are its own.
        self.reset_tables();
        HopSubscriber { layer: self }
    }
}

impl HopSubscriber {
    /// The layer it was made from: its collector, counts and hop table.
    pub fn layer(&self) -> &HopLayer {
        &self.layer
    }
}

impl Subscriber for HopSubscriber {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if !metadata.is_span() {
            return Interest::never();
        }
        let watch = self.layer.watch_named(metadata.name());
        self.layer.callsites.remember(metadata, watch);
        if (watch as usize) < self.layer.watches.len() { Interest::always() } else { Interest::never() }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_span() && self.layer.watches(metadata)
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        // No span stack is kept: a span is a root only when created with
        // `parent: None` (its cost here does not depend on a parent).
        let root = attrs.is_root();
        let claimed = self.layer.watch_index(attrs.metadata()).and_then(|watch| {
            let (id, slot) = self.layer.live.claim(watch, self.layer.op_of(attrs))?;
            self.layer.set_binding(slot, watch, root);
            self.layer.link_new(slot, attrs);
            Some(id)
        });
        match claimed {
            Some(id) => {
                self.layer.events.note(if root {
                    super::events::Event::CreateRoot
                } else {
                    super::events::Event::Create
                });
                Id::from_u64(id)
            }
            None => {
                self.layer.counts.unbound.fetch_add(1, Ordering::Relaxed);
                Id::from_u64(UNBOUND)
            }
        }
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(slot) = self.layer.live.claimed(span.into_u64()) {
            self.layer.record_into(slot, values);
        }
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.layer.follows(span.into_u64(), follows.into_u64(), |id| self.layer.live.claimed(id));
    }

    fn event(&self, _event: &Event<'_>) {}

    #[inline]
    fn enter(&self, span: &Id) {
        let ticks = clock::now();
        if let Some(slot) = self.layer.live.claimed(span.into_u64()) {
            self.layer.entered(slot, ticks);
        }
    }

    #[inline]
    fn exit(&self, span: &Id) {
        let ticks = clock::now();
        if let Some(slot) = self.layer.live.claimed(span.into_u64()) {
            self.layer.exited(slot, ticks);
        }
    }

    fn clone_span(&self, id: &Id) -> Id {
        if let Some(slot) = self.layer.live.claimed(id.into_u64()) {
            slot.refs.fetch_add(1, Ordering::Relaxed);
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let Some(slot) = self.layer.live.claimed(id.into_u64()) else { return true };
        // The last handle hands the span's marks over, then frees the slot
        // (as Arc's drop: the decrement releases, the last one acquires).
        // A span never cloned has one handle, the one closing: no other
        // thread can add one, so no read-modify-write is needed.
        if slot.refs.load(Ordering::Acquire) != 1 {
            if slot.refs.fetch_sub(1, Ordering::Release) != 1 {
                return false;
            }
            std::sync::atomic::fence(Ordering::Acquire);
        }
        self.layer.closed(slot);
        self.layer.hand_over(slot);
        self.layer.live.release(id.into_u64(), slot);
        true
    }
}
