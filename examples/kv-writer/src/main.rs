//! `kv-writer`: built with `--features hopscope`, a harness program that
//! decomposes the store's writes (`--quick`, `--out DIR`, `--help` for the
//! rest); without it, a plain timing of its inserts.

#[cfg(feature = "hopscope")]
fn main() -> std::process::ExitCode {
    // The size of the change compiled in, measured where it runs: a
    // comparison of two builds is checked against this figure.
    if std::env::var_os("KV_WRITER_TIME_BUILD_DELAY").is_some() {
        time_build_delay();
        return std::process::ExitCode::SUCCESS;
    }
    let code = kv_writer::decompose::lanes(hopscope_harness::Harness::from_args("kv-writer")).main();
    if let Some(log) = std::env::var_os("KV_WRITER_CHAIN_LOG") {
        log_in_situ(std::path::Path::new(&log));
    }
    code
}

/// Append this process's in-situ chain time to `log`: `pid turns calls
/// ns_per_call`, one line (what a lockstep test holds its estimate to).
#[cfg(feature = "hopscope")]
fn log_in_situ(log: &std::path::Path) {
    use std::io::Write as _;
    let (calls, ticks) = kv_writer::in_situ();
    if calls == 0 {
        return;
    }
    // The chain is timed by the time stamp counter: its calibration holds
    // only where hopscope's clock is that counter too.
    let clock = hopscope_probe::ClockInfo::measure();
    let ns_per_tick = if clock.source == hopscope_probe::ClockSource::Tsc { clock.ns_per_tick } else { f64::NAN };
    let line = format!(
        "{} {} {calls} {:.2}\n",
        std::process::id(),
        kv_writer::BUILD_SPIN,
        ticks as f64 * ns_per_tick / calls as f64
    );
    let written =
        std::fs::OpenOptions::new().create(true).append(true).open(log).and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(err) = written {
        eprintln!("kv-writer: cannot write {}: {err}", log.display());
    }
}

/// Print the median cost of one compiled-in busy-wait over 21 runs of
/// 100 000 calls, less an empty loop's.
#[cfg(feature = "hopscope")]
fn time_build_delay() {
    let per_call = |f: fn()| {
        let mut runs: Vec<f64> = (0..21)
            .map(|_| {
                let started = std::time::Instant::now();
                for _ in 0..100_000 {
                    f();
                    std::hint::black_box(());
                }
                started.elapsed().as_nanos() as f64 / 100_000.0
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        runs[10]
    };
    // Against an empty call, and against the same call with no turns (what
    // a build without the change costs): the change is the difference.
    let delay = per_call(kv_writer::build_delay);
    let empty = per_call(|| {});
    let none = per_call(|| kv_writer::chain(0));
    println!(
        "build delay: {} turns, {:.1} ns per call measured, {:.1} ns more than a build with none ({:.1} ns with the loop)",
        kv_writer::BUILD_SPIN,
        delay - empty,
        delay - none,
        delay
    );
}

#[cfg(not(feature = "hopscope"))]
fn main() -> Result<(), kv_writer::Error> {
    let dir = std::env::temp_dir().join(format!("kv-writer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|_| kv_writer::Error::Stopped)?;
    let writer = kv_writer::KvWriter::open(&dir.join("kv.db"))?;
    let started = std::time::Instant::now();
    for key in 0..10_000u64 {
        writer.insert(key as i64, kv_writer::value(key))?;
    }
    println!("10000 inserts in {:.2?}; build with --features hopscope to decompose them", started.elapsed());
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
