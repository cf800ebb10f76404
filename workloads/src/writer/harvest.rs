//! Dirty-table harvest: which tables a statement changed, via SQLite's
//! update hook.
//!
//! The hook runs on the writer thread inside `sqlite3_step` and sets one bit
//! per changed table in the writer's [`Harvest`]. Each table name is interned
//! once per process (leaked: one small string per distinct table name, ever)
//! and gets a fixed index, so a statement's [`Tables`] is a bare mask:
//! building, sending and dropping it touches no reference count and no
//! shared memory.
//!
//! The hook is registered through SQLite's C API rather than rusqlite's
//! `update_hook`: rusqlite's trampoline validates both names as UTF-8 and
//! runs a `catch_unwind` for every changed row, which on this path cost more
//! than the bookkeeping itself. Ours compares the table name's bytes with
//! the names it already knows and sets a bit.

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::{PoisonError, RwLock};

use rusqlite::{Connection, ffi};

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
    // An optional boxed slice: a reply carries 16 bytes of tables, and
    // moving or dropping one with no overflow touches no heap memory.
    overflow: Option<Box<[u32]>>,
}

impl Tables {
    /// The table names.
    pub fn iter(&self) -> impl Iterator<Item = &'static str> + use<> {
        let names = NAMES.read().unwrap_or_else(PoisonError::into_inner);
        let masked = (0..MASK_TABLES).filter(|i| self.mask & (1 << i) != 0);
        let indices = masked.chain(self.overflow.iter().flat_map(|o| o.iter()).map(|&i| i as usize));
        let found: Vec<&'static str> = indices.filter_map(|i| names.get(i).copied()).collect();
        found.into_iter()
    }

    /// How many tables changed.
    pub fn len(&self) -> usize {
        self.mask.count_ones() as usize + self.overflow.as_ref().map_or(0, |o| o.len())
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

/// What the hook has seen: names it has resolved to indices, and what the
/// current statement touched (tables in the mask, and those beyond it).
#[derive(Default)]
struct Dirty {
    known: Vec<(&'static str, u32)>,
    mask: u64,
    overflow: Vec<u32>,
}

impl Dirty {
    fn record(&mut self, table: &[u8]) {
        let index = match self.known.iter().find(|(name, _)| name.as_bytes() == table) {
            Some(&(_, index)) => index,
            None => {
                let resolved = intern(&String::from_utf8_lossy(table));
                self.known.push(resolved);
                resolved.1
            }
        };
        if (index as usize) < MASK_TABLES {
            self.mask |= 1 << index;
        } else if !self.overflow.contains(&index) {
            self.overflow.push(index);
        }
    }

    /// The current statement's tables, leaving none.
    fn take(&mut self) -> Tables {
        let overflow = if self.overflow.is_empty() { None } else { Some(std::mem::take(&mut self.overflow).into()) };
        Tables { mask: std::mem::take(&mut self.mask), overflow }
    }
}

/// One connection's harvest: the state its update hook writes into.
///
/// Field order matters to the writer thread that owns it: the connection
/// must be dropped (closing it removes the hook) before this state is.
#[derive(Default)]
pub(crate) struct Harvest {
    // Boxed so the address given to SQLite stays put when the owner moves.
    dirty: Box<RefCell<Dirty>>,
}

impl Harvest {
    /// Register the update hook on `conn`. The connection must not outlive
    /// this `Harvest` with the hook still installed.
    pub(crate) fn install(&self, conn: &Connection) {
        let arg: *const RefCell<Dirty> = &*self.dirty;
        // SAFETY: `handle` is the live connection's pointer, used on the
        // thread that owns the connection. `arg` points into a box that lives
        // as long as `self`, which outlives the hook (see the type's docs);
        // `on_update` only reads it as a `RefCell<Dirty>`.
        unsafe {
            ffi::sqlite3_update_hook(conn.handle(), Some(on_update), arg.cast_mut().cast::<c_void>());
        }
    }

    /// The tables touched since the last take, leaving none: every
    /// statement's outcome takes its own, and a failed statement's are
    /// taken and dropped, so the next statement starts empty without a
    /// reset of its own.
    pub(crate) fn take(&self) -> Tables {
        self.dirty.borrow_mut().take()
    }
}

/// SQLite's update hook: one call per changed row, inside `sqlite3_step`.
extern "C" fn on_update(arg: *mut c_void, _op: c_int, _db: *const c_char, table: *const c_char, _rowid: i64) {
    if arg.is_null() || table.is_null() {
        return;
    }
    // SAFETY: `arg` is the `RefCell<Dirty>` registered by `Harvest::install`,
    // alive while the hook is installed; SQLite calls the hook on the
    // connection's own thread, so no other thread touches it.
    let dirty = unsafe { &*arg.cast_const().cast::<RefCell<Dirty>>() };
    // SAFETY: SQLite passes the table's NUL-terminated name, valid for the
    // duration of the call.
    let table = unsafe { CStr::from_ptr(table) }.to_bytes();
    // The writer never holds a borrow while a statement steps; if it somehow
    // did, losing one row's table is better than unwinding into C.
    if let Ok(mut dirty) = dirty.try_borrow_mut() {
        dirty.record(table);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_and_the_overflow_both_report_their_tables() {
        let harvest = Harvest::default();
        let record = |name: &str| harvest.dirty.borrow_mut().record(name.as_bytes());
        // Other tests may have interned names already: register enough
        // that some land beyond the mask either way.
        for i in 0..70 {
            record(&format!("harvest-test-{i}"));
        }
        drop(harvest.take());
        record("harvest-test-3");
        record("harvest-test-69");
        record("harvest-test-3");
        let tables = harvest.take();
        assert_eq!(tables.iter().collect::<Vec<_>>(), ["harvest-test-3", "harvest-test-69"]);
        assert_eq!(tables.len(), 2);
        assert!(tables.contains("harvest-test-69") && !tables.contains("harvest-test-4"));
        assert!(harvest.take().is_empty());
    }
}
