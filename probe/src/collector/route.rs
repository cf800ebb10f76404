//! The process's live collector: where `hop!` marks go on a thread that
//! attached no buffer of its own while a live capture runs.
//!
//! One capture at a time owns it. A marking thread finds its writer by the
//! collector's id (one relaxed load, then its thread-local list); only its
//! first mark for a capture takes the lock here, to register its ring.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::{Collector, with_writer_of};
use crate::hop::{Hop, Mark, OpId};

/// The id of the installed collector, 0 when none is.
static LIVE_ID: AtomicU64 = AtomicU64::new(0);
static LIVE: Mutex<Option<Collector>> = Mutex::new(None);

/// Make `collector` the process's live collector; false when another one
/// is installed already.
pub(crate) fn install(collector: &Collector) -> bool {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    if live.is_some() {
        return false;
    }
    *live = Some(collector.clone());
    LIVE_ID.store(collector.inner.rings.id, Ordering::Release);
    true
}

/// Stop routing marks to `collector` (if it is the installed one): marks
/// made from now on find no live collector.
pub(crate) fn uninstall(collector: &Collector) {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    if live.as_ref().is_some_and(|l| l.same(collector)) {
        LIVE_ID.store(0, Ordering::Release);
        *live = None;
    }
}

/// Mark `op` at `hop` for the live collector, reading the clock only when
/// its sampling keeps `op`; false when no live collector is installed.
#[inline]
pub(crate) fn offer(op: OpId, hop: Hop) -> bool {
    let id = LIVE_ID.load(Ordering::Acquire);
    id != 0 && with_writer_of(id, installed(id), |writer| writer.offer(op, hop))
}

/// Hand an already made mark (a link) to the live collector; false when
/// none is installed.
#[inline]
pub(crate) fn push(mark: Mark) -> bool {
    let id = LIVE_ID.load(Ordering::Acquire);
    id != 0 && with_writer_of(id, installed(id), |writer| writer.push(&[mark]))
}

/// The installed collector, if it is still `id`.
fn installed(id: u64) -> impl FnOnce() -> Option<Collector> {
    move || {
        let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.as_ref().filter(|c| c.inner.rings.id == id).cloned()
    }
}
