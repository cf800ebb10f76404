//! The merge chart: µs per merged change for every arm, cold import and
//! re-import side by side with their 95% CIs, ordered naive (and its
//! control), each step alone, tuned, so the gap and each step's part of it
//! read left to right.

use hopscope_analyze::merge::{Arm, MergeResult, Phase};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{DrawResult, category_chart, legend, note, px};
use crate::style;

/// Title of the merge chart.
pub(crate) const MERGE_TITLE: &str = "µs per merged change by arm (median over parts, 95% CI)";

/// The arms in reading order: naive and its control first, each step
/// alone, tuned last.
fn arms(r: &MergeResult) -> Vec<&str> {
    let place = |name: &str| match name.parse::<Arm>() {
        Ok(Arm::Naive) => 0,
        Ok(Arm::Control) => 1,
        Ok(Arm::Step(_)) | Err(_) => 2,
        Ok(Arm::Tuned) => 3,
    };
    let mut arms: Vec<&str> = r.arms.keys().map(String::as_str).collect();
    // Stable: steps keep their (alphabetical) order between the ends.
    arms.sort_by_key(|a| place(a));
    arms
}

/// A label short enough for nine arms side by side: a step's name reads as
/// words ("row memo"), the control as "control".
fn label(arm: &str) -> String {
    match arm.parse::<Arm>() {
        Ok(Arm::Control) => "control".to_owned(),
        Ok(Arm::Step(step)) if step == "cached_statements" => "cached".to_owned(),
        Ok(Arm::Step(step)) if step == "no_returning" => "no RETURNING".to_owned(),
        _ => arm.replace('_', " "),
    }
}

/// Draw the per-arm import costs of `r`.
pub(crate) fn merge_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, r: &MergeResult) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let arms = arms(r);
    if arms.is_empty() {
        return note(area, MERGE_TITLE, "No arm merged any change.");
    }
    let (w, _) = area.dim_in_pixel();
    let top =
        r.arms.values().flat_map(|phases| phases.values().map(|f| f.us_per_change.ci95[1])).fold(0.0, f64::max) * 1.15;
    let labels: Vec<String> = arms.iter().map(|a| label(a)).collect();
    let mut chart = category_chart(area, MERGE_TITLE, &labels, 0.0..top.max(1.0), "µs per merged change")?;
    // Two bars per arm: cold in the left half of its slot, re-import in the
    // right half; each with its CI as a thin bar over its middle. Margins
    // are in pixels, from the slot's approximate width.
    let slot = f64::from(w) * 0.9 / arms.len() as f64;
    let (gap, half) = (slot * 0.12, slot * 0.5);
    let whisker = (half - gap) / 2.0 - px(2.0, w) as f64;
    for (phase, color, left, label) in [
        (Phase::Cold.name(), style::LIBRARY_COLOR, true, "cold import"),
        (Phase::Again.name(), style::SQLITE_COLOR, false, "idempotent re-import (every change loses)"),
    ] {
        let figures: Vec<(i32, [f64; 3])> = arms
            .iter()
            .enumerate()
            .filter_map(|(i, arm)| {
                let s = r.arms.get(*arm)?.get(phase)?.us_per_change;
                Some((i as i32, [s.ci95[0], s.median, s.ci95[1]]))
            })
            .collect();
        let (near, far) = if left { (gap, half) } else { (half, gap) };
        chart
            .draw_series(figures.iter().map(|(i, [_, median, _])| {
                let mut bar = Rectangle::new(
                    [(SegmentValue::Exact(*i), 0.0), (SegmentValue::Exact(*i + 1), *median)],
                    color.mix(0.85).filled(),
                );
                bar.set_margin(0, 0, near as u32, far as u32);
                bar
            }))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 8), (x + 20, y + 8)], color.mix(0.85).filled()));
        chart.draw_series(figures.iter().map(|(i, [lo, _, hi])| {
            let mut ci =
                Rectangle::new([(SegmentValue::Exact(*i), *lo), (SegmentValue::Exact(*i + 1), *hi)], BLACK.filled());
            ci.set_margin(0, 0, (near + whisker) as u32, (far + whisker) as u32);
            ci
        }))?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight, w)
}
