//! `hopscope resolve`: the instrument's resolution
//! ([`hopscope_workloads::experiments::resolve`]).

use std::path::PathBuf;
use std::process::ExitCode;

use hopscope_harness::rundir;
use hopscope_workloads::experiments::resolve::{self, Resolve};

/// Flags of `hopscope resolve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Slice to inject into, by its closing hop or as `from→to`
    /// (e.g. `built` or `locked→built`).
    #[arg(long, default_value = "built")]
    slice: String,
    /// Injected delays, ns per write.
    #[arg(long, value_delimiter = ',', default_value = "0,25,50,100")]
    deltas: Vec<u64>,
    /// A/B repeats per delay.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Samples per pass of each repeat (four passes: two orders, each
    /// instance carrying the delay in turn). Many short blocks pair tighter
    /// than a few long ones: a host-speed episode scales every slice of a
    /// block, and a 10-op block pair sits inside one episode far more often
    /// than a 100-op pair. On a 2-vCPU VM (40 repeats each), 1,000 took
    /// ~3.1 s per decision and found 50 ns at lane level in 90% of repeats,
    /// 1,500 in 85% (a 50 ns wait grows the lane by ~45 ns: the slices
    /// around it absorb some), 2,500 in 100% at ~7.8 s.
    #[arg(long, default_value_t = 2_500)]
    samples: u32,
    /// Operations per block.
    #[arg(long, default_value_t = 10)]
    ops: u64,
    /// Run directory (default: a new one under target/hopscope/).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let r = Resolve::new(&args.slice, args.deltas.clone(), args.repeats, args.samples, args.ops)?;
    let dir = rundir::create(args.out.as_deref(), "resolve", "latest-resolve")?;
    let result = resolve::run(&r, &dir, &rundir::metadata(), |row| {
        eprintln!(
            "{:>6} ns: lane detected {:>3.0}%, estimated {:>6.0} ns · slice detected {:>3.0}%, estimated {} ns, \
             other slices flagged {:.0}% · {:.1} s per decision",
            row.injected_ns,
            row.detection_rate * 100.0,
            row.estimated_ns,
            row.slice_detection_rate * 100.0,
            row.slice_estimated_ns.map_or("–".to_owned(), |e| format!("{e:.1}")),
            row.elsewhere_rate * 100.0,
            row.seconds / row.repeats.max(1) as f64
        );
    })?;
    let written = hopscope_reports::write_resolution(&dir, &result)?;
    println!("{}", hopscope_reports::receipt::resolution::markdown(&result));
    print!("{written}");
    Ok(ExitCode::SUCCESS)
}
