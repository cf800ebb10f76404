//! A `tracing` Layer that turns the enter and exit of chosen spans into probe
//! marks (feature `tracing`).
//!
//! Code instrumented with `tracing` spans gets hopscope's decomposition
//! without touching the probe API: name the spans to watch, say which hop
//! their enter and exit stand for, and carry the operation id in a span
//! field (`op` by default) so spans on the caller and the writer thread join
//! into one operation. The layer reads the clock in `on_enter`/`on_exit` and
//! stores a mark in the thread's buffer; it formats nothing and allocates
//! nothing after a span is created (the binding is stored once, in the
//! span's extensions, when the span is created).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::hop::{Hop, OpId};
use crate::local;

/// Which hops a watched span's enter and exit stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watch {
    span: &'static str,
    on_enter: Option<Hop>,
    on_exit: Option<Hop>,
}

/// What a watched span instance marks, stored in its extensions.
#[derive(Debug, Clone, Copy)]
struct Binding {
    op: OpId,
    on_enter: Option<Hop>,
    on_exit: Option<Hop>,
}

/// The layer: add it to a `tracing_subscriber::Registry`.
#[derive(Debug, Clone)]
pub struct HopLayer {
    watches: Vec<Watch>,
    op_field: &'static str,
    /// Which subscriber this layer serves, set when it is added to one:
    /// separate registries hand out the same span ids, so the thread's
    /// binding cache keys its entries by this too.
    instance: u32,
}

/// The last instance number handed out; 0 is never used.
static INSTANCES: AtomicU32 = AtomicU32::new(0);

impl Default for HopLayer {
    fn default() -> Self {
        HopLayer::new()
    }
}

impl HopLayer {
    /// A layer watching no span yet, taking the op id from the field `op`.
    pub fn new() -> HopLayer {
        HopLayer { watches: Vec::new(), op_field: "op", instance: 0 }
    }

    /// Mark `on_enter` when a span called `span` is entered and, if given,
    /// `on_exit` when it is exited.
    pub fn span(mut self, span: &'static str, on_enter: Hop, on_exit: Option<Hop>) -> HopLayer {
        self.watches.push(Watch { span, on_enter: Some(on_enter), on_exit });
        self
    }

    /// Mark only `on_exit` when a span called `span` is exited: for a span
    /// whose start is already marked by the exit of the one before it.
    pub fn span_exit(mut self, span: &'static str, on_exit: Hop) -> HopLayer {
        self.watches.push(Watch { span, on_enter: None, on_exit: Some(on_exit) });
        self
    }

    /// Take the operation id from the field `field` (an integer) instead of `op`.
    pub fn op_field(mut self, field: &'static str) -> HopLayer {
        self.op_field = field;
        self
    }
}

/// Reads the op id field of a new span.
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

impl<S> Layer<S> for HopLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_layer(&mut self, _subscriber: &mut S) {
        // A fresh number per subscriber, also for a clone of a layer already
        // added elsewhere.
        self.instance = INSTANCES.fetch_add(1, Ordering::Relaxed) + 1;
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(watch) = self.watches.iter().find(|w| w.span == attrs.metadata().name()) else { return };
        let mut visitor = OpVisitor { field: self.op_field, op: None };
        attrs.record(&mut visitor);
        // A watched span without an op id cannot be joined: it is not bound
        // and marks nothing.
        let (Some(op), Some(span)) = (visitor.op, ctx.span(id)) else { return };
        span.extensions_mut().insert(Binding { op: OpId(op), on_enter: watch.on_enter, on_exit: watch.on_exit });
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let ticks = local::now();
        if let Some(binding) = binding(self.instance, id, &ctx)
            && let Some(hop) = binding.on_enter
        {
            local::push(crate::Mark::new(binding.op, hop, ticks));
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let ticks = local::now();
        if let Some(binding) = binding(self.instance, id, &ctx)
            && let Some(hop) = binding.on_exit
        {
            local::push(crate::Mark::new(binding.op, hop, ticks));
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        forget(self.instance, id.into_u64());
    }
}

/// Spans this thread entered recently and what they mark (`None`: not
/// watched), in a direct-mapped cache indexed by the span id's low bits. A
/// hit skips the registry lookup, which costs more than the mark itself; a
/// collision only costs that lookup. The registry's ids carry a generation,
/// so a reused slot never matches a stale entry, and no id is 0, so 0 marks
/// an empty entry. Entries also carry the layer's instance number, because
/// two subscribers used on one thread hand out the same ids.
const SEEN_SLOTS: usize = 64;

#[derive(Clone, Copy)]
struct Seen {
    key: u64,
    instance: u32,
    binding: Option<Binding>,
}

const EMPTY: Seen = Seen { key: 0, instance: 0, binding: None };

thread_local! {
    // Cells, not a RefCell: an entry is a small `Copy` value, read or
    // replaced whole, so no borrow flag is needed on the hot path.
    static SEEN: [Cell<Seen>; SEEN_SLOTS] = const { [const { Cell::new(EMPTY) }; SEEN_SLOTS] };
}

fn slot(key: u64) -> usize {
    key as usize % SEEN_SLOTS
}

fn forget(instance: u32, key: u64) {
    let _ = SEEN.try_with(|seen| {
        let entry = &seen[slot(key)];
        let held = entry.get();
        if held.key == key && held.instance == instance {
            entry.set(EMPTY);
        }
    });
}

/// What the span `id` marks: the thread's cache on a hit (inlined into the
/// enter and exit callbacks), the registry on a miss (out of line, so the
/// callbacks stay small).
#[inline(always)]
fn binding<S>(instance: u32, id: &Id, ctx: &Context<'_, S>) -> Option<Binding>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let key = id.into_u64();
    let cached = SEEN
        .try_with(|seen| {
            let entry = seen[slot(key)].get();
            (entry.key == key && entry.instance == instance).then_some(entry.binding)
        })
        .ok()
        .flatten();
    match cached {
        Some(hit) => hit,
        None => look_up(instance, id, ctx),
    }
}

#[cold]
#[inline(never)]
fn look_up<S>(instance: u32, id: &Id, ctx: &Context<'_, S>) -> Option<Binding>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let key = id.into_u64();
    let found = ctx.span(id).and_then(|s| s.extensions().get::<Binding>().copied());
    let _ = SEEN.try_with(|seen| seen[slot(key)].set(Seen { key, instance, binding: found }));
    found
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn watched_spans_on_two_threads_join_into_one_operation() {
        let layer = HopLayer::new()
            .span("send", Hop::BUILT, Some(Hop::SENT))
            .span("serve", Hop::WOKE, Some(Hop::REPLIED))
            .span_exit("wait", Hop::RECEIVED);
        let subscriber = tracing_subscriber::registry().with(layer);
        let dispatch = tracing::Dispatch::new(subscriber);
        let caller = {
            let dispatch = dispatch.clone();
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    local::attach(16);
                    tracing::info_span!("send", op = 7u64).in_scope(|| {});
                    tracing::info_span!("unwatched", op = 7u64).in_scope(|| {});
                    tracing::info_span!("send").in_scope(|| {});
                    tracing::info_span!("wait", op = 7u64).in_scope(|| {});
                    local::drain()
                })
            })
        };
        let writer = std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                local::attach(16);
                tracing::info_span!("serve", op = 7i64).in_scope(|| {});
                local::drain()
            })
        });
        let caller = caller.join().expect("caller");
        let writer = writer.join().expect("writer");
        let hops = |d: &local::Drained| d.marks.iter().map(|m| (m.op, m.hop)).collect::<Vec<_>>();
        assert_eq!(
            hops(&caller),
            [(OpId(7), Hop::BUILT), (OpId(7), Hop::SENT), (OpId(7), Hop::RECEIVED)],
            "unwatched and op-less spans mark nothing; an exit-only span marks its exit"
        );
        assert_eq!(hops(&writer), [(OpId(7), Hop::WOKE), (OpId(7), Hop::REPLIED)]);
        assert!(caller.marks[0].ticks <= caller.marks[1].ticks);
    }

    #[test]
    fn two_subscribers_on_one_thread_keep_their_own_bindings() {
        // Two registries hand out the same ids, so the thread's binding cache
        // must tell their spans apart.
        let layer = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT));
        let first = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
        let second = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
        let drained = std::thread::spawn(move || {
            local::attach(16);
            let a = tracing::dispatcher::with_default(&first, || tracing::info_span!("send", op = 1u64));
            let b = tracing::dispatcher::with_default(&second, || tracing::info_span!("send", op = 2u64));
            assert_eq!(a.id(), b.id(), "the test needs colliding ids");
            tracing::dispatcher::with_default(&first, || a.in_scope(|| {}));
            tracing::dispatcher::with_default(&second, || b.in_scope(|| {}));
            local::drain()
        })
        .join()
        .expect("thread");
        let ops: Vec<_> = drained.marks.iter().map(|m| m.op).collect();
        assert_eq!(ops, [OpId(1), OpId(1), OpId(2), OpId(2)]);
    }
}
