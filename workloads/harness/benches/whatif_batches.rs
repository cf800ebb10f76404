//! Virtual speedups of a batching writer held to real ones: the toy of
//! `tests/common/batch_writer.rs` (callers pipelining eight requests each,
//! a writer running exactly `k` per transaction, BEGIN, each statement and
//! the COMMIT busy-waits of known length), eight callers, batches of 1, 8
//! and 64. For the statement (once per request) and the COMMIT (once per
//! batch), the what-if run's predicted saving per request (its reach times
//! the real cut per request) is compared with the measured effect of
//! really shortening that busy-wait by 25 % and 50 % (the shortened toys
//! run beside the unchanged one, blocks alternated, paired by round). The
//! bar: within ±20 % of the real effect or ±0.2 µs per request.
//!
//! Run with `cargo bench -p hopscope-harness --bench whatif_batches`;
//! `WHATIF_BATCHES_ONLY=8-same-core` runs one batch size and layout.

#[path = "../tests/common/batch_writer.rs"]
mod batch_writer;

use batch_writer::{BatchWriter, Steps};
use hopscope_analyze::{causal, stats};
use hopscope_harness::whatif::{self, WhatIf};
use hopscope_harness::{BoxError, Harness, Lane, Placement, Plan, Role};
use hopscope_probe::clock;

/// Spin until `ns` have passed on hopscope's clock (the toy's steps).
fn busy(ns: u64) {
    let ticks = (ns as f64 / clock::clock().delta_as_nanos(0, 1 << 20) as f64 * f64::from(1u32 << 20)) as u64;
    let start = clock::now().0;
    while clock::now().0.wrapping_sub(start) < ticks {
        std::hint::spin_loop();
    }
}

const CALLERS: usize = 8;
const WINDOW: usize = 8;
const STEPS: Steps = Steps { build: 500, begin: 2_000, statement: 4_000, commit: 20_000 };

fn toy(role: Role, name: &str, batch: usize, steps: Steps) -> Lane {
    Lane::new(role, name, move |s| Ok::<_, BoxError>(BatchWriter::spawn(s, steps, batch, CALLERS, WINDOW)))
        .threads(&["writer"])
        .callers(CALLERS)
        .probed_only()
}

/// 1,024 requests a block: 128 per caller, whole windows, whole batches.
fn plan(samples: u32, placement: Placement) -> Plan {
    Plan {
        ops_per_block: 1_024,
        samples,
        passes: 1,
        warmup_blocks: 3,
        placement,
        hops: batch_writer::hops(),
        ops_per_caller: None,
        ..Plan::careful()
    }
}

/// Which step a change cuts, and by what share.
const CHANGES: [(&str, f64); 4] = [
    ("executing→executed", 25.0),
    ("executing→executed", 50.0),
    ("commit→committed", 25.0),
    ("commit→committed", 50.0),
];

/// The toy's steps with `slice` cut by `pct` percent.
fn cut(slice: &str, pct: f64) -> Steps {
    let keep = |ns: u64| (ns as f64 * (1.0 - pct / 100.0)).round() as u64;
    match slice {
        "executing→executed" => Steps { statement: keep(STEPS.statement), ..STEPS },
        _ => Steps { commit: keep(STEPS.commit), ..STEPS },
    }
}

/// The real cut per request, ns: a statement's once each, a COMMIT's once
/// per batch of `batch`.
fn real_cut(slice: &str, pct: f64, batch: usize) -> f64 {
    match slice {
        "executing→executed" => STEPS.statement as f64 * pct / 100.0,
        _ => STEPS.commit as f64 * pct / 100.0 / batch as f64,
    }
}

/// Each change's real saving per request, ns, paired by round against the
/// unchanged toy, with its 95 % CI.
fn real(batch: usize, placement: Placement, dir: &std::path::Path) -> Vec<(f64, (f64, f64))> {
    let mut harness = Harness::new("whatif-batches")
        .plan(plan(200, placement))
        .out(&dir.join(format!("real-{batch}-{placement}")))
        .quiet()
        .progress(false)
        .lane(toy(Role::Subject, "toy", batch, STEPS));
    for (i, (slice, pct)) in CHANGES.iter().enumerate() {
        harness = harness.lane(toy(Role::Peer, &format!("change{i}"), batch, cut(slice, *pct)));
    }
    let d = harness.run().expect("run").decomposition.expect("decomposition");
    let blocks = |name: &str| {
        d.lanes[&format!("{name}-probed")]
            .blocks_us
            .iter()
            .map(|b| ((b.pass, b.sample), b.us_per_op))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let base = blocks("toy");
    (0..CHANGES.len())
        .map(|i| {
            let changed = blocks(&format!("change{i}"));
            let saved: Vec<f64> = base.iter().filter_map(|(k, b)| changed.get(k).map(|c| (b - c) * 1e3)).collect();
            let ci = stats::bootstrap_ci95(&saved, 2_000, i as u64, stats::median_of_unsorted);
            (stats::median_of_unsorted(&mut saved.clone()), ci)
        })
        .collect()
}

fn main() {
    let dir = std::env::temp_dir().join(format!("hopscope-whatif-batches-{}", std::process::id()));
    println!(
        "batching toy: {CALLERS} callers pipelining {WINDOW} each; build {:.1} µs, BEGIN {:.1} µs, statement {:.1} µs, \
         COMMIT {:.1} µs",
        STEPS.build as f64 / 1e3,
        STEPS.begin as f64 / 1e3,
        STEPS.statement as f64 / 1e3,
        STEPS.commit as f64 / 1e3
    );
    println!(
        "| batch | placement | slice | cut | real cut per request, ns | real saved, ns/request | predicted, ns/request \
         | off by | within the bar | taken off per request (what-if) |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---|---:|");
    let mut tally = Vec::new();
    for batch in [1usize, 8, 64] {
        for placement in [Placement::SameCore, Placement::DifferentCores] {
            if std::env::var("WHATIF_BATCHES_ONLY").is_ok_and(|only| only != format!("{batch}-{placement}")) {
                continue;
            }
            let real = real(batch, placement, &dir);
            let what_if = WhatIf {
                slices: vec!["executing→executed".into(), "commit→committed".into()],
                speedups_pct: vec![25.0, 50.0],
                slowdowns_pct: Vec::new(),
                rounds: 200,
                scale_rounds: false,
                ..WhatIf::careful()
            };
            let lane = toy(Role::Subject, "toy", batch, STEPS);
            let out = dir.join(format!("what-if-{batch}-{placement}"));
            let samples =
                whatif::run(&plan(40, placement), &lane, &what_if, &out, Default::default(), false).expect("what-if");
            let profile = causal::profile(&samples, 1).expect("profile");
            for ((slice, pct), (saved, ci)) in CHANGES.iter().zip(&real) {
                let s = profile.slices.iter().find(|s| s.name == *slice).expect("slice profiled");
                let p = s.points.iter().find(|p| p.change_pct == *pct).expect("point");
                // The virtual cut is a share of the slice's measured median,
                // the real one of its busy-wait: the prediction for the real
                // cut is the reach times it.
                let cut = real_cut(slice, *pct, batch);
                let predicted = p.reach * cut;
                let off = predicted - saved;
                let ok = off.abs() <= 200.0 || off.abs() <= 0.2 * saved.abs();
                tally.push(ok);
                println!(
                    "| {batch} | {placement} | `{slice}` | {pct:.0} % | {cut:.0} | {saved:+.0} (CI {:+.0}…{:+.0}) | \
                     {predicted:+.0} (reach {:.2}) | {off:+.0} | {} | {:.0} of {:.0} per pass |",
                    ci.0,
                    ci.1,
                    p.reach,
                    if ok { "yes" } else { "**no**" },
                    p.taken(),
                    p.change_ns
                );
            }
        }
    }
    let within = tally.iter().filter(|ok| **ok).count();
    println!("\n{within} of {} within the bar", tally.len());
    let _ = std::fs::remove_dir_all(&dir);
}
