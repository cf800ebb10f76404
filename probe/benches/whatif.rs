//! Virtual speedups against real ones, on a toy writer whose slices are
//! busy-waits of known length (a caller's build, `enter→sent`, and the
//! writer's statement, `woke→executed`): the predicted effect of speeding
//! a slice up by a share of its work, against the measured effect of
//! really shortening its busy-wait by as much, blocks interleaved; the
//! prediction against a 0 % speedup (the experiment's own bookkeeping on
//! both sides), the real effect against the unchanged toy.
//!
//! Run with `cargo bench -p hopscope-probe --features what-if --bench whatif`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

use hopscope_probe::whatif::{Speedup, start, stop};
use hopscope_probe::{Hop, OpId, clock, local};

fn ns_per_tick() -> f64 {
    clock::clock().delta_as_nanos(0, 1 << 20) as f64 / f64::from(1u32 << 20)
}

fn busy(ns: f64) {
    let ticks = (ns / ns_per_tick()) as u64;
    let start = clock::now().0;
    while clock::now().0.wrapping_sub(start) < ticks {
        std::hint::spin_loop();
    }
}

/// The toy writer's slices, ns: the caller's build (`enter→sent`) and the
/// writer's statement (`woke→executed`).
#[derive(Clone, Copy)]
struct Work {
    build: f64,
    statement: f64,
}

struct Toy {
    requests: Sender<(OpId, Sender<()>)>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Toy {
    fn spawn(statement_ns: std::sync::Arc<AtomicU64>) -> Toy {
        let (requests, inbox): (Sender<(OpId, Sender<()>)>, Receiver<_>) = channel();
        let writer = std::thread::spawn(move || {
            local::attach(1 << 16);
            for (op, reply) in inbox {
                local::record(op, Hop::WOKE);
                busy(statement_ns.load(Ordering::Relaxed) as f64);
                local::record(op, Hop::EXECUTED);
                local::record(op, Hop::REPLIED);
                let _ = reply.send(());
                let _ = local::drain();
            }
        });
        Toy { requests, writer: Some(writer) }
    }
}

impl Drop for Toy {
    fn drop(&mut self) {
        let (closed, _) = channel();
        self.requests = closed;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Edges of the toy: the request's and the reply's.
fn edges() -> Vec<(Hop, Hop)> {
    vec![(Hop::SENT, Hop::WOKE), (Hop::REPLIED, Hop::RECEIVED)]
}

/// ns per operation of `callers` callers each running `ops` operations
/// with `work`, less the delay `speedup` inserted (0 without one).
fn block(toy: &Toy, callers: usize, ops: u64, work: Work, statement: &AtomicU64, speedup: Option<&Speedup>) -> f64 {
    statement.store(work.statement as u64, Ordering::Relaxed);
    if let Some(s) = speedup {
        start(s).expect("start");
    }
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for c in 0..callers {
            let requests = toy.requests.clone();
            scope.spawn(move || {
                local::attach(1 << 16);
                for k in 0..ops {
                    let op = OpId(c as u64 * 1_000_000 + k);
                    local::record(op, Hop::ENTER);
                    busy(work.build);
                    local::record(op, Hop::SENT);
                    let (reply, answer) = channel();
                    requests.send((op, reply)).expect("send");
                    answer.recv().expect("reply");
                    local::record(op, Hop::RECEIVED);
                    local::record(op, Hop::DONE);
                }
                let _ = local::drain();
            });
        }
    });
    let wall = started.elapsed().as_nanos() as f64;
    let inserted = if speedup.is_some() { stop() as f64 * ns_per_tick() } else { 0.0 };
    (wall - inserted) / (callers as u64 * ops) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The effect on ns per operation of speeding the slice ending at `end` by
/// `share` of its work, predicted virtually and measured for real, blocks
/// interleaved: (predicted, real).
fn effect(callers: usize, work: Work, end: Hop, share: f64) -> (f64, f64) {
    let statement = std::sync::Arc::new(AtomicU64::new(0));
    let toy = Toy::spawn(statement.clone());
    let faster = match end {
        Hop::SENT => Work { build: work.build * (1.0 - share), ..work },
        _ => Work { statement: work.statement * (1.0 - share), ..work },
    };
    let cut = if end == Hop::SENT { work.build } else { work.statement } * share;
    let speedup = Speedup { end, delay_ns: cut, edges: edges() };
    // The predicted effect is against a speedup of 0 (coz's rule: the
    // experiment's own bookkeeping on both sides), the real one against
    // the unchanged code.
    let zero = Speedup { delay_ns: 0.0, ..speedup.clone() };
    let (mut base, mut base_virtual, mut virtual_, mut real) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let ops = 200 / callers as u64;
    block(&toy, callers, ops, work, &statement, None);
    for _ in 0..ROUNDS {
        base.push(block(&toy, callers, ops, work, &statement, None));
        base_virtual.push(block(&toy, callers, ops, work, &statement, Some(&zero)));
        virtual_.push(block(&toy, callers, ops, work, &statement, Some(&speedup)));
        real.push(block(&toy, callers, ops, faster, &statement, None));
    }
    (median(base_virtual) - median(virtual_), median(base) - median(real))
}

/// Interleaved rounds of the four blocks.
const ROUNDS: usize = 41;

fn main() {
    // With four callers on a two-core machine, 4 µs of building each is
    // enough to make the machine, not the writer, the bottleneck: a
    // caller's faster build then frees CPU for the writer. With 1 µs the
    // writer is the bottleneck, as the toy means it to be.
    for build in [1_000.0, 4_000.0] {
        let work = Work { build, statement: 12_000.0 };
        println!(
            "toy writer: build {:.1} µs on the caller, statement {:.1} µs on the writer",
            work.build / 1e3,
            work.statement / 1e3
        );
        for callers in [1, 4] {
            for (end, name) in [(Hop::SENT, "enter→sent (caller)"), (Hop::EXECUTED, "woke→executed (writer)")] {
                for share in [0.25, 0.5] {
                    let (predicted, real) = effect(callers, work, end, share);
                    println!(
                        "  {callers} caller(s), {name} {:>2.0}% faster: predicted {:+7.0} ns/op, real {:+7.0} ns/op, \
                         off by {:+6.0}",
                        share * 100.0,
                        predicted,
                        real,
                        predicted - real
                    );
                }
            }
        }
    }
}
