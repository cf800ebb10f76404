//! A request queue whose receiver parks at once: the reply mailbox's way
//! of waiting ([`crate::mailbox`]), for the writer's requests.
//!
//! crossbeam's blocking receive spins, then yields, then parks. When the
//! writer shares a core with its callers every spin is time the caller
//! cannot run, and every yield hands the core to whoever is runnable. This
//! queue checks once and parks; a sender wakes it only when it is parked
//! (`unpark` on a thread that is running costs an atomic, no syscall).
//! Whether that is faster is an A/B's verdict (`experiments/request-queue-parking.toml`),
//! not an assumption: it is a knob (`--channel parking`), not the default.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::Thread;

use crate::receive::{Disconnected, TryRecv};

struct State<T> {
    items: VecDeque<T>,
    /// Live senders; none left and nothing queued is the end.
    senders: usize,
    /// The receiver is gone: sends fail.
    receiver_gone: bool,
    /// The receiver, when it is parked or about to park.
    parked: Option<Thread>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
}

impl<T> Shared<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Change the state and wake a parked receiver, outside the lock.
    fn update<R>(&self, change: impl FnOnce(&mut State<T>) -> R) -> R {
        let (result, parked) = {
            let mut state = self.state();
            let result = change(&mut state);
            (result, state.parked.take())
        };
        if let Some(thread) = parked {
            thread.unpark();
        }
        result
    }
}

/// The sending side; clone it for each sender.
pub(crate) struct QueueTx<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving side, for one thread at a time.
pub(crate) struct QueueRx<T> {
    shared: Arc<Shared<T>>,
}

impl<T> std::fmt::Debug for QueueTx<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueTx").finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for QueueRx<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueRx").finish_non_exhaustive()
    }
}

/// An unbounded queue and its first sender.
pub(crate) fn queue<T>() -> (QueueTx<T>, QueueRx<T>) {
    let state = State { items: VecDeque::new(), senders: 1, receiver_gone: false, parked: None };
    let shared = Arc::new(Shared { state: Mutex::new(state) });
    (QueueTx { shared: Arc::clone(&shared) }, QueueRx { shared })
}

impl<T> QueueTx<T> {
    /// Queue `value` and wake the receiver if it is parked.
    pub(crate) fn send(&self, value: T) -> Result<(), Disconnected> {
        self.shared.update(|state| {
            if state.receiver_gone {
                return Err(Disconnected);
            }
            state.items.push_back(value);
            Ok(())
        })
    }
}

impl<T> Clone for QueueTx<T> {
    fn clone(&self) -> Self {
        self.shared.state().senders += 1;
        QueueTx { shared: Arc::clone(&self.shared) }
    }
}

impl<T> Drop for QueueTx<T> {
    fn drop(&mut self) {
        // The last sender gone wakes the receiver to see the end.
        self.shared.update(|state| state.senders -= 1);
    }
}

impl<T> QueueRx<T> {
    /// Take the next value, `Closed` once every sender is gone and the
    /// queue is empty. With `park_as`, an empty queue records that thread
    /// as about to park in the same critical section, so no send can slip
    /// between the check and the park.
    fn take(&self, park_as: Option<Thread>) -> TryRecv<T> {
        let mut state = self.shared.state();
        if let Some(value) = state.items.pop_front() {
            return TryRecv::Got(value);
        }
        if state.senders == 0 {
            return TryRecv::Closed;
        }
        state.parked = park_as;
        TryRecv::Empty
    }

    /// Take a queued value if there is one.
    #[inline]
    pub(crate) fn try_recv(&self) -> TryRecv<T> {
        self.take(None)
    }

    /// Wait for a value: check once, then park until a send wakes it.
    pub(crate) fn recv(&self) -> Result<T, Disconnected> {
        let me = std::thread::current();
        loop {
            match self.take(Some(me.clone())) {
                TryRecv::Got(value) => return Ok(value),
                TryRecv::Closed => return Err(Disconnected),
                // A wake that lands before the park leaves a token, so the
                // park returns at once and the queue is checked again.
                TryRecv::Empty => std::thread::park(),
            }
        }
    }
}

impl<T> Drop for QueueRx<T> {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.receiver_gone = true;
        state.items.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_arrives_in_order_from_every_sender_and_the_end_is_seen() {
        let (tx, rx) = queue::<(u32, u32)>();
        let producers: Vec<_> = (0..3)
            .map(|p| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..2_000 {
                        tx.send((p, i)).expect("receiver alive");
                    }
                })
            })
            .collect();
        drop(tx);
        let mut next = [0u32; 3];
        while let Ok((p, i)) = rx.recv() {
            assert_eq!(i, next[p as usize], "sender {p}'s values in order");
            next[p as usize] += 1;
        }
        assert_eq!(next, [2_000; 3], "nothing lost");
        for producer in producers {
            producer.join().expect("producer");
        }
    }

    #[test]
    fn a_send_to_a_gone_receiver_fails() {
        let (tx, rx) = queue::<u8>();
        drop(rx);
        assert_eq!(tx.send(1), Err(Disconnected));
    }
}
