//! Inside one merged change: for naive and tuned, cold and re-imported, the
//! statement-level slices stacked left to right (slice medians), so where
//! the naive path's time goes and what the tuned path kept read row by row.

use hopscope_analyze::merge::MergeResult;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{DrawResult, font, legend, note, px, row_chart, row_of};
use crate::style::{self, LEGEND_PX};

/// Title of the merge slices chart.
pub(crate) const MERGE_SLICES_TITLE: &str = "Inside one merged change: slices by statement (median µs)";

/// The rows drawn, top to bottom.
const ROWS: [&str; 4] = ["naive/cold", "tuned/cold", "naive/again", "tuned/again"];

/// Draw the statement-level slices of `r`.
pub(crate) fn merge_slices_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, r: &MergeResult) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let rows: Vec<&str> = ROWS.into_iter().filter(|lane| r.slices.get(*lane).is_some_and(|s| !s.is_empty())).collect();
    if rows.is_empty() {
        return note(area, MERGE_SLICES_TITLE, "No merged change carried marks: no slices to draw.");
    }
    // Slice names in the order they first appear (a cold change passes all
    // of them), so one name keeps one colour on every row.
    let mut names: Vec<&str> = Vec::new();
    for lane in &rows {
        for slice in &r.slices[*lane] {
            if !names.contains(&slice.name.as_str()) {
                names.push(&slice.name);
            }
        }
    }
    let color = |name: &str| style::lane_color(names.iter().position(|n| *n == name).unwrap_or(0));
    let totals: Vec<f64> =
        rows.iter().map(|lane| r.slices[*lane].iter().map(|s| s.median_us.max(0.0)).sum::<f64>()).collect();
    let x_max = totals.iter().copied().fold(0.0, f64::max).max(0.001) * 1.2;
    let (w, _) = area.dim_in_pixel();
    let labels: Vec<String> = rows.iter().map(|s| (*s).to_owned()).collect();
    let x_desc = "µs per merged change, cumulative (slice medians)";
    let mut chart = row_chart(area, MERGE_SLICES_TITLE, &labels, x_max, x_desc, 220.0, area.dim_in_pixel().0)?;
    let row = |i: usize| row_of(i, rows.len());
    let margin = px(14.0, w);
    for (i, lane) in rows.iter().enumerate() {
        let mut start = 0.0;
        let mut segments = Vec::new();
        for slice in &r.slices[*lane] {
            let end = start + slice.median_us.max(0.0);
            segments.push((start, end, color(&slice.name)));
            start = end;
        }
        chart.draw_series(segments.into_iter().map(|(x0, x1, c)| {
            let mut bar =
                Rectangle::new([(x0, SegmentValue::Exact(row(i))), (x1, SegmentValue::Exact(row(i) + 1))], c.filled());
            bar.set_margin(margin, margin, 0, 0);
            bar
        }))?;
        chart.draw_series(std::iter::once(Text::new(
            format!(" {:.2} µs", totals[i]),
            (totals[i], SegmentValue::CenterOf(row(i))),
            TextStyle::from(font(LEGEND_PX, w)).pos(Pos::new(HPos::Left, VPos::Center)),
        )))?;
    }
    for name in &names {
        let c = color(name);
        let size = px(10.0, w) as i32;
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<i32>)>>())?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - size), (x + 2 * size, y + size)], c.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight, w)
}
