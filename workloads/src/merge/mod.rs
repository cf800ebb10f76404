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

pub mod changeset;
mod check;
pub mod import;
mod replica;
pub mod run;

pub use changeset::{ChangesetSpec, generate};
pub use check::MergeError;
pub use import::{MergeStats, Merger};
pub use replica::{Replica, Snapshot};

use rusqlite::types::Value as SqlValue;

/// The marks inside a merged change, declared after the standard and closing hops
/// (see [`hops::table`]). Slices: `start→key` resolves the row's key,
/// `key→site` the site's ordinal, `site→compare` reads the clock (and, on a
/// tie, the local value), `compare→apply` writes the value, `apply→clock`
/// records the winning clock. A change that loses ends at `compare`.
pub mod hops {
    use hopscope_probe::{Hop, HopTable, Side};

    /// Names, in order, of the merge marks.
    pub const NAMES: [&str; 6] = ["start", "key", "site", "compare", "apply", "clock"];
    /// The change is in hand.
    pub const START: Hop = Hop(12);
    /// Its row's key is resolved.
    pub const KEY: Hop = Hop(13);
    /// Its site's ordinal is resolved.
    pub const SITE: Hop = Hop(14);
    /// The clocks are compared.
    pub const COMPARE: Hop = Hop(15);
    /// The value is applied (winning changes).
    pub const APPLY: Hop = Hop(16);
    /// The winning clock is recorded.
    pub const CLOCK: Hop = Hop(17);

    /// The standard hops plus these, with the ids above.
    pub fn table() -> HopTable {
        let mut table = HopTable::standard();
        for name in NAMES {
            table.add(name, Side::Writer);
        }
        table
    }
}

/// The columns of the model's replicated table `items` besides its pk.
pub const COLUMNS: [&str; 4] = ["a", "b", "c", "d"];

/// The replicated table.
pub const TABLE: &str = "items";

/// A site's identity: 16 bytes, as cr-sqlite's site ids.
pub type SiteId = [u8; 16];

/// One replicated cell change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Table name.
    pub table: String,
    /// Primary-key values (the model's tables have a one-column pk).
    pub pk: Vec<SqlValue>,
    /// Column name.
    pub column: String,
    /// New value.
    pub value: SqlValue,
    /// The cell's version at its author: grows by one per write of the cell.
    pub col_version: i64,
    /// The author's database version when it wrote the cell.
    pub db_version: i64,
    /// The author.
    pub site: SiteId,
    /// Order of the change within its database version.
    pub seq: i64,
}

/// Each step of the merge path, naive or tuned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeKnobs {
    /// Cached prepared statements (tuned) or a prepare and finalize per
    /// statement per change (naive).
    pub cached_statements: bool,
    /// Read keys and ordinals from `last_insert_rowid` or bound values
    /// (tuned) rather than `RETURNING` (naive), which makes SQLite build an
    /// ephemeral b-tree for every row it returns.
    pub no_returning: bool,
    /// Bind the pk directly (tuned) instead of first passing it through a
    /// prepared `SELECT ?` (naive).
    pub direct_pk_bind: bool,
    /// Remember the last (table, pk) → key (tuned); the N column changes of
    /// one row arrive back to back.
    pub row_memo: bool,
    /// Remember the last site id → ordinal (tuned); changesets are nearly
    /// always from one site.
    pub site_memo: bool,
    /// Keep the merge's own state in the process (tuned): set the sync bit
    /// directly instead of stepping `SELECT merge_sync_bit(x)` before and
    /// after every applied value, and compute the next database version
    /// once per transaction instead of probing `PRAGMA data_version` and
    /// querying it for every winning change (naive).
    pub direct_state: bool,
}

impl MergeKnobs {
    /// Every step naive.
    pub const NAIVE: MergeKnobs = MergeKnobs {
        cached_statements: false,
        no_returning: false,
        direct_pk_bind: false,
        row_memo: false,
        site_memo: false,
        direct_state: false,
    };

    /// Every step tuned.
    pub const TUNED: MergeKnobs = MergeKnobs {
        cached_statements: true,
        no_returning: true,
        direct_pk_bind: true,
        row_memo: true,
        site_memo: true,
        direct_state: true,
    };

    /// The knobs by name, for A/B'ing one at a time: (name, the knobs with
    /// only that step tuned).
    pub fn one_step_each() -> [(&'static str, MergeKnobs); 6] {
        let naive = MergeKnobs::NAIVE;
        [
            ("cached_statements", MergeKnobs { cached_statements: true, ..naive }),
            ("no_returning", MergeKnobs { no_returning: true, ..naive }),
            ("direct_pk_bind", MergeKnobs { direct_pk_bind: true, ..naive }),
            ("row_memo", MergeKnobs { row_memo: true, ..naive }),
            ("site_memo", MergeKnobs { site_memo: true, ..naive }),
            ("direct_state", MergeKnobs { direct_state: true, ..naive }),
        ]
    }
}

/// The schema of one replica.
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY NOT NULL, a, b, c, d);
CREATE TABLE IF NOT EXISTS items__pks (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS items__clock (
    key INTEGER NOT NULL,
    col TEXT NOT NULL,
    col_version INTEGER NOT NULL,
    db_version INTEGER NOT NULL,
    site INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (key, col)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items__clock_dbv ON items__clock (db_version);
CREATE TABLE IF NOT EXISTS sites (ordinal INTEGER PRIMARY KEY, site_id BLOB NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS local (one INTEGER PRIMARY KEY CHECK (one = 1), site_id BLOB NOT NULL, db_version INTEGER NOT NULL);
";

/// The order of two cell values when their versions tie between sites: by
/// storage class (NULL < integer and real < text < blob), then by value.
/// Every replica compares the same way, so every replica picks the same one.
pub(crate) fn value_order(a: &SqlValue, b: &SqlValue) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn class(v: &SqlValue) -> u8 {
        match v {
            SqlValue::Null => 0,
            SqlValue::Integer(_) | SqlValue::Real(_) => 1,
            SqlValue::Text(_) => 2,
            SqlValue::Blob(_) => 3,
        }
    }
    let number = |v: &SqlValue| match v {
        SqlValue::Integer(i) => *i as f64,
        SqlValue::Real(r) => *r,
        _ => 0.0,
    };
    class(a).cmp(&class(b)).then_with(|| match (a, b) {
        (SqlValue::Text(x), SqlValue::Text(y)) => x.cmp(y),
        (SqlValue::Blob(x), SqlValue::Blob(y)) => x.cmp(y),
        (SqlValue::Null, SqlValue::Null) => Ordering::Equal,
        (x, y) => number(x).total_cmp(&number(y)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_marks_get_the_ids_their_constants_say() {
        let table = hops::table();
        let ids = [hops::START, hops::KEY, hops::SITE, hops::COMPARE, hops::APPLY, hops::CLOCK];
        for (name, id) in hops::NAMES.iter().zip(ids) {
            assert_eq!(table.find(name), Some(id), "{name}");
        }
    }

    #[test]
    fn tied_values_order_the_same_way_everywhere() {
        use std::cmp::Ordering;
        let (null, one, two_and_half, text, blob) = (
            SqlValue::Null,
            SqlValue::Integer(1),
            SqlValue::Real(2.5),
            SqlValue::Text("a".into()),
            SqlValue::Blob(vec![0]),
        );
        let ascending = [&null, &one, &two_and_half, &text, &blob];
        for (i, a) in ascending.iter().enumerate() {
            for (j, b) in ascending.iter().enumerate() {
                assert_eq!(value_order(a, b), i.cmp(&j), "{a:?} vs {b:?}");
            }
        }
        assert_eq!(value_order(&SqlValue::Integer(3), &SqlValue::Real(3.0)), Ordering::Equal);
    }
}
