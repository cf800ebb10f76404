//! Virtual speedups of one slice (feature `what-if`): coz's rule applied
//! to a write path's marks.
//!
//! To see what making a slice `d` faster would buy, every *other* thread is
//! made `d` slower each time a thread passes the slice's end (Curtsinger &
//! Berger, SOSP 2015): a global count of delay owed grows by `d` at each
//! pass; each marking thread keeps what it has paid, and at its next mark
//! busy-waits the difference. The thread that passed pays nothing for its
//! own pass. A block's wall time less the delay inserted during it is then
//! the time it would have taken with the slice `d` faster.
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
//! for buys nothing, as it should.
//!
//! **Cost when unused.** Built without the feature, nothing here exists. With
//! it and no experiment running, a mark pays one relaxed load.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};

use crate::clock;
use crate::hop::{Hop, OpId};

/// Operations whose edge slots are kept (ops are mapped onto them modulo
/// this; one operation in flight per slot is enough for any lane whose
/// callers have fewer than this many operations outstanding).
const SLOTS: usize = 4096;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The hop that ends the slice sped up.
static END: AtomicU16 = AtomicU16::new(u16::MAX);
/// The virtual speedup per pass, clock ticks.
static DELAY: AtomicU64 = AtomicU64::new(0);
/// Delay owed by every thread since the experiment started, ticks.
static OWED: AtomicU64 = AtomicU64::new(0);
/// Bit `h`: hop `h` starts a cross-thread edge; its paid count goes to the
/// operation's slot.
static EDGE_FROM: AtomicU64 = AtomicU64::new(0);
/// Bit `h`: hop `h` ends a cross-thread edge; the woken thread takes the
/// slot's count.
static EDGE_TO: AtomicU64 = AtomicU64::new(0);
/// Delay actually paid by busy-waiting since the experiment started,
/// ticks, summed over threads (the rest was inherited across waits).
static SPUN: AtomicU64 = AtomicU64::new(0);
/// Bumped by each start, so threads forget what they paid in another.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static SLOT: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

thread_local! {
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

/// One virtual speedup: the slice ending at `end` made `delay_ns` faster,
/// with the lane's cross-thread edges (first hop, second hop).
#[derive(Debug, Clone, PartialEq)]
pub struct Speedup {
    /// The hop that ends the slice sped up.
    pub end: Hop,
    /// How much faster, ns per pass.
    pub delay_ns: f64,
    /// Cross-thread edges: a thread marking `.0` hands its paid count to
    /// the thread that marks `.1` for the same operation.
    pub edges: Vec<(Hop, Hop)>,
}

/// Start `speedup` for the whole process; marks pay from now on.
pub fn start(speedup: &Speedup) -> Result<(), WhatIfError> {
    let bit = |h: Hop| if h.0 < 64 { Ok(1u64 << h.0) } else { Err(WhatIfError::HopOutOfRange(h.0)) };
    let (mut from, mut to) = (0, 0);
    for (a, b) in &speedup.edges {
        from |= bit(*a)?;
        to |= bit(*b)?;
    }
    bit(speedup.end)?;
    if ACTIVE.load(Ordering::Acquire) {
        return Err(WhatIfError::Running);
    }
    let ns_per_tick = clock::clock().delta_as_nanos(0, 1 << 20) as f64 / f64::from(1u32 << 20);
    DELAY.store((speedup.delay_ns.max(0.0) / ns_per_tick).round() as u64, Ordering::Relaxed);
    END.store(speedup.end.0, Ordering::Relaxed);
    EDGE_FROM.store(from, Ordering::Relaxed);
    EDGE_TO.store(to, Ordering::Relaxed);
    OWED.store(0, Ordering::Relaxed);
    SPUN.store(0, Ordering::Relaxed);
    for slot in &SLOT {
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

/// The delay threads paid by busy-waiting so far, ticks (the owed delay
/// less what woken threads inherited from their wakers).
pub fn spun() -> u64 {
    SPUN.load(Ordering::Acquire)
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
        // had paid then counts as paid here.
        paid = paid.max(slot.load(Ordering::Acquire).min(owed));
    }
    if owed > paid {
        spin(owed - paid);
        SPUN.fetch_add(owed - paid, Ordering::Relaxed);
        paid = owed;
    }
    if END.load(Ordering::Relaxed) == hop.0 {
        let delay = DELAY.load(Ordering::Relaxed);
        OWED.fetch_add(delay, Ordering::AcqRel);
        paid += delay;
    }
    if EDGE_FROM.load(Ordering::Relaxed) & bit != 0 {
        slot.store(paid, Ordering::Release);
    }
    let _ = PAID.try_with(|p| p.set((epoch, paid)));
}

/// Busy-wait `ticks` of the marks' clock.
fn spin(ticks: u64) {
    let start = clock::now().0;
    while clock::now().0.wrapping_sub(start) < ticks {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests;
