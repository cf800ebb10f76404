//! Hand-in: how a lane's own threads give their marks and CPU time to the
//! block that just ran.
//!
//! Mark buffers are thread-local and lock-free, so only the thread that
//! made the marks can drain them. Around each block the harness asks the
//! lane ([`crate::Workload::hand_in`]) to have each of its own threads call
//! [`HandIn::collect`] on itself; that drains the thread's marks into the
//! block and samples its CPU clock, context switches and counters.

use std::sync::{Arc, Mutex, PoisonError};

use hopscope_probe::Session;

use crate::cpu::ThreadSample;

/// A cloneable handle a lane sends to its own threads at a block boundary.
#[derive(Debug, Clone)]
pub struct HandIn {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    session: Session,
    /// Declared roles of the lane: (name, trace thread index, reading role index).
    roles: Vec<(String, u16, usize)>,
    collected: Mutex<Collected>,
}

#[derive(Debug, Default)]
struct Collected {
    samples: Vec<(usize, ThreadSample)>,
    seen: Vec<String>,
    undeclared: Vec<String>,
}

/// What the lane's threads handed in.
#[derive(Debug, Default)]
pub(crate) struct Handed {
    /// (reading role index, sample) per collect.
    pub(crate) samples: Vec<(usize, ThreadSample)>,
    /// Declared roles no thread collected.
    pub(crate) missing: Vec<String>,
    /// Roles collected that the lane did not declare.
    pub(crate) undeclared: Vec<String>,
}

impl HandIn {
    pub(crate) fn new(session: Session, roles: Vec<(String, u16, usize)>) -> HandIn {
        HandIn { inner: Arc::new(Inner { session, roles, collected: Mutex::new(Collected::default()) }) }
    }

    /// On one of the lane's own threads: hand in its marks as thread role
    /// `role` (one the lane declared with [`crate::Lane::threads`]) and
    /// sample its CPU time. Takes a lock: never call it inside a block.
    pub fn collect(&self, role: &str) {
        let Some((_, thread, reading)) = self.inner.roles.iter().find(|(name, _, _)| name == role) else {
            // Drain anyway, so the marks do not land in the next block.
            let _ = hopscope_probe::local::drain();
            let mut collected = self.inner.collected.lock().unwrap_or_else(PoisonError::into_inner);
            collected.undeclared.push(role.to_owned());
            return;
        };
        self.inner.session.collect(*thread);
        let sample = ThreadSample::here();
        let mut collected = self.inner.collected.lock().unwrap_or_else(PoisonError::into_inner);
        collected.samples.push((*reading, sample));
        collected.seen.push(role.to_owned());
    }

    /// Hand in, as thread role `role`, marks a lane drained from threads
    /// that run none of its code (a library's connection thread marked
    /// through SQLite's trace hook): the role counts as handed in. Unlike
    /// [`HandIn::collect`] it samples no thread's CPU time; a lane whose
    /// thread can run a closure at the boundary calls `collect` there too.
    pub fn give(&self, role: &str, marks: Vec<hopscope_probe::Mark>, dropped: u64) {
        let Some((_, thread, _)) = self.inner.roles.iter().find(|(name, _, _)| name == role) else {
            let mut collected = self.inner.collected.lock().unwrap_or_else(PoisonError::into_inner);
            collected.undeclared.push(role.to_owned());
            return;
        };
        self.inner.session.give(*thread, marks, dropped);
        let mut collected = self.inner.collected.lock().unwrap_or_else(PoisonError::into_inner);
        if !collected.seen.iter().any(|seen| seen == role) {
            collected.seen.push(role.to_owned());
        }
    }

    /// The thread roles this lane declared.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.inner.roles.iter().map(|(name, _, _)| name.as_str())
    }

    /// Everything handed in so far, and which declared roles are missing.
    pub(crate) fn take(&self) -> Handed {
        let mut collected = self.inner.collected.lock().unwrap_or_else(PoisonError::into_inner);
        let collected = std::mem::take(&mut *collected);
        let missing = self
            .inner
            .roles
            .iter()
            .filter(|(name, _, _)| !collected.seen.contains(name))
            .map(|(name, _, _)| name.clone())
            .collect();
        Handed { samples: collected.samples, missing, undeclared: collected.undeclared }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopscope_probe::{Hop, OpId, Probe, Recording};

    #[test]
    fn a_thread_hands_in_its_marks_under_its_role_and_missing_roles_are_named() {
        let session = Session::new();
        let hand_in = HandIn::new(session.clone(), vec![("writer".into(), 1, 1), ("flusher".into(), 2, 2)]);
        let remote = hand_in.clone();
        std::thread::spawn(move || {
            hopscope_probe::local::attach(8);
            Recording.mark(OpId(1), Hop::WOKE);
            remote.collect("writer");
            remote.collect("writr");
        })
        .join()
        .expect("thread");
        let handed = hand_in.take();
        assert_eq!(handed.samples.len(), 1);
        assert_eq!(handed.missing, ["flusher"]);
        assert_eq!(handed.undeclared, ["writr"]);
        let streams = session.take();
        assert_eq!((streams.len(), streams[0].thread, streams[0].marks.len()), (1, 1, 1));
    }
}
