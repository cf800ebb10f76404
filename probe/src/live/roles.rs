//! The capture's thread roles: each thread that marks becomes one, named
//! after the thread.
//!
//! The header is written before any thread has marked, so it declares a
//! fixed number of roles under placeholder names; a role is taken by each
//! new marking thread in turn, and the header is rewritten in place with
//! the threads' names as they come (and cut to the roles taken at the end).
//! A trace cut short keeps the names written by then.

use std::thread::ThreadId;

/// Longest role name kept, bytes: the header's room is sized for it.
pub(super) const MAX_NAME_BYTES: usize = 64;

/// What a role not yet taken is called in the header.
pub(super) fn placeholder(index: usize) -> String {
    format!("slot-{}", index + 1)
}

/// The roles taken so far.
#[derive(Debug)]
pub(super) struct Roles {
    threads: Vec<ThreadId>,
    names: Vec<String>,
    max: usize,
    /// Roles whose names the header holds.
    named: usize,
}

impl Roles {
    /// Room for `max` roles.
    pub(super) fn new(max: usize) -> Roles {
        Roles { threads: Vec::new(), names: Vec::new(), max, named: 0 }
    }

    /// The role of `thread` (named `name`), taking a new one if it has
    /// none; `None` when every role is taken.
    pub(super) fn of(&mut self, thread: ThreadId, name: &str) -> Option<u16> {
        if let Some(at) = self.threads.iter().position(|t| *t == thread) {
            return u16::try_from(at).ok();
        }
        if self.threads.len() >= self.max {
            return None;
        }
        let name = unique(&self.names, short(name));
        self.threads.push(thread);
        self.names.push(name);
        u16::try_from(self.threads.len() - 1).ok()
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
        assert_eq!(roles.of(ids[0], "producer"), Some(0));
        assert_eq!(roles.of(ids[1], "producer"), Some(1));
        assert_eq!(roles.of(ids[0], "producer"), Some(0), "a thread keeps its role");
        assert_eq!(roles.of(ids[2], "late"), None, "every role taken");
        assert_eq!(roles.names(), ["producer", "producer#2"]);
        assert!(roles.take_new());
        assert!(!roles.take_new());
        assert_eq!(roles.header_threads(4), ["producer", "producer#2", "slot-3", "slot-4"]);
        assert_eq!(short(&"é".repeat(40)).len(), 64);
    }
}
