//! A model of a CRDT changeset merge, the write path *inside* execute.
//!
//! The shape follows cr-sqlite's: every replicated table `T` has a data
//! table, a primary-key lookaside (`T__pks`: pk → integer key), and a clock
//! table (`T__clock`: one row per (key, column) with the column's version,
//! the database version that wrote it, the writing site's ordinal and a
//! sequence number); `sites` maps a site id to a small ordinal. A change is
//! one cell: (table, pk, column, value, col_version, db_version, site, seq).
//!
//! Merging a change: resolve the row's key (creating it), resolve the
//! site's ordinal, compare the incoming column version with the local clock
//! (a tie between different sites falls back to a deterministic comparison
//! of the values; the same site's equal version is the same change), and if
//! the change wins, apply the value and record the winning clock.
//!
//! [`import::Merger`] does that along two paths built from the same steps,
//! each step a separate knob of [`MergeKnobs`] so it can be A/B'd alone: the
//! naive path (prepare per change, `RETURNING`, a `SELECT ?` round trip for
//! the pk, no memo) and the tuned one (cached statements, bound values and
//! `last_insert_rowid`, direct binds, memos of the last row and site, the
//! merge's state kept in the process instead of stepped through SQL).

mod change;
pub mod changeset;
mod check;
pub mod hops;
pub mod import;
mod knobs;
mod replica;
pub mod run;
mod tie;

pub use change::{COLUMNS, Change, SiteId, TABLE};
pub use changeset::{ChangesetSpec, generate};
pub use check::MergeError;
pub use import::{MergeStats, Merger};
pub use knobs::MergeKnobs;
pub use replica::{Replica, Snapshot};
