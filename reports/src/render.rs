//! Drawing a run's charts as PNG files and its `report.html` (the `render`
//! feature): the functions the written files and `hopscope report` call.

use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;

use crate::{ChartKind, ChartOptions, ReportError, charts, html};

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
