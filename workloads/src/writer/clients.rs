//! Per-thread reply channels: one-shot replies with a reused result slot.
//!
//! A caller thread registers one reply mailbox with a writer on its first
//! call and names it by index in every request after that, the way the
//! floor's clients do: nothing is created per call, and a request carries
//! four bytes of reply path and no reference count (the caller keeps a
//! thread-local one to its mailbox while it waits). The mailbox parks its
//! caller at once (see [`crate::mailbox`]).
//! Registration and unregistration travel on the request channel under the
//! writer mutex, so the writer thread sees them in order with the requests.
//! A thread's registrations are undone when the thread exits.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::channel::Tx;
use crate::mailbox::{self, Mailbox};
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
struct Registration {
    writer: u64,
    client: u32,
    // Shared with the call that waits on it (same thread), so the wait
    // needs no second look-up in the registry.
    replies: Rc<Mailbox<Reply>>,
    gate: Weak<Mutex<Gate>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Runs when the caller thread exits, or when a registration with a
        // writer that is gone is pruned: never while this thread holds a
        // live writer's gate.
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
    // Most threads talk to one writer; its registration is kept first.
    static REGISTRY: RefCell<Vec<Registration>> = const { RefCell::new(Vec::new()) };
}

/// This thread's client id with `writer` and the mailbox its replies arrive
/// in, registering one (sent on `gate`'s channel) on the thread's first
/// call. `None` if the writer is closing. Call with the gate held.
pub(crate) fn client(writer: u64, gate_ref: &Arc<Mutex<Gate>>, gate: &mut Gate) -> Option<(u32, Rc<Mailbox<Reply>>)> {
    let known = REGISTRY.with(|registry| {
        let registry = registry.borrow();
        registry.first().filter(|r| r.writer == writer).map(|r| (r.client, Rc::clone(&r.replies)))
    });
    match known {
        Some(client) => Some(client),
        None => find_or_register(writer, gate_ref, gate),
    }
}

/// The slow half of [`client`]: another writer's registration is first,
/// or this thread has none yet.
#[cold]
fn find_or_register(writer: u64, gate_ref: &Arc<Mutex<Gate>>, gate: &mut Gate) -> Option<(u32, Rc<Mailbox<Reply>>)> {
    REGISTRY.with(|registry| {
        let mut registry = registry.borrow_mut();
        if let Some(i) = registry.iter().position(|r| r.writer == writer) {
            registry.swap(0, i);
            return Some((registry[0].client, Rc::clone(&registry[0].replies)));
        }
        // Registrations with writers that are gone hold only a closed
        // channel; their drops find no gate to lock.
        registry.retain(|r| r.gate.strong_count() > 0);
        let tx = gate.tx.as_ref()?;
        let client = gate.free.pop().unwrap_or_else(|| {
            gate.next_client += 1;
            gate.next_client - 1
        });
        let (reply_tx, replies) = mailbox::mailbox();
        tx.send(Message::Register { client, reply: reply_tx }).ok()?;
        let replies = Rc::new(replies);
        registry.push(Registration { writer, client, replies: Rc::clone(&replies), gate: Arc::downgrade(gate_ref) });
        let last = registry.len() - 1;
        registry.swap(0, last);
        Some((client, replies))
    })
}
