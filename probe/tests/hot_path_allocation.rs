//! The hot path allocates nothing: a counting global allocator watches a
//! stretch of marks (stored and dropped) and must see zero allocations.
//!
//! This file is its own test binary, so the allocator sees only this test.

use hopscope_probe::{Hop, NoProbe, OpId, Probe, Recording, local};
use hopscope_testkit::{Counting, allocations};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn marking_allocates_nothing_whether_stored_or_dropped() {
    local::attach(1_000);
    // Warm the clock and the thread-local before counting.
    local::record(OpId(0), Hop::ENTER);
    let _ = local::drain_into(&mut Vec::with_capacity(1));
    local::attach(1_000);

    let before = allocations();
    for i in 0..5_000u64 {
        // 1000 stored, 4000 dropped (buffer full), through both entry points.
        Recording.mark(OpId(i), Hop::SENT);
        NoProbe.mark(OpId(i), Hop::SENT);
    }
    // Links of a shared interval to its members: 500 more, all dropped.
    for i in 0..500u64 {
        Recording.serves(OpId(1 << 50), OpId(i));
        NoProbe.serves(OpId(1 << 50), OpId(i));
    }
    let after = allocations();

    let drained = local::drain();
    assert_eq!(after - before, 0, "the hot path allocated");
    assert_eq!(drained.marks.len(), 1_000);
    assert_eq!(drained.dropped, 4_500);
}
