//! A batch sweep: each batching lane as a point of what one write waited
//! against the throughput the lane reached, the median and the 99th
//! percentile, labelled by lane, and the knee past which larger batches
//! bought little.

use hopscope_analyze::Decomposition;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{Axes, DrawResult, font, legend, plain_chart, px};
use crate::style::{self, LEGEND_PX};

/// Draw `d`'s batch sweep.
pub(crate) fn batching_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let Some(sweep) = &d.batch_sweep else { return Ok(()) };
    let (w, _) = area.dim_in_pixel();
    let points = &sweep.points;
    let x_max = points.iter().map(|p| p.ops_per_s / 1e3).fold(0.0, f64::max) * 1.15;
    let y_max = points.iter().map(|p| p.latency_p99_us).fold(0.0, f64::max) * 1.12;
    let axes = Axes {
        x: 0f64..x_max.max(1e-3),
        y: 0f64..y_max.max(1e-3),
        x_desc: "throughput, thousand writes per second (wall time, clean build)",
        y_desc: "one write's latency, µs (first mark to last)",
    };
    let mut chart = plain_chart(area, Some(super::kind::ChartKind::Batching.title()), axes, w)?;
    let size = px(9.0, w) as i32;
    let at = |p: &hopscope_analyze::batches::SweepPoint, y: f64| (p.ops_per_s / 1e3, y);
    let (median, tail) = (style::lane_color(0), style::lane_color(1));
    chart
        .draw_series(LineSeries::new(points.iter().map(|p| at(p, p.latency_p50_us)), median.stroke_width(2)))?
        .label("median")
        .legend(move |(x, y)| Circle::new((x + 10, y), 8, median.filled()));
    chart.draw_series(points.iter().map(|p| Circle::new(at(p, p.latency_p50_us), size, median.filled())))?;
    chart
        .draw_series(LineSeries::new(points.iter().map(|p| at(p, p.latency_p99_us)), tail.stroke_width(2)))?
        .label("p99")
        .legend(move |(x, y)| Circle::new((x + 10, y), 8, tail.filled()));
    chart.draw_series(points.iter().map(|p| Circle::new(at(p, p.latency_p99_us), size, tail.filled())))?;
    // Labels alternate below and above their points: settings that batch
    // alike sit close together at the high-throughput end.
    let (below, above) = (px(14.0, w) as i32, -(px(34.0, w) as i32));
    chart.draw_series(points.iter().enumerate().map(|(i, p)| {
        let label = format!("{} ({:.1} a batch)", p.lane.trim_end_matches("-probed"), p.batch_mean);
        let dy = if i % 2 == 0 { below } else { above };
        EmptyElement::at(at(p, p.latency_p50_us))
            + Text::new(label, (-(px(40.0, w) as i32), dy), font(LEGEND_PX * 0.8, w))
    }))?;
    if let Some(knee) = sweep.knee.and_then(|k| points.get(k)) {
        let ring = size + px(8.0, w) as i32;
        chart
            .draw_series(std::iter::once(Circle::new(at(knee, knee.latency_p50_us), ring, BLACK.stroke_width(3))))?
            .label("the knee")
            .legend(move |(x, y)| Circle::new((x + 10, y), 8, BLACK.stroke_width(3)));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft, w)
}
