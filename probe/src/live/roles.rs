//! The capture's thread roles: each thread that marks becomes one, named
//! after the thread.
//!
//! The header is written before any thread has marked, so it declares a
//! fixed number of roles under placeholder names; a role is taken by each
//! new marking thread in turn, and the header is rewritten in place with
//! the threads' names as they come (and cut to the roles taken at the end).
//! A trace cut short keeps the names written by then.
//!
//! A program that spawns a thread per task would use up any number of
//! roles, so a thread that exited frees its role for a later thread of
//! the same name (or a later unnamed one) that began marking after it
//! ended: a role is one thread at a time, under one name.

use std::thread::ThreadId;

use crate::collector::is_unnamed;

/// Longest role name kept, bytes: the header's room is sized for it.
pub(super) const MAX_NAME_BYTES: usize = 64;

/// What a role not yet taken is called in the header.
pub(super) fn placeholder(index: usize) -> String {
    format!("slot-{}", index + 1)
}

/// The roles taken so far.
#[derive(Debug)]
pub(super) struct Roles {
    /// The thread holding each role now (or last, for a free one).
    threads: Vec<ThreadId>,
    /// Each role's name in the header (unique).
    names: Vec<String>,
    /// The thread name each role was taken under.
    taken_as: Vec<String>,
    /// Roles whose thread exited, with the collector's registrations by
    /// then: a thread registered later may take one.
    free: Vec<(usize, u64)>,
    max: usize,
    /// Roles whose names the header holds.
    named: usize,
}

impl Roles {
    /// Room for `max` roles.
    pub(super) fn new(max: usize) -> Roles {
        Roles { threads: Vec::new(), names: Vec::new(), taken_as: Vec::new(), free: Vec::new(), max, named: 0 }
    }

    /// The role of `thread` (named `name`, registered `order`-th): its
    /// own, a free one of its name, or a new one; `None` when every role
    /// is taken.
    pub(super) fn of(&mut self, thread: ThreadId, name: &str, order: u64) -> Option<u16> {
        if let Some(at) = self.threads.iter().position(|t| *t == thread) {
            return u16::try_from(at).ok();
        }
        let name = short(name);
        let same = |taken: &str| taken == name || (is_unnamed(taken) && is_unnamed(name));
        let reuse = self.free.iter().position(|&(at, by)| order > by && same(&self.taken_as[at]));
        if let Some(free) = reuse {
            let (at, _) = self.free.swap_remove(free);
            self.threads[at] = thread;
            return u16::try_from(at).ok();
        }
        if self.threads.len() >= self.max {
            return None;
        }
        self.names.push(unique(&self.names, name));
        self.taken_as.push(name.to_owned());
        self.threads.push(thread);
        u16::try_from(self.threads.len() - 1).ok()
    }

    /// `thread` exited when the collector had registered `registered`
    /// threads: its role is free for a thread registered after.
    pub(super) fn exited(&mut self, thread: ThreadId, registered: u64) {
        if let Some(at) = self.threads.iter().position(|t| *t == thread)
            && !self.free.iter().any(|&(free, _)| free == at)
        {
            self.free.push((at, registered));
        }
    }

    /// Room for this many roles.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Roles taken so far.
    pub(super) fn len(&self) -> usize {
        self.threads.len()
    }

    /// The header's thread list: the names taken, then placeholders up to
    /// `declared` entries.
    pub(super) fn header_threads(&self, declared: usize) -> Vec<String> {
        let mut threads = self.names.clone();
        threads.extend((threads.len()..declared).map(placeholder));
        threads
    }

    /// The names taken, one per role.
    pub(super) fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether roles were taken since the header last named them; marks
    /// them named.
    pub(super) fn take_new(&mut self) -> bool {
        let new = self.named < self.names.len();
        self.named = self.names.len();
        new
    }
}

/// `name` cut to [`MAX_NAME_BYTES`] on a character boundary.
fn short(name: &str) -> &str {
    let mut end = name.len().min(MAX_NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// `name`, or `name#2`, `name#3`, ... whichever `taken` does not hold.
fn unique(taken: &[String], name: &str) -> String {
    let mut candidate = name.to_owned();
    let mut n = 1;
    while taken.contains(&candidate) {
        n += 1;
        candidate = format!("{name}#{n}");
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_roles_in_turn_under_unique_names() {
        let ids: Vec<ThreadId> =
            (0..3).map(|_| std::thread::spawn(|| std::thread::current().id()).join().expect("thread")).collect();
        let mut roles = Roles::new(2);
        assert_eq!(roles.of(ids[0], "producer", 1), Some(0));
        assert_eq!(roles.of(ids[1], "producer", 2), Some(1));
        assert_eq!(roles.of(ids[0], "producer", 1), Some(0), "a thread keeps its role");
        assert_eq!(roles.of(ids[2], "late", 3), None, "every role taken");
        assert_eq!(roles.names(), ["producer", "producer#2"]);
        assert!(roles.take_new());
        assert!(!roles.take_new());
        assert_eq!(roles.header_threads(4), ["producer", "producer#2", "slot-3", "slot-4"]);
        assert_eq!(short(&"é".repeat(40)).len(), 64);
    }

    #[test]
    fn a_thread_that_exited_frees_its_role_for_a_later_one_of_its_name() {
        let ids: Vec<ThreadId> =
            (0..5).map(|_| std::thread::spawn(|| std::thread::current().id()).join().expect("thread")).collect();
        let mut roles = Roles::new(2);
        assert_eq!(roles.of(ids[0], "task", 1), Some(0));
        assert_eq!(roles.of(ids[1], "thread-2", 2), Some(1));
        roles.exited(ids[0], 3);
        roles.exited(ids[0], 3);
        roles.exited(ids[1], 3);
        assert_eq!(roles.of(ids[2], "task", 3), None, "registered before the role was freed");
        assert_eq!(roles.of(ids[2], "other", 4), None, "a free role keeps its name");
        assert_eq!(roles.of(ids[3], "task", 5), Some(0));
        assert_eq!(roles.of(ids[4], "thread-9", 6), Some(1), "unnamed threads share unnamed roles");
        assert_eq!(roles.names(), ["task", "thread-2"]);
        assert_eq!(roles.len(), 2);
    }
}
