//! The span layer allocates nothing per span: after a warm-up (the thread's
//! ring, the Registry's slab pages), whole span lives through `Registry` +
//! `HopLayer` allocate no more often than under a bare `Registry` (on this
//! host: never, against the Registry's one slab page), and through
//! `HopSubscriber` never at all, counted by a global
//! allocator on this thread.

#![cfg(feature = "tracing")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use hopscope_probe::HopLayer;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the
// thread-local counter is const-initialised, so counting never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

const LIVES: u64 = 10_000;

/// Allocations on this thread during `LIVES` span lives under `dispatch`,
/// after as many to warm up.
fn allocations(dispatch: &Dispatch) -> u64 {
    tracing::dispatcher::with_default(dispatch, || {
        let lives = |first: u64| {
            for op in first..first + LIVES {
                let _outer = tracing::info_span!("write", op).entered();
                tracing::info_span!("execute", op).in_scope(|| std::hint::black_box(op));
            }
        };
        lives(0);
        let before = ALLOCATIONS.with(Cell::get);
        lives(LIVES);
        ALLOCATIONS.with(Cell::get) - before
    })
}

#[test]
fn span_lives_through_the_layer_allocate_no_more_than_under_a_bare_registry() {
    // Rings big enough for both rounds: a drain would allocate the drained vector.
    let layer = HopLayer::new().caller("write").writer("execute").ring_marks(8 * LIVES as usize);
    let marked = Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    let bare = Dispatch::new(tracing_subscriber::registry());
    let (through_layer, registry) = (allocations(&marked), allocations(&bare));
    eprintln!(
        "{LIVES} operations of two spans: {through_layer} allocations through HopLayer, {registry} under a bare Registry"
    );
    assert!(
        through_layer <= registry,
        "{through_layer} allocations through HopLayer, {registry} under a bare Registry, for {LIVES} operations of two spans"
    );
    assert_eq!(layer.collector().drain().marks(), 4 * 2 * LIVES as usize, "and every mark was taken");
}

#[test]
fn span_lives_through_the_profiling_subscriber_allocate_nothing() {
    let subscriber = HopLayer::new().caller("write").writer("execute").ring_marks(8 * LIVES as usize).subscriber();
    let allocated = allocations(&Dispatch::new(subscriber.clone()));
    eprintln!("{LIVES} operations of two spans: {allocated} allocations through HopSubscriber");
    assert_eq!(allocated, 0, "{allocated} allocations through HopSubscriber for {LIVES} operations of two spans");
    assert_eq!(subscriber.layer().collector().drain().marks(), 4 * 2 * LIVES as usize, "and every mark was taken");
}
