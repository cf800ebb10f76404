//! A one-value mailbox whose receiver parks at once.
//!
//! crossbeam's (and std's) blocking receive spins and yields for a while
//! before it parks. When the sender runs on the same core, every one of
//! those spins is time the sender cannot run: measured here, a peer that
//! awaits its reply on a tokio runtime (which parks at once) beat a
//! crossbeam reply by ~2 µs per write. A reply path needs no queue (one
//! request, one reply), so this is a slot, the receiving thread's handle,
//! and `park`/`unpark`: `unpark` only makes a syscall when the receiver is
//! actually parked.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::Thread;

use crate::knobs::Wait;
use crate::receive::Disconnected;

struct State<T> {
    value: Option<T>,
    /// The sending side is gone; nothing arrives after `value`.
    closed: bool,
    /// The receiver, when it is parked or about to park.
    parked: Option<Thread>,
}

/// The receiving side, owned by the thread that created it.
#[derive(Debug)]
pub(crate) struct Mailbox<T> {
    shared: Arc<Shared<T>>,
}

/// The sending side. Dropping it closes the mailbox and wakes the receiver.
#[derive(Debug)]
pub(crate) struct Sender<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
}

impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// A mailbox and its sender. Any one thread at a time may receive.
pub(crate) fn mailbox<T>() -> (Sender<T>, Mailbox<T>) {
    let shared = Arc::new(Shared { state: Mutex::new(State { value: None, closed: false, parked: None }) });
    (Sender { shared: Arc::clone(&shared) }, Mailbox { shared })
}

impl<T> Shared<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take the value if there is one; `Err` once closed and empty. With
    /// `park_as`, an empty slot records that thread as about to park, in
    /// the same critical section, so no wake-up can fall in between.
    fn try_take(&self, park_as: Option<Thread>) -> Result<Option<T>, Disconnected> {
        let mut state = self.state();
        if let Some(value) = state.value.take() {
            return Ok(Some(value));
        }
        if state.closed {
            return Err(Disconnected);
        }
        state.parked = park_as;
        Ok(None)
    }

    /// Change the state with `change` and wake a parked receiver.
    fn update(&self, change: impl FnOnce(&mut State<T>)) {
        let parked = {
            let mut state = self.state();
            change(&mut state);
            state.parked.take()
        };
        if let Some(thread) = parked {
            thread.unpark();
        }
    }
}

impl<T> Sender<T> {
    /// Deliver `value` and wake the receiver. The protocol is one value per
    /// request, so the slot is empty here; a value still in it would be
    /// replaced, never queued.
    pub(crate) fn send(&self, value: T) {
        self.shared.update(|state| state.value = Some(value));
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // A delivered value stays readable after the close.
        self.shared.update(|state| state.closed = true);
    }
}

impl<T> Mailbox<T> {
    /// Wait for the value the way `wait` says: park at once, or poll
    /// (spinning or yielding) for a window before parking.
    pub(crate) fn recv(&self, wait: Wait) -> Result<T, Disconnected> {
        let poll = || self.shared.try_take(None).transpose();
        crate::wait::wait(wait, poll, || {
            let me = std::thread::current();
            loop {
                if let Some(value) = self.shared.try_take(Some(me.clone()))? {
                    return Ok(value);
                }
                // A wake-up that lands between the check and this park
                // leaves a token, so park returns at once and the slot is
                // checked again.
                std::thread::park();
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_value_arrives_under_every_wait_and_closing_wakes_the_receiver() {
        for wait in [Wait::Park, Wait::Spin(Duration::from_micros(50)), Wait::Yield(Duration::from_micros(50))] {
            let (tx, rx) = mailbox::<u32>();
            let (ask, asked) = crossbeam_channel::unbounded::<u32>();
            let server = std::thread::spawn(move || {
                for i in asked {
                    tx.send(i * 2);
                }
                // `tx` drops here: the receiver must wake and see the end.
            });
            for i in 0..2_000 {
                ask.send(i).expect("server alive");
                assert_eq!(rx.recv(wait), Ok(i * 2), "{wait}");
            }
            drop(ask);
            server.join().expect("server");
            assert_eq!(rx.recv(wait), Err(Disconnected));
        }
    }

    #[test]
    fn a_mailbox_made_on_one_thread_is_received_on_another() {
        let (tx, rx) = mailbox::<u32>();
        let receiver = std::thread::spawn(move || (0..500).map(|_| rx.recv(Wait::Park)).collect::<Vec<_>>());
        for i in 0..500 {
            // One value at a time: wait until the previous one was taken.
            while tx.shared.state().value.is_some() {
                std::thread::yield_now();
            }
            tx.send(i);
        }
        let got = receiver.join().expect("receiver");
        assert_eq!(got, (0..500).map(Ok).collect::<Vec<_>>());
    }

    #[test]
    fn a_value_sent_before_the_sender_drops_is_still_received() {
        let (tx, rx) = mailbox::<&str>();
        std::thread::spawn(move || tx.send("last")).join().expect("sender");
        assert_eq!(rx.recv(Wait::Park), Ok("last"));
        assert_eq!(rx.recv(Wait::Park), Err(Disconnected));
    }
}
