//! Threads off the harness's callers that mark for span lanes (a user's
//! writer thread, a runtime's workers), and the trace roles they get.
//!
//! The trace declares its thread roles before the first block, when no
//! such thread has marked yet; so it declares slots, `traced-1` …
//! `traced-N`, and a thread takes the next free one the first time its
//! marks are drained, whichever lane it marks for (the last slot is shared
//! when more threads mark than there are slots). At the end of the run each
//! slot that held one named thread is renamed after it (`kv-writer`), in
//! the trace's header, so timelines and tables show the program's own
//! thread names; a slot shared by several threads, or holding an unnamed
//! one, keeps its slot name.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use hopscope_probe::ThreadRole;

use crate::lane_names::{MAX_NAME_BYTES, check_name};

/// The thread roles of a span lane's marks made off the harness's callers,
/// when the lane declares no role of its own, as the trace first declares
/// them: `traced-1`, `traced-2`, ... (renamed after their threads at the
/// end of the run, when each held one named thread).
pub const TRACED_ROLE: &str = "traced";

/// Threads off the callers that get a `traced-N` role of their own.
pub const MAX_TRACED_THREADS: usize = 8;

/// The slots' role names: `traced-1`, `traced-2`, ...
pub(crate) const SLOT_PREFIX: &str = "traced-";

/// Header bytes a run with span lanes keeps free for renaming every slot
/// (a name of at most [`MAX_NAME_BYTES`], quoted).
pub(crate) const HEADER_ROOM: usize = MAX_TRACED_THREADS * (MAX_NAME_BYTES + 4);

/// The run's slots and which thread holds each.
#[derive(Debug, Default)]
pub(crate) struct TracedThreads {
    /// Trace thread indices of the slots, in order.
    slots: Vec<u16>,
    /// Which slot each thread got.
    assigned: HashMap<ThreadId, u16>,
    /// Per slot, the one thread name it holds; `None` once two differently
    /// named threads share it.
    names: BTreeMap<u16, Option<String>>,
}

/// [`TracedThreads`] as the run's span lanes share it.
pub(crate) type SharedThreads = Arc<Mutex<TracedThreads>>;

impl TracedThreads {
    /// The slots among the run's thread roles `threads`.
    pub(crate) fn shared(threads: &[String]) -> SharedThreads {
        let slots = threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.strip_prefix(SLOT_PREFIX).is_some_and(|n| n.parse::<u32>().is_ok()))
            .filter_map(|(i, _)| u16::try_from(i).ok())
            .collect();
        Arc::new(Mutex::new(TracedThreads { slots, ..TracedThreads::default() }))
    }

    /// The slot of `thread`, called `name`: the one it got, or the next.
    pub(crate) fn slot_of(&mut self, thread: ThreadId, name: &str) -> u16 {
        if let Some(slot) = self.assigned.get(&thread) {
            return *slot;
        }
        let next = self.assigned.len().min(self.slots.len().saturating_sub(1));
        let slot = self.slots.get(next).copied().unwrap_or(0);
        self.assigned.insert(thread, slot);
        let held = self.names.entry(slot).or_insert_with(|| Some(name.to_owned()));
        if held.as_deref() != Some(name) {
            *held = None;
        }
        slot
    }

    /// The first slot (where marks of no known thread are counted).
    pub(crate) fn first(&self) -> u16 {
        self.slots.first().copied().unwrap_or(0)
    }

    /// `(slot, name)` for every slot to rename: one named thread in it, a
    /// name that is a valid role and no other role's (`threads`: the run's
    /// roles as declared).
    pub(crate) fn renames(&self, threads: &[String]) -> Vec<(u16, String)> {
        let mut taken: Vec<String> = threads.to_vec();
        let mut out = Vec::new();
        for (slot, name) in &self.names {
            let Some(name) = name.as_deref().and_then(role_name) else { continue };
            let candidates = std::iter::once(name.clone()).chain((2..10).map(|n| format!("{name}-{n}")));
            let Some(free) = candidates.filter(|c| check_name(c).is_ok()).find(|c| !taken.contains(c)) else {
                continue;
            };
            taken.push(free.clone());
            out.push((*slot, free));
        }
        out
    }
}

/// `name` as a thread role: letters, digits, `-` and `_` (anything else a
/// `-`), at most [`MAX_NAME_BYTES`]; `None` for an unnamed thread (the
/// collector calls those `thread-N`) or a name reserved for the harness.
fn role_name(name: &str) -> Option<String> {
    let unnamed = hopscope_probe::collector::is_unnamed(name);
    let role: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
        .take(MAX_NAME_BYTES)
        .collect();
    let role = role.trim_matches('-').to_owned();
    let slot = role.strip_prefix(SLOT_PREFIX).is_some_and(|n| n.parse::<u32>().is_ok());
    let reserved = !ThreadRole::is_lane_role(&role) || slot;
    (!unnamed && !reserved && !role.is_empty()).then_some(role)
}

/// Lock `threads`, a poisoned lock taken as it is (a panicking lane is
/// reported where it panicked).
pub(crate) fn lock(threads: &SharedThreads) -> std::sync::MutexGuard<'_, TracedThreads> {
    threads.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles() -> Vec<String> {
        ["caller", "writer", "traced-1", "traced-2", "traced-3"].map(str::to_owned).to_vec()
    }

    /// A distinct thread id per call: ids of threads that ran.
    fn thread_id() -> ThreadId {
        std::thread::spawn(|| std::thread::current().id()).join().expect("thread")
    }

    #[test]
    fn named_threads_give_their_slots_their_names_and_shared_or_unnamed_ones_do_not() {
        let shared = TracedThreads::shared(&roles());
        let mut t = lock(&shared);
        let (a, b, c, d, e) = (thread_id(), thread_id(), thread_id(), thread_id(), thread_id());
        assert_eq!(t.slot_of(a, "kv-writer"), 2);
        assert_eq!(t.slot_of(a, "kv-writer"), 2, "a thread keeps its slot");
        assert_eq!(t.slot_of(b, "thread-7"), 3, "unnamed");
        assert_eq!(t.slot_of(c, "tokio-runtime-worker"), 4);
        assert_eq!(t.slot_of(d, "other"), 4, "the last slot is shared");
        assert_eq!(t.slot_of(e, "writer"), 4);
        assert_eq!(t.renames(&roles()), [(2, "kv-writer".to_owned())]);
        // A name another role has takes a suffix; odd characters become `-`.
        let shared = TracedThreads::shared(&roles());
        let mut t = lock(&shared);
        t.slot_of(a, "writer");
        t.slot_of(b, "pool #1 (io)");
        assert_eq!(t.renames(&roles()), [(2, "writer-2".to_owned()), (3, "pool--1--io".to_owned())]);
        assert_eq!(t.first(), 2);
        assert_eq!(role_name("caller"), None, "reserved");
        assert_eq!(role_name("traced-4"), None, "a slot's own name");
        assert_eq!(role_name("traced-writer").as_deref(), Some("traced-writer"));
    }
}
