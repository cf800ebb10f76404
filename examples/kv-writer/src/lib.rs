//! A key-value store whose writes all go through one thread that owns the
//! SQLite connection, written as plainly as an application would: a
//! `std::sync::mpsc` channel to the writer thread, and for each request a
//! reply slot (`Mutex<Option<_>>` and a `Condvar`) the caller waits on.
//! Its only instrumentation is two `tracing` spans, each with the
//! operation's id in the field `op`:
//!
//! | span | thread | covers |
//! |---|---|---|
//! | `insert` | caller | the whole call: build, send, wait, take the result |
//! | `execute` | writer (`kv-writer`) | the SQLite statement |
//!
//! Nothing here knows about hopscope; `decompose` (feature `hopscope`)
//! measures it.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// A busy loop compiled into every [`KvWriter::insert`] before its request
/// is sent: `KV_WRITER_BUILD_SPIN` turns of [`chain`] when the crate was
/// built (0 when unset). Two builds that differ only here differ by a
/// change of known size in one slice (`insert.enter→execute.enter`), which
/// is what `hopscope ab --builds` is checked against. Every build makes
/// the call and reads the count from this static at run time, so two
/// builds' code is the same instruction for instruction and lies at the
/// same addresses (`cmp -l A B | wc -l`: the count's bytes and the 20-byte
/// build id). The static has a data section of its own: as plain read-only
/// data, some counts (16, 64, 60) let the optimiser merge it with equal
/// constants, which moved all code 128 bytes, and beside a 32-turn build
/// SQLite's slice came out 36 ns faster, cancelling the change at lane
/// level. (When the count was a constant, a build without it had no call
/// at all, every function after `insert` moved, and SQLite's slice came
/// out 20 ns faster in the build with the busy loop: layout again.)
/// A chain of dependent arithmetic, not a wait on the clock: reading the
/// clock costs about as much as the 25 ns such a change is meant to be
/// (`KV_WRITER_TIME_BUILD_DELAY=1 kv-writer` prints what one costs on the
/// host).
// SAFETY: the section holds this static alone and nothing else names it;
// it only keeps the count out of the optimiser's merging of constants.
#[unsafe(link_section = ".data.kv_writer_build_spin")]
pub static BUILD_SPIN: u64 = digits(option_env!("KV_WRITER_BUILD_SPIN"));

/// A build-time number; anything but digits stops the build.
const fn digits(value: Option<&str>) -> u64 {
    let Some(value) = value else { return 0 };
    let bytes = value.as_bytes();
    let mut n = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "KV_WRITER_BUILD_SPIN: a number of turns, digits only");
        n = n * 10 + (bytes[i] - b'0') as u64;
        i += 1;
    }
    n
}

/// The build's compiled-in busy loop: [`BUILD_SPIN`] turns of [`chain`],
/// timed where it runs ([`in_situ`]).
#[inline]
pub fn build_delay() {
    // SAFETY: a read of a static u64, always initialised. Volatile, so
    // the count is loaded from memory by the same instruction in every
    // build rather than folded into the code as an immediate.
    let turns = unsafe { std::ptr::read_volatile(&raw const BUILD_SPIN) };
    let start = ticks();
    chain(turns);
    let took = ticks().wrapping_sub(start);
    IN_SITU_TICKS.fetch_add(took, Ordering::Relaxed);
    IN_SITU_CALLS.fetch_add(1, Ordering::Relaxed);
}

/// Ticks [`build_delay`] spent in its chain, summed over its calls: the
/// change's length where it runs, between the program's own work, which a
/// tight loop does not show (there the processor predicts the loop's exit
/// and may run faster: 20 turns cost 25 ns in a tight loop and about 44 ns
/// inside `insert`). Two builds time their chains alike, so the difference
/// of their means is the change, the clock's own reads cancelling.
static IN_SITU_TICKS: AtomicU64 = AtomicU64::new(0);
static IN_SITU_CALLS: AtomicU64 = AtomicU64::new(0);

/// `(calls, ticks)` of [`build_delay`] so far in this process.
pub fn in_situ() -> (u64, u64) {
    (IN_SITU_CALLS.load(Ordering::Relaxed), IN_SITU_TICKS.load(Ordering::Relaxed))
}

/// The time stamp counter (0 off x86-64: no timing there).
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `rdtsc` reads the time stamp counter; it has no memory
    // effects and every x86-64 processor has it.
    let t = unsafe { std::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    let t = 0;
    t
}

/// A fence, `turns` dependent shift–xor–multiplies, a fence.
///
/// Each turn waits for the one before (a shift, a xor, a multiply), so a
/// turn costs the chain's latency wherever the loop runs; the fences keep
/// the processor from running the chain beside the code before it or the
/// code after it (the send), either of which would hide part of the wait.
/// Timed in a tight loop, the same length holds between the program's own
/// calls.
#[inline(never)]
pub fn chain(turns: u64) {
    fence();
    let mut x = std::hint::black_box(1u64);
    // The count through black_box too: a loop of known length unrolled
    // would not be the chain it is meant to be.
    for _ in 0..std::hint::black_box(turns) {
        // Not an affine step (x·k + c): the compiler composes eight of
        // those into one and the chain runs eight times short.
        x = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    std::hint::black_box(x);
    fence();
}

/// Wait until every earlier instruction has completed: before the chain,
/// so it cannot run in the shadow of the work before it; after it, so the
/// work after cannot start early.
#[inline(always)]
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` only orders execution; it reads and writes no
    // memory and every x86-64 processor has it (SSE2 is baseline).
    unsafe {
        std::arch::x86_64::_mm_lfence()
    };
}

/// The statement every write runs.
pub const PUT: &str = "INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)";

/// Why a write failed.
#[derive(Debug)]
pub enum Error {
    /// SQLite refused the statement.
    Sqlite(rusqlite::Error),
    /// The writer thread is gone.
    Stopped,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Sqlite(e) => write!(f, "SQLite: {e}"),
            Error::Stopped => f.write_str("the writer thread has stopped"),
        }
    }
}

impl std::error::Error for Error {}

/// Where one request's result lands; the caller waits on it.
#[derive(Default)]
pub struct Slot {
    result: Mutex<Option<Result<i64, Error>>>,
    ready: Condvar,
}

impl Slot {
    /// Put `result` in the slot and wake the caller waiting on it.
    pub fn fill(&self, result: Result<i64, Error>) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        self.ready.notify_one();
    }

    /// Wait until the slot is filled, and empty it.
    pub fn take(&self) -> Result<i64, Error> {
        let mut result = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(result) = result.take() {
                return result;
            }
            result = self.ready.wait(result).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One write on its way to the writer thread.
struct Request {
    op: u64,
    key: i64,
    value: String,
    slot: Arc<Slot>,
}

/// A handle to the writer thread; dropping it stops the thread.
pub struct KvWriter {
    tx: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    next_op: AtomicU64,
}

impl KvWriter {
    /// Open the store at `path` and start its writer thread, `kv-writer`.
    pub fn open(path: &Path) -> Result<KvWriter, Error> {
        KvWriter::open_slowed(path, Duration::ZERO)
    }

    /// As [`KvWriter::open`], with the writer thread busy `extra` inside
    /// each `execute` span before the statement: a change of known size,
    /// to check that a comparison with a baseline catches it.
    pub fn open_slowed(path: &Path, extra: Duration) -> Result<KvWriter, Error> {
        let conn = open_db(path)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("kv-writer".to_owned())
            .spawn(move || serve(&conn, &rx, extra))
            .map_err(|_| Error::Stopped)?;
        Ok(KvWriter { tx: Some(tx), thread: Some(thread), next_op: AtomicU64::new(0) })
    }

    /// Store `value` under `key`; returns the row's id.
    pub fn insert(&self, key: i64, value: String) -> Result<i64, Error> {
        let op = self.next_op.fetch_add(1, Ordering::Relaxed);
        let _span = tracing::info_span!("insert", op).entered();
        let slot = Arc::new(Slot::default());
        let tx = self.tx.as_ref().ok_or(Error::Stopped)?;
        build_delay();
        tx.send(Request { op, key, value, slot: Arc::clone(&slot) }).map_err(|_| Error::Stopped)?;
        slot.take()
    }
}

impl Drop for KvWriter {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(conn: &Connection, rx: &Receiver<Request>, extra: Duration) {
    for Request { op, key, value, slot } in rx {
        let result = tracing::info_span!("execute", op).in_scope(|| {
            spin(extra);
            put(conn, key, &value)
        });
        slot.fill(result);
    }
}

/// Busy-wait `extra` (nothing for zero).
fn spin(extra: Duration) {
    if extra.is_zero() {
        return;
    }
    let until = Instant::now() + extra;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Open the store's database at `path`: WAL, synchronous=NORMAL, the kv table.
pub fn open_db(path: &Path) -> Result<Connection, Error> {
    let conn = Connection::open(path).map_err(Error::Sqlite)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS kv (key INTEGER PRIMARY KEY, value TEXT NOT NULL);",
    )
    .map_err(Error::Sqlite)?;
    Ok(conn)
}

/// Run the store's statement on `conn`, on the calling thread.
pub fn put(conn: &Connection, key: i64, value: &str) -> Result<i64, Error> {
    conn.prepare_cached(PUT)
        .and_then(|mut statement| statement.execute((key, value)))
        .map(|_| conn.last_insert_rowid())
        .map_err(Error::Sqlite)
}

/// The value the examples store under `key`.
pub fn value(key: u64) -> String {
    format!("value {key}")
}

/// The store under hopscope's harness (feature `hopscope`).
#[cfg(feature = "hopscope")]
pub mod decompose;
