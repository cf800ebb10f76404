//! Dirty-table harvest: which tables a statement changed, via SQLite's
//! update hook.
//!
//! The hook runs on the writer thread inside `sqlite3_step` and sets one bit
//! per changed table in a thread-local mask. Table names are interned once;
//! a statement's [`Tables`] is that mask plus a shared reference to the name
//! list, so a steady stream of writes to known tables allocates nothing.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use rusqlite::Connection;
use rusqlite::hooks::Action;

/// Tables whose changes fit the bit mask; more distinct tables than this
/// (rare) are carried by name.
const MASK_TABLES: usize = 64;

/// The set of tables one statement changed, in the order the writer first
/// saw each table. Cloning it costs a reference count.
#[derive(Clone, Default)]
pub struct Tables {
    names: Option<Arc<[Arc<str>]>>,
    mask: u64,
    overflow: Vec<Arc<str>>,
}

impl Tables {
    /// The table names.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let names = self.names.as_deref().unwrap_or_default();
        let masked = names.iter().take(MASK_TABLES).enumerate().filter(|(i, _)| self.mask & (1 << i) != 0);
        masked.map(|(_, n)| &**n).chain(self.overflow.iter().map(|n| &**n))
    }

    /// How many tables changed.
    pub fn len(&self) -> usize {
        self.mask.count_ones() as usize + self.overflow.len()
    }

    /// Whether no table changed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `table` changed.
    pub fn contains(&self, table: &str) -> bool {
        self.iter().any(|t| t == table)
    }
}

impl PartialEq for Tables {
    fn eq(&self, other: &Tables) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Tables {}

impl fmt::Debug for Tables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[derive(Default)]
struct Dirty {
    names: Vec<Arc<str>>,
    // The names as shared with outcomes; rebuilt only when a table is new.
    snapshot: Option<Arc<[Arc<str>]>>,
    mask: u64,
    overflow: Vec<usize>,
}

thread_local! {
    static DIRTY: RefCell<Dirty> = RefCell::new(Dirty::default());
}

/// Install the hook on `conn` (call on the writer thread, which owns it).
pub(crate) fn install(conn: &Connection) {
    conn.update_hook(Some(|_: Action, _db: &str, table: &str, _rowid: i64| record(table)));
}

fn record(table: &str) {
    DIRTY.with(|dirty| {
        let mut dirty = dirty.borrow_mut();
        let index = match dirty.names.iter().position(|n| &**n == table) {
            Some(i) => i,
            None => {
                dirty.names.push(table.into());
                dirty.snapshot = None;
                dirty.names.len() - 1
            }
        };
        if index < MASK_TABLES {
            dirty.mask |= 1 << index;
        } else if !dirty.overflow.contains(&index) {
            dirty.overflow.push(index);
        }
    });
}

/// Forget what earlier statements touched (call before each statement).
pub(crate) fn reset() {
    DIRTY.with(|dirty| {
        let mut dirty = dirty.borrow_mut();
        dirty.mask = 0;
        dirty.overflow.clear();
    });
}

/// The tables touched since the last [`reset`].
pub(crate) fn take() -> Tables {
    DIRTY.with(|dirty| {
        let mut dirty = dirty.borrow_mut();
        if dirty.snapshot.is_none() {
            dirty.snapshot = Some(dirty.names.iter().cloned().collect());
        }
        let overflow = dirty.overflow.iter().map(|&i| Arc::clone(&dirty.names[i])).collect();
        Tables { names: dirty.snapshot.clone(), mask: dirty.mask, overflow }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_and_the_overflow_both_report_their_tables() {
        std::thread::spawn(|| {
            for i in 0..70 {
                record(&format!("t{i}"));
            }
            reset();
            record("t3");
            record("t66");
            record("t3");
            let tables = take();
            assert_eq!(tables.iter().collect::<Vec<_>>(), ["t3", "t66"]);
            assert_eq!(tables.len(), 2);
            assert!(tables.contains("t66") && !tables.contains("t4"));
            reset();
            assert!(take().is_empty());
        })
        .join()
        .expect("harvest thread");
    }
}
