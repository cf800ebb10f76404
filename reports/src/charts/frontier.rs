//! The keep-warm frontier: every setting of the sweep as a point of wall
//! time against CPU per write, one colour per placement; the parking
//! baselines are squares and the inline lane a triangle, so what a setting
//! buys and what it costs read off at once.

use hopscope_analyze::sweep::{SettingKind, SweepRow};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{Axes, DrawResult, font, legend, note, plain_chart, px};
use crate::style::{self, LEGEND_PX};

/// Title of the frontier chart.
pub(crate) const FRONTIER_TITLE: &str = "Keep-warm frontier: wall against CPU per write";

/// Draw the frontier of `rows`.
pub(crate) fn frontier_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, rows: &[SweepRow]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let points: Vec<(&SweepRow, f64)> = rows.iter().filter_map(|r| r.process_cpu_us.map(|c| (r, c))).collect();
    if points.is_empty() {
        return note(area, FRONTIER_TITLE, "The sweep recorded no CPU readings.");
    }
    let (w, _) = area.dim_in_pixel();
    let x_max = points.iter().map(|(r, _)| r.wall_us).fold(0.0, f64::max) * 1.12;
    let y_max = points.iter().map(|(_, c)| *c).fold(0.0, f64::max) * 1.12;
    let axes = Axes {
        x: 0f64..x_max,
        y: 0f64..y_max,
        x_desc: "wall µs per write (median of blocks)",
        y_desc: "process CPU µs per write",
    };
    let mut chart = plain_chart(area, Some(FRONTIER_TITLE), axes, w)?;
    let mut placements: Vec<&str> = points.iter().map(|(r, _)| r.placement.as_str()).collect();
    placements.dedup();
    for (i, placement) in placements.iter().enumerate() {
        let color = style::lane_color(i);
        let size = px(10.0, w) as i32;
        let mine: Vec<&(&SweepRow, f64)> = points.iter().filter(|(r, _)| r.placement == *placement).collect();
        chart
            .draw_series(
                mine.iter()
                    .filter(|(r, _)| r.kind == SettingKind::Waiting)
                    .map(|(r, c)| Circle::new((r.wall_us, *c), size, color.filled())),
            )?
            .label((*placement).to_owned())
            .legend(move |(x, y)| Circle::new((x + 10, y), 8, color.filled()));
        chart.draw_series(mine.iter().filter(|(r, _)| r.kind == SettingKind::Parking).map(|(r, c)| {
            EmptyElement::at((r.wall_us, *c)) + Rectangle::new([(-size, -size), (size, size)], BLACK.stroke_width(3))
        }))?;
        chart.draw_series(
            mine.iter().filter(|(r, _)| r.kind == SettingKind::Inline).map(|(r, c)| {
                EmptyElement::at((r.wall_us, *c)) + TriangleMarker::new((0, 0), size + 4, BLACK.filled())
            }),
        )?;
        chart.draw_series(
            mine.iter().map(|(r, c)| Text::new(format!(" {}", r.setting), (r.wall_us, *c), font(LEGEND_PX * 0.8, w))),
        )?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft, w)
}
