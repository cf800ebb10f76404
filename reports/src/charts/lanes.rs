//! Lanes side by side: µs per write for each lane, with the bootstrap 95%
//! CI of its median as a whisker.

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{DrawResult, category_chart, font, lane_names, note, px};
use super::kind::ChartKind;
use crate::style::{self, LEGEND_PX};

/// Draw one bar per lane that ran.
pub(crate) fn lanes_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let names = lane_names(d);
    let bars: Vec<(usize, &str, f64, [f64; 2])> = names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| d.lanes[*name].us_per_op.map(|s| (i, *name, s.median, s.ci95)))
        .collect();
    if bars.is_empty() {
        return note(area, ChartKind::Lanes.title(), "No lane ran any operation.");
    }
    let (w, _) = area.dim_in_pixel();
    let y_max = bars.iter().map(|b| b.3[1].max(b.2)).fold(0.0, f64::max) * 1.15;
    let labels: Vec<String> = bars.iter().map(|b| b.1.to_owned()).collect();
    let mut chart = category_chart(area, ChartKind::Lanes.title(), &labels, 0f64..y_max, "µs per write")?;
    let margin = px(40.0, w);
    chart.draw_series(bars.iter().enumerate().map(|(x, (lane, _, median, _))| {
        let mut bar = Rectangle::new(
            [(SegmentValue::Exact(x as i32), 0.0), (SegmentValue::Exact(x as i32 + 1), *median)],
            style::lane_color(*lane).mix(0.85).filled(),
        );
        bar.set_margin(0, 0, margin, margin);
        bar
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(x, (_, _, median, ci))| {
        ErrorBar::new_vertical(
            SegmentValue::CenterOf(x as i32),
            ci[0],
            *median,
            ci[1],
            BLACK.stroke_width(px(3.0, w)),
            px(24.0, w),
        )
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(x, (_, _, median, ci))| {
        Text::new(
            format!("{median:.2}"),
            (SegmentValue::CenterOf(x as i32), ci[1].max(*median) + y_max * 0.02),
            TextStyle::from(font(LEGEND_PX, w)).pos(Pos::new(HPos::Center, VPos::Bottom)),
        )
    }))?;
    Ok(())
}
