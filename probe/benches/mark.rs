//! What one mark costs next to the clocks it is built on and next to a
//! `tracing` span, side by side in one group:
//!
//! - `rdtsc`: the bare instruction (x86_64 only), the floor of any clock read;
//! - `quanta_raw`: the clock the probe reads;
//! - `std_instant_now`: the standard library's clock, for reference;
//! - `hopscope_mark`: [`hopscope_probe::local::record`], clock plus store;
//! - `tracing_span_enter_exit`: entering and leaving an existing span under a
//!   `Registry` with a layer that timestamps both events into a preallocated
//!   thread-local buffer (the cheapest honest tracing equivalent of two marks).
//!
//! Run with `cargo bench -p hopscope-probe` (or `just bench`).

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use hopscope_probe::{Hop, OpId, local};
use tracing::span;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

/// Marks per timed chunk: the buffer holds a whole chunk, so every timed
/// mark takes the store path, never the cheaper drop path.
const CHUNK_MARKS: u64 = 4_096;

fn clocks_and_marks(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock_vs_mark");
    #[cfg(target_arch = "x86_64")]
    group.bench_function("rdtsc", |b| b.iter(|| black_box(hopscope_probe::clock::read_tsc())));
    let clock = hopscope_probe::clock::clock();
    group.bench_function("quanta_raw", |b| b.iter(|| black_box(clock.raw())));
    group.bench_function("std_instant_now", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("hopscope_mark", |b| {
        local::attach(CHUNK_MARKS as usize);
        b.iter_custom(|iters| {
            in_chunks(
                iters,
                |n| {
                    for i in 0..n {
                        local::record(black_box(OpId(i)), black_box(Hop::SENT));
                    }
                },
                || {
                    // Drain outside the timed region, as the lanes do between blocks.
                    let dropped = local::drain_into(&mut Vec::new());
                    assert_eq!(dropped, 0, "benchmark chunk overflowed the buffer");
                },
            )
        });
    });
    group.bench_function("tracing_span_enter_exit", |b| {
        let subscriber = Registry::default().with(Timestamps);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("write");
            STAMPS.with(|s| s.borrow_mut().reserve(2 * CHUNK_MARKS as usize));
            b.iter_custom(|iters| {
                in_chunks(
                    iters,
                    |n| {
                        for _ in 0..n {
                            let entered = span.enter();
                            black_box(&entered);
                        }
                    },
                    || STAMPS.with(|s| s.borrow_mut().clear()),
                )
            });
        });
    });
    group.finish();
}

/// Time `iters` calls of `timed` in chunks the buffers can hold, running
/// `between` (untimed) after each chunk.
fn in_chunks(iters: u64, mut timed: impl FnMut(u64), mut between: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK_MARKS);
        let start = Instant::now();
        timed(n);
        total += start.elapsed();
        between();
        left -= n;
    }
    total
}

thread_local! {
    static STAMPS: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Records (span id, raw ticks) on enter and exit, nothing else.
struct Timestamps;

impl<S: tracing::Subscriber> Layer<S> for Timestamps {
    fn on_enter(&self, id: &span::Id, _ctx: Context<'_, S>) {
        let ticks = local::now().0;
        STAMPS.with(|s| s.borrow_mut().push((id.into_u64(), ticks)));
    }

    fn on_exit(&self, id: &span::Id, _ctx: Context<'_, S>) {
        let ticks = local::now().0;
        STAMPS.with(|s| s.borrow_mut().push((id.into_u64(), ticks)));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = clocks_and_marks
}
criterion_main!(benches);
