//! The layer's callbacks: binding a span when it is created, noting its
//! enters and exits, and handing its marks over when it closes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

use super::callsites::UNWATCHED;
use super::events::Event;
use super::layer::{Edges, HopLayer, SHARED_ID_BIT, Watch};
use super::live;
use crate::clock::{self, Ticks};
use crate::hop::{Hop, Mark, OpId};

impl HopLayer {
    /// The index of the watch a span callsite belongs to, by its name.
    pub(super) fn watch_named(&self, name: &str) -> u32 {
        self.watches.iter().position(|w| w.span == name).map_or(UNWATCHED, |i| i as u32)
    }

    /// The index of the watch a span callsite belongs to, decided once per
    /// callsite.
    #[inline]
    pub(super) fn watch_index(&self, metadata: &Metadata<'_>) -> Option<u32> {
        let index = self.callsites.watch(metadata, |name| self.watch_named(name));
        ((index as usize) < self.watches.len()).then_some(index)
    }

    /// Whether spans of this callsite are watched.
    pub(super) fn watches(&self, metadata: &Metadata<'_>) -> bool {
        self.watch_index(metadata).is_some()
    }

    /// A new span, `root` when it has no parent (the Registry creates and
    /// closes a root more cheaply: no parent's handle to take or drop).
    pub(super) fn new_span(&self, attrs: &Attributes<'_>, id: &Id, root: bool) {
        let Some(index) = self.watch_index(attrs.metadata()) else {
            self.events.note(Event::Unwatched);
            return;
        };
        self.events.note(if root { Event::CreateRoot } else { Event::Create });
        match self.live.insert(id.into_u64(), index, self.op_of(attrs)) {
            Some(slot) => {
                self.set_binding(slot, index, root);
                self.link_new(slot, attrs);
            }
            None => {
                self.counts.unbound.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Copy watch `index`'s hops into a freshly bound `slot`, and whether
    /// its span is a root.
    #[inline]
    pub(super) fn set_binding(&self, slot: &live::Slot, index: u32, root: bool) {
        slot.root.store(root, Ordering::Relaxed);
        if let Some(watch) = self.watches.get(index as usize) {
            slot.set_hops(watch.on_enter, watch.on_exit);
        }
    }

    /// The operation id among a new span's fields, if given; a shared
    /// interval given none gets one of its own.
    pub(super) fn op_of(&self, attrs: &Attributes<'_>) -> Option<u64> {
        let mut visitor = OpVisitor { field: self.op_field, op: None };
        attrs.record(&mut visitor);
        visitor.op.or_else(|| self.is_shared(attrs.metadata()).then(|| self.shared_id()))
    }

    /// A fresh id for a shared interval that carries none.
    fn shared_id(&self) -> u64 {
        SHARED_ID_BIT | self.counts.shared_ids.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
    }

    /// Whether spans of this callsite are watched as shared intervals.
    fn is_shared(&self, metadata: &Metadata<'_>) -> bool {
        self.watch_index(metadata).and_then(|i| self.watches.get(i as usize)).is_some_and(|w| w.shared)
    }

    /// Links a new shared span names among its fields (`serves = op`).
    pub(super) fn link_new(&self, slot: &live::Slot, attrs: &Attributes<'_>) {
        if self.is_shared(attrs.metadata()) {
            let mut visitor = OpVisitor { field: self.serves_field, op: None };
            attrs.record(&mut visitor);
            if let Some(member) = visitor.op {
                self.link(slot, member);
            }
        }
    }

    pub(super) fn record(&self, id: &Id, values: &Record<'_>) {
        if let Some(slot) = self.live.find(id.into_u64()) {
            self.record_into(slot, values);
        }
    }

    /// A recorded operation id into the span's slot, or, into a shared
    /// interval's `serves` field, a link to the operation it serves.
    pub(super) fn record_into(&self, slot: &live::Slot, values: &Record<'_>) {
        let mut visitor = OpVisitor { field: self.op_field, op: None };
        values.record(&mut visitor);
        if let Some(op) = visitor.op {
            slot.set_op(op);
        }
        let mut serves = OpVisitor { field: self.serves_field, op: None };
        values.record(&mut serves);
        if let Some(member) = serves.op {
            self.link(slot, member);
        }
    }

    /// Link the shared interval of `slot` to the operation `member` it
    /// serves: a link mark on this thread's ring (counted as unlinked when
    /// the span is no shared interval or has no id).
    pub(super) fn link(&self, slot: &live::Slot, member: u64) {
        let shared = self.watches.get(slot.watch.load(Ordering::Relaxed) as usize).is_some_and(|w| w.shared);
        match slot.op().filter(|_| shared) {
            Some(interval) => self.collector.push(Mark::serves(OpId(interval), OpId(member))),
            None => {
                self.counts.unlinked.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `span` follows from `follows`: when `span` is a shared interval and
    /// `follows` a watched span with an op id, `span` serves that operation.
    pub(super) fn follows<'a>(&self, span: u64, follows: u64, find: impl Fn(u64) -> Option<&'a live::Slot>) {
        let (Some(slot), Some(member)) = (find(span), find(follows).and_then(live::Slot::op)) else {
            self.counts.unlinked.fetch_add(1, Ordering::Relaxed);
            return;
        };
        self.link(slot, member);
    }

    #[inline]
    pub(super) fn enter(&self, id: &Id) {
        let ticks = clock::now();
        match self.live.find(id.into_u64()) {
            Some(slot) => self.entered(slot, ticks),
            None => self.events.note(Event::Unwatched),
        }
    }

    #[inline]
    pub(super) fn exit(&self, id: &Id) {
        let ticks = clock::now();
        match self.live.find(id.into_u64()) {
            Some(slot) => self.exited(slot, ticks),
            None => self.events.note(Event::Unwatched),
        }
    }

    /// A span's enter at `ticks`, into its slot (and a mark now, with
    /// [`Edges::EveryEnter`]); counted among the thread's span events.
    #[inline]
    pub(super) fn entered(&self, slot: &live::Slot, ticks: Ticks) {
        let first = slot.entered(ticks.0);
        match (slot.enter_hop(), first || self.edges == Edges::EveryEnter) {
            (Some(hop), true) => self.events.marked(hop),
            (None, true) => self.events.note(Event::Enter),
            (_, false) => self.events.note(Event::Reenter),
        }
        if self.edges == Edges::EveryEnter {
            self.mark_now(slot, ticks, |w| w.on_enter);
        }
    }

    /// A span's exit at `ticks`, into its slot; counted among the thread's
    /// span events (an exit that may be its span's last marks now).
    #[inline]
    pub(super) fn exited(&self, slot: &live::Slot, ticks: Ticks) {
        slot.exited(ticks.0);
        match slot.exit_hop() {
            Some(hop) => self.events.marked(hop),
            None => self.events.note(Event::Exit),
        }
        if self.edges == Edges::EveryEnter {
            self.mark_now(slot, ticks, |w| w.on_exit);
        }
    }

    /// A watched span closed on this thread.
    #[inline]
    pub(super) fn closed(&self, slot: &live::Slot) {
        self.events.note(if slot.root.load(Ordering::Relaxed) { Event::CloseRoot } else { Event::Close });
    }

    pub(super) fn mark_now(&self, slot: &live::Slot, ticks: Ticks, hop: impl Fn(&Watch) -> Option<Hop>) {
        let watch = self.watches.get(slot.watch.load(Ordering::Relaxed) as usize);
        if let (Some(op), Some(hop)) = (slot.op(), watch.and_then(hop)) {
            self.collector.push(Mark::new(OpId(op), hop, ticks));
        }
    }

    /// Hand over a closing span's marks and free its slot; false when the
    /// span was not bound here.
    pub(super) fn close(&self, id: &Id) -> bool {
        let Some(slot) = self.live.find(id.into_u64()) else {
            self.events.note(Event::Unwatched);
            return false;
        };
        self.closed(slot);
        self.hand_over(slot);
        // Freed only after its marks are in the collector: a drain that
        // waited for this span to close ([`HopLayer::settle`]) finds them.
        self.live.remove(slot);
        true
    }

    /// A closing span's marks (first enter, last exit) to the collector,
    /// and its counts.
    pub(super) fn hand_over(&self, slot: &live::Slot) {
        let index = slot.watch.load(Ordering::Relaxed) as usize;
        let Some(watch) = self.watches.get(index) else { return };
        let Some(op) = slot.op() else {
            self.collector.close(index, 0, &[], false);
            return;
        };
        let enters = u64::from(slot.enters.load(Ordering::Relaxed));
        if self.edges != Edges::FirstEnterLastExit {
            self.collector.close(index, enters, &[], true);
            return;
        }
        let (first, last) = (slot.first_enter.load(Ordering::Relaxed), slot.last_exit.load(Ordering::Relaxed));
        // Enter before exit: a thread's marks stay in time order.
        let enter = watch.on_enter.filter(|_| first != 0).map(|hop| Mark::new(OpId(op), hop, Ticks(first)));
        let exit = watch.on_exit.filter(|_| last != 0).map(|hop| Mark::new(OpId(op), hop, Ticks(last)));
        match (enter, exit) {
            (Some(enter), Some(exit)) => self.collector.close(index, enters, &[enter, exit], true),
            (Some(mark), None) | (None, Some(mark)) => self.collector.close(index, enters, &[mark], true),
            (None, None) => self.collector.close(index, enters, &[], true),
        }
    }

    /// A fresh binding table and callsite cache: a layer added to a second
    /// subscriber (whose span ids collide with the first's) keeps its spans
    /// apart. The collector stays shared.
    pub(super) fn reset_tables(&mut self) {
        self.live = Arc::default();
        self.tables.lock().unwrap_or_else(PoisonError::into_inner).push(self.live.clone());
        self.callsites = Arc::default();
    }
}

/// Whether a new span has no parent: created with `parent: None`, or in
/// no span.
pub(super) fn is_root<S: Subscriber>(attrs: &Attributes<'_>, ctx: &Context<'_, S>) -> bool {
    attrs.is_root() || (attrs.is_contextual() && ctx.current_span().id().is_none())
}

/// Reads the op id field of a span's attributes or record.
struct OpVisitor {
    field: &'static str,
    op: Option<u64>,
}

impl Visit for OpVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == self.field {
            self.op = Some(value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == self.field {
            self.op = u64::try_from(value).ok();
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

impl<S: Subscriber> Layer<S> for HopLayer {
    fn on_layer(&mut self, _subscriber: &mut S) {
        self.reset_tables();
    }

    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        if metadata.is_span() {
            self.callsites.remember(metadata, self.watch_named(metadata.name()));
        }
        tracing::subscriber::Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        self.new_span(attrs, id, is_root(attrs, &ctx));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        self.record(id, values);
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, _ctx: Context<'_, S>) {
        self.follows(span.into_u64(), follows.into_u64(), |id| self.live.find(id));
    }

    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        self.enter(id);
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        self.exit(id);
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let _ = self.close(&id);
    }
}
