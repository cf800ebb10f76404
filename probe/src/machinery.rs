//! What the `tracing` span machinery adds inside a slice.
//!
//! A slice between two marks made by span edges holds more than the user's
//! code: the callbacks that took the marks run partly inside it, and so
//! does whatever the subscriber does between them. From one span's exit to
//! the next span's enter, the Registry closes the first span and creates
//! the second; from a parent's enter to its child's enter, the child is
//! created. The size of that share depends only on the two edges, so it is
//! measured once, on empty spans, per [`SliceKind`] ([`SpanMachinery`]), and
//! an analysis states it next to each same-thread slice whose both ends are
//! span edges.

use serde::{Deserialize, Serialize};

use crate::hop::{Edge, HopDef};

/// How a slice's two ends relate, when both are span edges on one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceKind {
    /// A span's enter to its own exit.
    Inside,
    /// One span's exit to another's enter: the first closes, the second is
    /// created in between.
    Between,
    /// A span's enter to the enter of a span created inside it.
    Into,
    /// A span's exit to the exit of the span around it.
    OutOf,
}

impl SliceKind {
    /// The four kinds, in the order figures of all four are listed.
    pub const ALL: [SliceKind; 4] = [SliceKind::Inside, SliceKind::Between, SliceKind::Into, SliceKind::OutOf];

    /// The kind of the slice from `from` to `to`, or `None` when either end
    /// is not a span edge or the pair is none of the four (a span re-entered,
    /// an enter to another span's exit).
    pub fn of(from: &HopDef, to: &HopDef) -> Option<SliceKind> {
        let (from, to) = (from.span.as_ref()?, to.span.as_ref()?);
        let same = from.span == to.span;
        match (from.edge, to.edge, same) {
            (Edge::Enter, Edge::Exit, true) => Some(SliceKind::Inside),
            (Edge::Exit, Edge::Enter, false) => Some(SliceKind::Between),
            (Edge::Enter, Edge::Enter, false) => Some(SliceKind::Into),
            (Edge::Exit, Edge::Exit, false) => Some(SliceKind::OutOf),
            _ => None,
        }
    }

    /// The name of the per-block reading that carries this kind's median, in
    /// picoseconds, when a run measures the machinery between its blocks.
    pub fn reading_key(self) -> &'static str {
        match self {
            SliceKind::Inside => "span.inside_ps",
            SliceKind::Between => "span.between_ps",
            SliceKind::Into => "span.into_ps",
            SliceKind::OutOf => "span.out_of_ps",
        }
    }

    /// The kind whose reading is called `key`.
    pub fn of_reading_key(key: &str) -> Option<SliceKind> {
        SliceKind::ALL.into_iter().find(|k| k.reading_key() == key)
    }

    /// A short description for a receipt.
    pub fn describe(self) -> &'static str {
        match self {
            SliceKind::Inside => "enter → own exit",
            SliceKind::Between => "exit, close, create → enter",
            SliceKind::Into => "enter, create child → child's enter",
            SliceKind::OutOf => "child's exit, close → exit",
        }
    }
}

/// Which `tracing` path a program's spans took to become marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanPath {
    /// A `Registry` with `HopLayer` (and whatever other layers): every span
    /// lives in the Registry's slab.
    #[default]
    Registry,
    /// `HopSubscriber`, the profiling path: no Registry, only watched spans
    /// are created.
    Subscriber,
}

impl std::fmt::Display for SpanPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SpanPath::Registry => "Registry + HopLayer",
            SpanPath::Subscriber => "HopSubscriber",
        })
    }
}

/// The span machinery measured on empty spans in the run's own process
/// (through the run's [`SpanPath`], on one thread): median nanoseconds
/// inside each kind of slice, and what a bare mark-to-mark slice holds for
/// comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanMachinery {
    /// The path measured (traces written before it was recorded: the
    /// Registry's).
    #[serde(default)]
    pub path: SpanPath,
    /// Median ns of an empty [`SliceKind::Inside`] slice.
    pub inside_ns: f64,
    /// Median ns of an empty [`SliceKind::Between`] slice.
    pub between_ns: f64,
    /// Median ns of an empty [`SliceKind::Into`] slice.
    pub into_ns: f64,
    /// Median ns of an empty [`SliceKind::OutOf`] slice.
    pub out_of_ns: f64,
    /// Median ns between two back-to-back probe marks: what `hop!` leaves
    /// inside a slice.
    pub bare_mark_ns: f64,
    /// Median ns of one whole span life (create, enter, exit, close) through
    /// the [`SpanMachinery::path`], amortised over a batch.
    pub span_life_ns: f64,
    /// The same life under a bare `Registry`: what any subscriber pays.
    pub registry_life_ns: f64,
    /// Empty operations each median is taken over.
    pub samples: u64,
}

impl SpanMachinery {
    /// This measurement with `kind`'s figure replaced by `ns`.
    pub fn with_share(mut self, kind: SliceKind, ns: f64) -> SpanMachinery {
        match kind {
            SliceKind::Inside => self.inside_ns = ns,
            SliceKind::Between => self.between_ns = ns,
            SliceKind::Into => self.into_ns = ns,
            SliceKind::OutOf => self.out_of_ns = ns,
        }
        self
    }

    /// The measured share inside a slice of `kind`, ns.
    pub fn share_ns(&self, kind: SliceKind) -> f64 {
        match kind {
            SliceKind::Inside => self.inside_ns,
            SliceKind::Between => self.between_ns,
            SliceKind::Into => self.into_ns,
            SliceKind::OutOf => self.out_of_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop::{Side, SpanEdge};

    fn def(span: &str, edge: Edge) -> HopDef {
        HopDef {
            name: format!("{span}.{edge:?}"),
            side: Side::Caller,
            span: Some(SpanEdge { span: span.into(), edge }),
            owns: None,
        }
    }

    #[test]
    fn slice_kinds_follow_the_two_edges() {
        use Edge::{Enter, Exit};
        assert_eq!(SliceKind::of(&def("a", Enter), &def("a", Exit)), Some(SliceKind::Inside));
        assert_eq!(SliceKind::of(&def("a", Exit), &def("b", Enter)), Some(SliceKind::Between));
        assert_eq!(SliceKind::of(&def("a", Enter), &def("b", Enter)), Some(SliceKind::Into));
        assert_eq!(SliceKind::of(&def("b", Exit), &def("a", Exit)), Some(SliceKind::OutOf));
        assert_eq!(SliceKind::of(&def("a", Exit), &def("a", Enter)), None, "a span re-entered");
        assert_eq!(SliceKind::of(&def("a", Enter), &def("b", Exit)), None);
        let plain = HopDef { name: "sent".into(), side: Side::Caller, span: None, owns: None };
        assert_eq!(SliceKind::of(&plain, &def("a", Enter)), None, "a hop! mark is not a span edge");
    }
}
