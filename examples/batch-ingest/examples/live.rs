//! The ingest service run live, its `hop!` marks captured as it serves:
//! eight producers insert events as fast as the writer batches them, for
//! as long as asked, with one call to start the capture.
//!
//! ```sh
//! cargo run --release -p batch-ingest --features hopscope --example live -- --seconds 60 --sample-every 16
//! cargo run --release -- analyze target/batch-ingest-live.hop
//! ```
//!
//! `--max-batch 1` runs the writer before group commit (one COMMIT per
//! event), for a before/after of two captures (`hopscope compare`).
//!
//! `--pairs N --phase S` measures what the capture costs the service
//! instead: N pairs of S-second phases, capture on and off in turn (ABBA
//! order, so a drift cancels), and the throughput ratio with its 95 %
//! confidence interval.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use batch_ingest::{Ingest, Road};
use hopscope_probe::Capture;

/// What the command line asked for.
struct Asked {
    seconds: f64,
    sample_every: u32,
    producers: u64,
    window: f64,
    trace: PathBuf,
    pairs: usize,
    phase: f64,
    /// Whether to capture at all (`--capture off`: the marks-off run).
    capture: bool,
    /// Events a transaction takes at most (`--max-batch 1`: one COMMIT per
    /// event, the writer before group commit).
    max_batch: usize,
}

fn asked() -> Result<Asked, String> {
    let mut asked = Asked {
        seconds: 10.0,
        sample_every: 1,
        producers: 8,
        window: 10.0,
        trace: PathBuf::from("target/batch-ingest-live.hop"),
        pairs: 0,
        phase: 2.0,
        capture: true,
        max_batch: 64,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--seconds" => asked.seconds = value.parse().map_err(|e| bad(&e))?,
            "--sample-every" => asked.sample_every = value.parse().map_err(|e| bad(&e))?,
            "--producers" => asked.producers = value.parse().map_err(|e| bad(&e))?,
            "--window" => asked.window = value.parse().map_err(|e| bad(&e))?,
            "--trace" => asked.trace = PathBuf::from(value),
            "--pairs" => asked.pairs = value.parse().map_err(|e| bad(&e))?,
            "--phase" => asked.phase = value.parse().map_err(|e| bad(&e))?,
            "--max-batch" => asked.max_batch = value.parse().map_err(|e| bad(&e))?,
            "--capture" => {
                asked.capture = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(bad(&"on or off")),
                }
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let seconds_ok = |s: f64| s.is_finite() && (0.01..=86_400.0).contains(&s);
    if !seconds_ok(asked.seconds) || !seconds_ok(asked.phase) || !seconds_ok(asked.window) {
        return Err("--seconds, --phase and --window: 0.01 to 86,400".to_owned());
    }
    if !(1..=256).contains(&asked.producers) || asked.pairs > 1_000 || !(1..=4_096).contains(&asked.max_batch) {
        return Err("--producers 1 to 256, --pairs at most 1,000, --max-batch 1 to 4,096".to_owned());
    }
    Ok(asked)
}

/// The service: `producers` threads inserting until `stop`, each insert
/// counted in `done`.
fn serve(ingest: &Ingest, producers: u64, stop: &AtomicBool, done: &AtomicU64) {
    std::thread::scope(|s| {
        for producer in 0..producers {
            std::thread::Builder::new()
                .name(format!("producer-{producer}"))
                .spawn_scoped(s, move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        ingest.insert(producer << 32 | i, "an event").expect("the writer answers");
                        done.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                })
                .expect("spawn a producer");
        }
    });
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("live: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let asked = asked()?;
    let db = std::env::temp_dir().join(format!("batch-ingest-live-{}.db", std::process::id()));
    if let Some(dir) = asked.trace.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // readme-excerpt: live
    // One call: the program's own hops, its callers, the sampling.
    let mut capture = Capture::live(&asked.trace)
        .hops(batch_ingest::hops::hops())
        .callers(u32::try_from(asked.producers).unwrap_or(u32::MAX))
        .sample_every(asked.sample_every)
        .window(Duration::from_secs_f64(asked.window))
        .start()
        .map_err(|e| e.to_string())?;
    // readme-excerpt: end
    if !asked.capture {
        capture.pause();
    }
    let ingest = Ingest::open(&db, asked.max_batch, Road::Marks, |_| {}).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let outcome = std::thread::scope(|s| {
        s.spawn(|| serve(&ingest, asked.producers, &stop, &done));
        let outcome = if asked.pairs > 0 {
            paired(&mut capture, &asked, &done)
        } else {
            std::thread::sleep(Duration::from_secs_f64(asked.seconds));
            let events = done.load(Ordering::Relaxed);
            println!("{events} events in {:.1} s: {:.0} events/s", asked.seconds, events as f64 / asked.seconds);
            Ok(())
        };
        stop.store(true, Ordering::Relaxed);
        outcome
    });
    drop(ingest);
    capture.finish().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&db);
    outcome
}

/// Capture on and off in ABBA order, `asked.pairs` pairs: the throughput
/// ratio (on / off) with its 95 % confidence interval.
fn paired(capture: &mut hopscope_probe::LiveCapture, asked: &Asked, done: &AtomicU64) -> Result<(), String> {
    let phase = Duration::from_secs_f64(asked.phase);
    let mut ratios = Vec::with_capacity(asked.pairs);
    for pair in 0..asked.pairs {
        let on_first = pair % 2 == 0;
        let mut rates = [0.0; 2];
        for (i, rate) in rates.iter_mut().enumerate() {
            let on = (i == 0) == on_first;
            if on {
                capture.resume();
            } else {
                capture.pause();
            }
            let (start, count) = (Instant::now(), done.load(Ordering::Relaxed));
            std::thread::sleep(phase);
            *rate = (done.load(Ordering::Relaxed) - count) as f64 / start.elapsed().as_secs_f64();
        }
        let (on, off) = if on_first { (rates[0], rates[1]) } else { (rates[1], rates[0]) };
        println!("pair {:>2}: on {on:>8.0} events/s, off {off:>8.0} events/s, ratio {:.4}", pair + 1, on / off);
        ratios.push(on / off);
    }
    capture.resume();
    let (mean, half) = mean_ci(&ratios);
    println!(
        "throughput with the capture on (1 in {}): {:+.2} % of off (95 % CI {:+.2} … {:+.2} %, {} pairs of {:.1} s)",
        asked.sample_every,
        (mean - 1.0) * 100.0,
        (mean - half - 1.0) * 100.0,
        (mean + half - 1.0) * 100.0,
        ratios.len(),
        asked.phase
    );
    Ok(())
}

/// The mean of `xs` and the half-width of its 95 % confidence interval
/// (Student's t).
fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    // t(0.975) for 1..=30 degrees of freedom, then the normal's.
    const T: [f64; 30] = [
        12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
        2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    let t = T.get(xs.len() - 2).copied().unwrap_or(1.96);
    (mean, t * (var / n).sqrt())
}
