//! The layer itself: which spans it watches and how their edges become
//! marks, the counts it keeps, and where its marks go. The subscribers,
//! switches and capture in the sibling modules build on it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::callsites::Callsites;
use super::events::EventTable;
use super::live::{self, LiveSpans};
use crate::collector::{Collector, DEFAULT_RING_MARKS, MAX_RING_MARKS};
use crate::hop::{Edge, Hop, HopTable, Owner, Side, SpanEdge};

/// Watched spans a subscriber can hold open at once (its binding table).
pub const MAX_LIVE_SPANS: usize = live::SLOTS;

/// Spans a layer may watch: each brings up to two hops, and hop ids are 16 bits.
pub const MAX_WATCHES: usize = crate::collector::TALLIES;

/// Which enters and exits of a watched span become marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Edges {
    /// The first enter and the last exit (handed over when the span
    /// closes): one mark per hop per operation, however often a future is
    /// polled.
    #[default]
    FirstEnterLastExit,
    /// Every enter and every exit, marked as it happens: for synchronous
    /// code that wants its marks before the span closes. A span entered
    /// twice then gives its operation its hops twice, and the analyzer
    /// reports the operation incomplete.
    EveryEnter,
}

/// Which hops a watched span's enter and exit stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Watch {
    pub(super) span: String,
    pub(super) on_enter: Option<Hop>,
    pub(super) on_exit: Option<Hop>,
    /// A shared interval ([`HopLayer::shared`]): it serves the operations
    /// linked to it, and gets an id of its own when given none.
    pub(super) shared: bool,
}

/// The field a shared interval's span records each operation it serves
/// in, unless the layer names another ([`HopLayer::serves_field`]).
pub const SERVES_FIELD: &str = "serves";

/// The ids given to shared intervals that carry none of their own: bit 62
/// set, so they stay apart from a program's operation ids (hopscope's own
/// count up from 0, or from a thread's tag far below 2^62) and still fit a
/// signed 64-bit column (`export --format parquet`).
pub(super) const SHARED_ID_BIT: u64 = 1 << 62;

/// Counts shared by a layer's clones (its spans' closes are tallied per
/// thread by its [`Collector`]).
#[derive(Debug, Default)]
pub(super) struct Counts {
    /// Spans created while every probed slot of the live table was taken.
    pub(super) unbound: AtomicU64,
    /// The last id given to a shared interval that carried none.
    pub(super) shared_ids: AtomicU64,
    /// Links that could not be made: an operation named to a shared span
    /// that was not watched or bound, or from a span with no op id.
    pub(super) unlinked: AtomicU64,
}

/// How one watched span behaved, for a report: whether a future's span was
/// polled more than once is `enters / closed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanCounts {
    /// The span's name.
    pub span: String,
    /// Spans of that name closed with an operation id.
    pub closed: u64,
    /// Their enters, in all.
    pub enters: u64,
    /// Spans of that name that closed without ever getting an operation id
    /// (they mark nothing).
    pub without_op: u64,
}

/// The layer: add it to a `tracing_subscriber::Registry`.
#[derive(Debug, Clone)]
pub struct HopLayer {
    pub(super) watches: Vec<Watch>,
    pub(super) hops: HopTable,
    pub(super) op_field: &'static str,
    pub(super) serves_field: &'static str,
    pub(super) edges: Edges,
    pub(super) collector: Collector,
    pub(super) live: Arc<LiveSpans>,
    /// Every binding table this layer's clones use (one per subscriber it
    /// was added to), for [`HopLayer::settle`].
    pub(super) tables: Arc<Mutex<Vec<Arc<LiveSpans>>>>,
    pub(super) callsites: Arc<Callsites>,
    /// The span events between each thread's consecutive marks.
    pub(super) events: Arc<EventTable>,
    pub(super) counts: Arc<Counts>,
    pub(super) problem: Option<String>,
}

impl Default for HopLayer {
    fn default() -> Self {
        HopLayer::new()
    }
}

impl HopLayer {
    /// A layer watching no span yet, the op id taken from the field `op`,
    /// the standard and closing hops in its table, each marking thread given a ring
    /// of [`DEFAULT_RING_MARKS`].
    pub fn new() -> HopLayer {
        let live = Arc::new(LiveSpans::default());
        HopLayer {
            tables: Arc::new(Mutex::new(vec![live.clone()])),
            watches: Vec::new(),
            hops: HopTable::standard(),
            op_field: "op",
            serves_field: SERVES_FIELD,
            edges: Edges::default(),
            collector: Collector::new(DEFAULT_RING_MARKS),
            live,
            callsites: Arc::default(),
            events: Arc::default(),
            counts: Arc::default(),
            problem: None,
        }
    }

    /// Watch spans called `span` on the calling side: hops `<span>.enter`
    /// and `<span>.exit`. Time inside it on the caller is the subject's own
    /// code (its client side: building and sending the request).
    pub fn caller(self, span: &str) -> HopLayer {
        self.named(span, Side::Caller, None)
    }

    /// Watch spans called `span` on the writer's side: hops `<span>.enter`
    /// and `<span>.exit`. Time inside it is the writer's own work; a span
    /// around the database call is [`HopLayer::database`] instead.
    pub fn writer(self, span: &str) -> HopLayer {
        self.named(span, Side::Writer, None)
    }

    /// Watch spans called `span` on the writer's side that wrap the
    /// database call (the statement's execution): hops `<span>.enter` and
    /// `<span>.exit`, the slice between them SQLite's.
    pub fn database(self, span: &str) -> HopLayer {
        self.named(span, Side::Writer, Some(Owner::Sqlite))
    }

    /// Watch spans called `span` on the calling side in which the caller
    /// waits for the writer: hops `<span>.enter` and `<span>.exit`, the
    /// time between them a wait (with no marks of the writer's inside it,
    /// it holds the writer's whole turn, unsplit).
    pub fn wait(self, span: &str) -> HopLayer {
        self.named(span, Side::Caller, Some(Owner::Wait))
    }

    /// Watch spans called `span` on the writer's side as *shared
    /// intervals*: one span that serves several operations (a batch's
    /// transaction, its COMMIT, a drain), marked once, with hops
    /// `<span>.enter` and `<span>.exit`. Its id is its `op` field if it has
    /// one, else one of its own. Each operation it serves is linked to it
    /// either by recording the operation's id in its `serves` field (declare
    /// it empty at creation, `serves = tracing::field::Empty`, then
    /// `span.record("serves", op)` once per operation) or with
    /// `span.follows_from(&request_span)` for each request's span that
    /// carries the op id. In the analysis each linked operation waits for
    /// all of it, and its cost is divided among them. Declare what its
    /// inside is with [`HopLayer::owned_by`] (a COMMIT: SQLite's).
    pub fn shared(self, span: &str) -> HopLayer {
        let mut layer = self.named(span, Side::Writer, None);
        if let Some(watch) = layer.watches.iter_mut().find(|w| w.span == span) {
            watch.shared = true;
        }
        layer
    }

    /// Take the operations a shared span serves from the field `field`
    /// instead of [`SERVES_FIELD`].
    pub fn serves_field(mut self, field: &'static str) -> HopLayer {
        self.serves_field = field;
        self
    }

    /// Links a shared span could not make so far: an operation recorded
    /// into a span that is not a watched shared one, or a `follows_from`
    /// whose other span carried no op id.
    pub fn unlinked(&self) -> u64 {
        self.counts.unlinked.load(Ordering::Relaxed)
    }

    /// Declare what the inside of the watched span `span` is: the
    /// same-thread slice that ends at its exit hop belongs to `owner`
    /// (e.g. a span mapped with [`HopLayer::span`] onto hops of your own).
    /// A span not watched, one that marks no exit, or an owner no hop can
    /// declare ([`Owner::DECLARABLE`]) makes the layer's
    /// [`problem`](HopLayer::problem).
    pub fn owned_by(mut self, span: &str, owner: Owner) -> HopLayer {
        let exit = self.watches.iter().find(|w| w.span == span).map(|w| w.on_exit);
        match exit {
            Some(Some(exit)) => {
                if let Err(why) = self.hops.set_owner(exit, owner) {
                    self.problem.get_or_insert_with(|| format!("span `{span}`: {why}"));
                }
            }
            Some(None) => {
                self.problem.get_or_insert_with(|| format!("span `{span}` marks no exit: nothing to own"));
            }
            None => {
                self.problem.get_or_insert_with(|| format!("owned_by: span `{span}` is not watched (watch it first)"));
            }
        }
        self
    }

    pub(super) fn named(mut self, span: &str, side: Side, owner: Option<Owner>) -> HopLayer {
        let enter = self.hops.add(&SpanEdge::of(span, Edge::Enter).hop_name(), side);
        let exit = self.hops.add(&SpanEdge::of(span, Edge::Exit).hop_name(), side);
        let layer = self.watch(span, Some(enter), Some(exit));
        match owner {
            Some(owner) => layer.owned_by(span, owner),
            None => layer,
        }
    }

    /// Mark `on_enter` when a span called `span` is entered and, if given,
    /// `on_exit` when it is exited: for spans standing for the standard hops
    /// ([`Hop::WOKE`], ...) or hops added to [`HopLayer::hops_mut`].
    pub fn span(self, span: &str, on_enter: Hop, on_exit: Option<Hop>) -> HopLayer {
        self.watch(span, Some(on_enter), on_exit)
    }

    /// Mark only `on_exit` when a span called `span` is exited: for a span
    /// whose start is already marked by the exit of the one before it.
    pub fn span_exit(self, span: &str, on_exit: Hop) -> HopLayer {
        self.watch(span, None, Some(on_exit))
    }

    pub(super) fn watch(mut self, span: &str, on_enter: Option<Hop>, on_exit: Option<Hop>) -> HopLayer {
        if self.watches.len() >= MAX_WATCHES {
            self.problem.get_or_insert_with(|| format!("more than {MAX_WATCHES} watched spans"));
            return self;
        }
        if let Some(hop) = [on_enter, on_exit].into_iter().flatten().find(|h| self.hops.get(*h).is_none()) {
            self.problem.get_or_insert_with(|| format!("span `{span}` marks hop {} outside the hop table", hop.0));
            return self;
        }
        for (hop, edge) in [(on_enter, Edge::Enter), (on_exit, Edge::Exit)] {
            if let Some(hop) = hop {
                self.hops.mark_by(hop, SpanEdge { span: span.to_owned(), edge });
            }
        }
        self.watches.retain(|w| w.span != span);
        self.watches.push(Watch { span: span.to_owned(), on_enter, on_exit, shared: false });
        // Answers cached for the old watches no longer hold.
        self.callsites = Arc::default();
        self
    }

    /// The hop table, to add hops of your own for [`HopLayer::span`].
    pub fn hops_mut(&mut self) -> &mut HopTable {
        &mut self.hops
    }

    /// The hops this layer marks (the standard ten, then its own), with the
    /// span edge that marks each: what a trace header declares.
    pub fn hops(&self) -> &HopTable {
        &self.hops
    }

    /// Take the operation id from the field `field` (an integer) instead of `op`.
    pub fn op_field(mut self, field: &'static str) -> HopLayer {
        self.op_field = field;
        self
    }

    /// Which enters and exits mark (default [`Edges::FirstEnterLastExit`]).
    pub fn edges(mut self, edges: Edges) -> HopLayer {
        self.edges = edges;
        self
    }

    /// Give each marking thread a ring of `marks` marks (1 to
    /// [`MAX_RING_MARKS`]) instead of [`DEFAULT_RING_MARKS`]; marks beyond
    /// it between two drains are dropped and counted.
    pub fn ring_marks(mut self, marks: usize) -> HopLayer {
        if !(1..=MAX_RING_MARKS).contains(&marks) {
            self.problem.get_or_insert_with(|| format!("a ring of {marks} marks (1 to {MAX_RING_MARKS})"));
            return self;
        }
        self.collector = Collector::new(marks);
        self
    }

    /// What is wrong with this layer's declaration, if anything (a hop
    /// outside the table, too many spans, a bad ring size): the capture and
    /// the harness refuse such a layer with this line.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Where this layer's marks gather: drain it at block ends.
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// Each watched span's closes, enters and spans without an op id so far.
    pub fn counts(&self) -> Vec<SpanCounts> {
        self.watches
            .iter()
            .enumerate()
            .map(|(index, w)| {
                let [closed, enters, without_op] = self.collector.tally(index);
                SpanCounts { span: w.span.clone(), closed, enters, without_op }
            })
            .collect()
    }

    /// The pairs of consecutive marks its threads made since the last
    /// call, each with the span events that ran between them, and clear
    /// them: what each slice holds besides its two edges
    /// ([`crate::SpanMachinery::share_of`]). A run takes them after each
    /// block.
    pub fn take_sequences(&self) -> Vec<crate::SpanSequence> {
        self.events.take()
    }

    /// Watched spans that could not be bound (more live at once than the
    /// table holds); their marks are lost and counted here.
    pub fn unbound(&self) -> u64 {
        self.counts.unbound.load(Ordering::Relaxed)
    }

    /// Wait up to `within` for watched spans still open to close (a writer
    /// thread closes its last span just after the caller has its reply), so
    /// a drain at a block end takes every mark of the block. Spans listed in
    /// `long_lived` are not waited for; those still open at the deadline are
    /// added to it, so a span that lives across blocks costs one wait.
    pub fn settle(&self, within: std::time::Duration, long_lived: &mut Vec<u64>) {
        let deadline = std::time::Instant::now() + within;
        let tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner).clone();
        loop {
            let open: Vec<u64> = tables.iter().flat_map(|t| t.bound()).filter(|id| !long_lived.contains(id)).collect();
            if open.is_empty() {
                return;
            }
            if std::time::Instant::now() >= deadline {
                long_lived.extend(open);
                return;
            }
            std::thread::yield_now();
        }
    }
}
