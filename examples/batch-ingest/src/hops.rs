//! The direct marks' hops: the standard table, then a batch's own (BEGIN,
//! an event's statement, COMMIT), SQLite's where they end in it.

use hopscope_probe::{Hop, HopTable, Owner, Side};

/// The hops direct marks use beyond the standard ones, at their ids in
/// [`hops`].
#[derive(Debug, Clone, Copy)]
pub struct BatchHops {
    /// BEGIN starts (once per batch).
    pub begin: Hop,
    /// BEGIN returned.
    pub began: Hop,
    /// An event's own statement starts.
    pub executing: Hop,
    /// COMMIT starts (once per batch).
    pub commit: Hop,
    /// COMMIT returned.
    pub committed: Hop,
}

// readme-excerpt: hops
/// [`BatchHops`] at the ids [`hops`] gives them, after the standard twelve.
pub const HOPS: BatchHops =
    BatchHops { begin: Hop(12), began: Hop(13), executing: Hop(14), commit: Hop(15), committed: Hop(16) };

/// The direct marks' hop table: the standard hops, then the batch's, the
/// slices ending at `began`, `executed` and `committed` SQLite's.
pub fn hops() -> HopTable {
    let mut table = HopTable::standard();
    for (name, owner) in [
        ("begin", None),
        ("began", Some(Owner::Sqlite)),
        ("executing", None),
        ("commit", None),
        ("committed", Some(Owner::Sqlite)),
    ] {
        let hop = table.add(name, Side::Writer);
        if let Some(owner) = owner {
            // Declarable: cannot fail.
            let _ = table.set_owner(hop, owner);
        }
    }
    table
}
// readme-excerpt: end
