//! A slice as the join defines it: the hops that open and close it, the
//! thread(s) it runs on, who owns its time and whether an operation has it
//! alone. The join and its cost rule both read these; they read neither.

use hopscope_probe::{Hop, Owner, TraceHeader};
use serde::{Deserialize, Serialize};

/// Which thread(s) a slice runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceSide {
    /// Both marks on the caller thread.
    Caller,
    /// Both marks on the writer thread.
    Writer,
    /// From one thread to the other: a wake or transport cost.
    Cross,
}

/// Whose a slice's time is when a writer serves several operations with
/// one interval (a batch's transaction, its COMMIT): the *latency* view
/// (each operation waits for all of it) and the *cost* view (the
/// interval's time divided among the operations it served) differ; see
/// the `cost` module for the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// Both marks are the operation's own (or a hand-off across threads
    /// from an interval's mark to its own): latency and cost alike.
    #[default]
    Own,
    /// Both marks are a shared interval's: each operation waits for all of
    /// it; its cost to one operation is its length over the operations it
    /// served.
    Shared,
    /// One mark is the operation's own, the other a shared interval's, on
    /// one thread: the operation waits while the writer serves the others
    /// (the batch's statements before its own, the replies before its
    /// own). Most of that time is the others' own; the operation's cost is
    /// the writer's step just before its own mark, or its share of the step
    /// just before the interval's.
    Siblings,
}

impl Sharing {
    /// Stable lower-case name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Own => "own",
            Sharing::Shared => "shared",
            Sharing::Siblings => "siblings",
        }
    }
}

/// One slice of a lane's operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SliceDef {
    /// `from→to`, e.g. `sent→woke`.
    pub name: String,
    /// The hop that opens the slice.
    #[serde(skip)]
    pub from: Hop,
    /// The hop that closes the slice.
    #[serde(skip)]
    pub to: Hop,
    /// Where it runs.
    pub side: SliceSide,
    /// Whether the slice is a step of the operation's path (the path's
    /// slices add up to its time) rather than a tail beside it.
    pub on_path: bool,
    /// Who owns it, as the trace declares ([`declared_owner`]).
    pub owner: Owner,
    /// Whether its marks are the operation's own or a shared interval's.
    pub sharing: Sharing,
    /// Table columns of `from` and `to`.
    #[serde(skip)]
    pub(super) columns: (usize, usize),
}

/// Who owns the slice on `side` that ends at `to`: a cross-thread slice is the
/// boundary's; a same-thread one is what the trace declares for `to` or,
/// in a trace written before hops declared owners, what hopscope's fixed
/// hops stand for (`executed` ends SQLite's slice, `idle` and `returned`
/// the tails); anything else is the subject's own code.
pub fn declared_owner(header: &TraceHeader, side: SliceSide, to: Hop) -> Owner {
    if side == SliceSide::Cross {
        return Owner::Boundary;
    }
    let def = header.hops.get(to);
    if let Some(owner) = def.and_then(|d| d.owns) {
        return owner;
    }
    // Older traces: the standard table's fixed meanings, by hop and name.
    let named = |hop: Hop, name: &str| to == hop && def.is_some_and(|d| d.name == name);
    if named(Hop::EXECUTED, "executed") {
        Owner::Sqlite
    } else if named(Hop::IDLE, "idle") || named(Hop::RETURNED, "returned") {
        Owner::Tail
    } else {
        Owner::Library
    }
}
