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

use crate::hop::{Edge, Hop, HopDef};

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

    /// The kind of a slice from a `from` edge to a `to` edge with `events`
    /// between them, when it is one of the four shapes the calibration
    /// measures whole.
    pub fn of_events(from: Edge, to: Edge, events: SpanEvents) -> Option<SliceKind> {
        let only = |creates: u8, closes: u8| events == SpanEvents { creates, closes, ..SpanEvents::default() };
        match (from, to) {
            (Edge::Enter, Edge::Exit) if only(0, 0) => Some(SliceKind::Inside),
            (Edge::Exit, Edge::Enter) if only(1, 1) => Some(SliceKind::Between),
            (Edge::Enter, Edge::Enter) if only(1, 0) => Some(SliceKind::Into),
            (Edge::Exit, Edge::Exit) if only(0, 1) => Some(SliceKind::OutOf),
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
    /// What each edge pair and each span event between them holds, for
    /// slices of any shape ([`SpanMachinery::share_of`]); `None` in traces
    /// written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<EdgeCosts>,
}

/// The span machinery taken apart, ns: what a slice holds at its two ends
/// (the rest of the callback that took its first mark, the start of the
/// one that took its last), by the two edges' kinds, and what each span
/// event between them adds. An empty slice from an enter to its own exit
/// is [`SpanMachinery::inside_ns`]; the other three pairs are measured on
/// spans created before and closed after the slice, so they hold no
/// creation or close; a creation and a close are the [`SliceKind::Into`]
/// and [`SliceKind::OutOf`] slices less those.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EdgeCosts {
    /// An enter to another span's enter, that span created before.
    pub enter_enter_ns: f64,
    /// An exit to another span's enter, neither closed nor created between.
    pub exit_enter_ns: f64,
    /// An exit to another span's exit, the first not closed between.
    pub exit_exit_ns: f64,
    /// One watched span created inside another (the macro, the
    /// subscriber's `new_span`; a Registry also takes a handle to the
    /// parent).
    pub create_ns: f64,
    /// One watched span with a parent closed (its handle dropped, the
    /// subscriber's close; a Registry also drops the parent's handle).
    pub close_ns: f64,
    /// One watched span created with no parent.
    #[serde(default)]
    pub create_root_ns: f64,
    /// One watched span with no parent closed.
    #[serde(default)]
    pub close_root_ns: f64,
}

impl EdgeCosts {
    /// The per-block reading names of the seven figures, ps, in the order
    /// of [`EdgeCosts::values`].
    pub const READINGS: [&'static str; 7] = [
        "span.enter_enter_ps",
        "span.exit_enter_ps",
        "span.exit_exit_ps",
        "span.create_ps",
        "span.close_ps",
        "span.create_root_ps",
        "span.close_root_ps",
    ];

    /// The seven figures, ns.
    pub fn values(&self) -> [f64; 7] {
        [
            self.enter_enter_ns,
            self.exit_enter_ns,
            self.exit_exit_ns,
            self.create_ns,
            self.close_ns,
            self.create_root_ns,
            self.close_root_ns,
        ]
    }

    /// The figures [`EdgeCosts::values`] listed.
    pub fn from_values(
        [enter_enter_ns, exit_enter_ns, exit_exit_ns, create_ns, close_ns, create_root_ns, close_root_ns]: [f64; 7],
    ) -> EdgeCosts {
        EdgeCosts { enter_enter_ns, exit_enter_ns, exit_exit_ns, create_ns, close_ns, create_root_ns, close_root_ns }
    }
}

/// The span events between two consecutive marks of one thread, from hop
/// `from` to hop `to`, as a run records them after each block (reading
/// [`SpanSequence::READING`], one value per pair seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanSequence {
    /// The first mark's hop.
    pub from: Hop,
    /// The next mark's hop on the same thread.
    pub to: Hop,
    /// What ran between them.
    pub events: SpanEvents,
    /// Not every pass between the two held the same events.
    pub varied: bool,
}

impl SpanSequence {
    /// The reading that carries the pairs a block saw.
    pub const READING: &'static str = "span.sequence";

    /// As a reading's value: `from` (16 bits), `to` (16), `varied`, events.
    pub fn to_reading(self) -> u64 {
        u64::from(self.from.0) << 48
            | u64::from(self.to.0) << 32
            | u64::from(self.varied) << 31
            | u64::from(self.events.pack())
    }

    /// The pair a reading's value carries.
    pub fn from_reading(value: u64) -> SpanSequence {
        SpanSequence {
            from: Hop((value >> 48) as u16),
            to: Hop((value >> 32) as u16),
            varied: value & (1 << 31) != 0,
            events: SpanEvents::unpack(value as u32),
        }
    }
}

/// The span events a thread ran between two consecutive marks, as the
/// layer saw them: what a slice holds besides its two edges. Counts stop
/// at [`SpanEvents::MAX`] (a slice with more is not stated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SpanEvents {
    /// Watched spans created inside another.
    pub creates: u8,
    /// Watched spans with a parent closed.
    pub closes: u8,
    /// Watched spans created with no parent (a Registry's cheaper path).
    #[serde(default)]
    pub creates_root: u8,
    /// Watched spans with no parent closed.
    #[serde(default)]
    pub closes_root: u8,
    /// Enters of watched spans that took no mark (an edge mapped to no hop).
    pub enters: u8,
    /// Exits of watched spans that took no mark.
    pub exits: u8,
    /// Callbacks of spans the layer does not watch (their cost is not
    /// measured).
    pub unwatched: u8,
    /// A watched span was entered again (a future polled twice): its first
    /// enter and last exit bound the slice, and what lies between is not
    /// one sequence.
    pub reentered: bool,
}

impl SpanEvents {
    /// The largest count kept.
    pub const MAX: u8 = 15;

    /// Packed into 29 bits: seven 4-bit counts, then `reentered`.
    pub fn pack(self) -> u32 {
        let count = |n: u8, at: u32| u32::from(n.min(Self::MAX)) << at;
        count(self.creates, 0)
            | count(self.closes, 4)
            | count(self.enters, 8)
            | count(self.exits, 12)
            | count(self.unwatched, 16)
            | count(self.creates_root, 20)
            | count(self.closes_root, 24)
            | u32::from(self.reentered) << 28
    }

    /// The events [`SpanEvents::pack`] packed (bits 29 to 31 ignored).
    pub fn unpack(bits: u32) -> SpanEvents {
        let count = |at: u32| ((bits >> at) & 0xf) as u8;
        SpanEvents {
            creates: count(0),
            closes: count(4),
            enters: count(8),
            exits: count(12),
            unwatched: count(16),
            creates_root: count(20),
            closes_root: count(24),
            reentered: bits & (1 << 28) != 0,
        }
    }

    /// Why the machinery inside a slice holding these events cannot be
    /// stated, if it cannot.
    pub fn unknown(&self) -> Option<&'static str> {
        if self.reentered {
            Some("a span in it was entered again")
        } else if self.unwatched > 0 {
            Some("it holds spans hopscope does not watch")
        } else if [self.creates, self.closes, self.creates_root, self.closes_root, self.enters, self.exits]
            .contains(&Self::MAX)
        {
            Some("too many span events in it")
        } else {
            None
        }
    }

    /// The events in words: `close, create, enter` (empty: none).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.closes, "close"),
            (self.closes_root, "close (no parent)"),
            (self.creates, "create"),
            (self.creates_root, "create (no parent)"),
            (self.enters, "enter"),
            (self.exits, "exit"),
        ] {
            match n {
                0 => {}
                1 => parts.push(what.to_owned()),
                n => parts.push(format!("{n}× {what}")),
            }
        }
        if self.unwatched > 0 {
            parts.push(format!("{} unwatched", self.unwatched));
        }
        parts.join(", ")
    }
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

    /// The machinery inside a slice from a `from` edge to a `to` edge with
    /// `events` between them, ns: the two ends' pair plus each event's
    /// cost. `None` when the pieces were not measured or the events are
    /// [`SpanEvents::unknown`].
    pub fn share_of(&self, from: Edge, to: Edge, events: SpanEvents) -> Option<f64> {
        if events.unknown().is_some() {
            return None;
        }
        // The four shapes measured whole are stated as measured.
        if let Some(kind) = SliceKind::of_events(from, to, events) {
            return Some(self.share_ns(kind));
        }
        let e = self.edges?;
        let ends = match (from, to) {
            (Edge::Enter, Edge::Enter) => e.enter_enter_ns,
            (Edge::Enter, Edge::Exit) => self.inside_ns,
            (Edge::Exit, Edge::Enter) => e.exit_enter_ns,
            (Edge::Exit, Edge::Exit) => e.exit_exit_ns,
        };
        // An unmarked enter runs the whole enter callback, which a slice
        // from one enter to the next holds once (the tail of one, the head
        // of the other); likewise an exit.
        Some(
            ends + f64::from(events.creates) * e.create_ns
                + f64::from(events.closes) * e.close_ns
                + f64::from(events.creates_root) * e.create_root_ns
                + f64::from(events.closes_root) * e.close_root_ns
                + f64::from(events.enters) * e.enter_enter_ns
                + f64::from(events.exits) * e.exit_exit_ns,
        )
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
    fn any_shape_is_its_ends_and_its_events_and_the_four_shapes_are_as_measured() {
        use Edge::{Enter, Exit};
        let m = SpanMachinery {
            path: SpanPath::Subscriber,
            inside_ns: 10.0,
            between_ns: 40.0,
            into_ns: 25.0,
            out_of_ns: 22.0,
            bare_mark_ns: 8.0,
            span_life_ns: 60.0,
            registry_life_ns: 90.0,
            samples: 100,
            edges: Some(EdgeCosts {
                enter_enter_ns: 11.0,
                exit_enter_ns: 12.0,
                exit_exit_ns: 13.0,
                create_ns: 14.0,
                close_ns: 9.0,
                create_root_ns: 5.0,
                close_root_ns: 4.0,
            }),
        };
        let events =
            |creates, closes, enters, exits| SpanEvents { creates, closes, enters, exits, ..SpanEvents::default() };
        assert_eq!(m.share_of(Exit, Enter, events(1, 1, 0, 0)), Some(40.0), "between, as measured whole");
        assert_eq!(m.share_of(Enter, Enter, events(1, 0, 0, 0)), Some(25.0));
        // A sibling's whole life between two exits: close, create, enter.
        assert_eq!(m.share_of(Exit, Exit, events(1, 1, 1, 0)), Some(13.0 + 14.0 + 9.0 + 11.0));
        // An exit-only child closed inside its parent's last slice, after an
        // unmarked exit.
        assert_eq!(m.share_of(Enter, Exit, events(0, 1, 0, 1)), Some(10.0 + 9.0 + 13.0));
        let unwatched = SpanEvents { unwatched: 2, ..SpanEvents::default() };
        assert_eq!(m.share_of(Enter, Exit, unwatched), None);
        let old = SpanMachinery { edges: None, ..m };
        assert_eq!(old.share_of(Exit, Exit, events(1, 1, 1, 0)), None, "not measured: not stated");
        assert_eq!(old.share_of(Exit, Exit, events(0, 1, 0, 0)), Some(22.0));
        // The parent's unmarked exit and close, a root created next.
        let rooted = SpanEvents { closes_root: 1, creates_root: 1, ..events(0, 1, 0, 1) };
        assert_eq!(m.share_of(Exit, Enter, rooted), Some(12.0 + 9.0 + 13.0 + 4.0 + 5.0));
        let bits = SpanEvents { reentered: true, creates_root: 2, closes_root: 7, ..events(3, 15, 0, 5) };
        assert_eq!(SpanEvents::unpack(bits.pack()), bits);
        let seq = SpanSequence { from: Hop(40), to: Hop(2), events: bits, varied: true };
        assert_eq!(SpanSequence::from_reading(seq.to_reading()), seq);
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
