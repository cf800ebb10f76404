//! Per-thread reply channels: one-shot replies with a reused result slot.
//!
//! A caller thread registers one reply channel with a writer on its first
//! call and names it by index in every request after that, the way the
//! floor's clients do: no channel is created, cloned or dropped per call,
//! so a request carries four bytes of reply path and no reference count.
//! Registration and unregistration travel on the request channel under the
//! writer mutex, so the writer thread sees them in order with the requests.
//! A thread's registrations are undone when the thread exits.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::channel::{self, Rx, Tx};
use crate::knobs::ChannelKind;
use crate::writer::request::{Message, Reply};

/// The writer mutex's contents: the request channel and the client ids.
#[derive(Debug)]
pub(crate) struct Gate {
    /// `None` once the writer is closing.
    pub(crate) tx: Option<Tx<Message>>,
    next_client: u32,
    free: Vec<u32>,
}

impl Gate {
    pub(crate) fn new(tx: Tx<Message>) -> Gate {
        Gate { tx: Some(tx), next_client: 0, free: Vec::new() }
    }

    /// Client ids handed out and not yet returned.
    #[cfg(test)]
    pub(crate) fn live_clients(&self) -> usize {
        self.next_client as usize - self.free.len()
    }
}

/// A writer's identity for the per-thread registry (never reused).
pub(crate) fn next_writer_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One caller thread's reply channel with one writer.
#[derive(Debug)]
pub(crate) struct Registration {
    writer: u64,
    pub(crate) client: u32,
    pub(crate) replies: Rx<Reply>,
    gate: Weak<Mutex<Gate>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Runs when the caller thread exits (never while this thread holds
        // the gate: a lent registration goes back to the registry instead).
        let Some(gate) = self.gate.upgrade() else { return };
        let mut gate = gate.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = &gate.tx
            && tx.send(Message::Unregister { client: self.client }).is_ok()
        {
            gate.free.push(self.client);
        }
    }
}

thread_local! {
    static REGISTRY: RefCell<Vec<Registration>> = const { RefCell::new(Vec::new()) };
}

/// Take this thread's registration with `writer` out of the registry, or
/// register a new reply channel (sending the registration on `gate`'s
/// channel). `None` if the writer is closing. Call with the gate held.
pub(crate) fn take_or_register(
    writer: u64,
    kind: ChannelKind,
    gate_ref: &Arc<Mutex<Gate>>,
    gate: &mut Gate,
) -> Option<Registration> {
    let found = REGISTRY.with(|registry| {
        let mut registry = registry.borrow_mut();
        let found = registry.iter().position(|r| r.writer == writer).map(|i| registry.swap_remove(i));
        if found.is_none() {
            // A miss is rare (first call on this thread): prune what belongs
            // to writers that are gone. Their drops find no gate to lock.
            registry.retain(|r| r.gate.strong_count() > 0);
        }
        found
    });
    if found.is_some() {
        return found;
    }
    let tx = gate.tx.as_ref()?;
    let client = gate.free.pop().unwrap_or_else(|| {
        gate.next_client += 1;
        gate.next_client - 1
    });
    let (reply_tx, replies) = channel::unbounded(kind);
    if tx.send(Message::Register { client, reply: reply_tx }).is_err() {
        return None;
    }
    Some(Registration { writer, client, replies, gate: Arc::downgrade(gate_ref) })
}

/// Put a registration back after the call it was lent to.
pub(crate) fn give_back(registration: Registration) {
    // During thread teardown the registry may be gone; the registration
    // then unregisters itself as it drops.
    let _ = REGISTRY.try_with(|registry| registry.borrow_mut().push(registration));
}
