//! Dirty-table harvest: which tables a statement changed, via SQLite's
//! update hook.
//!
//! The hook runs on the writer thread inside `sqlite3_step` and sets one bit
//! per changed table in a thread-local mask. Each table name is interned once
//! per process (leaked: one small string per distinct table name, ever) and
//! gets a fixed index, so a statement's [`Tables`] is a bare mask: building,
//! sending and dropping it touches no reference count and no shared memory.

use std::cell::RefCell;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use rusqlite::Connection;
use rusqlite::hooks::Action;

/// Tables whose changes fit the bit mask; more distinct tables than this
/// (rare) are carried by index.
const MASK_TABLES: usize = 64;

/// Every table name any writer thread has seen, in first-seen order; a
/// name's position is its index in every [`Tables`].
static NAMES: RwLock<Vec<&'static str>> = RwLock::new(Vec::new());

/// The set of tables one statement changed, in the order the process first
/// saw each table.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tables {
    mask: u64,
    overflow: Vec<u32>,
}

impl Tables {
    /// The table names.
    pub fn iter(&self) -> impl Iterator<Item = &'static str> + use<> {
        let names = NAMES.read().unwrap_or_else(PoisonError::into_inner);
        let masked = (0..MASK_TABLES).filter(|i| self.mask & (1 << i) != 0);
        let indices = masked.chain(self.overflow.iter().map(|&i| i as usize));
        let found: Vec<&'static str> = indices.filter_map(|i| names.get(i).copied()).collect();
        found.into_iter()
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

impl fmt::Debug for Tables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// The writer thread's view: names it has resolved to indices, and what the
/// current statement touched.
#[derive(Default)]
struct Dirty {
    known: Vec<(&'static str, u32)>,
    current: Tables,
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
        let index = match dirty.known.iter().find(|(name, _)| *name == table) {
            Some(&(_, index)) => index,
            None => {
                let resolved = intern(table);
                dirty.known.push(resolved);
                resolved.1
            }
        };
        let current = &mut dirty.current;
        if (index as usize) < MASK_TABLES {
            current.mask |= 1 << index;
        } else if !current.overflow.contains(&index) {
            current.overflow.push(index);
        }
    });
}

/// The process-wide name and index of `table`, registering it if new.
fn intern(table: &str) -> (&'static str, u32) {
    let mut names = NAMES.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = names.iter().position(|n| *n == table) {
        return (names[i], i as u32);
    }
    let name: &'static str = Box::leak(table.to_owned().into_boxed_str());
    names.push(name);
    (name, (names.len() - 1) as u32)
}

/// Forget what earlier statements touched (call before each statement).
pub(crate) fn reset() {
    DIRTY.with(|dirty| {
        let mut dirty = dirty.borrow_mut();
        dirty.current.mask = 0;
        dirty.current.overflow.clear();
    });
}

/// The tables touched since the last [`reset`].
pub(crate) fn take() -> Tables {
    DIRTY.with(|dirty| {
        let dirty = dirty.borrow();
        // Cloning an empty overflow list does not allocate.
        Tables { mask: dirty.current.mask, overflow: dirty.current.overflow.clone() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_and_the_overflow_both_report_their_tables() {
        std::thread::spawn(|| {
            // Other tests may have interned names already: register enough
            // that some land beyond the mask either way.
            for i in 0..70 {
                record(&format!("harvest-test-{i}"));
            }
            reset();
            record("harvest-test-3");
            record("harvest-test-69");
            record("harvest-test-3");
            let tables = take();
            assert_eq!(tables.iter().collect::<Vec<_>>(), ["harvest-test-3", "harvest-test-69"]);
            assert_eq!(tables.len(), 2);
            assert!(tables.contains("harvest-test-69") && !tables.contains("harvest-test-4"));
            reset();
            assert!(take().is_empty());
        })
        .join()
        .expect("harvest thread");
    }
}
