//! Lanes side by side: µs per write for each lane, with the bootstrap 95%
//! CI of its median as a whisker.

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ChartKind, DrawResult, font, lane_names, note, px};
use crate::style::{self, CAPTION_PX, LABEL_PX, LEGEND_PX};

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
    let n = bars.len() as i32;
    let y_max = bars.iter().map(|b| b.3[1].max(b.2)).fold(0.0, f64::max) * 1.15;
    let labels: Vec<&str> = bars.iter().map(|b| b.1).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(ChartKind::Lanes.title(), font(CAPTION_PX, w))
        .margin(px(24.0, w))
        .x_label_area_size(px(70.0, w))
        .y_label_area_size(px(110.0, w))
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .x_labels(labels.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).map(|s| (*s).to_owned()).unwrap_or_default(),
            _ => String::new(),
        })
        .y_desc("µs per write")
        .label_style(font(LABEL_PX, w))
        .axis_desc_style(font(LABEL_PX, w))
        .draw()?;
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
