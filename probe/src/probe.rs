//! The `Probe` trait: one piece of code, built clean and probed, in one process.
//!
//! Measuring the observer effect means running the same lane with and without
//! marks, alternately, in the same process. Code that is generic over
//! [`Probe`] gets both from one source: [`Recording`] writes marks to the
//! thread-local buffer, [`NoProbe`] is zero-sized and its calls compile away.

use crate::hop::{Hop, OpId};
use crate::local;

/// Something that can mark a hop. Implementations are cheap to copy and
/// shared freely between the caller and writer threads.
pub trait Probe: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// Whether this probe records anything; lets generic code skip work that
    /// only serves the marks (e.g. carrying an op id it would not use).
    const RECORDS: bool;

    /// Mark that `op` passed `hop` now.
    fn mark(&self, op: OpId, hop: Hop);

    /// [`Probe::mark`], also sampling the CPU the thread runs on (dearer:
    /// use it for one mark per operation per thread).
    fn mark_on_cpu(&self, op: OpId, hop: Hop) {
        self.mark(op, hop);
    }

    /// Record that the shared interval `shared` (marked once, under an id
    /// of its own) serves the operation `member`; see [`local::serves`].
    fn serves(&self, shared: OpId, member: OpId);
}

/// Records every mark into the current thread's buffer (see [`crate::local`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recording;

impl Probe for Recording {
    const RECORDS: bool = true;

    #[inline(always)]
    fn mark(&self, op: OpId, hop: Hop) {
        local::record(op, hop);
    }

    #[inline(always)]
    fn mark_on_cpu(&self, op: OpId, hop: Hop) {
        local::record_on_cpu(op, hop);
    }

    #[inline(always)]
    fn serves(&self, shared: OpId, member: OpId) {
        local::serves(shared, member);
    }
}

/// Records nothing. Zero-sized; with inlining every call disappears, which
/// makes it the "clean" build of a lane.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoProbe;

impl Probe for NoProbe {
    const RECORDS: bool = false;

    #[inline(always)]
    fn mark(&self, _op: OpId, _hop: Hop) {}

    #[inline(always)]
    fn serves(&self, _shared: OpId, _member: OpId) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<P: Probe>(probe: P) -> local::Drained {
        std::thread::spawn(move || {
            local::attach(16);
            for i in 0..10 {
                probe.mark(OpId(i), Hop::ENTER);
                probe.mark(OpId(i), Hop::DONE);
            }
            local::drain()
        })
        .join()
        .expect("probe thread")
    }

    #[test]
    fn no_probe_is_zero_sized_and_records_nothing() {
        assert_eq!(std::mem::size_of::<NoProbe>(), 0);
        let drained = run(NoProbe);
        assert!(drained.marks.is_empty());
        assert_eq!(drained.dropped, 0);
    }

    #[test]
    fn recording_records_every_mark_in_order() {
        let drained = run(Recording);
        assert_eq!(drained.marks.len(), 16);
        assert_eq!(drained.dropped, 4);
        assert_eq!(drained.marks[0].hop, Hop::ENTER);
        assert_eq!(drained.marks[1].hop, Hop::DONE);
        assert_eq!(drained.marks[1].op, OpId(0));
    }
}
