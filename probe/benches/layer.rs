//! The `tracing` route to a mark, side by side and interleaved: two bare
//! marks (what one span enter + exit stands for), a span enter + exit under
//! a bare `Registry` (what any layer pays first), under a layer that does
//! nothing (what stacking a layer costs), through `HopLayer` under a
//! `Registry`, and through `tracing-chrome`'s layer under a `Registry`.
//!
//! A criterion group times one function after another, so drift of the host
//! lands on whole rows: on this VM the Registry alone moved by ~10 ns between
//! runs, as much as the layer's own work. This bench instead runs the
//! variants in short alternating chunks, in an order rotated every round, and
//! reports per variant the median ns per enter + exit over rounds, and per
//! round the paired differences that isolate the layer's share:
//! `hop_layer − registry_only` (the layer with its two clock reads) and
//! `hop_layer − registry_only − two_bare_marks` (its bookkeeping alone).
//!
//! `hop_subscriber` is the profiling path: the same watch through
//! [`HopSubscriber`](hopscope_probe::HopSubscriber), no Registry.
//!
//! `tracing-chrome` is timed after the others, not among them: its writer
//! thread takes the other core while spans are recorded, and with it
//! interleaved the bare marks slowed by half in some stretches of a run.
//!
//! The host's noise comes in stretches of seconds in which everything runs
//! slower (on this VM the layer read 43 ns in quiet stretches and 72 ns in
//! noisy ones), so besides the whole run's medians the bench reports the
//! quietest tenth of the run, chosen by the reference variants alone (bare
//! marks + bare Registry), never by the layer's own figure.
//!
//! A second part times whole span lives (create, enter, exit, close: what
//! an operation's span costs, and what lies inside a slice between two
//! spans), interleaved the same way: a bare `Registry`, `HopLayer` (which
//! hands the span's two marks to its collector at close), `HopSubscriber`,
//! a subscriber that does nothing (what `tracing` itself costs a span's
//! life: the floor of any subscriber), and then `tracing-chrome` after
//! them.
//!
//! Run with `cargo bench -p hopscope-probe --features tracing --bench layer`
//! (`-- --quick` for a short run).

use std::hint::black_box;
use std::time::Instant;

use hopscope_probe::{Hop, HopLayer, OpId, local};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

/// Span enters per timed chunk: two marks each, so the buffer holds a chunk.
const CHUNK: u64 = 2_048;
const VARIANTS: [&str; 5] = ["two_bare_marks", "registry_only", "noop_layer", "hop_layer", "hop_subscriber"];

/// A layer that does nothing: what stacking any layer on the Registry costs
/// (`Layered`'s dispatch and its close bookkeeping), apart from the layer's
/// own work.
struct NoopLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NoopLayer {}

/// A subscriber that enables every span and does nothing with it: what
/// `tracing` itself costs a span's life (the macro, the dispatch, the
/// span handle), the floor under any subscriber.
struct NoopSubscriber;

impl tracing::Subscriber for NoopSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// ns per enter + exit of one chunk of `CHUNK` iterations of `f`.
fn chunk(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..CHUNK {
        f();
    }
    let ns = start.elapsed().as_nanos() as f64 / CHUNK as f64;
    let _ = local::drain_into(&mut Vec::new());
    ns
}

/// One chunk of a span's enter + exit under `dispatch`, which must also be
/// the thread's default: the Registry closes a span through the default.
fn span_chunk(dispatch: &Dispatch, span: &tracing::Span) -> f64 {
    tracing::dispatcher::with_default(dispatch, || {
        chunk(|| {
            let entered = span.enter();
            black_box(&entered);
        })
    })
}

/// The median and the quartiles of `values`.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 300 } else { 3_000 };
    local::attach(2 * CHUNK as usize);

    let registry = Dispatch::new(tracing_subscriber::registry());
    let noop = Dispatch::new(tracing_subscriber::registry().with(NoopLayer));
    let hop_layer = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT));
    let layered = Dispatch::new(tracing_subscriber::registry().with(hop_layer.clone()));
    let hop_subscriber = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT)).subscriber();
    let profiled = Dispatch::new(hop_subscriber.clone());
    // One span per subscriber, created under it and kept for the whole run,
    // as a long-lived span entered once per operation would be.
    let span_of = |d: &Dispatch| tracing::dispatcher::with_default(d, || tracing::info_span!("send", op = 7u64));
    let spans = [span_of(&registry), span_of(&noop), span_of(&layered), span_of(&profiled)];

    let warm_up = rounds / 10;
    let mut ns: [Vec<f64>; 5] = Default::default();
    for round in 0..warm_up + rounds {
        let mut this_round = [0.0; 5];
        for k in 0..VARIANTS.len() {
            let variant = (round + k) % VARIANTS.len();
            this_round[variant] = match variant {
                0 => chunk(|| {
                    local::record(black_box(OpId(7)), Hop::BUILT);
                    local::record(black_box(OpId(7)), Hop::SENT);
                }),
                1 => span_chunk(&registry, &spans[0]),
                2 => span_chunk(&noop, &spans[1]),
                3 => span_chunk(&layered, &spans[2]),
                _ => span_chunk(&profiled, &spans[3]),
            };
        }
        if round >= warm_up {
            for (series, value) in ns.iter_mut().zip(this_round) {
                series.push(value);
            }
        }
    }
    drop(spans);

    println!("span enter + exit, {rounds} rounds of {CHUNK} per variant, interleaved (ns: median, quartiles)");
    for (name, series) in VARIANTS.iter().zip(&ns) {
        print_row(name, series);
    }
    println!("per-round differences");
    let paired = |f: &dyn Fn(usize) -> f64| (0..rounds).map(f).collect::<Vec<_>>();
    print_row("hop_layer − registry_only", &paired(&|i| ns[3][i] - ns[1][i]));
    print_row("  − two_bare_marks (bookkeeping)", &paired(&|i| ns[3][i] - ns[1][i] - ns[0][i]));
    print_row("noop_layer − registry_only (Layered)", &paired(&|i| ns[2][i] - ns[1][i]));
    print_row("hop_layer − noop_layer (HopLayer's own)", &paired(&|i| ns[3][i] - ns[2][i]));
    print_row("hop_subscriber − two_bare_marks", &paired(&|i| ns[4][i] - ns[0][i]));
    print_row("hop_subscriber − hop_layer", &paired(&|i| ns[4][i] - ns[3][i]));
    let within = ns[3].iter().filter(|&&v| v <= 60.0).count() as f64 / rounds as f64;
    println!("rounds with hop_layer ≤ 60 ns: {:.0}%", within * 100.0);

    let tenth = rounds / 10;
    let reference = |t: usize| spread(&paired(&|i| ns[0][i] + ns[1][i])[t * tenth..(t + 1) * tenth]).0;
    let quiet = (0..10).min_by(|&a, &b| reference(a).total_cmp(&reference(b))).unwrap_or(0);
    println!(
        "quietest tenth of the run (rounds {}–{}, chosen by the reference variants)",
        quiet * tenth,
        (quiet + 1) * tenth
    );
    for (name, series) in VARIANTS.iter().zip(&ns) {
        print_row(name, &series[quiet * tenth..(quiet + 1) * tenth]);
    }

    // tracing-chrome on its own, after the interleaved part.
    let path = std::env::temp_dir().join(format!("hopscope-bench-chrome-{}.json", std::process::id()));
    let (chrome_layer, guard) = tracing_chrome::ChromeLayerBuilder::new().file(&path).build();
    let chrome = Dispatch::new(tracing_subscriber::registry().with(chrome_layer));
    let span = span_of(&chrome);
    let chrome_ns: Vec<f64> = (0..rounds / 3).map(|_| span_chunk(&chrome, &span)).collect();
    drop(span);
    drop(guard);
    let _ = std::fs::remove_file(path);
    println!("after the interleaved part");
    print_row("tracing_chrome", &chrome_ns);

    lives(rounds, &registry, (&layered, &hop_layer), (&profiled, hop_subscriber.layer()));
}

/// ns per span life (create + enter + exit + close) of one chunk under
/// `dispatch`; `collector` (the layer's) is drained after it, untimed.
fn life_chunk(dispatch: &Dispatch, collector: Option<&hopscope_probe::spans::Collector>) -> f64 {
    let ns = tracing::dispatcher::with_default(dispatch, || {
        chunk(|| {
            tracing::info_span!("send", op = 7u64).in_scope(|| black_box(()));
        })
    });
    if let Some(collector) = collector {
        black_box(collector.drain());
    }
    ns
}

/// The second part: whole span lives, a bare Registry, HopLayer under a
/// Registry and the profiling HopSubscriber interleaved in a rotating
/// order, then tracing-chrome.
fn lives(rounds: usize, registry: &Dispatch, layered: (&Dispatch, &HopLayer), profiled: (&Dispatch, &HopLayer)) {
    let rounds = rounds / 3;
    let noop = Dispatch::new(NoopSubscriber);
    let mut ns: [Vec<f64>; 4] = Default::default();
    for round in 0..rounds {
        for k in 0..4 {
            let variant = (round + k) % 4;
            let value = match variant {
                0 => life_chunk(registry, None),
                1 => life_chunk(layered.0, Some(layered.1.collector())),
                2 => life_chunk(profiled.0, Some(profiled.1.collector())),
                _ => life_chunk(&noop, None),
            };
            ns[variant].push(value);
        }
    }
    println!("span life (create + enter + exit + close), {rounds} rounds of {CHUNK} per variant, interleaved");
    print_row("registry_only", &ns[0]);
    print_row("hop_layer", &ns[1]);
    print_row("hop_subscriber", &ns[2]);
    print_row("noop_subscriber (tracing's own floor)", &ns[3]);
    let paired = |a: usize, b: usize| (0..rounds).map(|i| ns[a][i] - ns[b][i]).collect::<Vec<_>>();
    print_row("hop_layer − registry_only (paired)", &paired(1, 0));
    print_row("hop_subscriber − registry_only (paired)", &paired(2, 0));
    print_row("hop_subscriber − noop_subscriber (paired)", &paired(2, 3));
    let path = std::env::temp_dir().join(format!("hopscope-bench-chrome-life-{}.json", std::process::id()));
    let (chrome_layer, guard) = tracing_chrome::ChromeLayerBuilder::new().file(&path).build();
    let chrome = Dispatch::new(tracing_subscriber::registry().with(chrome_layer));
    let chrome_ns: Vec<f64> = (0..rounds).map(|_| life_chunk(&chrome, None)).collect();
    drop(guard);
    let _ = std::fs::remove_file(path);
    println!("after the interleaved part");
    print_row("tracing_chrome", &chrome_ns);
}

fn print_row(name: &str, values: &[f64]) {
    let (median, q1, q3) = spread(values);
    println!("  {name:<34} {median:>8.2}   {q1:.2} – {q3:.2}");
}
