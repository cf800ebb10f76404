//! The `tracing` route to a mark, side by side: two bare marks (what one
//! span enter + exit stands for), a span enter + exit under a bare
//! `Registry` (what any layer pays first), through `HopLayer` under a
//! `Registry`, and through `tracing-chrome`'s layer.
//!
//! Run with `cargo bench -p hopscope-probe --features tracing --bench layer`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use hopscope_probe::{Hop, HopLayer, OpId, local};
use tracing_subscriber::layer::SubscriberExt;

/// Span enters per timed chunk: two marks each, so the buffer holds a chunk.
const CHUNK: u64 = 2_048;

fn timed(iters: u64, mut f: impl FnMut(u64)) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        let start = Instant::now();
        f(n);
        total += start.elapsed();
        let _ = local::drain_into(&mut Vec::new());
        left -= n;
    }
    total
}

/// Time one span's enter + exit under `subscriber`, as `name`.
fn span_under(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
) {
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("send", op = 7u64);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(iters, |n| {
                    for _ in 0..n {
                        let entered = span.enter();
                        black_box(&entered);
                    }
                })
            })
        });
    });
}

fn layers(c: &mut Criterion) {
    let mut group = c.benchmark_group("span_enter_exit");
    local::attach(2 * CHUNK as usize);
    group.bench_function("two_bare_marks", |b| {
        b.iter_custom(|iters| {
            timed(iters, |n| {
                for i in 0..n {
                    local::record(black_box(OpId(i)), Hop::BUILT);
                    local::record(black_box(OpId(i)), Hop::SENT);
                }
            })
        })
    });
    // The registry alone: what any layer pays before it runs.
    span_under(&mut group, "registry_only", tracing_subscriber::registry());
    let hop_layer = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT));
    span_under(&mut group, "hop_layer", tracing_subscriber::registry().with(hop_layer));
    let path = std::env::temp_dir().join(format!("hopscope-bench-chrome-{}.json", std::process::id()));
    let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new().file(&path).build();
    span_under(&mut group, "tracing_chrome", tracing_subscriber::registry().with(chrome));
    drop(guard);
    let _ = std::fs::remove_file(path);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = layers
}
criterion_main!(benches);
