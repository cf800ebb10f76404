//! `batch-ingest --road marks|spans|hook [harness flags]`: decompose the
//! batching writer through one road (built with `--features hopscope`).

#[cfg(feature = "hopscope")]
fn main() -> std::process::ExitCode {
    use batch_ingest::Road;
    let mut args: Vec<String> = std::env::args().collect();
    let road = match args.iter().position(|a| a == "--road") {
        Some(at) if at + 1 < args.len() => {
            let road = args.remove(at + 1);
            args.remove(at);
            match road.as_str() {
                "marks" => Road::Marks,
                "spans" => Road::Spans,
                "hook" => Road::Hook,
                other => {
                    eprintln!("batch-ingest: --road {other}: marks, spans or hook");
                    return std::process::ExitCode::from(2);
                }
            }
        }
        _ => Road::Marks,
    };
    let mut harness = hopscope_harness::Harness::from_args_of("batch-ingest", args);
    let (lanes, hops) = batch_ingest::decompose::lanes(road);
    if let Some(hops) = hops {
        harness = harness.hops(hops);
    }
    for lane in lanes {
        harness = harness.lane(lane);
    }
    harness.main()
}

#[cfg(not(feature = "hopscope"))]
fn main() -> Result<(), String> {
    let path = std::env::temp_dir().join(format!("batch-ingest-{}.db", std::process::id()));
    let ingest = batch_ingest::Ingest::open(&path, 64, batch_ingest::Road::Plain, |_| {}).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for producer in 0..8u64 {
            let ingest = &ingest;
            s.spawn(move || (0..10_000u64).try_for_each(|i| ingest.insert(producer << 32 | i, "an event").map(|_| ())));
        }
    });
    drop(ingest);
    let events = batch_ingest::Ingest::count(&path).map_err(|e| e.to_string())?;
    println!("{events} events in {:.2?}", started.elapsed());
    let _ = std::fs::remove_file(&path);
    Ok(())
}
