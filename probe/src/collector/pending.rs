//! Links of left-out members held back until their interval is decided.
//!
//! Under sampling, a batch most often serves no sampled operation (at 1 in
//! 16, a batch of two or three holds one about one time in seven), and
//! such a batch is nothing the analysis can use: its own hops are left
//! out, and its links alone say nothing of it. Storing those links anyway
//! cost the drain a group to open, look up and forget per batch, most of
//! its work. So a thread holds an interval's left-out links here (a fixed
//! array of its own: nothing allocated on the mark path), and stores them
//! only when a sampled member links to the interval; when the interval's
//! own hop comes first (its links are all in: links precede hops, see
//! [`super::Sampling`]), they are let go.

use crate::hop::{Mark, OpId};

/// Left-out members held for one interval at most: a larger batch's are
/// stored as they come (correct, only dearer).
pub(super) const HELD_LINKS: usize = 64;

/// The left-out members linked to one undecided interval.
#[derive(Debug)]
pub(super) struct PendingLinks {
    /// The interval, when any link is held.
    shared: Option<u64>,
    members: [u64; HELD_LINKS],
    len: usize,
}

impl Default for PendingLinks {
    fn default() -> Self {
        PendingLinks { shared: None, members: [0; HELD_LINKS], len: 0 }
    }
}

impl PendingLinks {
    /// The interval whose links are held, if any are.
    #[inline]
    pub(super) fn interval(&self) -> Option<u64> {
        self.shared
    }

    /// Links held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether `member`'s link to `shared` can be held now: nothing is
    /// held, or `shared`'s links are and there is room.
    #[inline]
    pub(super) fn can_hold(&self, shared: u64) -> bool {
        self.shared.is_none_or(|s| s == shared) && self.len < HELD_LINKS
    }

    /// Hold `member`'s link to `shared` (after [`Self::can_hold`]).
    #[inline]
    pub(super) fn hold(&mut self, shared: u64, member: OpId) {
        if let Some(slot) = self.members.get_mut(self.len) {
            *slot = member.0;
            self.len += 1;
            self.shared = Some(shared);
        }
    }

    /// The `i`th link held.
    pub(super) fn link(&self, i: usize) -> Mark {
        Mark::serves_unsampled(OpId(self.shared.unwrap_or(0)), OpId(self.members[i]))
    }

    /// Let every held link go.
    #[inline]
    pub(super) fn clear(&mut self) {
        self.shared = None;
        self.len = 0;
    }

    /// A mark of `op` came: when it is the held interval's own hop, its
    /// links are all in and none was sampled; they are let go.
    #[inline]
    pub(super) fn hop_of(&mut self, op: OpId) {
        if self.shared == Some(op.0) {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_held_for_one_interval_up_to_the_room() {
        let mut pending = PendingLinks::default();
        assert!(pending.can_hold(7));
        pending.hold(7, OpId(1));
        pending.hold(7, OpId(2));
        assert!(!pending.can_hold(8), "another interval's link is not held beside them");
        assert_eq!(pending.link(1), Mark::serves_unsampled(OpId(7), OpId(2)));
        pending.hop_of(OpId(2));
        assert_eq!(pending.len(), 2, "a member's hop lets nothing go");
        pending.hop_of(OpId(7));
        assert_eq!((pending.len(), pending.interval()), (0, None), "the interval's own hop lets them go");
        for m in 0..HELD_LINKS as u64 {
            assert!(pending.can_hold(9));
            pending.hold(9, OpId(m));
        }
        assert!(!pending.can_hold(9), "full");
    }
}
