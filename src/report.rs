//! `hopscope report`: render the charts and `report.html` of a run
//! directory from its `result.json`, without re-running anything.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::Decomposition;
use hopscope_reports::ChartOptions;

/// Flags of `hopscope report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Run directory holding `result.json` (charts and report.html are
    /// written next to it).
    dir: PathBuf,
    /// Draw the distributions on a logarithmic axis.
    #[arg(long)]
    log: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let result = args.dir.join("result.json");
    let text = std::fs::read_to_string(&result).with_context(|| format!("cannot read {}", result.display()))?;
    let decomposition = Decomposition::from_json(&text).with_context(|| format!("cannot use {}", result.display()))?;
    let rendered = hopscope_reports::render(&decomposition, &args.dir, ChartOptions { log_x: args.log })
        .with_context(|| format!("cannot render the report in {}", args.dir.display()))?;
    let mut written = hopscope_reports::Written::default();
    written.push("report", rendered.html);
    for png in rendered.pngs {
        written.push("chart", png);
    }
    print!("{written}");
    Ok(ExitCode::SUCCESS)
}
