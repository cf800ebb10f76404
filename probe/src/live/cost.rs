//! What a live capture's mark costs the thread that makes it, measured when
//! the capture starts: a kept operation's mark (a clock read and a ring
//! store) and a left-out one's (the sampling's decision alone). The
//! receipt prices each operation's marks with them.

use std::time::Instant;

use crate::collector::{Collector, Sampling};
use crate::hop::{Hop, OpId};

/// Marks per timed round.
const ROUND: u64 = 2_048;
/// Rounds timed; the median is kept.
const ROUNDS: usize = 9;

/// `(kept, left out)`: ns per mark of an operation the sampling keeps, and
/// of one it leaves out, on this thread.
pub(super) fn measure() -> (f64, f64) {
    let kept = per_mark(&Collector::growing(ROUND as usize, ROUND as usize, Sampling::ALL), OpId);
    let sparse = Sampling::one_in(crate::collector::MAX_SAMPLE_EVERY).unwrap_or(Sampling::ALL);
    // Ids the sparse sampling leaves out, found before timing.
    let left_out: Vec<OpId> = (1u64..).map(OpId).filter(|&op| !sparse.keeps(op)).take(ROUND as usize).collect();
    let skipped = per_mark(&Collector::growing(ROUND as usize, ROUND as usize, sparse), |i| {
        left_out.get(i as usize).copied().unwrap_or(OpId(0))
    });
    (kept, skipped)
}

/// The median over rounds of ns per [`Collector::offer`] of the ops `op`
/// gives, the collector drained between rounds (untimed).
fn per_mark(collector: &Collector, op: impl Fn(u64) -> OpId) -> f64 {
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let _ = collector.drain();
            let start = Instant::now();
            for i in 0..ROUND {
                collector.offer(std::hint::black_box(op(i)), Hop::ENTER);
            }
            start.elapsed().as_nanos() as f64 / ROUND as f64
        })
        .collect();
    crate::calibrate::median(&mut rounds)
}
