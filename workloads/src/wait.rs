//! Waiting for the other thread, the way a [`Wait`] says: block at once,
//! or keep warm for a window first — spinning, yielding, sleeping in short
//! timer ticks, or spinning only when this thread's recent waits say a
//! message is likely within the window.
//!
//! Every waiting site (the writer's request channel, the reply mailbox,
//! the floor, the handoff lane) goes through [`wait`], so a mode means the
//! same everywhere.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::knobs::{CpuBudget, Wait};

/// How long a ticking wait sleeps between polls. Short enough that a
/// message waits a few µs at most, long enough that the thread sleeps.
pub const TICK: Duration = Duration::from_micros(5);

/// The timer slack a ticking thread asks for, ns: the kernel's default
/// (50 µs) would stretch every tick ten times over.
const TICK_SLACK_NS: libc::c_ulong = 1_000;

/// An adaptive wait in the parking regime still spins one wait in this
/// many, to see whether messages came back within the window.
const EXPLORE_EVERY: u32 = 16;

/// Weight of the newest spin's outcome in the running score (1/4).
const SCORE_WEIGHT: f64 = 0.25;

thread_local! {
    /// How often this thread's recent spins got their message within the
    /// window (a running score in 0..=1, optimistic at first).
    static SPIN_SCORE: Cell<f64> = const { Cell::new(1.0) };
    /// Waits since the last spin, in the parking regime.
    static SINCE_SPIN: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread already asked for a fine timer slack.
    static SLACK_SET: Cell<bool> = const { Cell::new(false) };
    /// When this thread's last budgeted wait ended (its work since then is
    /// what the budget is a share of).
    static WAIT_ENDED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// A running mean (weight [`SCORE_WEIGHT`]) of this thread's work
    /// between budgeted waits, ns.
    static WORK_NS: Cell<f64> = const { Cell::new(0.0) };
}

/// Wait as `how` says: `poll` (which takes a message if one is there) for
/// the mode's window, then `block` until one arrives.
#[inline]
pub(crate) fn wait<T>(how: Wait, mut poll: impl FnMut() -> Option<T>, block: impl FnOnce() -> T) -> T {
    let warm = match how {
        Wait::Park => None,
        Wait::Spin(window) => poll_for(window, &mut poll, std::hint::spin_loop),
        Wait::Yield(window) => poll_for(window, &mut poll, std::thread::yield_now),
        Wait::Tick(window) => {
            fine_timer_slack();
            poll_for(window, &mut poll, || std::thread::sleep(TICK))
        }
        Wait::Adaptive(window, None) => return adaptive(window, poll, block),
        Wait::Adaptive(window, Some(budget)) => return budgeted(window, budget, poll, block),
    };
    warm.unwrap_or_else(block)
}

/// Poll until `poll` yields or `window` has passed, calling `between`
/// after every empty poll.
#[inline]
fn poll_for<T>(window: Duration, poll: &mut impl FnMut() -> Option<T>, between: impl Fn()) -> Option<T> {
    let deadline = Instant::now() + window;
    loop {
        if let Some(value) = poll() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        between();
    }
}

/// Spin for the window while this thread's recent spins mostly got their
/// message within it (and, in the parking regime, one wait in
/// [`EXPLORE_EVERY`]); else block at once. Only a spin's outcome moves the
/// score: how long a parked wait took says nothing about the window,
/// because it includes the wake-up (~60 µs across a VM's cores).
fn adaptive<T>(window: Duration, mut poll: impl FnMut() -> Option<T>, block: impl FnOnce() -> T) -> T {
    let score = SPIN_SCORE.get();
    let explore = score < 0.5 && SINCE_SPIN.get() + 1 >= EXPLORE_EVERY;
    if score < 0.5 && !explore {
        SINCE_SPIN.set(SINCE_SPIN.get() + 1);
        return block();
    }
    SINCE_SPIN.set(0);
    match poll_for(window, &mut poll, std::hint::spin_loop) {
        Some(value) => {
            SPIN_SCORE.set(score + (1.0 - score) * SCORE_WEIGHT);
            value
        }
        None => {
            SPIN_SCORE.set(score - score * SCORE_WEIGHT);
            block()
        }
    }
}

/// An adaptive wait whose window is also capped by `budget`: this thread
/// may spin at most its budget share of its recent work between waits (a
/// running mean, so one long gap does not buy one long spin). A wait the
/// budget cannot cover parks, and the spin score then learns that spins
/// that short rarely get their message, so it parks at once.
fn budgeted<T>(window: Duration, budget: CpuBudget, poll: impl FnMut() -> Option<T>, block: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    if let Some(ended) = WAIT_ENDED.get() {
        let work = started.saturating_duration_since(ended).as_nanos() as f64;
        let mean = WORK_NS.get();
        WORK_NS.set(if mean == 0.0 { work } else { mean + (work - mean) * SCORE_WEIGHT });
    }
    let allowed = budget.allows(Duration::from_nanos(WORK_NS.get() as u64));
    let window = window.min(allowed);
    // Nothing to spin (no work seen yet, or a 1x budget): block, and leave
    // the spin score to the spins.
    let got = if window.is_zero() { block() } else { adaptive(window, poll, block) };
    WAIT_ENDED.set(Some(Instant::now()));
    got
}

/// Ask the kernel to wake this thread's sleeps within [`TICK_SLACK_NS`],
/// once per thread.
pub(crate) fn fine_timer_slack() {
    if !SLACK_SET.get() {
        SLACK_SET.set(true);
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes
        // only the calling thread's timer slack; nothing is passed by
        // pointer. A failure leaves the default slack, which is slower, not
        // wrong.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, TICK_SLACK_NS, 0, 0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use std::str::FromStr;

    use super::*;

    /// A message `after` from now on another thread; how `how` gets it.
    fn one_message(how: Wait, after: Duration) -> u64 {
        let slot = Arc::new(AtomicU64::new(0));
        let sender = {
            let slot = Arc::clone(&slot);
            let waiter = std::thread::current();
            std::thread::spawn(move || {
                std::thread::sleep(after);
                slot.store(7, Ordering::Release);
                waiter.unpark();
            })
        };
        let poll = || Some(slot.load(Ordering::Acquire)).filter(|v| *v != 0);
        let got = wait(how, poll, || {
            loop {
                if let Some(v) = poll() {
                    break v;
                }
                std::thread::park();
            }
        });
        sender.join().expect("sender");
        got
    }

    #[test]
    fn every_mode_gets_the_message_whether_it_comes_within_the_window_or_after() {
        let window = Duration::from_micros(300);
        let modes =
            [Wait::Park, Wait::Spin(window), Wait::Yield(window), Wait::Tick(window), Wait::Adaptive(window, None)];
        let modes =
            modes.into_iter().chain([Wait::Adaptive(window, Some(CpuBudget::from_str("1.5x").expect("budget")))]);
        for how in modes {
            for after in [Duration::ZERO, Duration::from_micros(50), Duration::from_millis(3)] {
                assert_eq!(one_message(how, after), 7, "{how} after {after:?}");
            }
        }
    }

    #[test]
    fn an_adaptive_wait_stops_spinning_when_messages_come_late_and_explores_again() {
        let window = Duration::from_micros(20);
        SPIN_SCORE.set(1.0);
        SINCE_SPIN.set(0);
        let late = || std::thread::sleep(Duration::from_millis(1));
        // Spins that find nothing within the window: the score falls.
        for _ in 0..4 {
            wait(Wait::Adaptive(window, None), || None::<()>, late);
        }
        assert!(SPIN_SCORE.get() < 0.5, "{}", SPIN_SCORE.get());
        // Now it blocks at once, never polling, except one wait in
        // EXPLORE_EVERY that spins to look.
        let mut spun = 0;
        for _ in 0..EXPLORE_EVERY {
            let mut polled = false;
            let poll = || {
                polled = true;
                None::<()>
            };
            wait(Wait::Adaptive(window, None), poll, late);
            spun += u32::from(polled);
        }
        assert_eq!(spun, 1, "one wait in {EXPLORE_EVERY} spins");
        // Explores that find their message raise the score until it spins
        // every time again.
        for _ in 0..EXPLORE_EVERY * 8 {
            wait(Wait::Adaptive(window, None), || Some(()), late);
        }
        assert!(SPIN_SCORE.get() >= 0.5, "{}", SPIN_SCORE.get());
    }

    #[test]
    fn a_budget_lets_a_thread_spin_only_its_share_of_its_own_work() {
        let budget = CpuBudget::from_str("1.5x").expect("budget");
        let window = Duration::from_millis(50);
        SPIN_SCORE.set(1.0);
        SINCE_SPIN.set(0);
        WAIT_ENDED.set(None);
        WORK_NS.set(0.0);
        let busy = |d: Duration| {
            let until = Instant::now() + d;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        };
        // ~200 µs of work between waits: a 1.5x budget allows ~100 µs of
        // spin, far below the 50 ms window. A message that never comes
        // within the window: each spin gives up near the budget, not the
        // window.
        let mut spins = Vec::new();
        for _ in 0..6 {
            busy(Duration::from_micros(200));
            let start = Instant::now();
            let mut polled_until = start;
            let poll = || {
                polled_until = Instant::now();
                None::<()>
            };
            wait(Wait::Adaptive(window, Some(budget)), poll, || ());
            spins.push(polled_until.duration_since(start));
        }
        // The first wait has no work to go by: it blocks at once.
        assert_eq!(spins[0], Duration::ZERO, "{spins:?}");
        let longest = spins.iter().max().copied().unwrap_or_default();
        assert!(longest > Duration::ZERO, "later waits spin: {spins:?}");
        // Preemption on a busy test machine can stretch a spin by a few
        // time slices, not to the 50 ms window.
        assert!(longest < Duration::from_millis(20), "the budget, not the window, ends each spin: {spins:?}");
        // A 1x budget never spins.
        let never = CpuBudget::from_str("1x").expect("budget");
        busy(Duration::from_micros(200));
        let mut polled = false;
        wait(
            Wait::Adaptive(window, Some(never)),
            || {
                polled = true;
                None::<()>
            },
            || (),
        );
        assert!(!polled, "a 1x budget blocks at once");
    }
}
