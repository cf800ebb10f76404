//! Per-pass stability: every lane's block figures in the order they ran,
//! passes separated, so drift over the run shows as a slope or a step.

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{DrawResult, font, lane_names, legend, note, px};
use super::kind::ChartKind;
use crate::style::{self, CAPTION_PX, LABEL_PX};

/// Draw the block figures of every lane by round.
pub(crate) fn stability_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let samples_per_pass = d.lanes.values().flat_map(|l| l.blocks_us.iter().map(|b| b.sample + 1)).max().unwrap_or(0);
    let passes = d.lanes.values().flat_map(|l| l.blocks_us.iter().map(|b| b.pass + 1)).max().unwrap_or(0);
    if samples_per_pass == 0 {
        return note(area, ChartKind::Stability.title(), "No lane ran any block.");
    }
    let round = |pass: u32, sample: u32| f64::from(pass * samples_per_pass + sample);
    let values = || d.lanes.values().flat_map(|l| l.blocks_us.iter().map(|b| b.us_per_op));
    let (lo, hi) = (values().fold(f64::INFINITY, f64::min), values().fold(0.0, f64::max));
    let (w, _) = area.dim_in_pixel();
    let rounds = f64::from(passes * samples_per_pass);
    let mut chart = ChartBuilder::on(area)
        .caption(ChartKind::Stability.title(), font(CAPTION_PX, w))
        .margin(px(24.0, w))
        .x_label_area_size(px(80.0, w))
        .y_label_area_size(px(110.0, w))
        .build_cartesian_2d(-0.5..rounds - 0.5, super::frame::padded(0f64.max(lo), hi))?;
    chart
        .configure_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .x_desc(format!("round in run order ({passes} passes × {samples_per_pass} samples)"))
        .y_desc("µs per write (block)")
        .label_style(font(LABEL_PX, w))
        .axis_desc_style(font(LABEL_PX, w))
        .draw()?;
    let y_range = super::frame::padded(0f64.max(lo), hi);
    for pass in 1..passes {
        let x = f64::from(pass * samples_per_pass) - 0.5;
        chart.draw_series(DashedLineSeries::new(
            [(x, y_range.start), (x, y_range.end)],
            px(10.0, w),
            px(6.0, w),
            BLACK.mix(0.5).stroke_width(2),
        ))?;
    }
    // Rounds every lane ran slow in together: shaded, and said once.
    if let Some(slow) = &d.slow_rounds {
        let band = style::LIBRARY_COLOR.mix(0.12).filled();
        chart.draw_series(slow.rounds.iter().map(|[pass, sample]| {
            let x = round(*pass, *sample);
            Rectangle::new([(x - 0.5, y_range.start), (x + 0.5, y_range.end)], band)
        }))?;
        let every = slow.every.map_or(String::new(), |n| format!(", every {n} rounds"));
        let text = format!(
            "shaded: all lanes slow together ({} rounds{every}): shared, cause not recorded (a WAL checkpoint fits)",
            slow.rounds.len()
        );
        chart.draw_series(std::iter::once(Text::new(
            text,
            (-0.4, y_range.end),
            TextStyle::from(font(style::LEGEND_PX * 0.8, w)).pos(Pos::new(HPos::Left, VPos::Top)),
        )))?;
    }
    for (index, lane) in lane_names(d).into_iter().enumerate() {
        let color = style::lane_color(index);
        let points: Vec<(f64, f64)> =
            d.lanes[lane].blocks_us.iter().map(|b| (round(b.pass, b.sample), b.us_per_op)).collect();
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.mix(0.6).stroke_width(px(2.0, w))))?
            .label(lane.to_owned())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(3)));
        chart.draw_series(points.iter().map(|p| Circle::new(*p, px(4.0, w), color.filled())))?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight, w)
}
