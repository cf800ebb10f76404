//! The causal profile: each slice's change (x: percent of its median, right
//! of zero faster, left of it slower) against the lane's throughput change
//! (y), one line per slice with each point's 95 % CI, the diagonal of a
//! lane whose time were that slice alone left out (a slice's line shows its
//! own scale in the table).

use hopscope_analyze::causal::CausalProfile;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{Axes, DrawResult, legend, note, plain_chart, px};
use crate::style;

/// Title of the causal profile chart.
pub(crate) const CAUSAL_TITLE: &str = "What a faster slice buys: causal profile";

/// Most slices drawn as lines (the rest stay in the table).
const MAX_LINES: usize = 10;

/// Draw the causal profile of `p`.
pub(crate) fn causal_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &CausalProfile) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    if p.slices.is_empty() {
        return note(area, CAUSAL_TITLE, "No slice was changed.");
    }
    let (w, _) = area.dim_in_pixel();
    let points = p.slices.iter().take(MAX_LINES).flat_map(|s| s.points.iter());
    let (mut x_lo, mut x_hi, mut y_lo, mut y_hi) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for q in points {
        x_lo = x_lo.min(q.change_pct);
        x_hi = x_hi.max(q.change_pct);
        y_lo = y_lo.min(q.throughput_pct.ci95[0]);
        y_hi = y_hi.max(q.throughput_pct.ci95[1]);
    }
    let pad = |lo: f64, hi: f64| ((hi - lo) * 0.08).max(0.5);
    let (xp, yp) = (pad(x_lo, x_hi), pad(y_lo, y_hi));
    let caption = format!("{CAUSAL_TITLE} · {} · {} caller(s)", p.lane, p.callers);
    let axes = Axes {
        x: x_lo - xp..x_hi + xp,
        y: y_lo - yp..y_hi + yp,
        x_desc: "slice change, % of its median (+ faster, virtual · − slower, real)",
        y_desc: "lane throughput change, %",
    };
    let mut chart = plain_chart(area, Some(&caption), axes, w)?;
    chart.draw_series(std::iter::once(PathElement::new(
        [(x_lo - xp, 0.0), (x_hi + xp, 0.0)],
        BLACK.mix(0.6).stroke_width(px(2.0, w)),
    )))?;
    for (i, s) in p.slices.iter().take(MAX_LINES).enumerate() {
        let color = style::lane_color(i);
        let mut line: Vec<(f64, f64)> = vec![(0.0, 0.0)];
        line.extend(s.points.iter().map(|q| (q.change_pct, q.throughput_pct.median)));
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(px(3.0, w))))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(3)));
        chart.draw_series(s.points.iter().map(|q| {
            let x = q.change_pct;
            ErrorBar::new_vertical(
                x,
                q.throughput_pct.ci95[0],
                q.throughput_pct.median,
                q.throughput_pct.ci95[1],
                color.stroke_width(px(2.0, w)),
                px(10.0, w),
            )
        }))?;
        chart.draw_series(s.points.iter().map(|q| {
            let style = if q.virtual_speedup { color.filled() } else { color.stroke_width(px(2.0, w)) };
            Circle::new((q.change_pct, q.throughput_pct.median), px(7.0, w), style)
        }))?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft, w)
}
