//! The profiling path's switch: one process-wide subscriber that forwards
//! to whichever registered [`HopSubscriber`] is active, as [`LayerSwitch`]
//! does for layers under a Registry.
//!
//! There is no Registry to own the spans here, so a span belongs to the
//! subscriber that created it for its whole life: its id carries that
//! subscriber's number (bits 48 to 55, the number plus one), and every
//! later callback (enter, exit, clone, close) goes to that subscriber
//! whichever is active by then. With none active no span is enabled.
//!
//! [`LayerSwitch`]: super::LayerSwitch

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

use super::{HopLayer, HopSubscriber};

/// Subscribers one switch can hold.
pub const MAX_SUBSCRIBERS: usize = 64;

/// Where a subscriber's number sits in the ids the switch hands out: its
/// own ids stay below (a slot index and a 32-bit generation).
const NUMBER_SHIFT: u32 = 48;

/// The id of a span no subscriber created (none active at its creation).
const NOBODY: u64 = u64::MAX;

/// A subscriber that forwards to the active [`HopSubscriber`], if any.
#[derive(Debug)]
pub struct SubscriberSwitch {
    /// The active subscriber's number plus one, 0 for none.
    active: AtomicUsize,
    /// Every subscriber ever added, in number order; set once each.
    subscribers: Box<[OnceLock<HopSubscriber>]>,
    /// Numbers handed out so far.
    added: Mutex<usize>,
}

static GLOBAL: OnceLock<Option<&'static SubscriberSwitch>> = OnceLock::new();

/// The global default's forwarder: tracing keeps a `'static` reference.
#[derive(Debug, Clone, Copy)]
struct Global(&'static SubscriberSwitch);

impl SubscriberSwitch {
    /// A switch with no subscriber yet.
    pub fn new() -> SubscriberSwitch {
        SubscriberSwitch {
            active: AtomicUsize::new(0),
            subscribers: (0..MAX_SUBSCRIBERS).map(|_| OnceLock::new()).collect(),
            added: Mutex::new(0),
        }
    }

    /// The process's switch, installed as the global default subscriber on
    /// the first call. `None` when the process already had a global
    /// subscriber (its own, or the Registry path's [`super::LayerSwitch`]).
    pub fn global() -> Option<&'static SubscriberSwitch> {
        *GLOBAL.get_or_init(|| {
            let switch: &'static SubscriberSwitch = Box::leak(Box::new(SubscriberSwitch::new()));
            tracing::subscriber::set_global_default(Global(switch)).ok().map(|()| switch)
        })
    }

    /// The process's switch if [`SubscriberSwitch::global`] installed it.
    pub fn installed() -> Option<&'static SubscriberSwitch> {
        GLOBAL.get().copied().flatten()
    }

    /// Register `layer`'s watches as a subscriber of their own (fresh
    /// binding tables, the same collector) and get the number that
    /// activates it; `None` when the switch holds [`MAX_SUBSCRIBERS`].
    pub fn add(&self, layer: &HopLayer) -> Option<usize> {
        let mut added = self.added.lock().unwrap_or_else(PoisonError::into_inner);
        let number = *added;
        self.subscribers.get(number)?.set(layer.clone().subscriber()).ok()?;
        *added += 1;
        Some(number)
    }

    /// Make subscriber `number` active, or none. Every callsite's interest
    /// is asked again (`rebuild_interest_cache`, a walk over the program's
    /// callsites): the active subscriber's answer, always or never, is then
    /// cached at each callsite, so a span creation asks nobody whether it
    /// is enabled and a clean block's spans are never created.
    pub fn activate(&self, number: Option<usize>) {
        let value = number.filter(|n| self.subscribers.get(*n).is_some_and(|s| s.get().is_some())).map_or(0, |n| n + 1);
        if self.active.swap(value, Ordering::AcqRel) != value {
            tracing::callsite::rebuild_interest_cache();
        }
    }

    /// The active subscriber's number, if any.
    pub fn active_index(&self) -> Option<usize> {
        self.active.load(Ordering::Acquire).checked_sub(1)
    }

    #[inline]
    fn active(&self) -> Option<(u64, &HopSubscriber)> {
        let number = self.active.load(Ordering::Acquire).checked_sub(1)?;
        Some((number as u64 + 1, self.subscribers.get(number)?.get()?))
    }

    /// The subscriber that created span `id`, and the id it knows it by.
    #[inline]
    fn owner(&self, id: &Id) -> Option<(&HopSubscriber, Id)> {
        let id = id.into_u64();
        let tag = (id >> NUMBER_SHIFT) as usize;
        let number = tag.checked_sub(1)?;
        let subscriber = self.subscribers.get(number)?.get()?;
        Some((subscriber, Id::from_u64(id & ((1 << NUMBER_SHIFT) - 1))))
    }
}

impl Default for SubscriberSwitch {
    fn default() -> Self {
        SubscriberSwitch::new()
    }
}

impl Subscriber for SubscriberSwitch {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // Asked again whenever the active subscriber changes.
        self.active().map_or(Interest::never(), |(_, s)| s.register_callsite(metadata))
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.active().is_some_and(|(_, s)| s.enabled(metadata))
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let Some((tag, subscriber)) = self.active() else { return Id::from_u64(NOBODY) };
        let id = subscriber.new_span(attrs).into_u64();
        // The subscriber's "unbound" id stays what it is: it marks nothing.
        if id >> NUMBER_SHIFT != 0 { Id::from_u64(NOBODY) } else { Id::from_u64(id | tag << NUMBER_SHIFT) }
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((subscriber, id)) = self.owner(span) {
            subscriber.record(&id, values);
        }
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        // Both spans of one subscriber: a link across two is no link.
        if let (Some((subscriber, id)), Some((other, follows))) = (self.owner(span), self.owner(follows))
            && std::ptr::eq(subscriber, other)
        {
            subscriber.record_follows_from(&id, &follows);
        }
    }

    fn event(&self, _event: &Event<'_>) {}

    #[inline]
    fn enter(&self, span: &Id) {
        if let Some((subscriber, id)) = self.owner(span) {
            subscriber.enter(&id);
        }
    }

    #[inline]
    fn exit(&self, span: &Id) {
        if let Some((subscriber, id)) = self.owner(span) {
            subscriber.exit(&id);
        }
    }

    fn clone_span(&self, span: &Id) -> Id {
        if let Some((subscriber, id)) = self.owner(span) {
            subscriber.clone_span(&id);
        }
        span.clone()
    }

    fn try_close(&self, span: Id) -> bool {
        match self.owner(&span) {
            Some((subscriber, id)) => subscriber.try_close(id),
            None => true,
        }
    }
}

impl Subscriber for Global {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.0.register_callsite(metadata)
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        self.0.new_span(attrs)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        self.0.record(span, values);
    }
    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.0.record_follows_from(span, follows);
    }
    fn event(&self, event: &Event<'_>) {
        self.0.event(event);
    }
    #[inline]
    fn enter(&self, span: &Id) {
        self.0.enter(span);
    }
    #[inline]
    fn exit(&self, span: &Id) {
        self.0.exit(span);
    }
    fn clone_span(&self, id: &Id) -> Id {
        self.0.clone_span(id)
    }
    fn try_close(&self, id: Id) -> bool {
        self.0.try_close(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop::Hop;

    #[test]
    fn a_span_belongs_to_the_subscriber_that_created_it_across_a_switch() {
        let switch = SubscriberSwitch::new();
        let first = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT));
        let second = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT));
        let (a, b) = (switch.add(&first).expect("room"), switch.add(&second).expect("room"));
        let dispatch = tracing::Dispatch::new(Global(Box::leak(Box::new(switch))));
        let Global(switch) = *dispatch.downcast_ref::<Global>().expect("global");
        tracing::dispatcher::with_default(&dispatch, || {
            tracing::info_span!("send", op = 1u64).in_scope(|| {});
            switch.activate(Some(a));
            let span = tracing::info_span!("send", op = 2u64);
            // Switched while the span lives: it still marks for `first`.
            switch.activate(Some(b));
            span.in_scope(|| {});
            drop(span);
            tracing::info_span!("send", op = 3u64).in_scope(|| {});
            switch.activate(None);
            tracing::info_span!("send", op = 4u64).in_scope(|| {});
        });
        let ops = |layer: &HopLayer| {
            layer.collector().drain().threads.iter().flat_map(|t| t.marks.iter().map(|m| m.op.0)).collect::<Vec<_>>()
        };
        assert_eq!(ops(&first), [2, 2], "created under the first: marked there");
        assert_eq!(ops(&second), [3, 3]);
        assert_eq!(switch.active_index(), None);
    }
}
