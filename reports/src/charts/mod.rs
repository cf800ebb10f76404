//! One chart per file, each a free function drawing a [`Decomposition`] on
//! any plotters backend; this module renders them to PNG files and SVG text.

pub(crate) mod ab;
mod batching;
pub(crate) mod causal;
mod cpu;
mod differences;
mod distributions;
mod frame;
pub(crate) mod frontier;
mod kind;
mod lanes;
pub(crate) mod merge;
pub(crate) mod merge_slices;
mod peers;
pub(crate) mod resolution;
mod stability;
mod waterfall;

use std::path::Path;

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::ReportError;
use crate::style::{self, PNG_SIZE, SVG_SIZE};
use frame::{DrawResult, note};

pub use crate::chart_options::ChartOptions;
pub use kind::ChartKind;

impl ChartKind {
    fn draw<DB: DrawingBackend>(
        self,
        area: &DrawingArea<DB, Shift>,
        d: &Decomposition,
        options: ChartOptions,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        area.fill(&WHITE)?;
        if let Some(reason) = self.nothing_to_draw(d) {
            note(area, self.title(), reason)?;
            area.present()?;
            return Ok(());
        }
        match self {
            ChartKind::Waterfall => waterfall::waterfall_chart(area, d),
            ChartKind::Differences => differences::differences_chart(area, d),
            ChartKind::Lanes => lanes::lanes_chart(area, d),
            ChartKind::Distributions => distributions::distributions_chart(area, d, options.log_x),
            ChartKind::CpuVsWall => cpu::cpu_vs_wall_chart(area, d),
            ChartKind::Stability => stability::stability_chart(area, d),
            ChartKind::Peers => peers::peers_chart(area, d),
            ChartKind::Batching => batching::batching_chart(area, d),
        }?;
        area.present()?;
        Ok(())
    }

    /// Draw to a PNG file at [`PNG_SIZE`].
    pub fn render_png(self, d: &Decomposition, options: ChartOptions, path: &Path) -> Result<(), ReportError> {
        to_png(path, self.file_stem(), |area| self.draw(area, d, options))
    }

    /// Draw to SVG text at [`SVG_SIZE`].
    pub fn render_svg(self, d: &Decomposition, options: ChartOptions) -> Result<String, ReportError> {
        style::register_fonts()?;
        let mut svg = String::new();
        {
            let area = SVGBackend::with_string(&mut svg, SVG_SIZE).into_drawing_area();
            self.draw(&area, d, options).map_err(|e| self.error(e))?;
        }
        Ok(svg)
    }

    fn error(self, e: Box<dyn std::error::Error + Send + Sync>) -> ReportError {
        ReportError::Chart { chart: self.file_stem(), message: e.to_string() }
    }
}

/// Draw with `draw` into a PNG file at [`PNG_SIZE`]; errors name `chart`.
/// Drawn into an RGB buffer and encoded with the `png` crate: plotters'
/// own file encoder goes through the `image` crate, the largest part of
/// the chart stack's build, for one format.
fn to_png(
    path: &Path,
    chart: &'static str,
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult,
) -> Result<(), ReportError> {
    style::register_fonts()?;
    let (width, height) = PNG_SIZE;
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let area = BitMapBackend::with_buffer(&mut rgb, PNG_SIZE).into_drawing_area();
        draw(&area)
            .and_then(|()| Ok(area.present()?))
            .map_err(|e| ReportError::Chart { chart, message: e.to_string() })?;
    }
    encode_png(path, width, height, &rgb)
}

/// Write an RGB buffer as a PNG file.
fn encode_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> Result<(), ReportError> {
    let io = |source: std::io::Error| ReportError::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let encoded = encoder.write_header().and_then(|mut writer| writer.write_image_data(rgb));
    encoded.map_err(|e| match e {
        png::EncodingError::IoError(source) => io(source),
        other => io(std::io::Error::other(other)),
    })
}

/// Draw with `draw` into SVG text at [`SVG_SIZE`]; errors name `chart`.
fn to_svg(
    chart: &'static str,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> Result<String, ReportError> {
    style::register_fonts()?;
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, SVG_SIZE).into_drawing_area();
        draw(&area)
            .and_then(|()| Ok(area.present()?))
            .map_err(|e| ReportError::Chart { chart, message: e.to_string() })?;
    }
    Ok(svg)
}

/// Draw the A/B chart of `e` to a PNG file at [`PNG_SIZE`].
pub fn ab_png(e: &hopscope_analyze::experiment::Experiment, path: &Path) -> Result<(), ReportError> {
    to_png(path, "ab-deltas", |area| ab::ab_chart(area, e))
}

/// Draw the A/B chart of `e` as SVG text at [`SVG_SIZE`].
pub fn ab_svg(e: &hopscope_analyze::experiment::Experiment) -> Result<String, ReportError> {
    to_svg("ab-deltas", |area| ab::ab_chart(area, e))
}

/// Draw the merge chart of `r` to a PNG file at [`PNG_SIZE`].
pub fn merge_png(r: &hopscope_analyze::merge::MergeResult, path: &Path) -> Result<(), ReportError> {
    to_png(path, "merge", |area| merge::merge_chart(area, r))
}

/// Draw the merge chart of `r` as SVG text at [`SVG_SIZE`].
pub fn merge_svg(r: &hopscope_analyze::merge::MergeResult) -> Result<String, ReportError> {
    to_svg("merge", |area| merge::merge_chart(area, r))
}

/// Draw the slices inside one merged change of `r` to a PNG file at [`PNG_SIZE`].
pub fn merge_slices_png(r: &hopscope_analyze::merge::MergeResult, path: &Path) -> Result<(), ReportError> {
    to_png(path, "merge-slices", |area| merge_slices::merge_slices_chart(area, r))
}

/// Draw the slices inside one merged change of `r` as SVG text at [`SVG_SIZE`].
pub fn merge_slices_svg(r: &hopscope_analyze::merge::MergeResult) -> Result<String, ReportError> {
    to_svg("merge-slices", |area| merge_slices::merge_slices_chart(area, r))
}

/// Draw the resolution chart of `r` to a PNG file at [`PNG_SIZE`].
pub fn resolution_png(r: &hopscope_analyze::resolution::Resolution, path: &Path) -> Result<(), ReportError> {
    to_png(path, "resolution", |area| resolution::resolution_chart(area, r))
}

/// Draw the causal profile of `p` to a PNG file at [`PNG_SIZE`].
pub fn causal_png(p: &hopscope_analyze::causal::CausalProfile, path: &Path) -> Result<(), ReportError> {
    to_png(path, "causal", |area| causal::causal_chart(area, p))
}

/// Draw the causal profile of `p` as SVG text at [`SVG_SIZE`].
pub fn causal_svg(p: &hopscope_analyze::causal::CausalProfile) -> Result<String, ReportError> {
    to_svg("causal", |area| causal::causal_chart(area, p))
}

/// Draw the keep-warm frontier of `rows` to a PNG file at [`PNG_SIZE`].
pub fn frontier_png(rows: &[hopscope_analyze::sweep::SweepRow], path: &Path) -> Result<(), ReportError> {
    to_png(path, "frontier", |area| frontier::frontier_chart(area, rows))
}
