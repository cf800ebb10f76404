//! CPU against wall: each lane's process CPU µs per write against its wall
//! µs per write. Points above the diagonal burn more than one core's worth
//! of time per write (two threads busy at once); points below it wait.

use hopscope_analyze::Decomposition;
use hopscope_probe::ThreadRole;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{Axes, DrawResult, font, lane_names, legend, note, plain_chart, px};
use super::kind::ChartKind;
use crate::style::{self, LEGEND_PX};

/// Draw one point per lane with both figures.
pub(crate) fn cpu_vs_wall_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let points: Vec<(usize, &str, f64, f64)> = lane_names(d)
        .into_iter()
        .enumerate()
        .filter_map(|(i, lane)| {
            let wall = d.lanes[lane].us_per_op?.median;
            let cpu = *d.cpu_us_per_op.get(lane)?.get(&ThreadRole::Process.to_string())?;
            Some((i, lane, wall, cpu))
        })
        .collect();
    if points.is_empty() {
        return note(area, ChartKind::CpuVsWall.title(), "The run recorded no CPU readings.");
    }
    let (w, _) = area.dim_in_pixel();
    let top = points.iter().map(|p| p.2.max(p.3)).fold(0.0, f64::max) * 1.15;
    let axes = Axes {
        x: 0f64..top,
        y: 0f64..top,
        x_desc: "wall µs per write (median of blocks)",
        y_desc: "process CPU µs per write",
    };
    let mut chart = plain_chart(area, Some(ChartKind::CpuVsWall.title()), axes, w)?;
    chart
        .draw_series(DashedLineSeries::new([(0.0, 0.0), (top, top)], px(10.0, w), px(6.0, w), BLACK.stroke_width(2)))?
        .label("CPU = wall (one core busy the whole time)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], BLACK.stroke_width(2)));
    for (index, lane, wall, cpu) in &points {
        let color = style::lane_color(*index);
        chart
            .draw_series([Circle::new((*wall, *cpu), px(12.0, w), color.filled())])?
            .label(format!("{lane}: {wall:.2} µs wall, {cpu:.2} µs CPU"))
            .legend(move |(x, y)| Circle::new((x + 10, y), 8, color.filled()));
        chart.draw_series([Text::new(format!("  {lane}"), (*wall, *cpu), font(LEGEND_PX, w))])?;
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight, w)
}
