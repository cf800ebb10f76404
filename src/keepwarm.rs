//! `hopscope keep-warm`: the keep-warm and placement sweep
//! ([`hopscope_workloads::experiments::keep_warm`]).

use std::path::PathBuf;
use std::process::ExitCode;

use hopscope_analyze::keep_warm::SweepResult;
use hopscope_harness::{Placement, rundir};
use hopscope_workloads::experiments::keep_warm::{self, KeepWarm, Mode};
use hopscope_workloads::knobs::CpuBudget;
use hopscope_workloads::wake;

/// Flags of `hopscope keep-warm`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Keep-warm windows, µs (0 is the same as parking).
    #[arg(long, value_delimiter = ',', default_value = "5,15,40,200")]
    windows: Vec<u64>,
    /// Modes: spin (writer spins), yield (writer yields), both (writer and
    /// caller spin), tick (both sleep in 5 µs timer ticks), adaptive (both
    /// spin only while recent spins mostly got their message within the
    /// window, never on a shared core), budget (adaptive, each thread's
    /// spin also capped by --cpu-budget); the parking baseline always runs.
    #[arg(long, value_delimiter = ',', default_value = "spin,yield,both,tick,adaptive,budget")]
    modes: Vec<Mode>,
    /// The budget mode's CPU budget: a waiting thread may spin this
    /// multiple of its own work between waits, less that work (1.5x: half
    /// as long as it worked; 1x: never).
    #[arg(long, default_value = "1.5x")]
    cpu_budget: CpuBudget,
    /// Placements: unpinned, same-core, different-cores.
    #[arg(long, value_delimiter = ',', default_value = "unpinned,same-core,different-cores")]
    placement: Vec<Placement>,
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
    let placements = args.placement.iter().map(|p| (p.name().to_owned(), *p)).collect();
    anyhow::ensure!(args.gap_us <= 1_000_000, "--gap-us: at most 1000000");
    let sweep = KeepWarm {
        windows: args.windows.clone(),
        modes: args.modes.clone(),
        placements,
        gap_us: args.gap_us,
        samples: args.samples,
        ops: args.ops,
        cpu_budget: args.cpu_budget,
    };
    sweep.validate()?;
    let dir = rundir::create(args.out.as_deref(), "keep-warm", "latest-keep-warm")?;
    let rows = keep_warm::run(&sweep, &dir, &rundir::metadata(), rundir::show_progress(), |line| eprintln!("{line}"))?;
    let result = SweepResult::new(rows, wake::floor(&args.placement));
    let written = hopscope_reports::write_sweep(&dir, &result)?;
    println!("{}", hopscope_reports::receipt::sweep::markdown(&result));
    print!("{written}");
    Ok(ExitCode::SUCCESS)
}
