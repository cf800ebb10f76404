//! What the known-length tests share: a busy-wait on hopscope's own clock,
//! and how long it really spins (the truth a slice is held to).

#![allow(dead_code)]

pub(crate) mod batch_writer;

use std::sync::{Mutex, MutexGuard, OnceLock};

/// The suite's turn: every test holds it while it runs, so tests that
/// measure the machine never run beside each other in the one binary
/// (a test that panicked leaves it usable).
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

use hopscope_probe::{ClockInfo, clock};

/// Nanoseconds per clock tick, measured once (measuring takes tens of µs).
pub(crate) fn ns_per_tick() -> f64 {
    static NS_PER_TICK: OnceLock<f64> = OnceLock::new();
    *NS_PER_TICK.get_or_init(|| ClockInfo::measure().ns_per_tick)
}

/// Spin until `ns` have passed on hopscope's own clock.
pub(crate) fn busy(ns: u64) {
    let ticks = (ns as f64 / ns_per_tick()).round() as u64;
    let start = clock::now();
    while clock::now().since(start) < ticks {
        std::hint::spin_loop();
    }
}

/// How long `busy(ns)` really spins, ns: it stops at the first clock read
/// past `ns`, so it overshoots by up to one read (more in an unoptimised
/// build on a slow host). The median of bracketed runs less the median of
/// an empty bracket.
pub(crate) fn spun_ns(ns: u64) -> f64 {
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 * ns_per_tick()
    };
    let bracket = |f: &dyn Fn()| {
        (0..2_001)
            .map(|_| {
                let start = clock::now();
                f();
                clock::now().since(start)
            })
            .collect::<Vec<_>>()
    };
    median(bracket(&|| busy(ns))) - median(bracket(&|| {}))
}

/// A writer thread of the kind a user writes, for the known-length tests:
/// messages in on one channel, a reply out on another, the thread joined
/// when dropped. Each test says what the thread does with a message
/// (`serve`, given the reply channel) and what it does first (`enter`:
/// joining the harness's hand-in, say).
pub(crate) struct ToyWriter<M: Send + 'static> {
    requests: Option<crossbeam_channel::Sender<M>>,
    replies: crossbeam_channel::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<M: Send + 'static> ToyWriter<M> {
    /// Start the thread: `enter`, then `serve` each message until dropped.
    pub(crate) fn spawn(
        enter: impl FnOnce() + Send + 'static,
        mut serve: impl FnMut(M, &crossbeam_channel::Sender<()>) + Send + 'static,
    ) -> ToyWriter<M> {
        let (requests, inbox) = crossbeam_channel::unbounded::<M>();
        let (reply, replies) = crossbeam_channel::unbounded();
        let thread = std::thread::spawn(move || {
            enter();
            for message in inbox {
                serve(message, &reply);
            }
        });
        ToyWriter { requests: Some(requests), replies, thread: Some(thread) }
    }

    /// Hand `message` to the thread.
    pub(crate) fn send(&self, message: M) -> Result<(), hopscope_harness::BoxError> {
        let requests = self.requests.as_ref().ok_or("stopped")?;
        requests.send(message).map_err(|_| "the writer thread is gone".into())
    }

    /// Wait for the thread's next reply.
    pub(crate) fn reply(&self) -> Result<(), hopscope_harness::BoxError> {
        Ok(self.replies.recv()?)
    }
}

impl<M: Send + 'static> Drop for ToyWriter<M> {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
