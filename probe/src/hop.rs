//! Hops, operations and marks: the vocabulary of a trace.
//!
//! A [`Mark`] says "operation `op` passed hop `hop` at `ticks`". Marks of one
//! operation may come from two threads (caller and writer); they join through
//! the [`OpId`] that travels inside the request. The ten hops of a write are
//! fixed and documented here; a workload may declare more in its
//! [`HopTable`], numbered after the standard ones.

use serde::{Deserialize, Serialize};

use crate::clock::Ticks;

/// Identifies one operation across threads. The workload chooses it (a
/// per-lane counter is enough) and carries it in the request it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct OpId(pub u64);

/// A point an operation passes, as an index into the trace's [`HopTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Hop(pub u16);

/// Which thread a hop is marked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The thread that issues the write and waits for its result.
    Caller,
    /// The dedicated thread that owns the database connection.
    Writer,
}

impl Hop {
    /// Caller: the write call was entered.
    pub const ENTER: Hop = Hop(0);
    /// Caller: the writer mutex is held.
    pub const LOCKED: Hop = Hop(1);
    /// Caller: the request object is built.
    pub const BUILT: Hop = Hop(2);
    /// Caller: the request goes into the channel. Marked just before the
    /// send, so a wake the send causes (which may run the writer at once on
    /// a shared core) lands in `sent→woke`, never before this mark.
    pub const SENT: Hop = Hop(3);
    /// Writer: the writer thread has the request in hand.
    pub const WOKE: Hop = Hop(4);
    /// Writer: SQLite has executed the statement.
    pub const EXECUTED: Hop = Hop(5);
    /// Writer: the changed tables are harvested.
    pub const HARVESTED: Hop = Hop(6);
    /// Writer: the reply goes to the caller. Marked just before the send,
    /// for the same reason as [`Hop::SENT`]: the woken caller may run before
    /// the writer takes another mark.
    pub const REPLIED: Hop = Hop(7);
    /// Caller: the reply is in the caller's hands.
    pub const RECEIVED: Hop = Hop(8);
    /// Caller: the write call returns.
    pub const DONE: Hop = Hop(9);
    /// Writer: the writer is done with the operation (reply sent, request
    /// dropped, bookkeeping finished) and is about to wait for the next
    /// one. Closes the writer's cycle: `replied→idle` is the writer's work
    /// after the reply, which on a shared core delays the caller's wake.
    pub const IDLE: Hop = Hop(10);
    /// Caller: the call's result has been used and dropped, and the caller
    /// is about to start its next operation. Closes the caller's cycle:
    /// `done→returned` holds what runs after the call returns (destructors).
    pub const RETURNED: Hop = Hop(11);

    /// The hops that close each thread's cycle, numbered after
    /// [`Hop::STANDARD`]: an operation's marks then cover all of its
    /// threads' per-operation work, not only `enter…done`.
    pub const CLOSING: [(Hop, &'static str, Side); 2] =
        [(Hop::IDLE, "idle", Side::Writer), (Hop::RETURNED, "returned", Side::Caller)];

    /// Where each hop of [`Hop::STANDARD`] and [`Hop::CLOSING`] falls in an
    /// operation, in documented order: `idle` sits after `replied`, and
    /// `returned` is last.
    pub const DOCUMENTED_ORDER: [Hop; 12] = [
        Hop::ENTER,
        Hop::LOCKED,
        Hop::BUILT,
        Hop::SENT,
        Hop::WOKE,
        Hop::EXECUTED,
        Hop::HARVESTED,
        Hop::REPLIED,
        Hop::IDLE,
        Hop::RECEIVED,
        Hop::DONE,
        Hop::RETURNED,
    ];

    /// The hops a bare writer thread marks (hopscope's floor: a request
    /// sent, executed and replied to, nothing else), in documented order:
    /// [`Hop::DOCUMENTED_ORDER`] without the library's own steps (`locked`,
    /// `built`, `harvested`).
    pub const BARE_PATH: [Hop; 9] = [
        Hop::ENTER,
        Hop::SENT,
        Hop::WOKE,
        Hop::EXECUTED,
        Hop::REPLIED,
        Hop::IDLE,
        Hop::RECEIVED,
        Hop::DONE,
        Hop::RETURNED,
    ];

    /// Not a hop: a mark with this hop is a *link*, saying that the
    /// operation in its `op` field is served by the shared interval whose
    /// id its `ticks` field holds ([`Mark::serves`]). Never declared in a
    /// [`HopTable`], so no table index can collide with it.
    pub const LINK: Hop = Hop(u16::MAX);

    /// The standard hops of one write, in the order an operation passes them.
    pub const STANDARD: [(Hop, &'static str, Side); 10] = [
        (Hop::ENTER, "enter", Side::Caller),
        (Hop::LOCKED, "locked", Side::Caller),
        (Hop::BUILT, "built", Side::Caller),
        (Hop::SENT, "sent", Side::Caller),
        (Hop::WOKE, "woke", Side::Writer),
        (Hop::EXECUTED, "executed", Side::Writer),
        (Hop::HARVESTED, "harvested", Side::Writer),
        (Hop::REPLIED, "replied", Side::Writer),
        (Hop::RECEIVED, "received", Side::Caller),
        (Hop::DONE, "done", Side::Caller),
    ];
}

/// One recorded point: 24 bytes in memory, 20 on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The operation that passed the hop.
    pub op: OpId,
    /// The hop it passed.
    pub hop: Hop,
    /// The CPU the marking thread ran on, or [`Mark::UNKNOWN_CPU`].
    pub cpu: u16,
    /// When, in raw clock ticks.
    pub ticks: Ticks,
}

impl Mark {
    /// `cpu` value of a mark whose CPU was not sampled.
    pub const UNKNOWN_CPU: u16 = crate::clock::UNKNOWN_CPU;

    /// A mark with no CPU sample.
    pub fn new(op: OpId, hop: Hop, ticks: Ticks) -> Mark {
        Mark { op, hop, cpu: Mark::UNKNOWN_CPU, ticks }
    }

    /// A link: the shared interval `shared` (a transaction, a COMMIT, a
    /// drain: an id of its own, whose hops are marked once) serves the
    /// operation `member`. An operation served by an interval waits for
    /// all of it; the analyzer joins the interval's marks into each
    /// operation it serves and divides its cost among them. The link
    /// carries no time: it is stored as a mark of [`Hop::LINK`] whose
    /// `ticks` field holds `shared`'s id, so it travels through the same
    /// buffers and rings as marks and costs one store.
    pub fn serves(shared: OpId, member: OpId) -> Mark {
        Mark { op: member, hop: Hop::LINK, cpu: Mark::UNKNOWN_CPU, ticks: Ticks(shared.0) }
    }

    /// `cpu` value of a link whose member a sampling capture left out
    /// ([`Mark::serves_unsampled`]).
    pub const UNSAMPLED_MEMBER: u16 = u16::MAX - 1;

    /// A link from `shared` to a member a sampling capture left out: it
    /// has no marks of its own, but the interval served it, so it counts
    /// in the batch's size (and the interval's cost is divided by it), and
    /// is no operation of the trace.
    pub fn serves_unsampled(shared: OpId, member: OpId) -> Mark {
        Mark { op: member, hop: Hop::LINK, cpu: Mark::UNSAMPLED_MEMBER, ticks: Ticks(shared.0) }
    }

    /// Whether this is a link to a member a sampling capture left out.
    pub fn is_unsampled_link(&self) -> bool {
        self.hop == Hop::LINK && self.cpu == Mark::UNSAMPLED_MEMBER
    }

    /// The shared interval this mark links its operation to, when it is a
    /// link ([`Mark::serves`]); `None` for a mark of a hop.
    pub fn link(&self) -> Option<OpId> {
        (self.hop == Hop::LINK).then_some(OpId(self.ticks.0))
    }

    /// Whether this mark is a link rather than a hop's mark.
    pub fn is_link(&self) -> bool {
        self.hop == Hop::LINK
    }
}

/// Whose time a slice is. A program declares it for the same-thread
/// slices that end at its hops ([`HopTable::set_owner`],
/// `HopLayer::database`, ...): attribution is declared, never guessed
/// from names. A slice from one thread to the other is always the
/// boundary's, whatever its hops say: it holds a wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// The subject's own code: the writer's bookkeeping on either thread
    /// (lock, request, harvest, reply). What a same-thread slice is when
    /// nothing else is declared.
    Library,
    /// The database call: SQLite executing the statement.
    Sqlite,
    /// The thread boundary: a slice that starts on one thread and ends on
    /// the other (a wake or a transport).
    Boundary,
    /// A thread's closing work after its last step of the operation: the
    /// writer's `replied→idle` (the reply's and request's drop) and the
    /// caller's `done→returned` (the result's drop).
    Tail,
    /// The caller's own code around the write (not the subject's): work
    /// the program does before or after it hands the write over.
    Caller,
    /// A thread waiting for another, with the other's work inside the
    /// slice unsplit (a caller-side span around the wait for the reply,
    /// with no marks of the writer's inside it).
    Wait,
    /// Time no pair of marks covers: an operation's wall time beyond its
    /// path slices. Never declared by a hop; analyses report it as a row of
    /// its own.
    Between,
}

impl Owner {
    /// The owners a hop may declare for the slice that ends at it
    /// ([`Owner::Boundary`] follows from the sides, [`Owner::Between`]
    /// from the lane's wall time).
    pub const DECLARABLE: [Owner; 5] = [Owner::Library, Owner::Sqlite, Owner::Tail, Owner::Caller, Owner::Wait];

    /// Stable lower-case name, as serialized (`library`, `sqlite`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Owner::Library => "library",
            Owner::Sqlite => "sqlite",
            Owner::Boundary => "boundary",
            Owner::Tail => "tail",
            Owner::Caller => "caller",
            Owner::Wait => "wait",
            Owner::Between => "between",
        }
    }
}

/// A hop's name and side, as declared in a trace header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopDef {
    /// Stable lower-case name (`enter`, `woke`, ...).
    pub name: String,
    /// The thread the hop is marked on.
    pub side: Side,
    /// The `tracing` span edge that marks this hop, when a span layer marks
    /// it: how an analysis knows which span machinery runs inside a slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<SpanEdge>,
    /// Who owns the same-thread slice that ends at this hop, as the
    /// program declared it (`executed`: SQLite; `idle`, `returned`: tails).
    /// `None`: the subject's own code ([`Owner::Library`]). Traces written
    /// before owners were declared carry none, and analyses read
    /// hopscope's fixed hops as these declarations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owns: Option<Owner>,
}

/// Which edge of which span marks a hop.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpanEdge {
    /// The span's name (its callsite name; an `#[instrument]`ed function's name).
    pub span: String,
    /// Enter or exit.
    pub edge: Edge,
}

impl SpanEdge {
    /// The name of the hop a span declared by name gets for this edge
    /// (`execute.enter`, `execute.exit`): the one place that spells it, for
    /// the layer that adds the hops and the analyzer that reads them back.
    pub fn hop_name(&self) -> String {
        match self.edge {
            Edge::Enter => format!("{}.enter", self.span),
            Edge::Exit => format!("{}.exit", self.span),
        }
    }

    /// The edge `edge` of span `span`.
    pub fn of(span: &str, edge: Edge) -> SpanEdge {
        SpanEdge { span: span.to_owned(), edge }
    }
}

/// The two edges of a span a hop can stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Edge {
    /// The span's (first) enter.
    Enter,
    /// The span's (last) exit.
    Exit,
}

/// Hops a table may declare: every 16-bit index but [`Hop::LINK`]'s. A
/// trace whose header declares more is refused, written or read.
pub const MAX_HOPS: usize = u16::MAX as usize;

/// The hops a trace may contain, indexed by [`Hop`]: the ten standard hops
/// and the two closing ones first, then any a workload adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HopTable(Vec<HopDef>);

impl Default for HopTable {
    fn default() -> Self {
        HopTable::standard()
    }
}

impl HopTable {
    /// The ten standard hops of a write and the two that close its
    /// threads' cycles.
    pub fn standard() -> HopTable {
        HopTable(
            Hop::STANDARD
                .iter()
                .chain(&Hop::CLOSING)
                .map(|(hop, name, side)| HopDef {
                    name: (*name).to_owned(),
                    side: *side,
                    span: None,
                    owns: match *hop {
                        Hop::EXECUTED => Some(Owner::Sqlite),
                        Hop::IDLE | Hop::RETURNED => Some(Owner::Tail),
                        _ => None,
                    },
                })
                .collect(),
        )
    }

    /// Declare an extra hop and get its id. Reuses the id if `name` exists.
    pub fn add(&mut self, name: &str, side: Side) -> Hop {
        if let Some(hop) = self.find(name) {
            return hop;
        }
        self.0.push(HopDef { name: name.to_owned(), side, span: None, owns: None });
        Hop((self.0.len() - 1) as u16)
    }

    /// Declare who owns the same-thread slice that ends at `hop` (a hop
    /// outside the table is left alone). Refuses [`Owner::Boundary`] and
    /// [`Owner::Between`], which no hop declares, naming them.
    pub fn set_owner(&mut self, hop: Hop, owner: Owner) -> Result<(), String> {
        if !Owner::DECLARABLE.contains(&owner) {
            return Err(format!(
                "`{}` is not declared by a hop (a cross-thread slice is the boundary's; time between marks is \
                 measured): declare library, sqlite, tail, caller or wait",
                owner.name()
            ));
        }
        if let Some(def) = self.0.get_mut(usize::from(hop.0)) {
            def.owns = Some(owner);
        }
        Ok(())
    }

    /// Say that `edge` marks `hop` (a hop outside the table is left alone).
    pub fn mark_by(&mut self, hop: Hop, edge: SpanEdge) {
        if let Some(def) = self.0.get_mut(usize::from(hop.0)) {
            def.span = Some(edge);
        }
    }

    /// The id of the hop called `name`, if declared.
    pub fn find(&self, name: &str) -> Option<Hop> {
        self.0.iter().position(|d| d.name == name).map(|i| Hop(i as u16))
    }

    /// The declaration of `hop`, if it is in the table.
    pub fn get(&self, hop: Hop) -> Option<&HopDef> {
        self.0.get(usize::from(hop.0))
    }

    /// Number of declared hops.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no hop is declared (never true for a table built here).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// All declarations in id order.
    pub fn iter(&self) -> impl Iterator<Item = (Hop, &HopDef)> {
        self.0.iter().enumerate().map(|(i, d)| (Hop(i as u16), d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_table_matches_the_constants() {
        let table = HopTable::standard();
        assert_eq!(table.len(), 12);
        for (hop, name, side) in Hop::STANDARD.into_iter().chain(Hop::CLOSING) {
            let def = table.get(hop).expect("standard hop present");
            assert_eq!(def.name, name);
            assert_eq!(def.side, side);
        }
        assert_eq!(table.find("woke"), Some(Hop::WOKE));
        let owns = |hop: Hop| table.get(hop).and_then(|d| d.owns);
        assert_eq!(owns(Hop::EXECUTED), Some(Owner::Sqlite));
        assert_eq!((owns(Hop::IDLE), owns(Hop::RETURNED)), (Some(Owner::Tail), Some(Owner::Tail)));
        assert_eq!(owns(Hop::BUILT), None, "undeclared: the subject's own code");
    }

    #[test]
    fn owners_are_declared_on_hops_and_the_undeclarable_are_refused() {
        let mut table = HopTable::standard();
        let exit = table.add("execute.exit", Side::Writer);
        table.set_owner(exit, Owner::Sqlite).expect("declarable");
        assert_eq!(table.get(exit).and_then(|d| d.owns), Some(Owner::Sqlite));
        for owner in [Owner::Boundary, Owner::Between] {
            let err = table.set_owner(exit, owner).unwrap_err();
            assert!(err.contains(owner.name()), "{err}");
        }
        assert_eq!(table.get(exit).and_then(|d| d.owns), Some(Owner::Sqlite), "a refusal changes nothing");
        // A header written before owners existed reads as undeclared.
        let old: HopDef = serde_json::from_str(r#"{"name":"woke","side":"writer"}"#).expect("old header hop");
        assert_eq!(old.owns, None);
    }

    #[test]
    fn added_hops_follow_the_standard_ones_and_are_not_duplicated() {
        let mut table = HopTable::standard();
        let a = table.add("resolve_key", Side::Writer);
        let b = table.add("resolve_key", Side::Writer);
        assert_eq!(a, Hop(12));
        assert_eq!(a, b);
        assert_eq!(table.len(), 13);
    }
}
