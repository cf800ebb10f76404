//! `hopscope export --format chrome TRACE`: the trace as a timeline that
//! Perfetto's UI and chrome://tracing load, on stdout.
//!
//! Streams: one pass over the file finds the earliest block (time zero),
//! a second writes each block's events as it is read, so memory stays one
//! block however long the trace. A trace cut short (a killed run) is
//! exported from every complete block; the JSON says `partial` and one line
//! on stderr says what was left out.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::chrome::ChromeWriter;
use hopscope_probe::TraceReader;

/// Timeline formats `export` writes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Chrome Trace Event JSON.
    Chrome,
}

/// Flags of `hopscope export`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "chrome")]
    format: Format,
    /// The `.hop` trace.
    trace: PathBuf,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let path = &args.trace;
    let cannot = || format!("cannot export {}", path.display());
    // Pass 1: the earliest block start, and where a cut trace ends.
    let mut reader = TraceReader::open(path).with_context(cannot)?;
    let (mut origin, mut blocks, mut cut) = (u64::MAX, 0u64, None);
    loop {
        match reader.next_block() {
            Ok(Some(block)) => {
                origin = origin.min(block.start.0);
                blocks += 1;
            }
            Ok(None) => break,
            Err(err) => {
                cut = Some(err.to_string());
                break;
            }
        }
    }
    // Pass 2: the events, block by block.
    let mut reader = TraceReader::open(path).with_context(cannot)?;
    let header = reader.header().clone();
    let out = BufWriter::new(std::io::stdout().lock());
    let Format::Chrome = args.format;
    let mut writer =
        ChromeWriter::start(out, &header, if blocks == 0 { 0 } else { origin }).context("cannot write the timeline")?;
    for _ in 0..blocks {
        let Some(block) = reader.next_block().with_context(cannot)? else { break };
        writer.block(&block).context("cannot write the timeline")?;
    }
    let partial = cut.as_ref().map(|reason| format!("{blocks} blocks exported; the trace ended early: {reason}"));
    let mut out = writer.finish(partial.as_deref()).context("cannot write the timeline")?;
    writeln!(out).context("cannot write the timeline")?;
    out.flush().context("cannot write the timeline")?;
    if let Some(partial) = partial {
        eprintln!("hopscope: partial: {partial}");
    }
    Ok(ExitCode::SUCCESS)
}
