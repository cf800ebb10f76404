//! Refusing what cannot be merged: a malformed change is refused before
//! anything is written, with a typed error that names it.

use rusqlite::types::Value as SqlValue;

use crate::merge::change::{COLUMNS, Change, TABLE};

/// Why a change or an import was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// The change names a table the replica does not replicate.
    #[error("change {index}: unknown table `{table}`")]
    UnknownTable {
        /// Position in the changeset.
        index: usize,
        /// The table named.
        table: String,
    },
    /// The change names a column the table does not have.
    #[error("change {index}: table `{TABLE}` has no column `{column}`")]
    UnknownColumn {
        /// Position in the changeset.
        index: usize,
        /// The column named.
        column: String,
    },
    /// The pk has the wrong number of values.
    #[error("change {index}: pk has {found} values, table `{TABLE}` has a 1-column pk")]
    PkArity {
        /// Position in the changeset.
        index: usize,
        /// Values given.
        found: usize,
    },
    /// A field has the wrong type or range.
    #[error("change {index}: {what}")]
    BadType {
        /// Position in the changeset.
        index: usize,
        /// What is wrong.
        what: String,
    },
    /// SQLite refused a statement; the import's transaction was rolled back.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Refuse a malformed change before anything is written; returns its pk
/// text and column index.
pub(crate) fn check(index: usize, change: &Change) -> Result<(&str, usize), MergeError> {
    if change.table != TABLE {
        return Err(MergeError::UnknownTable { index, table: change.table.clone() });
    }
    let column = COLUMNS
        .iter()
        .position(|c| *c == change.column)
        .ok_or_else(|| MergeError::UnknownColumn { index, column: change.column.clone() })?;
    let [pk] = change.pk.as_slice() else {
        return Err(MergeError::PkArity { index, found: change.pk.len() });
    };
    let SqlValue::Text(pk) = pk else {
        return Err(MergeError::BadType { index, what: format!("pk must be text, got {pk:?}") });
    };
    if change.col_version < 1 || change.db_version < 0 || change.seq < 0 {
        return Err(MergeError::BadType {
            index,
            what: format!(
                "versions must be positive (col_version {}, db_version {}, seq {})",
                change.col_version, change.db_version, change.seq
            ),
        });
    }
    Ok((pk, column))
}
