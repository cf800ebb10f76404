//! Rendering: plotters charts (PNG files, and SVG inlined in the HTML) and
//! the self-contained `report.html`, drawn only from a
//! [`hopscope_analyze::Decomposition`]. Nothing here measures or computes a
//! statistic; every number on a chart is a field of the decomposition.
//!
//! - [`charts`]: one chart per file (`waterfall`, `lanes`, `distributions`,
//!   `cpu`, `stability`), each a free function over any plotters backend.
//! - [`receipt`]: the Markdown receipts (`receipt.md`) of every kind of
//!   result.
//! - [`style`]: palette, sizes, and the embedded DejaVu Sans font, so PNG
//!   text renders the same on a machine with no fonts installed.
//! - [`render`]: writes the PNGs and `report.html` into a run directory;
//!   [`write_decomposition`] and its siblings write every file of a run
//!   (JSON, receipt, charts, page) and say what they wrote ([`Written`]).
//! - [`tables`]: the results of many runs as Parquet tables a query engine
//!   reads (the writer is the feature `parquet`).

#![deny(missing_docs)]

mod change;
pub mod charts;
mod error;
mod html;
pub mod receipt;
pub mod style;
pub mod tables;
mod written;

use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;

pub use change::change_markdown;
pub use charts::{ChartKind, ChartOptions};
pub use charts::{
    ab_png, ab_svg, causal_png, causal_svg, frontier_png, merge_png, merge_slices_png, merge_slices_svg, merge_svg,
    resolution_png,
};
pub use error::ReportError;
pub use html::{causal_page, experiment_page, merge_page, page};
pub use written::{
    Written, write_causal, write_decomposition, write_experiment, write_merge, write_net, write_resolution, write_sweep,
};

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The HTML page.
    pub html: PathBuf,
    /// The PNG charts, in report order.
    pub pngs: Vec<PathBuf>,
}

/// Write the A/B chart as a PNG and the experiment's HTML page into `dir`.
pub fn render_experiment(e: &hopscope_analyze::experiment::Experiment, dir: &Path) -> Result<Rendered, ReportError> {
    let png = dir.join("ab-deltas.png");
    charts::ab_png(e, &png)?;
    let html = dir.join("report.html");
    let page = html::experiment_page(e)?;
    std::fs::write(&html, page).map_err(|source| ReportError::Io { path: html.clone(), source })?;
    Ok(Rendered { html, pngs: vec![png] })
}

/// Write the merge charts (`merge.png`: each arm's import cost;
/// `merge-slices.png`: inside one merged change) and the merge report page
/// into `dir`.
pub fn render_merge(r: &hopscope_analyze::merge::MergeResult, dir: &Path) -> Result<Rendered, ReportError> {
    let arms = dir.join("merge.png");
    charts::merge_png(r, &arms)?;
    let slices = dir.join("merge-slices.png");
    charts::merge_slices_png(r, &slices)?;
    let html = dir.join("report.html");
    std::fs::write(&html, html::merge_page(r)?).map_err(|source| ReportError::Io { path: html.clone(), source })?;
    Ok(Rendered { html, pngs: vec![arms, slices] })
}

/// Write every chart that has something to draw as a PNG, and the HTML
/// page, into `dir`. A chart with nothing to draw is left out (the page
/// says which and why); a stale PNG of it from an earlier render is
/// removed.
pub fn render(d: &Decomposition, dir: &Path, options: ChartOptions) -> Result<Rendered, ReportError> {
    let mut pngs = Vec::with_capacity(ChartKind::ALL.len());
    for kind in ChartKind::ALL.into_iter().filter(|kind| kind.nothing_to_draw(d).is_some()) {
        let path = dir.join(format!("{}.png", kind.file_stem()));
        if path.is_file() {
            std::fs::remove_file(&path).map_err(|source| ReportError::Io { path: path.clone(), source })?;
        }
    }
    for kind in ChartKind::drawn_for(d) {
        let path = dir.join(format!("{}.png", kind.file_stem()));
        kind.render_png(d, options, &path)?;
        pngs.push(path);
    }
    let html = dir.join("report.html");
    let page = html::page(d, options)?;
    std::fs::write(&html, page).map_err(|source| ReportError::Io { path: html.clone(), source })?;
    Ok(Rendered { html, pngs })
}
