//! `hopscope calibrate`: what the instrument costs on this host.

use std::process::ExitCode;

use hopscope_probe::calibrate::{CostPlan, Costs, measure_costs};
use hopscope_probe::counters::{self, CounterSupport};
use hopscope_probe::{ClockInfo, HostInfo, SliceKind, SpanMachinery};
use serde_json::json;

/// Target from the probe's contract: a mark may cost at most this many bare
/// clock reads.
const MAX_MARK_TO_CLOCK_RATIO: f64 = 1.5;

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
    let counters = counters::detect();
    if args.json {
        let mut out = as_json(&clock, &host, &costs, &counters);
        out["span_machinery"] = json!(spans);
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(&clock, &host, &costs, &counters);
        print_spans(&spans);
    }
    Ok(ExitCode::SUCCESS)
}

fn as_json(clock: &ClockInfo, host: &HostInfo, costs: &Costs, counters: &[CounterSupport]) -> serde_json::Value {
    let counters: serde_json::Map<String, serde_json::Value> =
        counters.iter().map(|c| (c.counter.name().to_owned(), json!(c.support.to_string()))).collect();
    json!({
        "schema": "hopscope.calibration/1",
        "clock_read_ns": costs.clock_read.median_ns,
        "mark_ns": costs.mark.median_ns,
        "mark_to_clock_ratio": costs.mark_to_clock_ratio,
        "mark_to_clock_target": MAX_MARK_TO_CLOCK_RATIO,
        "clock_source": clock.source.to_string(),
        "clock_grain_ns": clock.grain_ns(),
        "clock": clock,
        "spread": { "clock_read_mad_ns": costs.clock_read.mad_ns, "mark_mad_ns": costs.mark.mad_ns, "rounds": costs.mark.rounds },
        "counters": counters,
        "host": host,
    })
}

fn print_table(clock: &ClockInfo, host: &HostInfo, costs: &Costs, counters: &[CounterSupport]) {
    let ghz = 1.0 / clock.ns_per_tick;
    println!("host          {} · {} cores · kernel {}", host.cpu_model, host.cores, host.kernel);
    println!(
        "clock         {} · {:.6} ns/tick ({ghz:.3} GHz) · invariant TSC: {} · kernel clocksource: {}",
        clock.source,
        clock.ns_per_tick,
        if clock.invariant_tsc { "yes" } else { "no" },
        clock.kernel_clocksource
    );
    match clock.grain_ticks {
        Some(g) => println!(
            "clock grain   {:>6.2} ns  ({g} ticks: no two reads differ by less; a slice within two grains is not resolved)",
            clock.to_ns(g)
        ),
        None => println!("clock grain   not measured"),
    }
    let c = &costs.clock_read;
    let m = &costs.mark;
    println!("clock read    {:>6.2} ns  (median of {} rounds × 1000, MAD {:.2} ns)", c.median_ns, c.rounds, c.mad_ns);
    println!("probe mark    {:>6.2} ns  (median of {} rounds × 1000, MAD {:.2} ns)", m.median_ns, m.rounds, m.mad_ns);
    let verdict = if costs.mark_to_clock_ratio <= MAX_MARK_TO_CLOCK_RATIO { "within" } else { "ABOVE" };
    println!("mark / clock  {:>6.2}×     ({verdict} the {MAX_MARK_TO_CLOCK_RATIO}× target)", costs.mark_to_clock_ratio);
    println!("counters");
    for c in counters {
        println!("  {:<17} {}", c.counter.name(), c.support);
    }
}

/// The span machinery next to bare marks: what a `tracing` span costs whole,
/// and what it leaves inside each kind of slice.
fn print_spans(m: &SpanMachinery) {
    println!("tracing spans (Registry + HopLayer, medians of {} empty operations)", m.samples);
    println!(
        "  span life      {:>7.1} ns  create + enter + exit + close (bare Registry: {:.1} ns, HopLayer adds {:+.1} ns)",
        m.span_life_ns,
        m.registry_life_ns,
        m.span_life_ns - m.registry_life_ns
    );
    println!("  inside a slice (what a slice between two edges holds besides your code):");
    println!("    {:<36} {:>7.1} ns", "two probe marks (hop!)", m.bare_mark_ns);
    for kind in [SliceKind::Inside, SliceKind::Between, SliceKind::Into, SliceKind::OutOf] {
        let ns = m.share_ns(kind);
        println!("    {:<36} {:>7.1} ns  ({:.1}× a hop! slice)", kind.describe(), ns, ns / m.bare_mark_ns);
    }
}
