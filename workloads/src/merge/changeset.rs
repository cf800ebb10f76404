//! Changesets as a replica would send them: `rows × columns` cell changes
//! from one or more sites, ordered by (db_version, seq). Deterministic: the
//! same spec gives the same changes, so runs and paths compare.

use rusqlite::types::Value as SqlValue;

use crate::merge::change::{COLUMNS, Change, SiteId, TABLE};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangesetSpec {
    /// Distinct rows.
    pub rows: u64,
    /// Columns changed per row (at most [`COLUMNS`]`.len()`).
    pub columns: usize,
    /// Authoring sites; rows are dealt to them in turn.
    pub sites: u8,
}

impl ChangesetSpec {
    /// The published benchmark's size: 20k rows × 4 columns, one site
    /// (80k changes).
    pub const PUBLISHED: ChangesetSpec = ChangesetSpec { rows: 20_000, columns: 4, sites: 1 };
}

/// The site id of generated site `n`.
pub fn site(n: u8) -> SiteId {
    let mut id = [0u8; 16];
    id[0] = 0x5e;
    id[15] = n;
    id
}

/// Generate `spec`: each row written in one database version of its site
/// (one change per column, seq 0..columns), versions counting up per site.
pub fn generate(spec: ChangesetSpec) -> Vec<Change> {
    let columns = spec.columns.min(COLUMNS.len());
    let sites = u64::from(spec.sites.max(1));
    let mut changes = Vec::with_capacity((spec.rows as usize).saturating_mul(columns));
    for row in 0..spec.rows {
        let author = (row % sites) as u8;
        let db_version = (row / sites + 1) as i64;
        for (seq, column) in COLUMNS.iter().take(columns).enumerate() {
            let value = match seq % 3 {
                0 => SqlValue::Integer((row as i64).wrapping_mul(7919) + seq as i64),
                1 => SqlValue::Text(format!("row {row} {column}")),
                _ => SqlValue::Real(row as f64 / 8.0),
            };
            changes.push(Change {
                table: TABLE.to_owned(),
                pk: vec![SqlValue::Text(format!("pk-{row:08}"))],
                column: (*column).to_owned(),
                value,
                col_version: 1,
                db_version,
                site: site(author),
                seq: seq as i64,
            });
        }
    }
    changes.sort_by_key(|c| (c.db_version, c.site, c.seq));
    changes
}
