//! Distributions: the empirical CDF of each lane's block figures on one
//! shared axis (optionally logarithmic), with p50 and p99 marked.

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::frame::{DrawResult, font, lane_names, legend, note, px};
use super::kind::ChartKind;
use crate::style::{self, CAPTION_PX, LABEL_PX};

/// One lane's sorted block figures.
struct Curve<'a> {
    lane: &'a str,
    index: usize,
    sorted: Vec<f64>,
}

impl Curve<'_> {
    fn quantile(&self, q: f64) -> f64 {
        let pos = q * (self.sorted.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        self.sorted[lo] + (self.sorted[hi] - self.sorted[lo]) * (pos - lo as f64)
    }
}

/// Draw the ECDFs of every lane that ran.
pub(crate) fn distributions_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &Decomposition,
    log_x: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let curves: Vec<Curve> = lane_names(d)
        .into_iter()
        .enumerate()
        .filter_map(|(index, lane)| {
            let mut sorted: Vec<f64> =
                d.lanes[lane].blocks_us.iter().map(|b| b.us_per_op).filter(|v| v.is_finite()).collect();
            sorted.sort_by(f64::total_cmp);
            (!sorted.is_empty()).then_some(Curve { lane, index, sorted })
        })
        .collect();
    if curves.is_empty() {
        return note(area, ChartKind::Distributions.title(), "No lane ran any block.");
    }
    let min = curves.iter().map(|c| c.sorted[0]).fold(f64::INFINITY, f64::min).max(1e-3);
    let max = curves.iter().map(|c| c.sorted[c.sorted.len() - 1]).fold(0.0, f64::max).max(min * 1.01);
    if log_x {
        draw(area, curves, (min * 0.9..max * 1.1).log_scale(), "µs per write (log scale)")
    } else {
        draw(area, curves, super::frame::padded(0f64.max(min - (max - min) * 0.05), max), "µs per write")
    }
}

fn draw<DB, X>(area: &DrawingArea<DB, Shift>, curves: Vec<Curve>, x: X, x_desc: &str) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let (w, _) = area.dim_in_pixel();
    let mut chart = ChartBuilder::on(area)
        .caption(ChartKind::Distributions.title(), font(CAPTION_PX, w))
        .margin(px(24.0, w))
        .x_label_area_size(px(80.0, w))
        .y_label_area_size(px(110.0, w))
        .build_cartesian_2d(x, RangedCoordf64::from(0f64..1.02))?;
    chart
        .configure_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .x_desc(x_desc)
        .y_desc("share of blocks ≤ x")
        .label_style(font(LABEL_PX, w))
        .axis_desc_style(font(LABEL_PX, w))
        .draw()?;
    let dot = px(7.0, w);
    for curve in &curves {
        let color = style::lane_color(curve.index);
        let n = curve.sorted.len() as f64;
        let steps = curve.sorted.iter().enumerate().flat_map(|(k, v)| [(*v, k as f64 / n), (*v, (k + 1) as f64 / n)]);
        let (p50, p99) = (curve.quantile(0.5), curve.quantile(0.99));
        chart
            .draw_series(LineSeries::new(steps, color.stroke_width(px(3.0, w))))?
            .label(format!("{}: p50 {p50:.2} · p99 {p99:.2} µs", curve.lane))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(3)));
        chart.draw_series([(p50, 0.5), (p99, 0.99)].map(|point| Circle::new(point, dot, color.filled())))?;
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight, w)
}
