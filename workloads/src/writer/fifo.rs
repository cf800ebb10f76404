//! Persistent-reply mode: one reply channel for the writer's lifetime, and
//! FIFO completion on the caller side.
//!
//! The writer answers requests in the order they were sent, on one channel.
//! Callers register a completion slot in that same order (under the writer
//! mutex, together with the send). Whichever waiting caller holds the reply
//! channel (the leader) receives replies and fills the slots front to back
//! until its own is filled, then hands the channel to the next waiter. So
//! every reply reaches the caller that sent its request, with no reply
//! channel carried in the request.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};

use crate::channel::Rx;
use crate::knobs::Wait;
use crate::writer::request::Reply;
use crate::writer::thread::Shared;

/// Where one caller's reply lands.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    value: Mutex<Option<Reply>>,
    ready: Condvar,
}

impl Slot {
    fn fill(&self, reply: Reply) {
        *lock(&self.value) = Some(reply);
        self.ready.notify_one();
    }

    /// Wake the slot's waiter without filling it (leadership hand-over).
    fn nudge(&self) {
        let _held = lock(&self.value);
        self.ready.notify_one();
    }
}

/// The caller side of the persistent reply channel.
#[derive(Debug)]
pub(crate) struct Fifo {
    replies: Mutex<Rx<Reply>>,
    pending: Mutex<VecDeque<Arc<Slot>>>,
}

impl Fifo {
    pub(crate) fn new(replies: Rx<Reply>) -> Fifo {
        Fifo { replies: Mutex::new(replies), pending: Mutex::new(VecDeque::with_capacity(64)) }
    }

    /// Register `slot` as the next reply's owner. Call it while holding the
    /// writer mutex, immediately before sending the request.
    pub(crate) fn register(&self, slot: Arc<Slot>) {
        lock(&self.pending).push_back(slot);
    }

    /// Undo the last [`Fifo::register`] when the send that followed failed,
    /// so no reply is ever matched to the wrong caller. Call it still
    /// holding the writer mutex.
    pub(crate) fn unregister_last(&self) {
        lock(&self.pending).pop_back();
    }

    /// Block until `slot` holds its reply.
    pub(crate) fn wait(&self, slot: &Arc<Slot>, wait: Wait, shared: &Shared) -> Reply {
        let mut held = lock(&slot.value);
        loop {
            if let Some(reply) = held.take() {
                return reply;
            }
            // Trying the channel while holding our slot's lock closes the
            // race with a leader that is handing over: it must take this lock
            // to nudge us, which it can only do once we are waiting.
            match self.replies.try_lock() {
                Ok(rx) => {
                    drop(held);
                    return self.lead(rx, slot, wait, shared);
                }
                Err(TryLockError::Poisoned(poisoned)) => {
                    drop(held);
                    return self.lead(poisoned.into_inner(), slot, wait, shared);
                }
                Err(TryLockError::WouldBlock) => {
                    held = slot.ready.wait(held).unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }

    /// Receive replies for the queue until `mine` is filled, then pass the
    /// channel on to the next waiter.
    fn lead(&self, rx: MutexGuard<'_, Rx<Reply>>, mine: &Arc<Slot>, wait: Wait, shared: &Shared) -> Reply {
        let reply = loop {
            if let Some(reply) = lock(&mine.value).take() {
                break reply;
            }
            match rx.recv_with(wait) {
                Ok(reply) => {
                    let owner = lock(&self.pending).pop_front();
                    if let Some(owner) = owner {
                        owner.fill(reply);
                    }
                }
                Err(_) => {
                    // The writer is gone: every registered caller gets the error.
                    let orphans: Vec<Arc<Slot>> = lock(&self.pending).drain(..).collect();
                    for orphan in orphans {
                        orphan.fill(Err(shared.stopped_error().into()));
                    }
                }
            }
        };
        drop(rx);
        let next = lock(&self.pending).front().cloned();
        if let Some(next) = next {
            next.nudge();
        }
        reply
    }
}

thread_local! {
    static SLOT: RefCell<Option<Arc<Slot>>> = const { RefCell::new(None) };
}

/// This thread's reused completion slot (`ResultSlot::Reuse`).
pub(crate) fn cached_slot() -> Arc<Slot> {
    SLOT.with(|slot| Arc::clone(slot.borrow_mut().get_or_insert_with(|| Arc::new(Slot::default()))))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
