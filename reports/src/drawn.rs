//! The drawn half of a run's files: PNG charts and `report.html`. They need
//! the chart and template stack (plotters, a font, askama, pulldown-cmark),
//! which the `render` feature brings; a build without it writes the JSON
//! and Markdown half only and says so where it lists what it wrote
//! (`hopscope report DIR` draws a decomposition's later).
//!
//! This is the one place the feature is looked at: every writer of
//! [`crate::written`] asks here and gets either what was drawn or nothing.

use std::path::{Path, PathBuf};

use hopscope_analyze::Decomposition;
use hopscope_analyze::causal::CausalProfile;
use hopscope_analyze::experiment::Experiment;
use hopscope_analyze::merge::MergeResult;
use hopscope_analyze::resolution::Resolution;
use hopscope_analyze::sweep::SweepRow;

use crate::ReportError;
use crate::chart_options::ChartOptions;

/// Whether this build draws charts and pages (the `render` feature).
pub const BUILT: bool = cfg!(feature = "render");

/// A decomposition's charts and page (see [`crate::render`]); `None` in a
/// build that draws nothing.
pub(crate) fn decomposition(d: &Decomposition, dir: &Path, options: ChartOptions) -> Drawn {
    #[cfg(feature = "render")]
    return crate::render::render(d, dir, options).map(listed);
    #[cfg(not(feature = "render"))]
    return none((d, dir, options));
}

/// An A/B experiment's chart and page.
pub(crate) fn experiment(e: &Experiment, dir: &Path) -> Drawn {
    #[cfg(feature = "render")]
    return crate::render::render_experiment(e, dir).map(listed);
    #[cfg(not(feature = "render"))]
    return none((e, dir));
}

/// A merge measurement's charts and page.
pub(crate) fn merge(r: &MergeResult, dir: &Path) -> Drawn {
    #[cfg(feature = "render")]
    return crate::render::render_merge(r, dir).map(listed);
    #[cfg(not(feature = "render"))]
    return none((r, dir));
}

/// A keep-warm sweep's frontier chart.
pub(crate) fn sweep(rows: &[SweepRow], dir: &Path) -> Drawn {
    #[cfg(feature = "render")]
    return chart(dir, "frontier.png", |path| crate::frontier_png(rows, path));
    #[cfg(not(feature = "render"))]
    return none((rows, dir));
}

/// A resolution measurement's chart.
pub(crate) fn resolution(r: &Resolution, dir: &Path) -> Drawn {
    #[cfg(feature = "render")]
    return chart(dir, "resolution.png", |path| crate::resolution_png(r, path));
    #[cfg(not(feature = "render"))]
    return none((r, dir));
}

/// A causal profile's page and chart.
pub(crate) fn causal(p: &CausalProfile, dir: &Path) -> Drawn {
    #[cfg(feature = "render")]
    {
        let html = dir.join("report.html");
        crate::text_file::write(&html, &crate::html::causal_page(p)?)?;
        let png = dir.join("causal.png");
        crate::causal_png(p, &png)?;
        Ok(Some(vec![("report", html), ("chart", png)]))
    }
    #[cfg(not(feature = "render"))]
    return none((p, dir));
}

/// What drawing wrote, each file under its label (`report`, `chart`) in
/// report order; `None` when this build draws nothing.
pub(crate) type Drawn = Result<Option<Vec<(&'static str, PathBuf)>>, ReportError>;

/// A page and its charts as [`Drawn`] lists them.
#[cfg(feature = "render")]
fn listed(rendered: crate::Rendered) -> Option<Vec<(&'static str, PathBuf)>> {
    Some(
        std::iter::once(("report", rendered.html)).chain(rendered.pngs.into_iter().map(|png| ("chart", png))).collect(),
    )
}

/// One chart into `dir/file`, no page.
#[cfg(feature = "render")]
fn chart(dir: &Path, file: &str, draw: impl FnOnce(&Path) -> Result<(), ReportError>) -> Drawn {
    let path = dir.join(file);
    draw(&path)?;
    Ok(Some(vec![("chart", path)]))
}

/// Nothing drawn: what the drawing would have used is unused here.
#[cfg(not(feature = "render"))]
fn none<T>(_unused: T) -> Drawn {
    Ok(None)
}
