//! `hopscope report`: render the charts and `report.html` of a run
//! directory from its `result.json`, without re-running anything.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hopscope_analyze::Decomposition;
use hopscope_reports::{ChartOptions, Rendered};

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
    let rendered = render(&decomposition, &args.dir, ChartOptions { log_x: args.log })?;
    print_rendered(&rendered);
    Ok(ExitCode::SUCCESS)
}

/// Render into `dir`, with the directory named in any error.
pub(crate) fn render(d: &Decomposition, dir: &Path, options: ChartOptions) -> anyhow::Result<Rendered> {
    hopscope_reports::render(d, dir, options).with_context(|| format!("cannot render the report in {}", dir.display()))
}

/// Say where the report went.
pub(crate) fn print_rendered(rendered: &Rendered) {
    println!("report:  {}", rendered.html.display());
    if let Some(dir) = rendered.pngs.first().and_then(|p| p.parent()) {
        let names: Vec<String> =
            rendered.pngs.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        println!("charts:  {} ({})", dir.display(), names.join(", "));
    }
}
