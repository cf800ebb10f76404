//! The importer: merges changes into a replica inside one transaction,
//! along the naive or the tuned path (or any mix, one knob per step).
//!
//! Transactions go through the [`Merger`] (`begin`, `commit`, `rollback`,
//! `savepoint`, `rollback_to`, `release`) because its memos are only true
//! for what the database still holds: each of those that can undo a write
//! forgets them, as does any failed merge.
//!
//! A malformed change (unknown table or column, wrong pk arity, a pk or
//! version of the wrong type) is refused before anything is written, so the
//! transaction's earlier merges stay intact. [`Merger::import`] merges a
//! whole changeset in one transaction and rolls all of it back on any
//! error: an import applies completely or not at all.

use std::borrow::Borrow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hopscope_probe::{Hop, NoProbe, OpId, Probe};
use rusqlite::functions::FunctionFlags;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Statement, params};

use crate::merge::change::{COLUMNS, Change, SiteId, TABLE};
use crate::merge::check::{MergeError, check};
use crate::merge::hops;
use crate::merge::knobs::MergeKnobs;
use crate::merge::tie::value_order;

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Changes merged.
    pub changes: u64,
    /// Changes that won (applied).
    pub won: u64,
    /// Changes that lost (already known or older).
    pub lost: u64,
}

/// Merges changes into one replica's connection. Generic over the probe:
/// `Merger<Recording>` marks the steps of every `sample_every`-th change
/// (see [`hops`]), `Merger<NoProbe>` (the default) has no marks at all.
#[derive(Debug)]
pub struct Merger<C: Borrow<Connection>, P: Probe = NoProbe> {
    /// The replica's connection, borrowed (`&Connection`) or owned (a
    /// [`super::Replica`]).
    conn: C,
    knobs: MergeKnobs,
    probe: P,
    sample_every: u64,
    /// The change being merged, when its steps are marked.
    marking: Option<OpId>,
    /// Last (pk, key) resolved: valid until anything may have undone it.
    row_memo: Option<(String, i64)>,
    /// Last (site, ordinal) resolved.
    site_memo: Option<(SiteId, i64)>,
    /// The database version merged changes get in the open transaction.
    pending: Option<i64>,
    /// Changes that won in the open transaction (their seq).
    seq: i64,
    /// Set while a merged value is written. cr-sqlite's triggers read its
    /// sync bit to tell a merge from a local write; this model has no
    /// triggers, so nothing reads it: what the naive path measures is the
    /// cost of setting it through SQL.
    sync_bit: Arc<AtomicBool>,
    /// Whether `merge_sync_bit()` is registered on the connection for this
    /// merger (the naive path registers it on first use).
    sync_fn: bool,
    apply_sql: Vec<String>,
}

impl<C: Borrow<Connection>> Merger<C, NoProbe> {
    /// A merger on `conn` (a replica's connection) taking each step as
    /// `knobs` says.
    pub fn new(conn: C, knobs: MergeKnobs) -> Merger<C, NoProbe> {
        Merger::probed(conn, knobs, NoProbe, u64::MAX)
    }
}

impl<C: Borrow<Connection>, P: Probe> Merger<C, P> {
    /// [`Merger::new`], marking the steps of every `sample_every`-th change
    /// (by its index in the changeset) with `probe`.
    pub fn probed(conn: C, knobs: MergeKnobs, probe: P, sample_every: u64) -> Merger<C, P> {
        let apply_sql = COLUMNS
            .iter()
            .map(|c| format!("INSERT INTO {TABLE} (id, {c}) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET {c} = ?2"))
            .collect();
        Merger {
            conn,
            knobs,
            probe,
            sample_every: sample_every.max(1),
            marking: None,
            row_memo: None,
            site_memo: None,
            pending: None,
            seq: 0,
            sync_bit: Arc::new(AtomicBool::new(false)),
            sync_fn: false,
            apply_sql,
        }
    }

    fn mark(&self, hop: Hop) {
        if let Some(op) = self.marking {
            self.probe.mark(op, hop);
        }
    }

    /// Merge `changes` in one transaction; on any error nothing is applied.
    pub fn import(&mut self, changes: &[Change]) -> Result<MergeStats, MergeError> {
        self.begin()?;
        let mut stats = MergeStats::default();
        for (index, change) in changes.iter().enumerate() {
            match self.merge(index, change) {
                Ok(won) => {
                    stats.changes += 1;
                    if won { stats.won += 1 } else { stats.lost += 1 }
                }
                Err(err) => {
                    let _ = self.rollback();
                    return Err(err);
                }
            }
        }
        self.commit()?;
        Ok(stats)
    }

    /// Open a transaction.
    pub fn begin(&mut self) -> Result<(), MergeError> {
        self.forget();
        self.conn.borrow().execute_batch("BEGIN IMMEDIATE")?;
        Ok(())
    }

    /// Commit, recording the replica's new database version if anything won.
    pub fn commit(&mut self) -> Result<(), MergeError> {
        if let Some(version) = self.pending {
            self.conn.borrow().execute("UPDATE local SET db_version = ?1", params![version])?;
        }
        self.forget();
        self.conn.borrow().execute_batch("COMMIT")?;
        Ok(())
    }

    /// Roll the transaction back.
    pub fn rollback(&mut self) -> Result<(), MergeError> {
        self.forget();
        self.conn.borrow().execute_batch("ROLLBACK")?;
        Ok(())
    }

    /// Open savepoint `name` inside the transaction.
    pub fn savepoint(&mut self, name: &str) -> Result<(), MergeError> {
        self.conn.borrow().execute_batch(&format!("SAVEPOINT \"{}\"", name.replace('"', "\"\"")))?;
        Ok(())
    }

    /// Undo everything since savepoint `name` (which stays open). The memos
    /// go with it: a key resolved after the savepoint no longer exists.
    pub fn rollback_to(&mut self, name: &str) -> Result<(), MergeError> {
        self.forget();
        self.conn.borrow().execute_batch(&format!("ROLLBACK TO \"{}\"", name.replace('"', "\"\"")))?;
        Ok(())
    }

    /// Close savepoint `name`, keeping its work.
    pub fn release(&mut self, name: &str) -> Result<(), MergeError> {
        self.conn.borrow().execute_batch(&format!("RELEASE \"{}\"", name.replace('"', "\"\"")))?;
        Ok(())
    }

    fn forget(&mut self) {
        self.row_memo = None;
        self.site_memo = None;
        self.pending = None;
        self.seq = 0;
        // A merge that failed while writing its value left the bit on.
        self.sync_bit.store(false, Ordering::Relaxed);
    }

    /// Merge one change (the `index`-th of its changeset) inside the open
    /// transaction; returns whether it won. A malformed change is refused
    /// before anything is written.
    pub fn merge(&mut self, index: usize, change: &Change) -> Result<bool, MergeError> {
        self.marking = (P::RECORDS && (index as u64).is_multiple_of(self.sample_every)).then_some(OpId(index as u64));
        self.mark(hops::START);
        let (pk, column) = check(index, change)?;
        let result = self.merge_checked(pk, column, change);
        if result.is_err() {
            // Whatever the failed statement undid, the memos may be wrong.
            self.forget();
        }
        result
    }

    fn merge_checked(&mut self, pk: &str, column: usize, change: &Change) -> Result<bool, MergeError> {
        let key = self.resolve_key(pk)?;
        self.mark(hops::KEY);
        let site = self.resolve_site(&change.site)?;
        self.mark(hops::SITE);
        let wins = self.wins(key, pk, column, site, change)?;
        self.mark(hops::COMPARE);
        if !wins {
            return Ok(false);
        }
        self.set_sync_bit(true)?;
        self.with(&self.apply_sql[column], |s| s.execute(params![pk, change.value]).map(drop))?;
        self.set_sync_bit(false)?;
        self.mark(hops::APPLY);
        self.record_clock(key, column, site, change)?;
        self.mark(hops::CLOCK);
        Ok(true)
    }

    /// Run `f` on the statement `sql`: cached, or prepared and finalized
    /// for this one use.
    fn with<T>(&self, sql: &str, f: impl FnOnce(&mut Statement<'_>) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        if self.knobs.cached_statements {
            f(&mut *self.conn.borrow().prepare_cached(sql)?)
        } else {
            f(&mut self.conn.borrow().prepare(sql)?)
        }
    }

    /// Say whether a merged value is being written: directly, or by stepping
    /// `SELECT merge_sync_bit(?)` as an extension's SQL function would be.
    fn set_sync_bit(&mut self, on: bool) -> rusqlite::Result<()> {
        if self.knobs.direct_state {
            self.sync_bit.store(on, Ordering::Relaxed);
            return Ok(());
        }
        if !self.sync_fn {
            let bit = Arc::clone(&self.sync_bit);
            self.conn.borrow().create_scalar_function("merge_sync_bit", 1, FunctionFlags::SQLITE_UTF8, move |ctx| {
                Ok(bit.swap(ctx.get::<bool>(0)?, Ordering::Relaxed))
            })?;
            self.sync_fn = true;
        }
        self.with("SELECT merge_sync_bit(?1)", |s| s.query_row(params![on], |r| r.get::<_, bool>(0))).map(drop)
    }

    /// The database version merged changes get in the open transaction:
    /// computed once and kept (tuned), or probed and queried for every
    /// winning change (naive), as an extension that does not track its
    /// transaction would.
    fn next_db_version(&mut self) -> rusqlite::Result<i64> {
        if self.knobs.direct_state
            && let Some(version) = self.pending
        {
            return Ok(version);
        }
        if !self.knobs.direct_state {
            self.with("PRAGMA data_version", |s| s.query_row([], |r| r.get::<_, i64>(0)))?;
        }
        let next = self.with("SELECT db_version + 1 FROM local", |s| s.query_row([], |r| r.get(0)))?;
        self.pending = Some(next);
        Ok(next)
    }

    /// The row's lookaside key, created if the pk is new.
    fn resolve_key(&mut self, pk: &str) -> rusqlite::Result<i64> {
        if self.knobs.row_memo
            && let Some((memo_pk, key)) = &self.row_memo
            && memo_pk == pk
        {
            return Ok(*key);
        }
        // The naive path passes the pk through a prepared `SELECT ?`, as a
        // packed pk is unpacked by a temporary statement per row.
        let pk = if self.knobs.direct_pk_bind {
            pk.to_owned()
        } else {
            self.with("SELECT ?1", |s| s.query_row(params![pk], |r| r.get::<_, String>(0)))?
        };
        let found = self
            .with("SELECT key FROM items__pks WHERE id = ?1", |s| s.query_row(params![pk], |r| r.get(0)).optional())?;
        let key = match found {
            Some(key) => key,
            None if self.knobs.no_returning => {
                self.with("INSERT INTO items__pks (id) VALUES (?1)", |s| s.execute(params![pk]))?;
                self.conn.borrow().last_insert_rowid()
            }
            None => self.with("INSERT INTO items__pks (id) VALUES (?1) RETURNING key", |s| {
                s.query_row(params![pk], |r| r.get(0))
            })?,
        };
        if self.knobs.row_memo {
            self.row_memo = Some((pk, key));
        }
        Ok(key)
    }

    /// The site's ordinal, created if the site is new.
    fn resolve_site(&mut self, site: &SiteId) -> rusqlite::Result<i64> {
        if self.knobs.site_memo
            && let Some((memo_site, ordinal)) = &self.site_memo
            && memo_site == site
        {
            return Ok(*ordinal);
        }
        let found = self.with("SELECT ordinal FROM sites WHERE site_id = ?1", |s| {
            s.query_row(params![&site[..]], |r| r.get(0)).optional()
        })?;
        let ordinal = match found {
            Some(ordinal) => ordinal,
            None if self.knobs.no_returning => {
                self.with("INSERT INTO sites (site_id) VALUES (?1)", |s| s.execute(params![&site[..]]))?;
                self.conn.borrow().last_insert_rowid()
            }
            None => self.with("INSERT INTO sites (site_id) VALUES (?1) RETURNING ordinal", |s| {
                s.query_row(params![&site[..]], |r| r.get(0))
            })?,
        };
        if self.knobs.site_memo {
            self.site_memo = Some((*site, ordinal));
        }
        Ok(ordinal)
    }

    /// Whether the incoming change beats the local clock of its cell.
    fn wins(&self, key: i64, pk: &str, column: usize, site: i64, change: &Change) -> rusqlite::Result<bool> {
        let local: Option<(i64, i64)> = self
            .with("SELECT col_version, site FROM items__clock WHERE key = ?1 AND col = ?2", |s| {
                s.query_row(params![key, COLUMNS[column]], |r| Ok((r.get(0)?, r.get(1)?))).optional()
            })?;
        let Some((local_version, local_site)) = local else { return Ok(true) };
        if change.col_version != local_version {
            return Ok(change.col_version > local_version);
        }
        // A site's versions of a cell only grow: the same site at the same
        // version is this very change, already merged.
        if local_site == site {
            return Ok(false);
        }
        let sql = format!("SELECT {} FROM {TABLE} WHERE id = ?1", COLUMNS[column]);
        let local_value: SqlValue = self.with(&sql, |s| s.query_row(params![pk], |r| r.get(0)))?;
        Ok(value_order(&change.value, &local_value) == std::cmp::Ordering::Greater)
    }

    /// Record the winning change's clock under the replica's next version.
    fn record_clock(&mut self, key: i64, column: usize, site: i64, change: &Change) -> rusqlite::Result<()> {
        let version = self.next_db_version()?;
        self.seq += 1;
        let values = params![key, COLUMNS[column], change.col_version, version, site, self.seq];
        const UPSERT: &str = "INSERT INTO items__clock (key, col, col_version, db_version, site, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (key, col) DO UPDATE SET
             col_version = excluded.col_version, db_version = excluded.db_version, site = excluded.site, seq = excluded.seq";
        if self.knobs.no_returning {
            self.with(UPSERT, |s| s.execute(values).map(drop))
        } else {
            let sql = format!("{UPSERT} RETURNING key");
            self.with(&sql, |s| s.query_row(values, |r| r.get::<_, i64>(0)).map(drop))
        }
    }
}
