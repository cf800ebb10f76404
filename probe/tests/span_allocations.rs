//! The span layer allocates nothing per span: after a warm-up (the thread's
//! ring, the Registry's slab pages), whole span lives through `Registry` +
//! `HopLayer` allocate no more often than under a bare `Registry` (on this
//! host: never, against the Registry's one slab page), and through
//! `HopSubscriber` never at all, counted by a global
//! allocator on this thread.

#![cfg(feature = "tracing")]

use hopscope_probe::HopLayer;
use hopscope_testkit::{Counting, thread_allocations};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
        let before = thread_allocations();
        lives(LIVES);
        thread_allocations() - before
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
