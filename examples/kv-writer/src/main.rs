//! `kv-writer`: built with `--features hopscope`, a harness program that
//! decomposes the store's writes (`--quick`, `--out DIR`, `--help` for the
//! rest); without it, a plain timing of its inserts.

#[cfg(feature = "hopscope")]
fn main() -> std::process::ExitCode {
    kv_writer::decompose::lanes(hopscope_harness::Harness::from_args("kv-writer")).main()
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
