//! A/B deltas: each pass's `B − A` with its 95% CI, the control's drift,
//! and the rule's minimum effect as a band around zero, so a reader sees at
//! once whether the effect clears the rule in both orders.

use hopscope_analyze::experiment::Experiment;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{DrawResult, category_chart, legend, note, px};
use crate::style;

/// Title of the A/B chart.
pub(crate) const AB_TITLE: &str = "B − A per pass (µs per write, 95% CI)";

/// Draw the per-pass deltas of `e`.
pub(crate) fn ab_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, e: &Experiment) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let passes = &e.outcome.passes;
    if passes.is_empty() {
        return note(area, AB_TITLE, "No pass measured both arms.");
    }
    let (w, _) = area.dim_in_pixel();
    let band = e.rule.min_effect_us;
    let extent = passes
        .iter()
        .flat_map(|p| [p.delta_us.ci95[0], p.delta_us.ci95[1], p.control_us.map_or(0.0, |c| c.median)])
        .fold(band, |m, v| m.max(v.abs()))
        * 1.25;
    let labels: Vec<String> = passes.iter().map(|p| format!("pass {} ({})", p.pass, p.order)).collect();
    let caption = format!("{}: {}", e.name, AB_TITLE);
    let mut chart = category_chart(area, &caption, &labels, -extent..extent, "B − A, µs per write")?;
    let band_color = style::GRID_COLOR.mix(0.5);
    chart
        .draw_series([Rectangle::new(
            [(SegmentValue::Exact(0), -band), (SegmentValue::Last, band)],
            band_color.filled(),
        )])?
        .label(format!("below the rule's minimum effect (±{band} µs)"))
        .legend(move |(x, y)| Rectangle::new([(x, y - 8), (x + 20, y + 8)], band_color.filled()));
    chart.draw_series(LineSeries::new(
        [(SegmentValue::Exact(0), 0.0), (SegmentValue::Last, 0.0)],
        BLACK.stroke_width(2),
    ))?;
    let delta_color = style::LIBRARY_COLOR;
    chart
        .draw_series(passes.iter().enumerate().map(|(i, p)| {
            ErrorBar::new_vertical(
                SegmentValue::CenterOf(i as i32),
                p.delta_us.ci95[0],
                p.delta_us.median,
                p.delta_us.ci95[1],
                delta_color.stroke_width(px(4.0, w)),
                px(30.0, w),
            )
        }))?
        .label("B − A (median of paired rounds, 95% CI)")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], delta_color.stroke_width(4)));
    let control_color = style::BOUNDARY_COLOR;
    chart
        .draw_series(passes.iter().enumerate().filter_map(|(i, p)| {
            p.control_us.map(|c| {
                Cross::new((SegmentValue::CenterOf(i as i32), c.median), px(12.0, w), control_color.stroke_width(3))
            })
        }))?
        .label("control − A (harness drift)")
        .legend(move |(x, y)| Cross::new((x + 10, y), 8, control_color.stroke_width(3)));
    legend(&mut chart, SeriesLabelPosition::UpperRight, w)
}
