//! What probes a span lane, as declared (feature `tracing`): the probe a
//! user gives ([`SpanProbe`]) and the layer each build keeps. One floor
//! below the lane declarations that take it (`lane.rs`, `closure.rs`) and
//! the span lanes that run it (`spans.rs`).

use hopscope_probe::{HopLayer, HopSubscriber, SpanPath};

/// What probes a span lane ([`Lane::probed_by_spans`](crate::Lane::probed_by_spans)): a [`HopLayer`]
/// under a `Registry`, or a [`HopSubscriber`], the profiling path.
#[derive(Debug, Clone)]
pub enum SpanProbe {
    /// The Registry path: every span in the Registry's slab, other layers
    /// and span lookups work.
    Layer(HopLayer),
    /// The profiling path: only watched spans are created, nothing else
    /// sees them.
    Subscriber(HopSubscriber),
}

impl From<HopLayer> for SpanProbe {
    fn from(layer: HopLayer) -> SpanProbe {
        SpanProbe::Layer(layer)
    }
}

impl From<HopSubscriber> for SpanProbe {
    fn from(subscriber: HopSubscriber) -> SpanProbe {
        SpanProbe::Subscriber(subscriber)
    }
}

impl SpanProbe {
    /// Its watches and the path they take.
    pub(crate) fn into_parts(self) -> (HopLayer, SpanPath) {
        match self {
            SpanProbe::Layer(layer) => (layer, SpanPath::Registry),
            SpanProbe::Subscriber(subscriber) => (subscriber.layer().clone(), SpanPath::Subscriber),
        }
    }
}

/// A build's span layer, as declared.
#[derive(Clone)]
pub(crate) struct SpanBuild {
    pub(crate) layer: HopLayer,
    /// Whether this build is the probed one (the clean one activates none).
    pub(crate) probed: bool,
    /// The path its spans take.
    pub(crate) path: SpanPath,
}
