//! `traced-writer`: insert notes through the example writer. Built with
//! `--features hopscope`, it is a harness program: it decomposes the writer
//! against an inline baseline and writes a full report (`--quick`,
//! `--out DIR`, `--help` for the rest).

#[cfg(feature = "hopscope")]
fn main() -> std::process::ExitCode {
    traced_writer::decompose::lanes(hopscope_harness::Harness::from_args("traced-writer")).main()
}

#[cfg(not(feature = "hopscope"))]
fn main() {
    if let Err(err) = plain::run() {
        eprintln!("traced-writer: {err:#}");
        std::process::exit(1);
    }
}

/// Without hopscope: just the inserts, timed as a whole.
#[cfg(not(feature = "hopscope"))]
mod plain {
    use std::path::PathBuf;
    use std::time::Instant;

    use clap::Parser;

    /// Insert notes through a writer thread instrumented with `tracing` spans.
    #[derive(Debug, Parser)]
    struct Args {
        /// SQLite database file (replaced).
        #[arg(long, default_value = "target/traced-writer/notes.db")]
        db: PathBuf,
        /// Inserts.
        #[arg(long, default_value_t = 8000)]
        ops: u64,
    }

    pub(crate) fn run() -> anyhow::Result<()> {
        let args = Args::parse();
        if let Some(dir) = args.db.parent() {
            std::fs::create_dir_all(dir)?;
        }
        for suffix in ["", "-wal", "-shm"] {
            let mut path = args.db.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
        let writer = traced_writer::Writer::open(&args.db)?;
        let started = Instant::now();
        for k in 0..args.ops {
            writer.insert(k as i64, format!("note {k}"))?;
        }
        let elapsed = started.elapsed();
        println!(
            "{} inserts in {elapsed:.2?} ({:.2} µs each); built without the `hopscope` feature, so no decomposition",
            args.ops,
            elapsed.as_secs_f64() * 1e6 / args.ops as f64
        );
        println!("to decompose it: cargo run --release -p traced-writer --features hopscope -- --quick");
        Ok(())
    }
}
