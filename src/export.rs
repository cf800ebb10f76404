//! `hopscope export --format chrome TRACE`: the trace as a timeline that
//! Perfetto's UI and chrome://tracing load, on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_probe::Trace;

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
    let trace = Trace::read(&args.trace).with_context(|| format!("cannot export {}", args.trace.display()))?;
    let json = match args.format {
        Format::Chrome => hopscope_analyze::chrome::chrome_trace(&trace),
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &json).context("cannot write the timeline")?;
    writeln!(out).context("cannot write the timeline")?;
    Ok(ExitCode::SUCCESS)
}
