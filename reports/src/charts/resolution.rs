//! The instrument's resolution: detection rate by injected size (left), and
//! estimated against injected size with the ideal diagonal (right).

use hopscope_analyze::resolution::Resolution;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{Axes, DrawResult, font, legend, note, plain_chart, px};
use crate::style::{self, CAPTION_PX};

/// Title of the resolution chart.
pub(crate) const RESOLUTION_TITLE: &str = "Resolution: detection and estimate by injected delay";

/// Draw both panels for `r`.
pub(crate) fn resolution_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, r: &Resolution) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    if r.deltas.is_empty() {
        return note(area, RESOLUTION_TITLE, "No injected size was run.");
    }
    let (w, _) = area.dim_in_pixel();
    let area = area.margin(px(16.0, w), 0, 0, 0);
    let titled = area.titled(&format!("{RESOLUTION_TITLE} ({})", r.slice), font(CAPTION_PX, w))?;
    let (left, right) = titled.split_horizontally(w / 2);
    let max_ns = r.deltas.iter().map(|d| d.injected_ns as f64).fold(1.0, f64::max);
    let x_range = -max_ns * 0.05..max_ns * 1.08;

    let axes = Axes {
        x: x_range.clone(),
        y: 0f64..105.0,
        x_desc: "injected delay, ns per write",
        y_desc: "repeats detecting a slowdown, %",
    };
    let mut detection = plain_chart(&left, None, axes, w)?;
    let rate: Vec<(f64, f64)> = r.deltas.iter().map(|d| (d.injected_ns as f64, d.detection_rate * 100.0)).collect();
    let color = style::LIBRARY_COLOR;
    detection
        .draw_series(LineSeries::new(rate.iter().copied(), color.stroke_width(px(3.0, w))))?
        .label("detection rate (at 0 ns: false positives)")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(3)));
    detection.draw_series(rate.iter().map(|p| Circle::new(*p, px(8.0, w), color.filled())))?;
    detection.draw_series(DashedLineSeries::new(
        [(x_range.start, 95.0), (x_range.end, 95.0)],
        px(10.0, w),
        px(6.0, w),
        BLACK.mix(0.5).stroke_width(2),
    ))?;
    legend(&mut detection, SeriesLabelPosition::LowerRight, w)?;

    let top = r.deltas.iter().map(|d| d.estimated_ns).fold(max_ns, f64::max) * 1.1;
    let axes = Axes {
        x: x_range.clone(),
        y: r.deltas.iter().map(|d| d.estimated_ns).fold(0.0, f64::min) - top * 0.1..top,
        x_desc: "injected delay, ns per write",
        y_desc: "estimated, ns per write",
    };
    let mut estimate = plain_chart(&right, None, axes, w)?;
    estimate
        .draw_series(DashedLineSeries::new(
            [(0.0, 0.0), (max_ns, max_ns)],
            px(10.0, w),
            px(6.0, w),
            BLACK.stroke_width(2),
        ))?
        .label("estimate = injected")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], BLACK.stroke_width(2)));
    let dot = style::SQLITE_COLOR;
    estimate
        .draw_series(
            r.deltas.iter().map(|d| Circle::new((d.injected_ns as f64, d.estimated_ns), px(9.0, w), dot.filled())),
        )?
        .label("median estimate over repeats")
        .legend(move |(x, y)| Circle::new((x + 10, y), 8, dot.filled()));
    legend(&mut estimate, SeriesLabelPosition::UpperLeft, w)
}
