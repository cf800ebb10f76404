//! Which operations a collector keeps: all of them, or one in N decided from
//! the operation id alone.
//!
//! The decision is a function of the id, so every thread that marks an
//! operation decides alike without talking to the others, and a sampled
//! operation keeps every one of its hops. A shared interval (a batch's
//! transaction, marked under an id of its own) is kept when a sampled
//! operation links to it ([`crate::Mark::serves`]) before its first hop on
//! that thread, and left out when only unsampled ones did; an interval
//! linked after its hops is decided by its own id.

use crate::hop::OpId;

/// Largest N of a one-in-N sampling.
pub const MAX_SAMPLE_EVERY: u32 = 1 << 20;

/// Keep all operations, or one in `every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    every: u32,
    /// An op is kept when its mixed id falls below this.
    threshold: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::ALL
    }
}

impl Sampling {
    /// Every operation kept.
    pub const ALL: Sampling = Sampling { every: 1, threshold: u64::MAX };

    /// One operation in `every` (1 keeps all); `None` outside
    /// 1 ..= [`MAX_SAMPLE_EVERY`].
    pub fn one_in(every: u32) -> Option<Sampling> {
        match every {
            1 => Some(Sampling::ALL),
            2..=MAX_SAMPLE_EVERY => Some(Sampling { every, threshold: u64::MAX / u64::from(every) }),
            _ => None,
        }
    }

    /// The N of one in N.
    pub fn every(self) -> u32 {
        self.every
    }

    /// Whether every operation is kept.
    #[inline]
    pub fn keeps_all(self) -> bool {
        self.every == 1
    }

    /// Whether operation `op` is one of those kept: a multiply-xorshift mix
    /// of the id (ids from [`crate::local::next_op`] differ in their low
    /// bits only) against a threshold, no division.
    #[inline]
    pub fn keeps(self, op: OpId) -> bool {
        self.keeps_all() || mix(op.0) < self.threshold
    }
}

/// SplitMix64's finalizer: every bit of the id moves every bit of the
/// result.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The last few shared intervals a thread's links decided, kept or left out.
#[derive(Debug, Default, Clone)]
pub(super) struct LinkedIntervals {
    kept: [u64; 4],
    left_out: [u64; 4],
    next_kept: usize,
    next_left_out: usize,
}

impl LinkedIntervals {
    /// A link from `member` to `shared`: the interval is kept for a
    /// sampled member, else noted as left out (unless a sampled member
    /// already kept it). Returns whether the link mark itself is kept.
    pub(super) fn link(&mut self, sampling: Sampling, shared: u64, member: OpId) -> bool {
        if sampling.keeps(member) {
            if !self.kept.contains(&shared) {
                self.kept[self.next_kept] = shared;
                self.next_kept = (self.next_kept + 1) % self.kept.len();
            }
            true
        } else {
            if !self.kept.contains(&shared) && !self.left_out.contains(&shared) {
                self.left_out[self.next_left_out] = shared;
                self.next_left_out = (self.next_left_out + 1) % self.left_out.len();
            }
            false
        }
    }

    /// Whether a sampled member has linked to `shared` (among the last few
    /// intervals kept).
    #[inline]
    pub(super) fn is_kept(&self, shared: u64) -> bool {
        shared != 0 && self.kept.contains(&shared)
    }

    /// Whether a mark of `op` is kept: an interval a sampled member linked
    /// to is, one only unsampled members linked to is not, any other op by
    /// its id. Id 0 never counts as linked (the arrays start zeroed).
    #[inline]
    pub(super) fn keeps(&self, sampling: Sampling, op: OpId) -> bool {
        if op.0 != 0 && self.kept.contains(&op.0) {
            return true;
        }
        if op.0 != 0 && self.left_out.contains(&op.0) {
            return false;
        }
        sampling.keeps(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_in_n_keeps_about_one_in_n_of_consecutive_ids() {
        for every in [2u32, 16, 64, 1000] {
            let sampling = Sampling::one_in(every).expect("in range");
            let base = 7u64 << 40;
            let n = 400_000u64;
            let kept = (0..n).filter(|i| sampling.keeps(OpId(base | i))).count() as f64;
            let expected = n as f64 / f64::from(every);
            assert!((kept - expected).abs() < 5.0 * expected.sqrt() + 2.0, "1 in {every}: {kept} kept of {n}");
        }
        assert!(Sampling::one_in(0).is_none());
        assert!(Sampling::one_in(MAX_SAMPLE_EVERY + 1).is_none());
        assert!((0..1000).all(|i| Sampling::ALL.keeps(OpId(i))));
    }

    #[test]
    fn an_interval_follows_its_sampled_members() {
        let sampling = Sampling::one_in(16).expect("in range");
        let sampled = (1..).map(OpId).find(|&op| sampling.keeps(op)).expect("some id sampled");
        let unsampled = (1..).map(OpId).find(|&op| !sampling.keeps(op)).expect("some id not");
        // Intervals whose own ids say the opposite of their members.
        let kept_id = (1_000..).find(|&id| !sampling.keeps(OpId(id))).expect("an unsampled id");
        let left_id = (1_000..).find(|&id| sampling.keeps(OpId(id))).expect("a sampled id");
        let mut links = LinkedIntervals::default();
        assert!(!links.link(sampling, kept_id, unsampled), "an unsampled member's link is left out");
        assert!(links.link(sampling, kept_id, sampled), "a sampled member's link is kept");
        assert!(links.keeps(sampling, OpId(kept_id)), "its interval is kept whatever its id");
        assert!(!links.link(sampling, left_id, unsampled));
        assert!(!links.keeps(sampling, OpId(left_id)), "an interval of unsampled members only is left out");
        assert!(links.keeps(sampling, sampled));
        assert!(!links.keeps(sampling, unsampled));
    }
}
