//! The merge path's steps as knobs, naive or tuned one at a time, so each
//! step can be A/B'd alone.

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
