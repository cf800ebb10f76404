//! The reference writer's hop table: the standard and closing hops, then
//! group commit's at fixed ids after them. A leaf, so the knobs can name a
//! hop of it (an injected delay's) without the writer's code.

use hopscope_probe::{Hop, HopTable, Owner, Side};

/// The hops a group-commit writer marks beyond the standard and closing
/// ones, at fixed ids after them (see [`writer_hops`]).
#[derive(Debug, Clone, Copy)]
pub struct GroupHops;

impl GroupHops {
    /// The group's BEGIN is about to run (marked once per group).
    pub const BEGIN: Hop = Hop(12);
    /// BEGIN returned: the transaction is open (once per group).
    pub const BEGAN: Hop = Hop(13);
    /// A request's own statement is about to run (once per request).
    pub const EXECUTING: Hop = Hop(14);
    /// The group's COMMIT is about to run (once per group).
    pub const COMMIT: Hop = Hop(15);
    /// COMMIT returned (once per group).
    pub const COMMITTED: Hop = Hop(16);

    /// Each hop with its name, side and the owner of the slice it ends.
    pub const NAMED: [(Hop, &'static str, Side, Option<Owner>); 5] = [
        (GroupHops::BEGIN, "begin", Side::Writer, None),
        (GroupHops::BEGAN, "began", Side::Writer, Some(Owner::Sqlite)),
        (GroupHops::EXECUTING, "executing", Side::Writer, None),
        (GroupHops::COMMIT, "commit", Side::Writer, None),
        (GroupHops::COMMITTED, "committed", Side::Writer, Some(Owner::Sqlite)),
    ];
}

/// The hops hopscope's reference writer marks: the standard and closing
/// ones, then those of group commit ([`GroupHops`]) at their fixed ids. A
/// run with a group-commit lane declares this table
/// (`Harness::hops(writer_hops())`).
pub fn writer_hops() -> HopTable {
    let mut table = HopTable::standard();
    for (hop, name, side, owner) in GroupHops::NAMED {
        let added = table.add(name, side);
        debug_assert_eq!(added, hop, "group hops follow the standard and closing ones");
        if let Some(owner) = owner {
            // Declarable owners only: cannot fail.
            let _ = table.set_owner(added, owner);
        }
    }
    table
}
