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

use std::cell::{Cell, RefCell};
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

/// What the hook has seen: the current statement's tables (in the mask, and
/// those beyond it), the names it has resolved to indices, and the last name
/// it was given.
///
/// Only the hook and the writer thread touch it, one at a time, on the
/// connection's thread: plain cells, and a `RefCell` for the rarely used
/// lists, never borrowed across a statement.
#[derive(Default)]
struct Dirty {
    mask: Cell<u64>,
    /// Whether `lists.overflow` holds tables of the current statement.
    overflowed: Cell<bool>,
    /// The address of the last name SQLite passed, with the name and its
    /// index. SQLite passes its schema's own copy of a table's name, so one
    /// statement's rows (and the next statement's, on the same table) come
    /// with one address and skip the search. Only compared, never read.
    last: Cell<Option<(usize, &'static str, u32)>>,
    lists: RefCell<Lists>,
}

/// Names resolved to indices, and the current statement's tables beyond
/// the mask.
#[derive(Default)]
struct Lists {
    known: Vec<(&'static str, u32)>,
    overflow: Vec<u32>,
}

impl Dirty {
    /// Record a row changed in the table whose NUL-terminated name SQLite
    /// passed as `table`.
    ///
    /// # Safety
    ///
    /// `table` must point to a NUL-terminated string, readable for the call.
    unsafe fn record(&self, table: *const c_char) {
        // A schema reloaded after DDL frees its names, and the same address
        // can come back holding another one: the pointer only picks the
        // candidate, the bytes decide.
        let index = match self.last.get() {
            // SAFETY: the caller's contract.
            Some((last, name, index)) if last == table as usize && unsafe { names_equal(table, name) } => index,
            // SAFETY: the caller's contract.
            _ => unsafe { self.resolve(table) },
        };
        if (index as usize) < MASK_TABLES {
            self.mask.set(self.mask.get() | 1 << index);
        } else if let Ok(mut lists) = self.lists.try_borrow_mut()
            && !lists.overflow.contains(&index)
        {
            lists.overflow.push(index);
            self.overflowed.set(true);
        }
    }

    /// The slow half of [`Dirty::record`]: look the name up (interning it
    /// if new) and remember its pointer.
    ///
    /// # Safety
    ///
    /// As [`Dirty::record`].
    #[cold]
    unsafe fn resolve(&self, table: *const c_char) -> u32 {
        // SAFETY: the caller's contract.
        let bytes = unsafe { CStr::from_ptr(table) }.to_bytes();
        // The writer never holds a borrow while a statement steps; if it
        // somehow did, the name is resolved without the cache.
        let (name, index) = match self.lists.try_borrow_mut() {
            Ok(mut lists) => match lists.known.iter().find(|(name, _)| name.as_bytes() == bytes) {
                Some(&known) => known,
                None => {
                    let resolved = intern(&String::from_utf8_lossy(bytes));
                    lists.known.push(resolved);
                    resolved
                }
            },
            Err(_) => intern(&String::from_utf8_lossy(bytes)),
        };
        self.last.set(Some((table as usize, name, index)));
        index
    }

    /// The current statement's tables, leaving none.
    fn take(&self) -> Tables {
        let mask = self.mask.replace(0);
        let overflow = if self.overflowed.replace(false) {
            self.lists.try_borrow_mut().ok().map(|mut lists| std::mem::take(&mut lists.overflow).into())
        } else {
            None
        };
        Tables { mask, overflow }
    }
}

/// Whether the NUL-terminated string at `table` is `name`, read byte by
/// byte without measuring it first.
///
/// # Safety
///
/// `table` must point to a NUL-terminated string. Reading stops at the first
/// byte that differs; `name` holds no NUL (it was read from a C string), so
/// that is at the latest the string's own NUL, and nothing past it is read.
unsafe fn names_equal(table: *const c_char, name: &str) -> bool {
    for (i, expected) in name.bytes().enumerate() {
        // SAFETY: bytes 0..i matched `name`'s, none of which is NUL, so the
        // string is longer than i and byte i is readable.
        if unsafe { *table.add(i) } as u8 != expected {
            return false;
        }
    }
    // SAFETY: all of `name` matched without a NUL, so the string is at least
    // that long and its next byte (its NUL, if the names are equal) is readable.
    unsafe { *table.add(name.len()) == 0 }
}

/// One connection's harvest: the state its update hook writes into.
///
/// Field order matters to the writer thread that owns it: the connection
/// must be dropped (closing it removes the hook) before this state is.
#[derive(Default)]
pub(crate) struct Harvest {
    // Boxed so the address given to SQLite stays put when the owner moves.
    dirty: Box<Dirty>,
}

impl Harvest {
    /// Register the update hook on `conn`. The connection must not outlive
    /// this `Harvest` with the hook still installed.
    pub(crate) fn install(&self, conn: &Connection) {
        let arg: *const Dirty = &*self.dirty;
        // SAFETY: `handle` is the live connection's pointer, used on the
        // thread that owns the connection. `arg` points into a box that lives
        // as long as `self`, which outlives the hook (see the type's docs);
        // `on_update` only reads it as a `Dirty`.
        unsafe {
            ffi::sqlite3_update_hook(conn.handle(), Some(on_update), arg.cast_mut().cast::<c_void>());
        }
    }

    /// The tables touched since the last take, leaving none: every
    /// statement's outcome takes its own, and a failed statement's are
    /// taken and dropped, so the next statement starts empty without a
    /// reset of its own.
    pub(crate) fn take(&self) -> Tables {
        self.dirty.take()
    }
}

/// SQLite's update hook: one call per changed row, inside `sqlite3_step`.
extern "C" fn on_update(arg: *mut c_void, _op: c_int, _db: *const c_char, table: *const c_char, _rowid: i64) {
    if arg.is_null() || table.is_null() {
        return;
    }
    // SAFETY: `arg` is the `Dirty` registered by `Harvest::install`, alive
    // while the hook is installed; SQLite calls the hook on the connection's
    // own thread, so no other thread touches it.
    let dirty = unsafe { &*arg.cast_const().cast::<Dirty>() };
    // SAFETY: SQLite passes the table's NUL-terminated name, valid for the
    // duration of the call.
    unsafe { dirty.record(table) };
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
    use std::ffi::CString;

    use super::*;

    fn record(harvest: &Harvest, name: &str) {
        let name = CString::new(name).expect("no NUL");
        // SAFETY: a live NUL-terminated string.
        unsafe { harvest.dirty.record(name.as_ptr()) };
    }

    fn names(tables: &Tables) -> Vec<&'static str> {
        tables.iter().collect()
    }

    #[test]
    fn the_mask_and_the_overflow_both_report_their_tables() {
        let harvest = Harvest::default();
        // Other tests may have interned names already: register enough
        // that some land beyond the mask either way.
        for i in 0..70 {
            record(&harvest, &format!("harvest-test-{i}"));
        }
        drop(harvest.take());
        record(&harvest, "harvest-test-3");
        record(&harvest, "harvest-test-69");
        record(&harvest, "harvest-test-3");
        let tables = harvest.take();
        assert_eq!(names(&tables), ["harvest-test-3", "harvest-test-69"]);
        assert_eq!(tables.len(), 2);
        assert!(tables.contains("harvest-test-69") && !tables.contains("harvest-test-4"));
        assert!(harvest.take().is_empty());
    }

    #[test]
    fn a_name_pointer_reused_for_another_name_is_read_again() {
        let harvest = Harvest::default();
        // One buffer stands for a schema's name string whose address comes
        // back holding other names: shorter, longer, same length.
        let mut buffer = [0u8; 32];
        let mut at_same_address = |name: &str| {
            buffer.fill(0);
            buffer[..name.len()].copy_from_slice(name.as_bytes());
            // SAFETY: `buffer` is NUL-terminated (its last byte stays 0).
            unsafe { harvest.dirty.record(buffer.as_ptr().cast()) };
            names(&harvest.take())
        };
        for name in ["reuse-items", "reuse-items", "reuse-item", "reuse-itemsx", "reuse-itens", "reuse-items"] {
            assert_eq!(at_same_address(name), [name]);
        }
    }

    #[test]
    fn names_equal_stops_at_the_first_difference_and_needs_the_end() {
        let c = |s: &str| CString::new(s).expect("no NUL");
        // SAFETY: live NUL-terminated strings.
        unsafe {
            assert!(names_equal(c("items").as_ptr(), "items"));
            assert!(!names_equal(c("item").as_ptr(), "items"));
            assert!(!names_equal(c("itemsx").as_ptr(), "items"));
            assert!(!names_equal(c("").as_ptr(), "items"));
            assert!(names_equal(c("").as_ptr(), ""));
        }
    }
}
