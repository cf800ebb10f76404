//! Dirty-table harvest: which tables a statement changed, via SQLite's
//! update hook.
//!
//! The hook runs on the writer thread inside `sqlite3_step`. It records table
//! indices into a thread-local bitset; names are interned once per table, so
//! a steady stream of writes to known tables allocates nothing here.

use std::cell::RefCell;
use std::sync::Arc;

use rusqlite::Connection;
use rusqlite::hooks::Action;

/// The tables one statement changed, shared names (no copy per write).
pub type Tables = Vec<Arc<str>>;

#[derive(Default)]
struct Dirty {
    names: Vec<Arc<str>>,
    // One flag per interned name; `touched` lists the set ones in order.
    flags: Vec<bool>,
    touched: Vec<usize>,
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
                dirty.flags.push(false);
                dirty.names.len() - 1
            }
        };
        if !dirty.flags[index] {
            dirty.flags[index] = true;
            dirty.touched.push(index);
        }
    });
}

/// Forget what earlier statements touched (call before each statement).
pub(crate) fn reset() {
    DIRTY.with(|dirty| {
        let mut dirty = dirty.borrow_mut();
        let Dirty { flags, touched, .. } = &mut *dirty;
        for &i in touched.iter() {
            flags[i] = false;
        }
        touched.clear();
    });
}

/// The tables touched since the last [`reset`], in first-touch order.
pub(crate) fn take() -> Tables {
    DIRTY.with(|dirty| {
        let dirty = dirty.borrow();
        dirty.touched.iter().map(|&i| Arc::clone(&dirty.names[i])).collect()
    })
}
