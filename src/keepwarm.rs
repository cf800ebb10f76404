//! `hopscope keep-warm`: the keep-warm and placement sweep. For each
//! placement, one process alternates the inline lane, a parking writer and
//! one writer per (mode, window) setting on sequential single inserts.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use hopscope_analyze::sweep::{self, BASELINE, INLINE};
use hopscope_probe::Trace;
use hopscope_workloads::knobs::{Placement, Wait};
use hopscope_workloads::{Knobs, LaneKind, LaneSpec, Plan, Shape, runner};

use crate::rundir;

/// Flags of `hopscope keep-warm`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Keep-warm windows, µs (0 is the same as parking).
    #[arg(long, value_delimiter = ',', default_value = "5,15,40,200")]
    windows: Vec<u64>,
    /// Modes: spin (writer spins), yield (writer yields), both (writer and
    /// caller spin); the parking baseline always runs.
    #[arg(long, value_delimiter = ',', default_value = "spin,yield,both")]
    modes: Vec<String>,
    /// Placements: unpinned, same-core, cross-core.
    #[arg(long, value_delimiter = ',', default_value = "unpinned,same-core,cross-core")]
    placement: Vec<String>,
    /// Also run every placement with the caller busy this many µs before
    /// each write (its own work): shows how much of the boundary is the
    /// caller's wake. 0: skip that shape.
    #[arg(long, default_value_t = 0)]
    gap_us: u64,
    /// Samples per pass.
    #[arg(long, default_value_t = 20)]
    samples: u32,
    /// Operations per block.
    #[arg(long, default_value_t = 100)]
    ops: u64,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let placements = args
        .placement
        .iter()
        .map(|p| {
            let parsed = match p.as_str() {
                "cross-core" => Ok(Placement::DifferentCores),
                other => other.parse::<Placement>(),
            };
            parsed.map(|placement| (p.clone(), placement)).map_err(|e| anyhow::anyhow!("--placement: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let settings = settings(args)?;
    let dir = rundir::create(args.out.as_deref(), "keep-warm")?;
    let mut runs: Vec<(String, Placement, u64)> = placements.iter().map(|(n, p)| (n.clone(), *p, 0)).collect();
    if args.gap_us > 0 {
        runs.extend(placements.iter().map(|(n, p)| (format!("{n}+gap{}us", args.gap_us), *p, args.gap_us * 1_000)));
    }
    let mut rows = Vec::new();
    for (name, placement, gap_ns) in &runs {
        let mut lanes = vec![
            LaneSpec::standard(INLINE, Knobs { placement: *placement, ..Knobs::default() })
                .map_err(anyhow::Error::msg)?,
            writer_lane(BASELINE, Wait::Park, Wait::Park, *placement),
        ];
        lanes.extend(settings.iter().map(|(label, writer, caller)| writer_lane(label, *writer, *caller, *placement)));
        let plan = Plan {
            ops_per_block: args.ops,
            samples: args.samples,
            passes: 2,
            warmup_blocks: 2,
            caller_gap_ns: *gap_ns,
            ..Plan::new(lanes, Shape::SingleInsert)
        };
        eprintln!("{name}: {} lanes", plan.lanes.len());
        let summary = runner::run(&plan, &dir.join(name), rundir::metadata(), rundir::show_progress())?;
        let trace = Trace::read(&summary.trace).with_context(|| format!("cannot read {}", summary.trace.display()))?;
        let d = hopscope_analyze::decompose(&trace)
            .with_context(|| format!("cannot analyze {}", summary.trace.display()))?;
        rows.extend(sweep::rows(name, &trace, &d));
    }
    let json = dir.join("keep-warm.json");
    std::fs::write(&json, serde_json::to_string_pretty(&rows)? + "\n")
        .with_context(|| format!("cannot write {}", json.display()))?;
    let markdown = sweep::markdown(&rows);
    let receipt = dir.join("receipt.md");
    std::fs::write(&receipt, &markdown).with_context(|| format!("cannot write {}", receipt.display()))?;
    let chart = dir.join("frontier.png");
    hopscope_reports::frontier_png(&rows, &chart)?;
    println!("{markdown}");
    println!("sweep:   {}", json.display());
    println!("receipt: {}", receipt.display());
    println!("chart:   {}", chart.display());
    Ok(ExitCode::SUCCESS)
}

/// (label, writer wait, caller wait) for every mode × window.
fn settings(args: &Args) -> anyhow::Result<Vec<(String, Wait, Wait)>> {
    let mut out = Vec::new();
    for mode in &args.modes {
        for &window in args.windows.iter().filter(|w| **w > 0) {
            let w = Duration::from_micros(window);
            let (writer, caller) = match mode.as_str() {
                "spin" => (Wait::Spin(w), Wait::Park),
                "yield" => (Wait::Yield(w), Wait::Park),
                "both" => (Wait::Spin(w), Wait::Spin(w)),
                "park" => continue,
                other => anyhow::bail!("--modes: unknown mode `{other}` (park, spin, yield, both)"),
            };
            out.push((format!("{mode}-{window}us"), writer, caller));
        }
    }
    Ok(out)
}

/// A probed writer lane: every setting pays the same probe cost, and its
/// marks say which CPU each hop ran on.
fn writer_lane(name: &str, writer_wait: Wait, caller_wait: Wait, placement: Placement) -> LaneSpec {
    LaneSpec::new(name, LaneKind::Writer(Knobs { writer_wait, caller_wait, placement, ..Knobs::default() }), true)
}
