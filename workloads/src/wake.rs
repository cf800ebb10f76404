//! The machine's wake floor: how late a thread that gave its CPU up runs
//! again.
//!
//! Every waiting strategy that does not spin ends in one of two kernel
//! waits: a timed sleep (the tick mode) or a park woken by the other thread
//! (park, and every window's fallback). What those cost on this machine
//! bounds what any keep-warm setting can reach: a wait that leaves the CPU
//! for any part of a write adds at least this much to its hop, so a hop
//! below it needs both threads on their CPUs for the whole wait. On a VM
//! both are dominated by the halted vCPU's exit and re-entry, not by
//! scheduling, and no setting inside the process changes them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hopscope_analyze::wake::{Spread, WakeFloor};
use hopscope_harness::{Pin, Placement, placement};

/// The sleep each [`sleep_late_us`] sample asks for: shorter than any
/// SQLite write, so any lateness is the wake's, not the request's.
pub const SLEEP_REQUEST: Duration = Duration::from_micros(2);

/// How long the parked thread is left alone before each wake, so its CPU
/// has gone idle (as a writer's has between two writes).
const SETTLE: Duration = Duration::from_micros(300);

/// Samples of each kind of wake [`floor`] takes (well under a second in
/// all).
const WAKES: usize = 300;

/// The machine's wake floor, measured on the placement whose threads wait
/// for each other across cores when `placements` has it (the one keep-warm
/// exists for), else on the first one; `None` without a placement or a
/// sample.
pub fn floor(placements: &[Placement]) -> Option<WakeFloor> {
    let placement = placements
        .iter()
        .copied()
        .find(|p| *p == Placement::DifferentCores && placement::unachievable(*p).is_none())
        .or_else(|| placements.first().copied())?;
    Some(WakeFloor {
        placement: placement.name().to_owned(),
        sleep_request_us: SLEEP_REQUEST.as_secs_f64() * 1e6,
        sleep_late_us: Spread::of(sleep_late_us(placement, WAKES))?,
        park_wake_us: Spread::of(park_wake_us(placement, WAKES))?,
    })
}

/// How late `count` sleeps of [`SLEEP_REQUEST`] return, µs each, on a
/// thread placed as `placement`'s caller, with the timer slack at 1 µs (as
/// the tick mode sets it).
pub fn sleep_late_us(placement: Placement, count: usize) -> Vec<f64> {
    let sleeper = std::thread::spawn(move || {
        placement.place_caller();
        crate::wait::fine_timer_slack();
        (0..count)
            .map(|_| {
                let start = Instant::now();
                std::thread::sleep(SLEEP_REQUEST);
                us(start.elapsed().saturating_sub(SLEEP_REQUEST))
            })
            .collect()
    });
    sleeper.join().unwrap_or_default()
}

/// How long after its `unpark` a parked thread runs, µs, `count` times: the
/// parked thread placed as `placement`'s worker, the waking one as its
/// caller (on different cores this is the cross-core wake every parked
/// reply and request pays).
pub fn park_wake_us(placement: Placement, count: usize) -> Vec<f64> {
    let base = Instant::now();
    // The waker's clock at its unpark (ns since `base`), then the round it
    // belongs to: the parked thread takes a wake only once its round is
    // published, so a spurious return from `park` is never measured.
    let sent_at = Arc::new(AtomicU64::new(0));
    let round = Arc::new(AtomicU64::new(0));
    let parked = {
        let (sent_at, round) = (Arc::clone(&sent_at), Arc::clone(&round));
        std::thread::spawn(move || {
            placement.place_worker();
            let mut woke = Vec::with_capacity(count);
            for expected in 1..=count as u64 {
                while round.load(Ordering::Acquire) < expected {
                    std::thread::park();
                }
                let now = base.elapsed().as_nanos() as f64;
                woke.push((now - sent_at.load(Ordering::Acquire) as f64).max(0.0) / 1_000.0);
            }
            woke
        })
    };
    let target = parked.thread().clone();
    let release = Arc::clone(&round);
    let waker = std::thread::spawn(move || {
        placement.place_caller();
        for r in 1..=count as u64 {
            std::thread::sleep(SETTLE);
            sent_at.store(base.elapsed().as_nanos() as u64, Ordering::Release);
            round.store(r, Ordering::Release);
            target.unpark();
        }
    });
    if waker.join().is_err() {
        // Release the parked thread rather than leave it waiting for good;
        // what it measures then is not a wake.
        release.store(u64::MAX, Ordering::Release);
        parked.thread().unpark();
        let _ = parked.join();
        return Vec::new();
    }
    parked.join().unwrap_or_default()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wake_is_measured_once_and_none_is_negative() {
        for placement in [Placement::Unpinned, Placement::DifferentCores] {
            let woke = park_wake_us(placement, 20);
            assert_eq!(woke.len(), 20, "{placement:?}");
            assert!(woke.iter().all(|w| w.is_finite() && *w >= 0.0), "{woke:?}");
        }
        let late = sleep_late_us(Placement::Unpinned, 20);
        assert_eq!(late.len(), 20);
        assert!(late.iter().all(|l| l.is_finite() && *l >= 0.0), "{late:?}");
    }
}
