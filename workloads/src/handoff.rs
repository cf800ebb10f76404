//! The handoff lane: a caller and a thread passing a turn back and forth
//! with no work on either side, pricing a thread boundary's bare switches.
//!
//! The floor's boundary (`floor − inline`) is the kernel's part — two
//! wake-ups and two context switches per write — plus what a channel, a
//! reply mailbox and running the statement on another thread add. This
//! lane keeps only the kernel's part: one atomic counter each way and
//! `park`/`unpark` (a futex on Linux), so `boundary − handoff` is the
//! machinery. A turn allocates nothing, takes no lock and copies nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{JoinHandle, Thread};

use hopscope_harness::{BoxError, HandIn, Ops, Workload};

use crate::error::WriteError;
use crate::knobs::Wait;
use crate::worker::WRITER_ROLE;

/// What the two threads share.
#[derive(Debug, Default)]
struct Baton {
    /// The last turn the caller handed over (turns count from 1).
    asked: AtomicU64,
    /// The last turn the thread handed back.
    answered: AtomicU64,
    /// The lane is closing: the thread leaves its loop.
    stop: AtomicBool,
    /// A hand-in waits for the thread (checked on every wake, taken rarely).
    hand_in_pending: AtomicBool,
    hand_in: Mutex<Option<(HandIn, crossbeam_channel::Sender<()>)>>,
    /// The one thread that calls [`Handoff::pass`], set on its first turn.
    caller: OnceLock<Thread>,
}

/// A running handoff thread and the caller's side of it.
#[derive(Debug)]
pub struct Handoff {
    baton: Arc<Baton>,
    thread: Option<JoinHandle<()>>,
    /// The handoff thread, to unpark.
    worker: Thread,
    /// How the caller waits for its turn back.
    caller_wait: Wait,
}

/// Where the handoff thread runs and how each side waits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandoffOptions {
    /// Core to pin the handoff thread to.
    pub pin: Option<usize>,
    /// How the handoff thread waits for a turn.
    pub worker_wait: Wait,
    /// How the caller waits for the turn back.
    pub caller_wait: Wait,
}

/// Wait as `wait` says until `ready` ([`crate::wait`]), then park until
/// woken and `ready` holds. A wake that lands before the park leaves a
/// token, so the park returns and `ready` is checked again: nothing is
/// missed.
#[inline]
fn wait_until(wait: Wait, ready: impl Fn() -> bool) {
    crate::wait::wait(
        wait,
        || ready().then_some(()),
        || {
            while !ready() {
                std::thread::park();
            }
        },
    );
}

impl Handoff {
    /// Start the handoff thread.
    pub fn spawn(options: HandoffOptions) -> Result<Handoff, WriteError> {
        let baton = Arc::new(Baton::default());
        let shared = Arc::clone(&baton);
        let thread = std::thread::Builder::new()
            .name("hopscope-handoff".to_owned())
            .spawn(move || {
                hopscope_harness::placement::place_worker(options.pin);
                serve(&shared, options.worker_wait);
            })
            .map_err(|_| WriteError::WriterStopped)?;
        let worker = thread.thread().clone();
        Ok(Handoff { baton, thread: Some(thread), worker, caller_wait: options.caller_wait })
    }

    /// Hand turn `turn` to the thread and wait until it hands it back.
    /// Turns must rise by one from 1 and come from one thread.
    #[inline]
    pub fn pass(&self, turn: u64) -> Result<(), WriteError> {
        let baton = &*self.baton;
        if baton.stop.load(Ordering::Relaxed) {
            return Err(WriteError::WriterStopped);
        }
        baton.asked.store(turn, Ordering::Release);
        self.worker.unpark();
        wait_until(self.caller_wait, || {
            baton.answered.load(Ordering::Acquire) >= turn || baton.stop.load(Ordering::Acquire)
        });
        if baton.answered.load(Ordering::Acquire) >= turn { Ok(()) } else { Err(WriteError::WriterStopped) }
    }

    /// Run `count` turns after the last one handed back, on the calling
    /// thread (which must be the thread of every earlier turn).
    pub fn run(&self, count: u64) -> Result<u64, WriteError> {
        let me = std::thread::current();
        let caller = self.baton.caller.get_or_init(|| me.clone());
        if caller.id() != me.id() {
            return Err(WriteError::Build {
                reason: "a handoff lane has one caller thread; it was called from another".to_owned(),
            });
        }
        let first = self.baton.answered.load(Ordering::Acquire) + 1;
        for turn in first..first.saturating_add(count) {
            self.pass(turn)?;
        }
        Ok(count)
    }

    /// Have the thread hand its CPU time in (as [`crate::WRITER_ROLE`]).
    /// Call between blocks.
    pub fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        let (done, answered) = crossbeam_channel::bounded(1);
        *self.baton.hand_in.lock().unwrap_or_else(PoisonError::into_inner) = Some((hand_in.clone(), done));
        self.baton.hand_in_pending.store(true, Ordering::Release);
        self.worker.unpark();
        answered.recv().map_err(|_| WriteError::WriterStopped)
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        self.baton.stop.store(true, Ordering::Release);
        self.worker.unpark();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The handoff thread: hand back every turn it is given, and hand in when
/// asked, until the lane closes.
fn serve(baton: &Baton, wait: Wait) {
    let mut answered = 0;
    loop {
        wait_until(wait, || {
            baton.asked.load(Ordering::Acquire) > answered
                || baton.hand_in_pending.load(Ordering::Acquire)
                || baton.stop.load(Ordering::Acquire)
        });
        if baton.stop.load(Ordering::Acquire) {
            break;
        }
        if baton.hand_in_pending.swap(false, Ordering::AcqRel) {
            let job = baton.hand_in.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some((hand_in, done)) = job {
                hand_in.collect(WRITER_ROLE);
                let _ = done.send(());
            }
        }
        let asked = baton.asked.load(Ordering::Acquire);
        if asked > answered {
            answered = asked;
            baton.answered.store(answered, Ordering::Release);
            if let Some(caller) = baton.caller.get() {
                caller.unpark();
            }
        }
    }
    // Wake a caller that waits on a turn the thread will not hand back.
    if let Some(caller) = baton.caller.get() {
        caller.unpark();
    }
}

/// The handoff lane as a harness workload: one turn per operation, one
/// caller, no store to reset or count.
#[derive(Debug)]
pub struct HandoffWorkload(pub Handoff);

impl Workload for HandoffWorkload {
    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError> {
        if caller != 0 {
            return Err(format!("a handoff lane has one caller; caller {caller} called it").into());
        }
        Ok(self.0.run(ops.len() as u64)?)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        Ok(self.0.hand_in(hand_in)?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_turn_comes_back_under_every_wait() {
        for wait in [Wait::Park, Wait::Spin(Duration::from_micros(50)), Wait::Yield(Duration::from_micros(50))] {
            let handoff =
                Handoff::spawn(HandoffOptions { pin: None, worker_wait: wait, caller_wait: wait }).expect("spawn");
            assert_eq!(handoff.run(1_000).expect("turns"), 1_000, "{wait}");
            assert_eq!(handoff.run(500).expect("turns"), 500, "{wait}");
            assert_eq!(handoff.baton.answered.load(Ordering::Acquire), 1_500, "{wait}");
        }
    }

    #[test]
    fn a_second_caller_thread_is_refused_and_closing_stops_the_thread() {
        let handoff = Arc::new(Handoff::spawn(HandoffOptions::default()).expect("spawn"));
        handoff.run(3).expect("turns");
        let other = Arc::clone(&handoff);
        let refused = std::thread::spawn(move || other.run(1)).join().expect("joins");
        assert!(matches!(refused, Err(WriteError::Build { .. })), "{refused:?}");
        let handoff = Arc::into_inner(handoff).expect("one owner");
        drop(handoff); // joins the thread: a hang here is a lost wake-up
    }
}
