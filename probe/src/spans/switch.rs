//! One process-wide subscriber whose span layer can be switched: how a
//! harness runs a lane clean and probed, block after block, on threads it
//! does not own.
//!
//! A thread the program spawns (a writer thread, a runtime's workers, a
//! blocking pool) sees only the global default dispatcher, never one the
//! harness set on its own threads. So the harness installs one global
//! subscriber, a `Registry` with a [`LayerSwitch`], and between blocks
//! activates the probed lane's [`HopLayer`] or none. With none active the
//! switch enables no span at all: the clean build pays one `enabled` check
//! per span callsite hit, and no span is created. Spans always belong to
//! the one Registry, so a span created under one layer and closed after a
//! switch closes cleanly.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

use super::HopLayer;

/// A layer that forwards to whichever registered [`HopLayer`] is active.
#[derive(Debug, Clone)]
pub struct LayerSwitch {
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The active layer, or null. Points into `layers`.
    active: AtomicPtr<HopLayer>,
    /// Every layer ever added, kept for the switch's life so `active` never
    /// dangles.
    layers: Mutex<Vec<Arc<HopLayer>>>,
}

/// The global switch, once installed (or `None` when the process already
/// had a global subscriber).
static GLOBAL: OnceLock<Option<LayerSwitch>> = OnceLock::new();

impl LayerSwitch {
    /// A switch with no layer yet; add it to a Registry.
    pub fn new() -> LayerSwitch {
        LayerSwitch { state: Arc::default() }
    }

    /// The process's switch, installed as the global default subscriber
    /// (a Registry with the switch) on the first call. `None` when the
    /// program had already set a global subscriber of its own.
    pub fn global() -> Option<&'static LayerSwitch> {
        GLOBAL
            .get_or_init(|| {
                let switch = LayerSwitch::new();
                let subscriber = tracing_subscriber::registry().with(switch.clone());
                tracing::subscriber::set_global_default(subscriber).ok().map(|()| switch)
            })
            .as_ref()
    }

    /// The process's switch if [`LayerSwitch::global`] installed it; never
    /// installs it.
    pub fn installed() -> Option<&'static LayerSwitch> {
        GLOBAL.get().and_then(Option::as_ref)
    }

    /// Register `layer` and get the number that activates it. The switch
    /// keeps its own copy with fresh binding tables; marks still reach the
    /// layer's collector.
    pub fn add(&self, layer: &HopLayer) -> usize {
        let mut layer = layer.clone();
        layer.reset_tables();
        let mut layers = self.state.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.push(Arc::new(layer));
        layers.len() - 1
    }

    /// Make layer `index` (from [`LayerSwitch::add`]) active, or none.
    pub fn activate(&self, index: Option<usize>) {
        let layers = self.state.layers.lock().unwrap_or_else(PoisonError::into_inner);
        let ptr = index.and_then(|i| layers.get(i)).map_or(std::ptr::null_mut(), |l| Arc::as_ptr(l).cast_mut());
        self.state.active.store(ptr, Ordering::Release);
    }

    /// The number of the active layer, if any.
    pub fn active_index(&self) -> Option<usize> {
        let ptr = self.state.active.load(Ordering::Acquire);
        let layers = self.state.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.iter().position(|l| std::ptr::eq(Arc::as_ptr(l), ptr))
    }

    /// The active layer copy, if any.
    pub fn active_layer(&self) -> Option<Arc<HopLayer>> {
        let ptr = self.state.active.load(Ordering::Acquire);
        let layers = self.state.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.iter().find(|l| std::ptr::eq(Arc::as_ptr(l), ptr)).cloned()
    }

    #[inline]
    fn active(&self) -> Option<&HopLayer> {
        let ptr = self.state.active.load(Ordering::Acquire);
        // SAFETY: `ptr` is null or was taken from an `Arc<HopLayer>` held in
        // `state.layers`, which only grows and lives as long as `self`.
        unsafe { ptr.as_ref() }
    }
}

impl Default for LayerSwitch {
    fn default() -> Self {
        LayerSwitch::new()
    }
}

impl<S: Subscriber> Layer<S> for LayerSwitch {
    fn register_callsite(&self, _metadata: &'static Metadata<'static>) -> Interest {
        // Asked again at every hit: the answer changes with the active layer.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        // Only watched spans are created; events never are.
        self.active().is_some_and(|layer| metadata.is_span() && layer.watches(metadata))
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.active() {
            layer.new_span(attrs, id, super::marking::is_root(attrs, &ctx));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(layer) = self.active() {
            layer.record(id, values);
        }
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, _ctx: Context<'_, S>) {
        if let Some(layer) = self.active() {
            layer.follows(span.into_u64(), follows.into_u64(), |id| layer.live.find(id));
        }
    }

    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        if let Some(layer) = self.active() {
            layer.enter(id);
        }
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        if let Some(layer) = self.active() {
            layer.exit(id);
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if self.active().is_some_and(|layer| layer.close(&id)) {
            return;
        }
        // Bound by a layer no longer active, or by none: whichever layer
        // holds it frees its slot. Off the common path (a switch between a
        // span's creation and its close).
        let layers = self.state.layers.lock().unwrap_or_else(PoisonError::into_inner);
        for layer in layers.iter() {
            if layer.close(&id) {
                return;
            }
        }
    }
}
