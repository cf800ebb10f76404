//! `hopscope analyze`: decompose an existing trace without re-running it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_reports::ChartOptions;

/// Flags of `hopscope analyze`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The `.hop` trace to analyze.
    trace: PathBuf,
    /// Where to write result.json, receipt.md and the report (default:
    /// beside the trace).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let path = &args.trace;
    // Streamed: one block in memory at a time. A trace cut short (a killed
    // run) is analyzed from every complete block it holds, and the result
    // says so.
    let decomposition =
        hopscope_analyze::decompose_file(path).with_context(|| format!("cannot analyze {}", path.display()))?;
    let dir = match &args.out {
        Some(out) => {
            std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
            out.clone()
        }
        None => path.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".")),
    };
    let written = hopscope_reports::write_decomposition(&dir, &decomposition, ChartOptions::default())
        .with_context(|| format!("cannot write the results in {}", dir.display()))?;
    print!("{}", hopscope_reports::terminal::decomposition(&decomposition));
    print!("\n{written}");
    Ok(ExitCode::SUCCESS)
}
