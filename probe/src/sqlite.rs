//! SQLite's own statement hook as a probe (feature `sqlite`): the start
//! and the end of every statement, marked on the thread that runs it.
//!
//! A writer you cannot edit (a published crate, a library's pool) still
//! runs SQLite, and SQLite tells a connection's trace callback when a
//! statement starts (`SQLITE_TRACE_STMT`) and when it ends
//! (`SQLITE_TRACE_PROFILE`, when its last step returns, or at its reset if
//! it is reset before finishing). The end comes before SQLite runs the
//! connection's WAL hook: an auto-checkpoint that a commit sets off lies
//! after the statement's end mark, not inside its slice. [`SqliteProbe`]
//! registers one such callback on a connection; each call reads the clock
//! and hands a [`Mark`] to a [`Collector`], the same wait-free rings span
//! marks use, drained from outside (the thread running SQLite belongs to
//! the library and runs no code of ours between statements).
//!
//! **The operation id.** A statement carries no id of the caller's, so the
//! thread that runs it says which operation it serves: [`with_op`] around
//! the call (inside the closure a crate runs on its thread, as
//! tokio-rusqlite's `call` does), or [`set_op`]. Where no code of the
//! caller's runs on that thread (sqlx's worker), a probe made with
//! [`SqliteProbe::in_order`] takes the operation of each statement started
//! on a thread with none set from those the callers announced, in order
//! ([`SqliteProbe::announce`], made where calls are serialised, e.g. under
//! the lock that guards the connection). A statement run with no operation
//! marks nothing and is counted ([`StatementCounts`]).
//!
//! **What it costs.** Each statement pays two callbacks from SQLite (each a
//! clock read, a thread-local load and a ring write) and, because the end
//! is reported with a duration, two reads of SQLite's own clock (one of
//! them between the two marks). [`cost::measure`] times the whole per
//! statement in the calling process (a run measures it before it starts and
//! states it beside the slices); `benches/sqlite.rs` prints it with more
//! variants.
//!
//! **Limits.** SQLite keeps one trace callback per connection, and can
//! say that one was set only by taking it away (`sqlite3_trace` and
//! `sqlite3_profile` return the argument the previous one was set with):
//! attaching to a connection that carried someone else's is refused with
//! [`SqliteProbeError::Occupied`], that callback gone. A later `trace_v2`
//! or legacy `trace` of the program's own replaces this probe (its
//! statements are then no longer marked, and [`SqliteProbe::unmatched`]
//! says so); a later legacy `profile` callback runs beside it. A trigger's
//! subprogram and its statements are reported as starts too; they are told
//! apart by their text and counted, not marked.

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, ffi};

use crate::clock;
use crate::collector::Collector;
use crate::hop::{Hop, HopTable, Mark, OpId, Owner, Side};

/// Marks the start and end of each statement on the connections it is
/// attached to.
#[derive(Debug, Clone)]
pub struct SqliteProbe {
    hook: Arc<Hook>,
}

/// What the trace callback reads: shared by every connection the probe is
/// attached to.
#[derive(Debug)]
struct Hook {
    collector: Collector,
    start: Hop,
    end: Hop,
    counts: Counts,
    /// Operations announced for statements started on threads with none
    /// set, oldest first; `None` unless made [`SqliteProbe::in_order`].
    announced: Option<Mutex<VecDeque<u64>>>,
    /// Explicit transactions marked as shared intervals
    /// ([`SqliteProbe::transactions`]).
    transactions: std::sync::OnceLock<TransactionHops>,
}

/// The hops of an explicit transaction a probe marks as one shared
/// interval ([`SqliteProbe::transactions`]): its `BEGIN`'s two ends and its
/// `COMMIT`'s (or `END`'s, or `ROLLBACK`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionHops {
    /// `BEGIN` starts.
    pub begin: Hop,
    /// `BEGIN` returned.
    pub began: Hop,
    /// `COMMIT` starts.
    pub commit: Hop,
    /// `COMMIT` returned.
    pub committed: Hop,
}

impl TransactionHops {
    /// Declare the four hops in `table` (`begin`, `began`, `commit`,
    /// `committed`, on the writer's side, the slices ending at `began` and
    /// `committed` SQLite's), reusing any already declared by those names.
    pub fn declare(table: &mut HopTable) -> TransactionHops {
        let mut hop = |name: &str, owner: Option<Owner>| {
            let hop = table.add(name, Side::Writer);
            if let Some(owner) = owner {
                // Declarable: cannot fail.
                let _ = table.set_owner(hop, owner);
            }
            hop
        };
        TransactionHops {
            begin: hop("begin", None),
            began: hop("began", Some(Owner::Sqlite)),
            commit: hop("commit", None),
            committed: hop("committed", Some(Owner::Sqlite)),
        }
    }
}

/// What a statement is, for a probe that marks transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Statement {
    /// One that serves an operation.
    Op,
    /// An explicit transaction's `BEGIN`.
    Begin,
    /// Its `COMMIT`, `END` or `ROLLBACK` (not `ROLLBACK TO`).
    Commit,
}

/// The ids given to transactions: bit 62 set, apart from a program's
/// operation ids, within a signed 64-bit column.
const TRANSACTION_ID_BIT: u64 = 1 << 62;

/// Transactions given an id so far, over every probe.
static TRANSACTIONS: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Default)]
struct Counts {
    starts: AtomicU64,
    ends: AtomicU64,
    without_op: AtomicU64,
    subprograms: AtomicU64,
    unclaimed: AtomicU64,
    announced: AtomicU64,
}

/// What a probe saw, over every connection it is attached to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatementCounts {
    /// Statement starts marked.
    pub starts: u64,
    /// Statement ends marked.
    pub ends: u64,
    /// Starts and ends run with no operation set on their thread: not
    /// marked.
    pub without_op: u64,
    /// Starts SQLite reported inside a statement, not marked: a trigger's
    /// (`-- TRIGGER name`) and each statement of its body.
    pub subprograms: u64,
    /// Operations announced that no statement took, forgotten by
    /// [`SqliteProbe::unmatched`] or pushed out of a full queue.
    pub unclaimed: u64,
    /// Operations announced ([`SqliteProbe::announce`]): every probe counts
    /// them, an in-order one also hands them to statements.
    pub announced: u64,
}

/// A block's statements that did not pair with its operations
/// ([`SqliteProbe::unmatched`]): its joins cannot be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unpaired {
    /// An in-order probe saw statements with no operation to give them,
    /// or operations no statement took: the writer ran more or fewer than
    /// one statement per operation (each operation went to the first).
    #[error(
        "its statements did not pair one to one with its operations ({statements} statements ran with no \
         operation, {unclaimed} operations took no statement): an in-order probe gives each operation to \
         the next statement started on a thread with none set, so the writer ran more or fewer than one statement \
         per operation, or statements of its own; mark the operation where the writer's code runs each statement \
         (`hopscope_probe::sqlite::with_op`), or drive one statement per operation"
    )]
    InOrder {
        /// Statements that ran with no operation.
        statements: u64,
        /// Operations announced that no statement took.
        unclaimed: u64,
    },
    /// Statements ran, none of them with an operation set on its thread:
    /// the operation was set on another thread than the one running them.
    #[error(
        "none of its statements was marked ({statements} statements ran on threads with no operation set): the \
         operation is set on another thread than the one that runs them; set it with \
         `hopscope_probe::sqlite::with_op` inside the closure the writer runs on its own thread, or make the probe \
         `SqliteProbe::in_order` and announce each operation"
    )]
    OtherThread {
        /// Statements that ran with no operation.
        statements: u64,
    },
    /// Operations were announced and the probe saw no statement at all:
    /// the writer ran them on a connection it is not attached to, or a
    /// trace callback set since replaced the probe.
    #[error(
        "{operations} operations ran and the probe saw none of their statements: the writer runs them on a \
         connection the probe is not attached to (a pool's new connection, a second connection of the library's), \
         or a trace callback set on the connection since the probe attached replaced it (SQLite keeps one); \
         attach the probe to each connection the writer uses, and set no trace callback of your own after it"
    )]
    Unseen {
        /// Operations announced in the block.
        operations: u64,
    },
}

/// Operations an in-order probe keeps waiting for a statement; announcing
/// past it pushes the oldest out, counted as unclaimed (a writer that runs
/// no statement for most operations would otherwise grow it without end).
pub const ANNOUNCED_CAP: usize = 1 << 16;

/// Why a probe could not be attached or detached.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SqliteProbeError {
    /// SQLite refused the callback (a closed or misused handle).
    #[error("SQLite refused the trace callback (error code {0})")]
    Refused(c_int),
    /// The connection is not probed by this probe.
    #[error("this connection is not probed by this probe")]
    NotAttached,
    /// The connection already had a trace or profile callback of someone
    /// else's. SQLite keeps one, and can tell that one was set only by
    /// taking it away: it is gone, and the probe is not attached.
    #[error(
        "the connection already had a SQLite {0} callback; SQLite cannot hand one back, so finding it removed it, \
         and the probe is not attached: attach the probe before setting your own callback (yours then replaces \
         the probe), or probe a connection without one"
    )]
    Occupied(&'static str),
}

/// No operation set on this thread.
const NO_OP: u64 = u64::MAX;

thread_local! {
    static CURRENT_OP: std::cell::Cell<u64> = const { std::cell::Cell::new(NO_OP) };
    /// The current operation was taken from the announced ones for the
    /// statement running now, and goes with its end.
    static TAKEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The explicit transaction this thread's connection has open, marked
    /// as a shared interval (`NO_OP`: none).
    static TRANSACTION: std::cell::Cell<u64> = const { std::cell::Cell::new(NO_OP) };
    /// The operation last linked to the open transaction (its next
    /// statements need no second link).
    static LINKED: std::cell::Cell<u64> = const { std::cell::Cell::new(NO_OP) };
    /// What the statement running on this thread is.
    static RUNNING: std::cell::Cell<Statement> = const { std::cell::Cell::new(Statement::Op) };
}

/// Run `f` with `op` as the operation the statements it runs on this
/// thread serve; the operation set before is restored after.
pub fn with_op<R>(op: OpId, f: impl FnOnce() -> R) -> R {
    let before = CURRENT_OP.with(|current| current.replace(op.0));
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = CURRENT_OP.try_with(|current| current.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// Set (or clear, with `None`) the operation the statements this thread
/// runs from now on serve.
pub fn set_op(op: Option<OpId>) {
    CURRENT_OP.with(|current| current.set(op.map_or(NO_OP, |op| op.0)));
}

/// The connections probed now, by database handle, and the probe each
/// carries: how an attach tells a connection it already probes, and how
/// a detach or SQLite's close releases the probe's handle exactly once.
static ATTACHED: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

fn attached<R>(f: impl FnOnce(&mut HashMap<usize, usize>) -> R) -> R {
    let mut map = ATTACHED.lock().unwrap_or_else(PoisonError::into_inner);
    f(map.get_or_insert_with(HashMap::new))
}

impl SqliteProbe {
    /// A probe marking each statement's start as `start` and its end as
    /// `end`, into `collector`.
    pub fn new(collector: Collector, start: Hop, end: Hop) -> SqliteProbe {
        let transactions = std::sync::OnceLock::new();
        SqliteProbe {
            hook: Arc::new(Hook { collector, start, end, counts: Counts::default(), announced: None, transactions }),
        }
    }

    /// [`SqliteProbe::new`], and a statement started on a thread with no
    /// operation set serves the oldest operation announced
    /// ([`SqliteProbe::announce`]) until it ends.
    pub fn in_order(collector: Collector, start: Hop, end: Hop) -> SqliteProbe {
        let announced = Some(Mutex::new(VecDeque::new()));
        let transactions = std::sync::OnceLock::new();
        SqliteProbe {
            hook: Arc::new(Hook { collector, start, end, counts: Counts::default(), announced, transactions }),
        }
    }

    /// Mark each explicit transaction (`BEGIN` … `COMMIT`) as one shared
    /// interval serving the operations of the statements inside it: its
    /// `BEGIN` and `COMMIT` (or `END`, or `ROLLBACK`) are marked with
    /// `hops` under an id of the transaction's own, take no operation (an
    /// in-order probe gives the announced operations to the statements
    /// between them), and each operation served inside is linked to it. A
    /// writer that batches requests into one transaction is then sliced as
    /// a batch: each operation waits for the whole COMMIT, and pays its
    /// share. Savepoints are not transactions here. Set once; later calls
    /// change nothing.
    pub fn transactions(self, hops: TransactionHops) -> SqliteProbe {
        let _ = self.hook.transactions.set(hops);
        self
    }

    /// The next statement started on a thread with no operation set serves
    /// `op` (a probe made [`SqliteProbe::in_order`]; others only count it).
    /// Announce where the statements' order is the operations' own: one
    /// statement per operation, under the lock that serialises calls. Any
    /// probe counts announcements, so [`SqliteProbe::unmatched`] can tell
    /// a block that ran operations from one that ran none.
    pub fn announce(&self, op: OpId) {
        self.hook.counts.announced.fetch_add(1, Ordering::Relaxed);
        if let Some(announced) = &self.hook.announced {
            let mut queue = announced.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.len() >= ANNOUNCED_CAP {
                queue.pop_front();
                self.hook.counts.unclaimed.fetch_add(1, Ordering::Relaxed);
            }
            queue.push_back(op.0);
        }
    }

    /// Since `before` (the counts at a block's start), whether the
    /// statements paired with the operations announced. Announced
    /// operations no statement took are forgotten, so the next block starts
    /// even. An in-order probe needs one statement per operation; a probe
    /// reading the thread's operation only needs some statements marked
    /// when operations were announced (a statement of the writer's own, a
    /// pool's health check, marks nothing and takes nothing).
    pub fn unmatched(&self, before: StatementCounts) -> Result<(), Unpaired> {
        if let Some(announced) = &self.hook.announced {
            let mut queue = announced.lock().unwrap_or_else(PoisonError::into_inner);
            self.hook.counts.unclaimed.fetch_add(queue.len() as u64, Ordering::Relaxed);
            queue.clear();
        }
        let now = self.counts();
        let without_op = now.without_op.saturating_sub(before.without_op);
        let unclaimed = now.unclaimed.saturating_sub(before.unclaimed);
        let marked = now.starts.saturating_sub(before.starts);
        let operations = now.announced.saturating_sub(before.announced);
        // Starts and ends are counted apart: a statement has one of each.
        let statements = without_op.div_ceil(2);
        match self.hook.announced {
            _ if operations > 0 && marked == 0 && without_op == 0 => Err(Unpaired::Unseen { operations }),
            Some(_) if without_op > 0 || unclaimed > 0 => Err(Unpaired::InOrder { statements, unclaimed }),
            _ if operations > 0 && marked == 0 => Err(Unpaired::OtherThread { statements }),
            _ => Ok(()),
        }
    }

    /// The collector its marks go to.
    pub fn collector(&self) -> &Collector {
        &self.hook.collector
    }

    /// Statements seen so far.
    pub fn counts(&self) -> StatementCounts {
        let c = &self.hook.counts;
        let read = |n: &AtomicU64| n.load(Ordering::Relaxed);
        StatementCounts {
            starts: read(&c.starts),
            ends: read(&c.ends),
            without_op: read(&c.without_op),
            subprograms: read(&c.subprograms),
            unclaimed: read(&c.unclaimed),
            announced: read(&c.announced),
        }
    }

    /// Mark the statements of `conn` from now on. Attaching a probe to a
    /// connection it already probes changes nothing; another probe's
    /// attachment is replaced.
    pub fn attach(&self, conn: &Connection) -> Result<(), SqliteProbeError> {
        // SAFETY: the handle is the live connection `conn` borrows; it is
        // only passed to SQLite, which the connection's mutex serialises.
        unsafe { self.attach_raw(conn.handle()) }
    }

    /// [`SqliteProbe::attach`] on a raw handle, for crates that hand out
    /// `sqlite3*` rather than a rusqlite `Connection`.
    ///
    /// # Safety
    ///
    /// `db` must be an open SQLite connection, and stay open or be closed
    /// through SQLite (whose close releases the probe) while probed.
    pub unsafe fn attach_raw(&self, db: *mut ffi::sqlite3) -> Result<(), SqliteProbeError> {
        let ours = Arc::as_ptr(&self.hook) as usize;
        attached(|map| {
            // Registered again even when the map says it is there: a
            // program's own `trace_v2` may have replaced it since.
            let held = map.get(&(db as usize)) == Some(&ours);
            // SAFETY: `db` is open (the caller's promise); each call
            // returns the argument the previous callback was set with and
            // clears it, which the registration below would do anyway.
            let (trace, profile) = unsafe {
                (
                    ffi::sqlite3_trace(db, None, std::ptr::null_mut()),
                    ffi::sqlite3_profile(db, None, std::ptr::null_mut()),
                )
            };
            // A probe's own handle (this one's, or another probe's it
            // replaces) is known by the map; anything else is someone's.
            let probed = map.get(&(db as usize)).copied();
            let foreign = |arg: *mut c_void| !arg.is_null() && Some(arg as usize) != probed;
            if foreign(trace) || foreign(profile) {
                if let Some(before) = map.remove(&(db as usize)) {
                    // SAFETY: the handle a probe's attach gave SQLite, which
                    // a program's own callback has replaced since.
                    drop(unsafe { Arc::from_raw(before as *const Hook) });
                }
                return Err(SqliteProbeError::Occupied(if foreign(trace) { "trace" } else { "profile" }));
            }
            let context = if held { ours as *mut c_void } else { Arc::into_raw(self.hook.clone()) as *mut c_void };
            let mask = ffi::SQLITE_TRACE_STMT | ffi::SQLITE_TRACE_PROFILE | ffi::SQLITE_TRACE_CLOSE;
            // SAFETY: `db` is open (the caller's promise); `context` stays
            // valid until `on_trace` sees the close or `detach` takes it
            // back, each releasing it once through the map.
            let code = unsafe { ffi::sqlite3_trace_v2(db, mask, Some(on_trace), context) };
            if code != ffi::SQLITE_OK {
                if !held {
                    // SAFETY: SQLite did not take it: the handle is still ours.
                    drop(unsafe { Arc::from_raw(context as *const Hook) });
                }
                return Err(SqliteProbeError::Refused(code));
            }
            if !held && let Some(before) = map.insert(db as usize, ours) {
                // SAFETY: another probe's handle, taken by its attach and
                // no longer reachable from SQLite.
                drop(unsafe { Arc::from_raw(before as *const Hook) });
            }
            Ok(())
        })
    }

    /// Stop marking the statements of `conn`.
    pub fn detach(&self, conn: &Connection) -> Result<(), SqliteProbeError> {
        // SAFETY: as in `attach`.
        let db = unsafe { conn.handle() };
        let ours = Arc::as_ptr(&self.hook) as usize;
        attached(|map| {
            if map.get(&(db as usize)) != Some(&ours) {
                return Err(SqliteProbeError::NotAttached);
            }
            // SAFETY: `db` is the open connection `conn` borrows.
            unsafe { ffi::sqlite3_trace_v2(db, 0, None, std::ptr::null_mut()) };
            map.remove(&(db as usize));
            // SAFETY: the handle `attach` gave SQLite, which no longer has it.
            drop(unsafe { Arc::from_raw(ours as *const Hook) });
            Ok(())
        })
    }
}

impl Hook {
    /// A statement with SQL text `sql` started: a transaction's edge when
    /// the probe marks transactions, else an operation's statement.
    #[inline]
    fn started_sql(&self, ticks: clock::Ticks, sql: *const std::ffi::c_char) {
        if let Some(hops) = self.transactions.get() {
            // SAFETY: `sql` is the statement's own NUL-terminated SQL,
            // valid for the callback.
            let kind = unsafe { statement_kind(sql) };
            if self.transaction_edge(kind, hops, ticks) {
                return;
            }
        }
        self.started(ticks);
    }

    /// Mark a transaction's `BEGIN` or `COMMIT` start; whether `kind` was
    /// one (a COMMIT with no transaction open is an operation's statement).
    fn transaction_edge(&self, kind: Statement, hops: &TransactionHops, ticks: clock::Ticks) -> bool {
        let open = TRANSACTION.try_with(std::cell::Cell::get).unwrap_or(NO_OP);
        let id = match kind {
            Statement::Op => return false,
            Statement::Commit if open == NO_OP => return false,
            Statement::Commit => open,
            Statement::Begin => {
                let id = TRANSACTION_ID_BIT | TRANSACTIONS.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
                let _ = TRANSACTION.try_with(|t| t.set(id));
                let _ = LINKED.try_with(|l| l.set(NO_OP));
                id
            }
        };
        let _ = RUNNING.try_with(|r| r.set(kind));
        let hop = if kind == Statement::Begin { hops.begin } else { hops.commit };
        self.mark(id, hop, &self.counts.starts, ticks);
        true
    }

    /// A statement started: marked with its thread's operation, or the
    /// oldest announced one when the thread has none; inside a transaction
    /// the probe marks, the operation is linked to it.
    #[inline]
    fn started(&self, ticks: clock::Ticks) {
        let mut op = CURRENT_OP.try_with(std::cell::Cell::get).unwrap_or(NO_OP);
        if op == NO_OP
            && let Some(announced) = &self.announced
            && let Some(next) = announced.lock().unwrap_or_else(PoisonError::into_inner).pop_front()
        {
            let _ = CURRENT_OP.try_with(|current| current.set(next));
            let _ = TAKEN.try_with(|taken| taken.set(true));
            op = next;
        }
        self.mark(op, self.start, &self.counts.starts, ticks);
        let open = TRANSACTION.try_with(std::cell::Cell::get).unwrap_or(NO_OP);
        if open != NO_OP && op != NO_OP && LINKED.try_with(|l| l.replace(op)).is_ok_and(|last| last != op) {
            self.collector.push(Mark::serves(OpId(open), OpId(op)));
        }
    }

    /// A statement ended: a transaction's edge, or an operation's
    /// statement.
    #[inline]
    fn ended(&self, ticks: clock::Ticks) {
        match (RUNNING.try_with(|r| r.replace(Statement::Op)).unwrap_or(Statement::Op), self.transactions.get()) {
            (Statement::Begin, Some(hops)) => {
                let open = TRANSACTION.try_with(std::cell::Cell::get).unwrap_or(NO_OP);
                self.mark(open, hops.began, &self.counts.ends, ticks);
            }
            (Statement::Commit, Some(hops)) => {
                let open = TRANSACTION.try_with(|t| t.replace(NO_OP)).unwrap_or(NO_OP);
                self.mark(open, hops.committed, &self.counts.ends, ticks);
            }
            _ => self.ended_op(ticks),
        }
    }

    /// An operation's statement ended: marked with its thread's operation,
    /// which goes with it if it was an announced one.
    #[inline]
    fn ended_op(&self, ticks: clock::Ticks) {
        let op = CURRENT_OP.try_with(std::cell::Cell::get).unwrap_or(NO_OP);
        self.mark(op, self.end, &self.counts.ends, ticks);
        if TAKEN.try_with(|taken| taken.replace(false)).unwrap_or(false) {
            let _ = CURRENT_OP.try_with(|current| current.set(NO_OP));
        }
    }

    #[inline]
    fn mark(&self, op: u64, hop: Hop, counter: &AtomicU64, ticks: clock::Ticks) {
        if op == NO_OP {
            self.counts.without_op.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // A virtual speedup's payment comes after this mark's clock read:
        // it lands in the next slice, the lane's throughput sees it all.
        #[cfg(feature = "what-if")]
        crate::whatif::on_mark(OpId(op), hop);
        self.collector.push(Mark::new(OpId(op), hop, ticks));
        // One thread runs a connection's statements at a time: a plain
        // load and store would do for one connection, but a probe may
        // serve several.
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// SQLite's trace callback: `context` is the [`Hook`] `attach` handed over.
unsafe extern "C" fn on_trace(event: c_uint, context: *mut c_void, p: *mut c_void, x: *mut c_void) -> c_int {
    // The clock first: everything after it lies inside the next slice.
    let ticks = clock::now();
    // SAFETY: `context` is the `Arc<Hook>` attach leaked for this
    // connection; it is released only after SQLite stops calling here
    // (on close, below, or by detach, which unregisters first).
    let hook = unsafe { &*(context as *const Hook) };
    match event {
        ffi::SQLITE_TRACE_STMT => {
            // `x` is the statement's own SQL (the very pointer
            // `sqlite3_sql` returns) at its start; inside it, a trigger's
            // subprogram reports a comment naming the trigger, then one
            // per statement of its body.
            // SAFETY: `p` is the statement SQLite is running.
            let own = unsafe { ffi::sqlite3_sql(p as *mut ffi::sqlite3_stmt) };
            if std::ptr::eq(own.cast::<c_void>(), x) {
                hook.started_sql(ticks, own);
            } else {
                hook.counts.subprograms.fetch_add(1, Ordering::Relaxed);
            }
        }
        ffi::SQLITE_TRACE_PROFILE => hook.ended(ticks),
        ffi::SQLITE_TRACE_CLOSE => {
            // The connection is closing: release the probe's handle, once
            // (a close that fails and is tried again reports twice).
            let mine = attached(|map| match map.get(&(p as usize)) {
                Some(&held) if held == context as usize => map.remove(&(p as usize)).is_some(),
                _ => false,
            });
            if mine {
                // Unregistered before the handle goes: a close that fails
                // (statements still open) leaves the connection running
                // without a callback, never with a released one.
                // SAFETY: `p` is the connection being closed, still valid
                // inside its close; its mutex is recursive.
                unsafe { ffi::sqlite3_trace_v2(p as *mut ffi::sqlite3, 0, None, std::ptr::null_mut()) };
                // SAFETY: removed from the map above, so released once.
                drop(unsafe { Arc::from_raw(context as *const Hook) });
            }
        }
        _ => {}
    }
    0
}

/// What the statement whose SQL is `sql` is: a transaction's `BEGIN`, its
/// end (`COMMIT`, `END`, `ROLLBACK` but not `ROLLBACK TO`), or neither.
/// Reads at most the first 96 bytes.
///
/// # Safety
///
/// `sql` is null or a NUL-terminated string.
unsafe fn statement_kind(sql: *const std::ffi::c_char) -> Statement {
    if sql.is_null() {
        return Statement::Op;
    }
    let mut text = [0u8; 96];
    let mut len = 0;
    while len < text.len() {
        // SAFETY: the string is NUL-terminated and read no further than
        // its NUL.
        let byte = unsafe { *sql.add(len) } as u8;
        if byte == 0 {
            break;
        }
        text[len] = byte.to_ascii_uppercase();
        len += 1;
    }
    // No allocation: the hook runs this on every statement.
    let mut words = text[..len].split(|b| b.is_ascii_whitespace() || *b == b';').filter(|w| !w.is_empty());
    match (words.next(), words.next(), words.next()) {
        (Some(b"BEGIN"), ..) => Statement::Begin,
        (Some(b"COMMIT" | b"END"), ..) => Statement::Commit,
        (Some(b"ROLLBACK"), Some(b"TO"), _) | (Some(b"ROLLBACK"), Some(b"TRANSACTION"), Some(b"TO")) => Statement::Op,
        (Some(b"ROLLBACK"), ..) => Statement::Commit,
        _ => Statement::Op,
    }
}

pub mod checkpoints;
pub mod cost;

#[cfg(test)]
mod tests;
