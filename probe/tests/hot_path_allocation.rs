//! The hot path allocates nothing: a counting global allocator watches a
//! stretch of marks (stored and dropped) and must see zero allocations.
//!
//! This file is its own test binary, so the allocator sees only this test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use hopscope_probe::{Hop, NoProbe, OpId, Probe, Recording, local};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to the system allocator unchanged; the
// counter is a relaxed atomic that does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn marking_allocates_nothing_whether_stored_or_dropped() {
    local::attach(1_000);
    // Warm the clock and the thread-local before counting.
    local::record(OpId(0), Hop::ENTER);
    let _ = local::drain_into(&mut Vec::with_capacity(1));
    local::attach(1_000);

    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for i in 0..5_000u64 {
        // 1000 stored, 4000 dropped (buffer full), through both entry points.
        Recording.mark(OpId(i), Hop::SENT);
        NoProbe.mark(OpId(i), Hop::SENT);
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);

    let drained = local::drain();
    assert_eq!(after - before, 0, "the hot path allocated");
    assert_eq!(drained.marks.len(), 1_000);
    assert_eq!(drained.dropped, 4_000);
}
