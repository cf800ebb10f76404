//! The cell change every replica sends and merges, and the one replicated
//! table the model has: what the changesets, the checks, the replicas and
//! the importer all speak, so none of them needs another's.

use rusqlite::types::Value as SqlValue;

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
