//! One chart per file, each a free function drawing a [`Decomposition`] on
//! any plotters backend; this module renders them to PNG files and SVG text.

pub(crate) mod ab;
mod batching;
pub(crate) mod causal;
mod cpu;
mod differences;
mod distributions;
pub(crate) mod frontier;
mod lanes;
pub(crate) mod merge;
pub(crate) mod merge_slices;
mod peers;
pub(crate) mod resolution;
mod stability;
mod waterfall;

use std::path::Path;

use hopscope_analyze::Decomposition;
use hopscope_probe::ThreadRole;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, SegmentedCoord};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::error::ReportError;
use crate::style::{self, PNG_SIZE, SVG_SIZE};

/// What a chart function returns: plotters' errors, boxed, converted to
/// [`ReportError::Chart`] by the caller that knows the chart's name.
pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

pub use crate::drawn::ChartOptions;

/// The charts of a decomposition report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// Slices of the probed lane stacked to the total, with lane totals.
    Waterfall,
    /// Hop, boundary, library and the observer effect: each paired
    /// difference on its own scale with its CI.
    Differences,
    /// µs per operation per lane, with CI whiskers.
    Lanes,
    /// ECDF of each lane's block figures.
    Distributions,
    /// CPU µs per operation against wall µs per operation.
    CpuVsWall,
    /// Block figures in run order, by pass.
    Stability,
    /// Each probed peer's slices minus the reference writer's, paired.
    Peers,
    /// Batching lanes: one write's latency against the throughput reached.
    Batching,
}

impl ChartKind {
    /// Every chart, in report order.
    pub const ALL: [ChartKind; 8] = [
        ChartKind::Waterfall,
        ChartKind::Differences,
        ChartKind::Lanes,
        ChartKind::Distributions,
        ChartKind::CpuVsWall,
        ChartKind::Stability,
        ChartKind::Peers,
        ChartKind::Batching,
    ];

    /// File name without extension.
    pub fn file_stem(self) -> &'static str {
        match self {
            ChartKind::Waterfall => "waterfall",
            ChartKind::Differences => "differences",
            ChartKind::Lanes => "lanes",
            ChartKind::Distributions => "distributions",
            ChartKind::CpuVsWall => "cpu-vs-wall",
            ChartKind::Stability => "stability",
            ChartKind::Peers => "peers",
            ChartKind::Batching => "batching",
        }
    }

    /// Chart title.
    pub fn title(self) -> &'static str {
        match self {
            ChartKind::Waterfall => "Where one write goes, slice by slice",
            ChartKind::Differences => "The hop, split: paired differences in µs per write, each on its own scale",
            ChartKind::Lanes => "µs per write by lane (median, 95% CI)",
            ChartKind::Distributions => "Distribution of block figures (ECDF)",
            ChartKind::CpuVsWall => "CPU against wall time per write",
            ChartKind::Stability => "Block figures in run order, by pass",
            ChartKind::Peers => "Where each peer loses: its slices minus the reference writer's",
            ChartKind::Batching => "Batch size: one write's latency against the throughput reached",
        }
    }

    /// Why this chart would be empty for `d` (the sentence its placeholder
    /// shows), or `None` when it has something to draw. Reports leave such
    /// charts out rather than show an empty frame.
    pub fn nothing_to_draw(self, d: &Decomposition) -> Option<&'static str> {
        let lanes = || d.lanes.values();
        let empty = match self {
            ChartKind::Waterfall => d.slices.is_empty(),
            ChartKind::Differences => d.derived.is_none() && d.observer_effect.is_none(),
            ChartKind::Lanes => lanes().all(|l| l.us_per_op.is_none()),
            ChartKind::Distributions | ChartKind::Stability => {
                lanes().all(|l| l.blocks_us.iter().all(|b| !b.us_per_op.is_finite()))
            }
            ChartKind::CpuVsWall => !d.lanes.iter().any(|(name, l)| {
                l.us_per_op.is_some()
                    && d.cpu_us_per_op
                        .get(name)
                        .is_some_and(|roles| roles.contains_key(&ThreadRole::Process.to_string()))
            }),
            ChartKind::Peers => !peers::has_pairs(d),
            ChartKind::Batching => d.batch_sweep.is_none(),
        };
        empty.then_some(match self {
            ChartKind::Waterfall => "No probed lane in this run: no slices to draw.",
            ChartKind::Differences => "This run has no lane arithmetic and no observer effect: nothing was paired.",
            ChartKind::Lanes => "No lane ran any operation.",
            ChartKind::Distributions | ChartKind::Stability => "No lane ran any block.",
            ChartKind::CpuVsWall => "The run recorded no CPU readings.",
            ChartKind::Peers => "No probed peer was paired with a reference in this run.",
            ChartKind::Batching => "Fewer than two lanes batched in this run: no sweep to draw.",
        })
    }

    /// Whether the chart is about something `d` ran: the peers' chart only
    /// for a run with peer lanes (a program without any has nothing of the
    /// kind to leave out).
    pub fn applies_to(self, d: &Decomposition) -> bool {
        match self {
            ChartKind::Peers => d.comparison.is_some() || !d.peer_slices.is_empty(),
            ChartKind::Batching => d.batch_sweep.is_some(),
            _ => true,
        }
    }

    /// The charts with something to draw for `d`, in report order.
    pub fn drawn_for(d: &Decomposition) -> Vec<ChartKind> {
        ChartKind::ALL.into_iter().filter(|kind| kind.nothing_to_draw(d).is_none()).collect()
    }

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

/// Lane names in reading order (baseline, floor, subject, peers: the
/// decomposition's `lane_order`), the same in every chart so colours match.
pub(crate) fn lane_names(d: &Decomposition) -> Vec<&str> {
    d.lanes_in_order().into_iter().map(|(name, _)| name).collect()
}

/// Draw a centred note on an otherwise empty chart.
pub(crate) fn note<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, title: &str, text: &str) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    let caption = (style::FONT, style::px(style::CAPTION_PX, w)).into_font();
    let body = (style::FONT, style::px(style::LABEL_PX, w)).into_font();
    area.draw(&Text::new(title.to_owned(), (20, 20), caption))?;
    area.draw(&Text::new(text.to_owned(), (w as i32 / 10, h as i32 / 2), body))?;
    Ok(())
}

/// Draw the legend of `chart` at `position`, in the report's legend style.
pub(crate) fn legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
    width: u32,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(font(style::LEGEND_PX, width))
        .draw()?;
    Ok(())
}

/// The axes of a plain chart: ranges and their descriptions.
pub(crate) struct Axes<'t> {
    pub(crate) x: std::ops::Range<f64>,
    pub(crate) y: std::ops::Range<f64>,
    pub(crate) x_desc: &'t str,
    pub(crate) y_desc: &'t str,
}

/// A numeric chart on `area` in the report's style: caption (if any),
/// margins, label areas and a light mesh with described axes. Sizes scale
/// with `canvas_width`, the width of the whole picture (a panel of a split
/// canvas keeps the canvas's type sizes).
pub(crate) fn plain_chart<'a, DB>(
    area: &'a DrawingArea<DB, Shift>,
    caption: Option<&str>,
    axes: Axes<'_>,
    canvas_width: u32,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>, Box<dyn std::error::Error + Send + Sync>>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
{
    let w = canvas_width;
    let mut builder = ChartBuilder::on(area);
    if let Some(caption) = caption {
        builder.caption(caption, font(style::CAPTION_PX, w));
    }
    let mut chart = builder
        .margin(px(24.0, w))
        .x_label_area_size(px(80.0, w))
        .y_label_area_size(px(110.0, w))
        .build_cartesian_2d(axes.x, axes.y)?;
    chart
        .configure_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .x_labels(7)
        .x_label_formatter(&|x| trim_zero(*x))
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .label_style(font(style::LABEL_PX, w))
        .axis_desc_style(font(style::LABEL_PX, w))
        .draw()?;
    Ok(chart)
}

/// Coordinates of a category chart: segmented categories by numbers.
type CategoryCoord = Cartesian2d<SegmentedCoord<plotters::coord::types::RangedCoordi32>, RangedCoordf64>;

/// The chart context [`category_chart`] returns.
pub(crate) type CategoryChart<'a, DB> = ChartContext<'a, DB, CategoryCoord>;

/// A chart with one labelled category per x segment (lanes, passes) and a
/// numeric y axis, in the report's style.
pub(crate) fn category_chart<'a, DB>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    labels: &[String],
    y: std::ops::Range<f64>,
    y_desc: &str,
) -> Result<CategoryChart<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
{
    let (w, _) = area.dim_in_pixel();
    let n = labels.len() as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, font(style::CAPTION_PX, w))
        .margin(px(24.0, w))
        .x_label_area_size(px(70.0, w))
        .y_label_area_size(px(110.0, w))
        .build_cartesian_2d((0..n - 1).into_segmented(), y)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .x_labels(labels.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .y_desc(y_desc)
        .label_style(font(style::LABEL_PX, w))
        .axis_desc_style(font(style::LABEL_PX, w))
        .draw()?;
    Ok(chart)
}

/// Coordinates of a row chart: µs across, one labelled row per segment.
type RowCoord = Cartesian2d<RangedCoordf64, SegmentedCoord<plotters::coord::types::RangedCoordi32>>;

/// The chart context [`row_chart`] returns.
pub(crate) type RowChart<'a, DB> = ChartContext<'a, DB, RowCoord>;

/// A chart with one labelled row per entry of `labels`, the first at the
/// top, and a numeric x axis from 0 to `x_max`, in the report's style, type
/// sized for a canvas `canvas_width` wide (a panel keeps the canvas's). Row
/// `i` is drawn at segment [`row_of`]`(i, labels.len())`.
pub(crate) fn row_chart<'a, DB>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    labels: &[String],
    x_max: f64,
    x_desc: &str,
    label_width: f64,
    canvas_width: u32,
) -> Result<RowChart<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
{
    let w = canvas_width;
    let n = labels.len() as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, font(style::CAPTION_PX, w))
        .margin(px(24.0, w))
        .x_label_area_size(px(80.0, w))
        .y_label_area_size(px(label_width, w))
        .build_cartesian_2d(0f64..x_max, (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .y_labels(labels.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(y) => labels.get((n - 1 - *y) as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(x_desc)
        .label_style(font(style::LABEL_PX, w))
        .axis_desc_style(font(style::LABEL_PX, w))
        .draw()?;
    Ok(chart)
}

/// The segment of row `i` of `rows` in a [`row_chart`] (the first row on top).
pub(crate) fn row_of(i: usize, rows: usize) -> i32 {
    rows as i32 - 1 - i as i32
}

/// A tick value without a trailing `.0` on whole numbers.
fn trim_zero(value: f64) -> String {
    // A tick at a rounding error from zero reads `0`, not `-0.0`.
    if value.abs() < 0.05 {
        "0".to_owned()
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// A tick value to three decimals at most, trailing zeros dropped: for axes
/// whose steps are finer than 0.1.
pub(crate) fn fine_tick(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".to_owned() } else { text.to_owned() }
}

/// `min..max` widened by a margin on each side (never empty).
pub(crate) fn padded(min: f64, max: f64) -> std::ops::Range<f64> {
    let span = (max - min).abs().max(1e-3);
    min - 0.04 * span..max + 0.08 * span
}

/// A font of `size` px (at PNG width) scaled to `width`.
pub(crate) fn font(size: f64, width: u32) -> FontDesc<'static> {
    (style::FONT, style::px(size, width)).into_font()
}

/// A pixel length (at PNG width) scaled to `width`.
/// One panel of paired figures on a µs axis of its own: `x` the figures'
/// range, `y` rows without an axis, the grid light, ticks as fine as the
/// figures (the differences and the peers' charts).
pub(crate) fn figure_panel<'a, DB: DrawingBackend>(
    region: &'a DrawingArea<DB, Shift>,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let (w, _) = region.dim_in_pixel();
    let mut chart = ChartBuilder::on(region)
        .margin_left(px(40.0, w))
        .margin_right(px(40.0, w))
        .margin_top(px(6.0, w))
        .x_label_area_size(px(44.0, w))
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .light_line_style(style::GRID_COLOR.mix(0.4))
        .x_labels(8)
        .x_label_formatter(&|x| fine_tick(*x))
        .label_style(font(style::LABEL_PX * 0.85, w))
        .draw()?;
    Ok(chart)
}

pub(crate) fn px(length: f64, width: u32) -> u32 {
    style::px(length, width).round() as u32
}
