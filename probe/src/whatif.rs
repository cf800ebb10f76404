//! Virtual speedups of one slice (feature `what-if`): coz's rule applied
//! to a write path's marks.
//!
//! To see what making a slice `d` faster would buy, every *other* thread is
//! made `d` slower each time a thread passes the slice's end (Curtsinger &
//! Berger, SOSP 2015): a global count of delay owed grows by `d` at each
//! pass; each marking thread keeps what it has been charged, and once its
//! debt passes a lump ([`LUMP_NS`]) it sleeps it off at its next mark. The
//! thread that passed pays nothing for its own pass. Each thread's virtual
//! clock is its real one less what it was charged ([`charged`]): a block
//! whose callers end at their virtual clocks took the time it would have
//! taken with the slice `d` faster. Where every thread shares one core the
//! *serial* rule applies instead ([`Experiment::serial`]): nobody pauses,
//! and everyone is charged what is owed.
//!
//! **Waits.** A thread that was blocked on another (a writer waiting for a
//! request, a caller for its reply) must not pay for what passed while it
//! waited if its waker had paid it already: its time was the waker's. The
//! experiment names the lane's cross-thread edges (`sent→woke`,
//! `replied→received`); at an edge's first hop the thread leaves what it has
//! paid in a slot of the operation, and at the edge's second hop the woken
//! thread takes it as paid if it is more than its own. A writer that picks
//! up a request sent long ago inherits that old count and pays the rest, so
//! a slice on the callers' side that the writer's throughput does not wait
//! for buys nothing, as it should. A cross-thread slice's own change is
//! capped at the time its thread really waited for the hand-off.
//!
//! **Real slowdowns.** Beside a virtual speedup, the same switch makes the
//! slice really slower: the thread passing its end busy-waits `d` itself
//! and nobody owes anything. Run side by side with the speedups, the
//! slowdowns show whether the lane's response to the slice is linear.
//!
//! **Cost when unused.** Built without the feature, nothing here exists. With
//! it and no experiment running, a mark pays one relaxed load.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};

use crate::clock;
use crate::hop::{Hop, OpId};

/// Debt a thread carries before it pays, ns. A payment is a sleep: the
/// paying thread must leave the CPU to the others, not spin on it (with
/// four callers paying beside one writer on two cores, spinning payers
/// took half the writer's CPU and a 25 % faster statement read as half
/// what really shortening it bought). A sleep costs a syscall, a wake and
/// its overshoot, so debts are paid in lumps; what a thread really waited,
/// overshoot included, is what it is charged ([`charged`]), and a woken
/// thread inherits its waker's charge across an edge.
pub const LUMP_NS: f64 = 20_000.0;

/// Operations whose edge slots are kept (ops are mapped onto them modulo
/// this; one operation in flight per slot is enough for any lane whose
/// callers have fewer than this many operations outstanding).
const SLOTS: usize = 4096;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The hop that ends the slice sped up.
static END: AtomicU16 = AtomicU16::new(u16::MAX);
/// The lane's threads share one core: nobody pauses, everyone is charged
/// what is owed ([`Experiment::serial`]).
static SERIAL: AtomicBool = AtomicBool::new(false);
/// The change is a real slowdown: the passing thread waits, nobody owes.
static SLOWER: AtomicBool = AtomicBool::new(false);
/// The change per pass, clock ticks.
static DELAY: AtomicU64 = AtomicU64::new(0);
/// Debt a thread carries before it pays, ticks ([`LUMP_NS`]).
static LUMP: AtomicU64 = AtomicU64::new(0);
/// Delay owed by every thread since the experiment started, ticks.
static OWED: AtomicU64 = AtomicU64::new(0);
/// Bit `h`: hop `h` starts a cross-thread edge; its paid count goes to the
/// operation's slot.
static EDGE_FROM: AtomicU64 = AtomicU64::new(0);
/// Bit `h`: hop `h` ends a cross-thread edge; the woken thread takes the
/// slot's count.
static EDGE_TO: AtomicU64 = AtomicU64::new(0);
/// Delay actually paid by waiting since the experiment started, ticks,
/// summed over threads (the rest was inherited across waits or is still
/// owed below a lump).
static SPUN: AtomicU64 = AtomicU64::new(0);
/// The change applied at the slice's end since the experiment started,
/// ticks, summed over passes, in either direction (owed for a speedup,
/// spun for a slowdown; a hand-off's capped at what it waited): over a
/// block's operations, what the slice really lost or gained per operation.
/// A shared interval (a batch's COMMIT) passes its end once for all the
/// operations it serves, so its change is taken once, not once each.
static TAKEN: AtomicU64 = AtomicU64::new(0);
/// Bumped by each start, so threads forget what they paid in another.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static SLOT: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// When each operation's last edge started, ticks: a cross-thread slice's
/// hand-off is what lies between it (or the woken thread's own previous
/// mark, if later) and the edge's second hop.
static SLOT_AT: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

thread_local! {
    /// Whether this thread's timer slack is set for precise pauses.
    static PRECISE: Cell<bool> = const { Cell::new(false) };
    /// When this thread last marked (left `pay`), ticks.
    static LAST: Cell<u64> = const { Cell::new(0) };
    /// (experiment epoch, ticks this thread has paid or been credited).
    static PAID: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Why an experiment cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhatIfError {
    /// Hop ids past 63 do not fit the edge masks.
    #[error("hop {0} is past the 64 hops a virtual speedup can name")]
    HopOutOfRange(u16),
    /// Another experiment is running.
    #[error("a virtual speedup is already running")]
    Running,
}

/// What happens to the slice, per pass of its end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// Virtually faster by this many ns: every other thread pays it.
    Faster(f64),
    /// Really slower by this many ns: the passing thread busy-waits it.
    Slower(f64),
}

impl Change {
    /// The change in ns per pass, negative for a slowdown: what the slice's
    /// duration loses.
    pub fn signed_ns(self) -> f64 {
        match self {
            Change::Faster(ns) => ns,
            Change::Slower(ns) => -ns,
        }
    }
}

/// One experiment: the slice ending at `end` changed by `change`, with the
/// lane's cross-thread edges (first hop, second hop).
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// The hop that ends the slice changed.
    pub end: Hop,
    /// Faster (virtually) or slower (really), per pass.
    pub change: Change,
    /// Cross-thread edges: a thread marking `.0` hands its paid count to
    /// the thread that marks `.1` for the same operation.
    pub edges: Vec<(Hop, Hop)>,
    /// Every thread of the lane runs on one core. There a pause cannot
    /// stand for a faster slice: the core is the lane's one resource, and
    /// a paused thread idles it instead of leaving it to the others (four
    /// callers sharing a core with their writer: a caller's faster build
    /// was predicted at a third of what really shortening it bought). On
    /// one core every pass takes its change off the core's time, so nobody
    /// pauses and every thread is charged what is owed.
    pub serial: bool,
}

/// Start `experiment` for the whole process; marks pay from now on.
pub fn start(experiment: &Experiment) -> Result<(), WhatIfError> {
    let bit = |h: Hop| if h.0 < 64 { Ok(1u64 << h.0) } else { Err(WhatIfError::HopOutOfRange(h.0)) };
    let (mut from, mut to) = (0, 0);
    for (a, b) in &experiment.edges {
        from |= bit(*a)?;
        to |= bit(*b)?;
    }
    bit(experiment.end)?;
    if ACTIVE.load(Ordering::Acquire) {
        return Err(WhatIfError::Running);
    }
    let ns_per_tick = clock::clock().delta_as_nanos(0, 1 << 20) as f64 / f64::from(1u32 << 20);
    let (slower, ns) = match experiment.change {
        Change::Faster(ns) => (false, ns),
        Change::Slower(ns) => (true, ns),
    };
    // NaN and negatives are no change; the float-to-int cast saturates.
    let ns = if ns.is_finite() { ns.max(0.0) } else { 0.0 };
    DELAY.store((ns / ns_per_tick).round() as u64, Ordering::Relaxed);
    LUMP.store((LUMP_NS / ns_per_tick).round() as u64, Ordering::Relaxed);
    SLOWER.store(slower, Ordering::Relaxed);
    SERIAL.store(experiment.serial, Ordering::Relaxed);
    END.store(experiment.end.0, Ordering::Relaxed);
    EDGE_FROM.store(from, Ordering::Relaxed);
    EDGE_TO.store(to, Ordering::Relaxed);
    OWED.store(0, Ordering::Relaxed);
    SPUN.store(0, Ordering::Relaxed);
    TAKEN.store(0, Ordering::Relaxed);
    for slot in SLOT.iter().chain(&SLOT_AT) {
        slot.store(0, Ordering::Relaxed);
    }
    EPOCH.fetch_add(1, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    Ok(())
}

/// Stop the running experiment; returns the delay it inserted, ticks (what
/// every thread was owed, summed over passes).
pub fn stop() -> u64 {
    ACTIVE.store(false, Ordering::Release);
    OWED.load(Ordering::Acquire)
}

/// The delay owed so far in the running experiment, ticks: read at a
/// block's start and end, the difference is what the block's wall time is
/// to be cut by.
pub fn owed() -> u64 {
    OWED.load(Ordering::Acquire)
}

/// The change applied at the slice's end so far in the running (or last)
/// experiment, ticks, summed over its passes ([`TAKEN`]).
pub fn taken() -> u64 {
    TAKEN.load(Ordering::Acquire)
}

/// The delay threads paid by waiting so far, ticks, overshoot included.
pub fn spun() -> u64 {
    SPUN.load(Ordering::Acquire)
}

/// What this thread has been charged in the running experiment, ticks:
/// what it waited, what it inherited across edges and its own passes. Its
/// virtual clock is the real one less this: a caller reads it after its
/// block's last operation and takes it off the block's end. 0 with no
/// experiment running.
pub fn charged() -> u64 {
    if !ACTIVE.load(Ordering::Relaxed) {
        return 0;
    }
    if SERIAL.load(Ordering::Relaxed) {
        return OWED.load(Ordering::Acquire);
    }
    let epoch = EPOCH.load(Ordering::Relaxed);
    match PAID.try_with(Cell::get) {
        Ok((seen, paid)) if seen == epoch => paid,
        _ => 0,
    }
}

/// At every mark: nothing unless an experiment runs.
#[inline]
pub(crate) fn on_mark(op: OpId, hop: Hop) {
    if ACTIVE.load(Ordering::Relaxed) {
        pay(op, hop);
    }
}

#[cold]
#[inline(never)]
fn pay(op: OpId, hop: Hop) {
    let now = clock::now().0;
    let epoch = EPOCH.load(Ordering::Relaxed);
    let owed = OWED.load(Ordering::Acquire);
    let (seen, mut paid) = PAID.try_with(Cell::get).unwrap_or((epoch, owed));
    // A thread new to this experiment starts even: nothing passed for it.
    if seen != epoch {
        paid = owed;
    }
    let bit = if hop.0 < 64 { 1u64 << hop.0 } else { 0 };
    let slot = &SLOT[(op.0 % SLOTS as u64) as usize];
    if EDGE_TO.load(Ordering::Relaxed) & bit != 0 {
        // Woken by the thread that marked the edge's first hop: what it
        // had been charged then counts as paid here, all of it (a waker
        // that overshot a sleep delayed this thread as long; capped at
        // what was owed, four unpinned callers on two cores were charged
        // too little and a 25 % faster statement read at a third).
        paid = paid.max(slot.load(Ordering::Acquire));
    }
    let mut left = now;
    if !SERIAL.load(Ordering::Relaxed) && owed > paid.saturating_add(LUMP.load(Ordering::Relaxed)) {
        let waited = pause(owed - paid);
        SPUN.fetch_add(waited, Ordering::Relaxed);
        paid = paid.saturating_add(waited).max(owed);
        left = clock::now().0;
    }
    if END.load(Ordering::Relaxed) == hop.0 {
        let mut delay = DELAY.load(Ordering::Relaxed);
        if EDGE_TO.load(Ordering::Relaxed) & bit != 0 {
            delay = delay.min(hand_off(slot_at(op), now));
        }
        TAKEN.fetch_add(delay, Ordering::AcqRel);
        if SLOWER.load(Ordering::Relaxed) {
            spin(delay);
            left = clock::now().0;
        } else {
            OWED.fetch_add(delay, Ordering::AcqRel);
            paid += delay;
        }
    }
    if EDGE_FROM.load(Ordering::Relaxed) & bit != 0 {
        slot.store(paid, Ordering::Release);
        slot_at(op).store(left, Ordering::Release);
    }
    let _ = PAID.try_with(|p| p.set((epoch, paid)));
    let _ = LAST.try_with(|l| l.set(left));
}

fn slot_at(op: OpId) -> &'static AtomicU64 {
    &SLOT_AT[(op.0 % SLOTS as u64) as usize]
}

/// The hand-off a cross-thread slice ending `now` holds, ticks: the time
/// since its first hop, or since this thread's own previous mark if that is
/// later. Only that part can be made faster by a faster hand-off: a
/// request that waited in a queue while its writer was busy was not
/// waiting for a wake, and a faster wake buys it nothing (a 25 % faster
/// `sent→woke` of four callers queueing behind one writer, 19 µs of it
/// queueing, had read as +66 % throughput).
fn hand_off(started: &AtomicU64, now: u64) -> u64 {
    let from = started.load(Ordering::Acquire).max(LAST.try_with(Cell::get).unwrap_or(0));
    now.saturating_sub(from)
}

/// Stay off the CPU for about `ticks` of the marks' clock, giving it to the
/// other threads: a payment is a pause, not work. Returns the ticks really
/// waited (a sleep overshoots).
fn pause(ticks: u64) -> u64 {
    PRECISE.with(|set| {
        if !set.get() {
            set.set(true);
            // SAFETY: PR_SET_TIMERSLACK takes an integer and changes only
            // this thread's timer slack (50 µs by default, which every
            // sleep would overshoot by).
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000u64) };
        }
    });
    let start = clock::now().0;
    std::thread::sleep(std::time::Duration::from_nanos(clock::clock().delta_as_nanos(0, ticks)));
    clock::now().0.wrapping_sub(start)
}

/// Busy-wait `ticks` of the marks' clock (a real slowdown: work).
fn spin(ticks: u64) {
    let start = clock::now().0;
    while clock::now().0.wrapping_sub(start) < ticks {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests;
