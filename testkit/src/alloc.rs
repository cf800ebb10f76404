//! A counting global allocator: the instrument behind "the hot path
//! allocates nothing" and the per-input memory of the fuzz run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A global allocator that forwards every call to the system allocator and
/// counts: allocations (and reallocations) in the whole process and on the
/// calling thread, live heap bytes and their peak. Counting takes relaxed
/// atomics and a const-initialised thread-local, so it never allocates.
pub struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn counted(grown_by: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // A thread being torn down has no thread-local left: not counted there.
    let _ = THREAD_ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    let live = LIVE.fetch_add(grown_by, Ordering::Relaxed) + grown_by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every method forwards to the system allocator with the caller's
// arguments unchanged; the counting beside it touches only atomics and a
// const-initialised thread-local, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract; passed through.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            counted(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator (so from `System`) with
        // this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `realloc`'s contract; passed through.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            counted(new_size);
        }
        new
    }
}

/// Allocations and reallocations in the whole process so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Allocations and reallocations on the calling thread so far: immune to
/// what other threads (the test harness's own) allocate meanwhile.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.with(Cell::get)
}

/// Heap bytes live now.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Start a new peak at what is live now; returns it, the base that
/// [`peak_bytes`] is read against.
pub fn restart_peak() -> usize {
    let base = live_bytes();
    PEAK.store(base, Ordering::Relaxed);
    base
}

/// The most heap bytes live at once since [`restart_peak`] (or the start).
pub fn peak_bytes() -> usize {
    PEAK.load(Ordering::Relaxed)
}
