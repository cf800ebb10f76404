//! The slice waterfall: each slice of the probed lane as a bar starting
//! where the previous one ended, coloured by who owns it, with the inline,
//! floor and writer lane figures as reference lines, so `boundary` (floor −
//! inline) and `library` (writer − floor) show as lengths.

use hopscope_analyze::slices::Owner;
use hopscope_analyze::{Decomposition, Role};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ChartKind, DrawResult, font, lane_names, legend, note, px, row_chart, row_of};
use crate::style::{self, LEGEND_PX};

/// Draw the waterfall of `d.slices`.
pub(crate) fn waterfall_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if d.slices.is_empty() {
        return note(area, ChartKind::Waterfall.title(), "No probed lane in this run: no slices to draw.");
    }
    let (w, _) = area.dim_in_pixel();
    let n = d.slices.len() as i32;
    let mut bars = Vec::with_capacity(d.slices.len());
    let mut end = 0.0;
    for slice in &d.slices {
        if slice.on_path {
            let start = end;
            end += slice.median_us.max(0.0);
            bars.push((start, end, slice));
        } else {
            // A tail beside the path starts where its first hop was marked
            // and does not push the path on: the caller already runs.
            let from = slice.name.split('→').next().unwrap_or_default();
            let start = bars
                .iter()
                .find(|(_, _, s)| s.on_path && s.name.rsplit('→').next() == Some(from))
                .map_or(end, |(_, x1, _)| *x1);
            bars.push((start, start + slice.median_us.max(0.0), slice));
        }
    }
    let names = lane_names(d);
    let references: Vec<(&str, f64, RGBColor)> = [Role::Baseline, Role::Floor, Role::Subject]
        .into_iter()
        .filter_map(|role| {
            let lane = d.derived.as_ref()?.lane(role)?;
            let median = d.lanes.get(lane)?.us_per_op?.median;
            let index = names.iter().position(|n| *n == lane).unwrap_or(0);
            Some((lane, median, style::lane_color(index)))
        })
        .collect();
    let x_max = references.iter().map(|r| r.1).chain(bars.iter().map(|b| b.1)).fold(end, f64::max) * 1.15;
    let labels: Vec<String> = d
        .slices
        .iter()
        .map(|s| if s.on_path { s.name.clone() } else { format!("{} (beside the path)", s.name) })
        .collect();

    // Name the lane sliced: hopscope's probed writer, or a program's own.
    let caption = format!("Where one write goes: slices of {}", d.insitu_lane.as_deref().unwrap_or("the probed lane"));
    let mut chart = row_chart(area, &caption, &labels, x_max, "µs per write, cumulative (slice medians)", 280.0)?;
    let row = |i: usize| row_of(i, labels.len());

    let margin = px(10.0, w);
    chart.draw_series(bars.iter().enumerate().map(|(i, (x0, x1, slice))| {
        let mut bar = Rectangle::new(
            [(*x0, SegmentValue::Exact(row(i))), (*x1, SegmentValue::Exact(row(i) + 1))],
            owner_color(slice.owner).filled(),
        );
        bar.set_margin(margin, margin, 0, 0);
        bar
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, x1, slice))| {
        Text::new(
            if slice.within_two_grains {
                " ≤ 2 clock grains".to_owned()
            } else {
                format!(" {:.2} µs", slice.median_us)
            },
            (*x1, SegmentValue::CenterOf(row(i))),
            TextStyle::from(font(LEGEND_PX, w)).pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))?;
    let owners: Vec<Owner> = [Owner::Library, Owner::Tail, Owner::Sqlite, Owner::Boundary]
        .into_iter()
        .filter(|o| d.slices.iter().any(|s| s.owner == *o))
        .collect();
    for owner in owners {
        let color = owner_color(owner);
        let size = px(10.0, w) as i32;
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<i32>)>>())?
            .label(owner_label(owner))
            .legend(move |(x, y)| Rectangle::new([(x, y - size), (x + 2 * size, y + size)], color.filled()));
    }
    for (lane, median, color) in references {
        chart
            .draw_series(DashedLineSeries::new(
                [(median, SegmentValue::Exact(0)), (median, SegmentValue::Exact(n))],
                px(12.0, w),
                px(6.0, w),
                color.stroke_width(px(3.0, w)),
            ))?
            .label(format!("{lane}: {median:.2} µs/write"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(3)));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight, w)
}

fn owner_color(owner: Owner) -> RGBColor {
    match owner {
        Owner::Library => style::LIBRARY_COLOR,
        Owner::Sqlite => style::SQLITE_COLOR,
        Owner::Boundary => style::BOUNDARY_COLOR,
        Owner::Tail => style::TAIL_COLOR,
    }
}

fn owner_label(owner: Owner) -> &'static str {
    match owner {
        Owner::Library => "library (writer's own work)",
        Owner::Sqlite => "SQLite (execute)",
        Owner::Boundary => "thread boundary (wake, transport)",
        Owner::Tail => "tails (a thread's closing work)",
    }
}
