//! Injected delay: a busy-wait of known length placed just before a hop's
//! mark.
//!
//! The wait is a calibrated count of loop iterations, not a loop on the
//! clock: on a host whose clock steps by ~10 ns and costs ~20 ns to read, a
//! "wait until 25 ns have passed" loop waits 40–60 ns, and the resolution
//! measured against it would be judged against the wrong truth. A counted
//! loop costs the same each time and can be sized to about a nanosecond.

use std::sync::OnceLock;

use hopscope_probe::{Hop, Ticks, clock};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::knobs::{DelaySchedule, InjectedDelay};

/// A resolved [`InjectedDelay`]: the hop, the loop iterations and the
/// switch its schedule flips between passes (shared by the writer's caller
/// side and its thread, so one flip turns both off). With no delay
/// configured, [`Delay::before`] is a single predictable branch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Delay {
    target: Option<(Hop, u64)>,
    schedule: DelaySchedule,
    on: Arc<AtomicBool>,
}

impl Delay {
    /// The busy-wait `delay` asks for, sized with this process's
    /// calibration ([`ns_per_iteration`]).
    pub(crate) fn new(delay: Option<InjectedDelay>) -> Delay {
        // A zero-length delay is no delay: not even the check's branch into
        // the loop, so a 0 ns arm is identical to one without the knob.
        let Some(d) = delay.filter(|d| d.ns > 0) else { return Delay::default() };
        let per_turn = ns_per_iteration();
        // A call costs its turns plus a fixed entry and exit (the call, the
        // mispredicted loop exit: ~5 ns here, 20% of a 25 ns delay), taken
        // off; measured once on a short wait so preemption cannot inflate it.
        let turns = ((d.ns as f64 - fixed_ns()) / per_turn).round().max(1.0) as u64;
        Delay {
            target: Some((d.before, turns)),
            schedule: d.schedule,
            on: Arc::new(AtomicBool::new(d.schedule.on_in_pass(0))),
        }
    }

    /// Before a measured block of pass `pass` (or a warm-up block, `None`,
    /// which runs as pass 0 does): switch the delay on or off as its
    /// schedule says. Outside the measured region, so the flip costs
    /// nothing there.
    pub(crate) fn before_block(&self, pass: Option<u32>) {
        if self.target.is_some() {
            self.on.store(self.schedule.on_in_pass(pass.unwrap_or(0)), Ordering::Relaxed);
        }
    }

    /// Busy-wait if `hop` is the configured one.
    #[inline]
    pub(crate) fn before(&self, hop: Hop) {
        // Relaxed: the flag only changes between blocks, which the
        // harness already orders with the writer's thread.
        if let Some((target, iterations)) = self.target
            && target == hop
            && self.on.load(Ordering::Relaxed)
        {
            spin(iterations);
        }
    }

    /// What one delay costs on this host, measured: the mean over `calls`
    /// calls of [`Delay::before`] on its hop, timed as a whole, ns. 0 for no
    /// delay.
    pub(crate) fn measured_ns(&self, calls: u32) -> f64 {
        let Some((hop, _)) = self.target else { return 0.0 };
        let calls = calls.max(1);
        let start = clock::now();
        for _ in 0..calls {
            self.before(std::hint::black_box(hop));
        }
        elapsed_ns(start) / f64::from(calls)
    }
}

/// Nanoseconds since `start`, off the hot path.
fn elapsed_ns(start: Ticks) -> f64 {
    clock::clock().delta_as_nanos(start.0, clock::now().0) as f64
}

/// The fixed cost of one call of [`spin`] beyond its turns, ns: the
/// fastest of several timed batches of short (~100 ns) waits, minus the
/// turns' own time. Measured once per process.
fn fixed_ns() -> f64 {
    static FIXED: OnceLock<f64> = OnceLock::new();
    *FIXED.get_or_init(|| {
        let turns = (100.0 / ns_per_iteration()).round().max(1.0) as u64;
        let short = Delay {
            target: Some((Hop::BUILT, turns)),
            schedule: DelaySchedule::Always,
            on: Arc::new(AtomicBool::new(true)),
        };
        let fastest = (0..7).map(|_| short.measured_ns(2_000)).fold(f64::INFINITY, f64::min);
        (fastest - turns as f64 * ns_per_iteration()).max(0.0)
    })
}

/// Run `iterations` turns of a multiply–add chain, then fence.
///
/// Each turn depends on the one before, so a turn costs the chain's latency
/// (a multiply and an add) whatever the front end, the loop buffer or the
/// code's alignment do; a loop with independent turns ran at one speed in a
/// hot calibration loop and at nearly twice it between two SQLite calls.
/// The fence keeps the out-of-order core from reading the next mark's clock
/// before the chain is done, which would hide part of the wait.
#[inline(never)]
fn spin(iterations: u64) {
    let mut x = std::hint::black_box(1u64);
    for _ in 0..iterations {
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    }
    std::hint::black_box(x);
    fence();
}

/// Wait until every earlier instruction has completed.
#[inline(always)]
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` only orders execution; it reads and writes no memory
    // and is available on every x86-64 CPU (SSE2 is baseline).
    unsafe {
        std::arch::x86_64::_mm_lfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Nanoseconds one turn of [`spin`] takes on this host, measured once per
/// process: the fastest of several timed runs of a loop long enough (~0.2 ms)
/// for the clock's grain and read cost not to matter. The fastest run is the
/// one least disturbed by preemption.
pub(crate) fn ns_per_iteration() -> f64 {
    static CALIBRATION: OnceLock<f64> = OnceLock::new();
    *CALIBRATION.get_or_init(|| {
        const TURNS: u64 = 200_000;
        (0..7)
            .map(|_| {
                let start = clock::now();
                spin(TURNS);
                elapsed_ns(start) / TURNS as f64
            })
            .fold(f64::INFINITY, f64::min)
            .max(1e-3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_delay_costs_nothing_and_a_delay_waits_about_its_length() {
        assert_eq!(Delay::new(None).measured_ns(10), 0.0);
        let zero = Delay::new(Some(InjectedDelay { before: Hop::BUILT, ns: 0, schedule: Default::default() }));
        assert_eq!(zero.measured_ns(10), 0.0);
        // Only the configured hop waits.
        let delay = Delay::new(Some(InjectedDelay { before: Hop::BUILT, ns: 2_000, schedule: Default::default() }));
        let start = clock::now();
        for _ in 0..1_000 {
            delay.before(Hop::SENT);
        }
        let other = elapsed_ns(start);
        // Behaviour, not speed: the delay is measured at a real length, far
        // above the cost of a thousand skipped branches.
        let measured = delay.measured_ns(1_000);
        assert!(measured > 0.0 && measured * 1_000.0 > other, "{measured} ns vs {other} ns for 1000 skips");
    }

    #[test]
    fn a_pass_pair_schedule_waits_only_in_its_pairs() {
        let odd = DelaySchedule::PassPairs { odd: true };
        assert!(!odd.on_in_pass(0) && !odd.on_in_pass(1) && odd.on_in_pass(2) && odd.on_in_pass(3));
        assert!(!odd.on_in_pass(4) && DelaySchedule::PassPairs { odd: false }.on_in_pass(5));
        let delay = Delay::new(Some(InjectedDelay { before: Hop::BUILT, ns: 2_000, schedule: odd }));
        // Warm-up runs as pass 0 does: off for an odd-pair carrier.
        delay.before_block(None);
        let off = delay.measured_ns(200);
        // A clone (the writer thread's copy) follows the same switch.
        let thread_copy = delay.clone();
        delay.before_block(Some(2));
        let on = thread_copy.measured_ns(200);
        assert!(on > 10.0 * off.max(1.0), "on {on} ns, off {off} ns");
    }
}
