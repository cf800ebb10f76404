//! What every chart is drawn in, so the charts of one report look like one
//! family: the chart frames (caption, margins, label areas, a light mesh)
//! for numeric, category and row charts and figure panels; the note on an
//! empty chart and the legend; tick text, ranges, type and pixel sizes
//! scaled to the canvas; and the lanes' order that keeps each lane's colour.

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, SegmentedCoord};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::style;

/// What a chart function returns: plotters' errors, boxed, converted to
/// [`ReportError::Chart`] by the caller that knows the chart's name.
pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

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

/// A pixel length (at PNG width) scaled to `width`.
pub(crate) fn px(length: f64, width: u32) -> u32 {
    style::px(length, width).round() as u32
}
