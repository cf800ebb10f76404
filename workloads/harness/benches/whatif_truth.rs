//! Virtual speedups held to real ones, through the harness as a user runs
//! them: a toy writer whose callers busy-wait a build (`enter→sent`) and
//! whose writer thread busy-waits a statement (`woke→executed`), under one
//! caller and under four. For each slice, the what-if run's predicted
//! saving (its reach times the real cut) is compared with the measured
//! effect of really shortening that busy-wait by 25 % and 50 % (the
//! shortened toys run beside the unchanged one, blocks alternated, paired
//! by round). The bar: within ±20 % of the real effect or ±0.2 µs per
//! operation. Toys lengthened by 25 % run beside them too: the real
//! lane's slope on the other side, to compare with the what-if run's own
//! real slowdown, and a tally says which misses the profile warned of.
//!
//! Run with `cargo bench -p hopscope-harness --bench whatif_truth`;
//! `WHATIF_TRUTH_ONLY=4-different-cores` runs one layout,
//! `WHATIF_TRUTH_REPLY=park` has the writer answer through a slot its
//! caller parks on at once instead of a channel (whose receivers spin and
//! yield first), and `WHATIF_TRUTH_COUNTERS=1` prints what each real toy's
//! callers and writer spent per operation: where a hand-off's cost moves
//! with the time between hand-offs, which a virtual speedup keeps as it
//! was.

use std::thread::JoinHandle;

use crossbeam_channel::{Sender, bounded, unbounded};
use hopscope_analyze::{CounterFigure, Decomposition, LaneResult, causal, stats};
use hopscope_harness::whatif::{self, WhatIf};
use hopscope_harness::{BoxError, HandIn, Harness, Lane, Ops, Placement, Plan, Role, Setup, ThreadInit, Workload};
use hopscope_probe::{Hop, OpId, ThreadRole, clock, hop};

fn busy(ns: f64) {
    let ticks = (ns / clock::clock().delta_as_nanos(0, 1 << 20) as f64 * f64::from(1u32 << 20)) as u64;
    let start = clock::now().0;
    while clock::now().0.wrapping_sub(start) < ticks {
        std::hint::spin_loop();
    }
}

/// A caller's reply slot that parks at once (a mutex and condvar, no spin
/// or yield before sleeping): `WHATIF_TRUTH_REPLY=park` replies through it
/// instead of a channel, a second real lane whose hand-offs cost
/// differently.
#[derive(Default)]
struct Slot {
    ready: std::sync::Mutex<bool>,
    wake: std::sync::Condvar,
}

impl Slot {
    fn post(&self) {
        *self.ready.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_one();
    }

    fn wait(&self) {
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
        while !*ready {
            ready = self.wake.wait(ready).unwrap_or_else(|e| e.into_inner());
        }
        *ready = false;
    }
}

/// How the writer answers a caller.
enum Reply {
    Channel(Sender<()>),
    Parked(std::sync::Arc<Slot>),
}

impl Reply {
    fn send(&self) {
        match self {
            Reply::Channel(c) => {
                let _ = c.send(());
            }
            Reply::Parked(slot) => slot.post(),
        }
    }
}

enum Message {
    Op(OpId, Reply),
    HandIn(HandIn, Sender<()>),
}

/// The toy writer: callers build, then hand the statement to one writer
/// thread and wait for its reply.
struct Toy {
    build_ns: f64,
    parked: bool,
    requests: Option<Sender<Message>>,
    thread: Option<JoinHandle<()>>,
}

impl Toy {
    fn open(init: ThreadInit, build_ns: f64, statement_ns: f64, parked: bool) -> Toy {
        let (requests, inbox) = unbounded::<Message>();
        let thread = std::thread::spawn(move || {
            init.enter();
            for message in inbox {
                match message {
                    Message::Op(id, reply) => {
                        hop!(id, Hop::WOKE);
                        busy(statement_ns);
                        hop!(id, Hop::EXECUTED);
                        hop!(id, Hop::REPLIED);
                        reply.send();
                    }
                    Message::HandIn(hand_in, done) => {
                        hand_in.collect("writer");
                        let _ = done.send(());
                    }
                }
            }
        });
        Toy { build_ns, parked, requests: Some(requests), thread: Some(thread) }
    }
}

impl Workload for Toy {
    fn run(&self, _caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let requests = self.requests.as_ref().ok_or("stopped")?;
        let (reply, replies) = bounded(1);
        let slot = std::sync::Arc::new(Slot::default());
        let mut n = 0;
        for op in ops {
            let id = op.id();
            hop!(id, Hop::ENTER);
            busy(self.build_ns);
            hop!(id, Hop::SENT);
            if self.parked {
                requests.send(Message::Op(id, Reply::Parked(slot.clone())))?;
                slot.wait();
            } else {
                requests.send(Message::Op(id, Reply::Channel(reply.clone())))?;
                replies.recv()?;
            }
            hop!(id, Hop::RECEIVED);
            hop!(id, Hop::DONE);
            n += 1;
        }
        Ok(n)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        let (done, answered) = bounded(1);
        self.requests.as_ref().ok_or("stopped")?.send(Message::HandIn(hand_in.clone(), done))?;
        Ok(answered.recv()?)
    }
}

impl Drop for Toy {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn toy(role: Role, name: &str, callers: usize, build_ns: f64, statement_ns: f64) -> Lane {
    let parked = std::env::var("WHATIF_TRUTH_REPLY").is_ok_and(|r| r == "park");
    let open = move |s: &Setup| Ok::<_, BoxError>(Toy::open(s.thread_init(), build_ns, statement_ns, parked));
    Lane::new(role, name, open).threads(&["writer"]).callers(callers).probed_only()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One real change to the toy: the slice whose busy-wait changes and by
/// what share (negative: longer).
const CHANGES: [(&str, f64); 6] = [
    ("enter→sent", 25.0),
    ("enter→sent", 50.0),
    ("enter→sent", -25.0),
    ("woke→executed", 25.0),
    ("woke→executed", 50.0),
    ("woke→executed", -25.0),
];

/// The real saving of each changed toy, ns per operation, paired by round
/// against the unchanged one: `(slice, change %, saved, its 95 % CI)`.
/// The lengthened toys give the real lane's slope on the other side, to
/// tell a miss of the virtual rule from a lane that is not linear there.
fn real(
    callers: usize,
    placement: Placement,
    build: f64,
    statement: f64,
    dir: &std::path::Path,
) -> Vec<(&'static str, f64, f64, (f64, f64))> {
    let mut harness = Harness::new("whatif-truth")
        .plan(plan(300, placement, callers))
        .out(&dir.join(format!("real-{callers}-{placement}")))
        .quiet()
        .progress(false)
        .lane(toy(Role::Subject, "toy", callers, build, statement));
    for (i, (slice, change)) in CHANGES.iter().enumerate() {
        let keep = 1.0 - change / 100.0;
        let (b, s) = if *slice == "enter→sent" { (build * keep, statement) } else { (build, statement * keep) };
        harness = harness.lane(toy(Role::Peer, &format!("change{i}"), callers, b, s));
    }
    let d = harness.run().expect("run").decomposition.expect("decomposition");
    let blocks = |name: &str| {
        d.lanes[&format!("{name}-probed")]
            .blocks_us
            .iter()
            .map(|b| ((b.pass, b.sample), b.us_per_op))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    if counted() {
        cpu_per_op(&d, callers, build, statement);
    }
    let base = blocks("toy");
    CHANGES
        .iter()
        .enumerate()
        .map(|(i, (slice, change))| {
            let changed = blocks(&format!("change{i}"));
            let saved: Vec<f64> = base.iter().filter_map(|(k, b)| changed.get(k).map(|c| (b - c) * 1e3)).collect();
            let ci = stats::bootstrap_ci95(&saved, 2_000, i as u64, stats::median_of_unsorted);
            (*slice, *change, median(saved), ci)
        })
        .collect()
}

/// `WHATIF_TRUTH_COUNTERS=1`: the real toys count CPU time and context
/// switches per role, and each prints its own.
fn counted() -> bool {
    std::env::var_os("WHATIF_TRUTH_COUNTERS").is_some()
}

/// What each real toy's roles spent per operation: whether a hand-off's
/// cost moved with the statement or build (a cost a virtual speedup keeps
/// as it was).
fn cpu_per_op(d: &Decomposition, callers: usize, build: f64, statement: f64) {
    let role = |lane: &LaneResult, counter: &str, role: ThreadRole| match lane.counters.get(counter) {
        Some(CounterFigure::PerOp(roles)) => roles.role(&role).unwrap_or(f64::NAN),
        _ => f64::NAN,
    };
    std::iter::once(("toy".to_owned(), (build, statement)))
        .chain(CHANGES.iter().enumerate().map(|(i, (slice, change))| {
            let keep = 1.0 - change / 100.0;
            let sizes = if *slice == "enter→sent" { (build * keep, statement) } else { (build, statement * keep) };
            (format!("change{i}"), sizes)
        }))
        .for_each(|(name, (b, s))| {
            let Some(lane) = d.lanes.get(&format!("{name}-probed")) else { return };
            println!(
                "{callers} callers, build {:.2} µs, statement {:.1} µs: {:.2} µs/op; task clock per op: callers {:.2} µs, \
                 writer {:.2} µs; context switches per op: callers {:.2}, writer {:.2}",
                b / 1e3,
                s / 1e3,
                lane.us_per_op.as_ref().map_or(f64::NAN, |u| u.median),
                role(lane, "task_clock_per_op", ThreadRole::Caller) / 1e3,
                role(lane, "task_clock_per_op", ThreadRole::writer()) / 1e3,
                role(lane, "context_switches_per_op", ThreadRole::Caller),
                role(lane, "context_switches_per_op", ThreadRole::writer()),
            );
        });
}

/// Blocks of 100 operations per caller, the size a what-if run uses.
fn plan(samples: u32, placement: Placement, callers: usize) -> Plan {
    let ops_per_block = whatif::OPS_PER_CALLER * callers as u64;
    Plan { ops_per_block, samples, passes: 1, warmup_blocks: 3, placement, perf_counters: counted(), ..Plan::careful() }
}

fn main() {
    let dir = std::env::temp_dir().join(format!("hopscope-whatif-truth-{}", std::process::id()));
    // The writer sets the pace with four callers (12 µs statements against
    // 1 µs builds); with one, every slice is on the path.
    let (build, statement) = (1_000.0, 12_000.0);
    println!(
        "toy writer: build {:.1} µs on each caller, statement {:.1} µs on the writer",
        build / 1e3,
        statement / 1e3
    );
    println!(
        "| callers | placement | slice | cut | real saved, ns/op | predicted, ns/op | off by | within the bar | \
         real reach: cut · 25 % longer | what-if reach: virtual speedup · real 25 % slowdown | profile warned |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---|---|---|---|");
    let mut tally = Vec::new();
    // Same core (the harness's default): every thread shares one core, and
    // the lane is the sum of its slices whatever the callers. Unpinned
    // four callers run beside the writer, which sets the pace.
    for (callers, placement) in [
        (1, Placement::SameCore),
        (4, Placement::SameCore),
        (1, Placement::DifferentCores),
        (4, Placement::DifferentCores),
        (4, Placement::Unpinned),
    ] {
        // `WHATIF_TRUTH_ONLY=4-unpinned` runs one layout.
        if std::env::var("WHATIF_TRUTH_ONLY").is_ok_and(|only| only != format!("{callers}-{placement}")) {
            continue;
        }
        let real = real(callers, placement, build, statement, &dir);
        let lane = toy(Role::Subject, "toy", callers, build, statement);
        let what_if = WhatIf {
            slices: vec!["enter→sent".into(), "woke→executed".into()],
            speedups_pct: vec![25.0, 50.0],
            // The real slowdown beside them: the local slope the lane
            // really has, which the receipt holds the speedups to.
            slowdowns_pct: vec![25.0],
            rounds: 300,
            scale_rounds: false,
            ..WhatIf::careful()
        };
        let samples = whatif::run(
            &plan(60, placement, callers),
            &lane,
            &what_if,
            &dir.join(format!("what-if-{callers}-{placement}")),
            Default::default(),
            false,
        )
        .expect("what-if");
        let profile = causal::profile(&samples, 1).expect("profile");

        if let Ok(keep) = std::env::var("WHATIF_TRUTH_KEEP") {
            let path = format!("{keep}-{callers}-{placement}.json");
            std::fs::write(&path, serde_json::to_string(&samples).expect("json")).expect("write samples");
        }
        let reach_of = |slice: &str, change: f64| {
            let base = if slice == "enter→sent" { build } else { statement };
            real.iter()
                .find(|(s, c, ..)| *s == slice && *c == change)
                .map_or(f64::NAN, |(_, c, saved, _)| saved / (c / 100.0 * base))
        };
        for (slice, cut, real_saved, real_ci) in real.iter().filter(|(_, c, ..)| *c > 0.0) {
            let (slice, cut, real_saved) = (*slice, *cut, *real_saved);
            let s = profile.slices.iter().find(|s| s.name == slice).expect("slice profiled");
            let p = s.points.iter().find(|p| p.change_pct == cut).expect("point");
            // The virtual cut is a share of the slice's measured median; the
            // real one a share of its busy-wait: the prediction for the
            // real cut is the reach times it.
            let real_cut = cut / 100.0 * if slice == "enter→sent" { build } else { statement };
            let predicted = p.reach * real_cut;
            let off = predicted - real_saved;
            let ok = off.abs() <= 200.0 || off.abs() <= 0.2 * real_saved.abs();
            let slower = s.points.iter().find(|p| !p.virtual_speedup).map_or(f64::NAN, |p| p.reach);
            let real_faster = real_saved / real_cut;
            let real_slower = reach_of(slice, -25.0);
            // A miss the real effect's own CI cannot tell from the
            // prediction is the toy's noise, not the rule's.
            let in_ci = (real_ci.0..=real_ci.1).contains(&predicted);
            let warned = profile
                .warnings
                .iter()
                .map(hopscope_reports::receipt::causal::warning)
                .any(|w| w.contains(&format!("`{slice}`")));
            tally.push((ok, in_ci, warned));
            println!(
                "| {callers} | {placement} | `{slice}` | {cut:.0} % ({real_cut:.0} ns) | {real_saved:+.0} (CI {:+.0}…{:+.0}) | {predicted:+.0} (CI {:+.0}…{:+.0} at the virtual cut of {:.0} ns) | {off:+.0} | {} | {real_faster:.2} · {real_slower:.2} | {:.2} · {slower:.2} | {} |",
                real_ci.0,
                real_ci.1,
                p.saved_ns.ci95[0],
                p.saved_ns.ci95[1],
                p.change_ns,
                if ok { "yes" } else { "**no**" },
                p.reach,
                if warned { "yes" } else { "no" },
            );
        }
    }
    let within = tally.iter().filter(|(ok, ..)| *ok).count();
    let unexplained = tally.iter().filter(|(ok, in_ci, warned)| !ok && !in_ci && !warned).count();
    let warned = tally.iter().filter(|(ok, _, warned)| !ok && *warned).count();
    println!(
        "\n{within} of {} within the bar; of the misses, {warned} warned of by the profile and {unexplained} neither \
         warned of nor inside the real effect's CI",
        tally.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
