//! `async-notes`: insert notes through the async service. Built with
//! `--features hopscope`, it is a harness program: it decomposes the
//! service against an inline baseline and writes a full report (`--quick`,
//! `--out DIR`, `--help` for the rest), then prints how often each span
//! was entered per operation.

#[cfg(feature = "hopscope")]
fn main() -> std::process::ExitCode {
    let layer = async_notes::decompose::layer();
    async_notes::decompose::lanes(hopscope_harness::Harness::from_args("async-notes"), layer).main()
}

#[cfg(not(feature = "hopscope"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build()?;
    let path = std::env::temp_dir().join(format!("async-notes-{}.db", std::process::id()));
    let notes = std::sync::Arc::new(runtime.block_on(async_notes::Notes::open(&path))?);
    let started = std::time::Instant::now();
    for k in 0..5_000u64 {
        let notes = notes.clone();
        runtime.block_on(runtime.spawn(async move { notes.insert(k as i64, async_notes::note(k)).await }))??;
    }
    println!(
        "5000 inserts in {:.2?}; built without the `hopscope` feature, so no decomposition \
         (cargo run --release -p async-notes --features hopscope -- --quick)",
        started.elapsed()
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
