//! `hopscope resolve`: measure the instrument's own resolution by injecting
//! known delays into one slice and checking what the A/B machinery and the
//! decomposition make of them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use hopscope_analyze::resolution::{self, RESOLUTION_SCHEMA, Repeat, Resolution};
use hopscope_probe::{HopTable, HostInfo, Trace};
use hopscope_workloads::knobs::{InjectedDelay, Placement};
use hopscope_workloads::{Knobs, LaneKind, LaneSpec, Order, Plan, Shape, runner};

use crate::rundir;

/// Flags of `hopscope resolve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Slice to inject into, by its closing hop or as `from→to`
    /// (e.g. `built` or `locked→built`).
    #[arg(long, default_value = "built")]
    slice: String,
    /// Injected delays, ns per write.
    #[arg(long, value_delimiter = ',', default_value = "0,50,100,200,500,1000")]
    deltas: Vec<u64>,
    /// A/B repeats per delay.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Samples per pass of each repeat (200: about 35 s per size with 10
    /// repeats on a 2-vCPU VM; at 300, tighter CIs start to see the tens of
    /// ns by which two identical writer instances differ, and false
    /// positives at 0 ns rose to 30%).
    #[arg(long, default_value_t = 200)]
    samples: u32,
    /// Operations per block.
    #[arg(long, default_value_t = 100)]
    ops: u64,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.repeats > 0 && args.samples > 0 && args.ops > 0, "--repeats, --samples and --ops must be ≥ 1");
    let hop_name = args.slice.rsplit('→').next().unwrap_or(&args.slice);
    let table = HopTable::standard();
    let before = table
        .find(hop_name)
        .filter(|h| h.0 > 0)
        .with_context(|| format!("--slice: unknown hop `{hop_name}` (locked, built, sent, woke, executed, harvested, replied, received, done)"))?;
    let from = table.get(hopscope_probe::Hop(before.0 - 1)).map(|d| d.name.clone()).unwrap_or_default();
    let slice = format!("{from}→{hop_name}");

    let dir = rundir::create(args.out.as_deref(), "resolve")?;
    // Before any run pins this thread to one core.
    let host = HostInfo::detect();
    let mut rows = Vec::new();
    for &ns in &args.deltas {
        let started = Instant::now();
        let mut repeats: Vec<Repeat> = Vec::with_capacity(args.repeats);
        for k in 0..args.repeats {
            let run_dir = dir.join(format!("delta-{ns}ns")).join(format!("repeat-{k}"));
            let plan = plan(args, InjectedDelay { before, ns });
            let summary = runner::run(&plan, &run_dir, rundir::metadata(), false)?;
            let trace =
                Trace::read(&summary.trace).with_context(|| format!("cannot read {}", summary.trace.display()))?;
            repeats.push(resolution::judge_repeat(&trace));
            // Keep the first repeat of each size for inspection; the others'
            // traces would only fill the disk.
            if k > 0 {
                let _ = std::fs::remove_dir_all(&run_dir);
            }
        }
        let row = resolution::summarize(ns, &slice, &repeats, started.elapsed().as_secs_f64());
        eprintln!(
            "{ns:>6} ns: detected {:>3.0}% · estimated {:>7.0} ns · blamed {} ({:.0}%) · {:.1} s",
            row.detection_rate * 100.0,
            row.estimated_ns,
            row.attributed_slice.as_deref().unwrap_or("–"),
            row.attribution_rate * 100.0,
            row.seconds
        );
        rows.push(row);
    }
    let mut meta = rundir::metadata();
    meta.insert("ops_per_block".to_owned(), args.ops.to_string());
    meta.insert("samples".to_owned(), args.samples.to_string());
    let result = Resolution { schema: RESOLUTION_SCHEMA.to_owned(), slice, deltas: rows, host, meta };
    let json = dir.join("resolution.json");
    std::fs::write(&json, serde_json::to_string_pretty(&result)? + "\n")
        .with_context(|| format!("cannot write {}", json.display()))?;
    let receipt = dir.join("receipt.md");
    let markdown = resolution::markdown(&result);
    std::fs::write(&receipt, &markdown).with_context(|| format!("cannot write {}", receipt.display()))?;
    let chart = dir.join("resolution.png");
    hopscope_reports::resolution_png(&result, &chart)?;
    println!("{markdown}");
    println!("resolution: {}", json.display());
    println!("receipt:    {}", receipt.display());
    println!("chart:      {}", chart.display());
    Ok(ExitCode::SUCCESS)
}

/// One repeat: the reference writer probed, without (`a`) and with (`b`)
/// the delay, in flipped-order passes.
fn plan(args: &Args, delay: InjectedDelay) -> Plan {
    let base = Knobs { placement: Placement::SameCore, ..Knobs::default() };
    let lanes = vec![
        LaneSpec::new("a", LaneKind::Writer(base), true),
        LaneSpec::new("b", LaneKind::Writer(Knobs { delay: Some(delay), ..base }), true),
    ];
    Plan {
        ops_per_block: args.ops,
        samples: args.samples,
        passes: 2,
        warmup_blocks: 2,
        order: Order::FlipEachPass,
        ..Plan::new(lanes, Shape::SingleInsert)
    }
}
