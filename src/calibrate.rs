//! `hopscope calibrate`: what the instrument costs on this host.

use std::process::ExitCode;

use hopscope_probe::calibrate::{CostPlan, HostCalibration, measure_costs};
use hopscope_probe::counters;
use hopscope_probe::{ClockInfo, HostInfo};

/// Flags of `hopscope calibrate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Timed rounds per instrument (each a batch of 1000 calls).
    #[arg(long, default_value_t = CostPlan::default().rounds, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    rounds: usize,
    /// Empty span operations the span machinery is measured over.
    #[arg(long, default_value_t = 20_000)]
    span_samples: usize,
}

/// Most empty span operations `--span-samples` may ask for (about 2 µs each).
const MAX_SPAN_SAMPLES: usize = 2_000_000;

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (100..=MAX_SPAN_SAMPLES).contains(&args.span_samples),
        "--span-samples must be 100 to {MAX_SPAN_SAMPLES}"
    );
    let clock = ClockInfo::measure();
    let host = HostInfo::detect();
    // The measurement runs on a fresh thread so its buffer is its own.
    let plan = CostPlan { rounds: args.rounds, ..CostPlan::default() };
    let costs = std::thread::spawn(move || measure_costs(plan))
        .join()
        .map_err(|_| anyhow::anyhow!("the calibration thread panicked"))?;
    let samples = args.span_samples;
    let spans = std::thread::spawn(move || hopscope_probe::spans::machinery::measure(samples))
        .join()
        .map_err(|_| anyhow::anyhow!("the span calibration thread panicked"))?;
    let calibration = HostCalibration { clock, host, costs, counters: counters::detect(), span_machinery: spans };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&calibration)?);
    } else {
        print!("{}", hopscope_reports::calibration::table(&calibration));
    }
    Ok(ExitCode::SUCCESS)
}
