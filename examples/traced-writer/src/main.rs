//! `traced-writer`: insert notes through the example writer. Built with
//! `--features hopscope`, it writes a `.hop` trace for `hopscope analyze`.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

/// Insert notes through a writer thread instrumented with `tracing` spans.
#[derive(Debug, Parser)]
struct Args {
    /// SQLite database file (replaced).
    #[arg(long, default_value = "target/traced-writer/notes.db")]
    db: PathBuf,
    /// Where to write the `.hop` trace (needs `--features hopscope`).
    #[arg(long, default_value = "target/traced-writer/trace.hop")]
    trace: PathBuf,
    /// Blocks of inserts.
    #[arg(long, default_value_t = 40)]
    blocks: u32,
    /// Inserts per block.
    #[arg(long, default_value_t = 200)]
    ops: u32,
}

fn main() {
    let args = Args::parse();
    if let Err(err) = run(&args) {
        eprintln!("traced-writer: {err:#}");
        std::process::exit(1);
    }
}

fn fresh_db(args: &Args) -> anyhow::Result<()> {
    if let Some(dir) = args.db.parent() {
        std::fs::create_dir_all(dir)?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut path = args.db.clone().into_os_string();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(feature = "hopscope")]
fn run(args: &Args) -> anyhow::Result<()> {
    fresh_db(args)?;
    if let Some(dir) = args.trace.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let run = traced_writer::capture::Run {
        db: args.db.clone(),
        trace: args.trace.clone(),
        blocks: args.blocks,
        ops_per_block: args.ops,
    };
    let started = Instant::now();
    let trace = traced_writer::capture::run(&run)?;
    let ops = u64::from(args.blocks) * u64::from(args.ops);
    println!("{ops} inserts in {:.2?} with hopscope marks", started.elapsed());
    println!("trace: {}", trace.display());
    println!("next:  hopscope analyze {}   (then: hopscope report <its directory>)", trace.display());
    Ok(())
}

#[cfg(not(feature = "hopscope"))]
fn run(args: &Args) -> anyhow::Result<()> {
    fresh_db(args)?;
    let writer = traced_writer::Writer::open(&args.db)?;
    let ops = u64::from(args.blocks) * u64::from(args.ops);
    let started = Instant::now();
    for k in 0..ops {
        writer.insert(k as i64, format!("note {k}"))?;
    }
    let elapsed = started.elapsed();
    println!(
        "{ops} inserts in {elapsed:.2?} ({:.2} µs each); built without the `hopscope` feature, so no trace",
        elapsed.as_secs_f64() * 1e6 / ops as f64
    );
    println!("for a trace: cargo run --release -p traced-writer --features hopscope");
    Ok(())
}
