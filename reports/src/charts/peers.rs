//! Where each peer loses: one panel per slice, each probed peer's slice
//! minus the reference writer's (marked the same way), paired by round, a
//! point at the median and the 95% CI as a whisker, zero dashed. The panels
//! share no scale: the way to a peer's thread can differ by microseconds
//! where SQLite's own slice differs by tens of nanoseconds.

use hopscope_analyze::{Decomposition, LaneSlices};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{DrawResult, figure_panel, font, note, px};
use super::kind::ChartKind;
use crate::style;

/// One peer's paired difference in one slice: its lane, median and CI.
type Row<'a> = (&'a str, f64, [f64; 2]);

/// One panel per slice the peers share with the reference, a row per peer.
fn panels(d: &Decomposition) -> Vec<(String, Vec<Row<'_>>)> {
    let peers: Vec<&LaneSlices> = d.peer_slices.iter().filter(|p| !p.versus_reference.is_empty()).collect();
    let mut names: Vec<&str> = Vec::new();
    for peer in &peers {
        for slice in &peer.versus_reference {
            if !names.contains(&slice.name.as_str()) {
                names.push(&slice.name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let rows = peers
                .iter()
                .filter_map(|p| {
                    let f = &p.versus_reference.iter().find(|s| s.name == name)?.difference;
                    Some((p.lane.as_str(), f.median, f.ci95))
                })
                .collect();
            (name.to_owned(), rows)
        })
        .collect()
}

/// Draw one panel per slice, a row per peer.
pub(crate) fn peers_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = ChartKind::Peers.title();
    let panels = panels(d);
    if panels.is_empty() {
        return note(area, title, "No probed peer was paired with a reference in this run.");
    }
    let reference = d.peer_slices.iter().find(|p| p.reference).map_or("the reference", |p| p.lane.as_str());
    let (w, _) = area.dim_in_pixel();
    let body = area.margin(px(14.0, w), 0, 0, 0).titled(title, font(style::CAPTION_PX, w))?;
    for (region, (name, rows)) in body.split_evenly((panels.len(), 1)).iter().zip(&panels) {
        let lo = rows.iter().map(|r| r.2[0].min(r.1)).fold(0.0f64, f64::min);
        let hi = rows.iter().map(|r| r.2[1].max(r.1)).fold(0.0f64, f64::max);
        let pad = ((hi - lo) * 0.08).max(1e-3);
        let n = rows.len() as f64;
        let mut chart = figure_panel(region, (lo - pad)..(hi + pad), 0f64..(n + 1.0))?;
        chart.draw_series(DashedLineSeries::new(
            [(0.0, 0.0), (0.0, n + 0.5)],
            px(10.0, w),
            px(6.0, w),
            BLACK.stroke_width(px(2.0, w).max(1)),
        ))?;
        for (i, (lane, median, ci)) in rows.iter().enumerate() {
            let y = n - i as f64;
            let color = style::lane_color(i + 1);
            chart.draw_series(std::iter::once(ErrorBar::new_horizontal(
                y,
                ci[0],
                *median,
                ci[1],
                color.stroke_width(px(4.0, w).max(1)),
                px(18.0, w),
            )))?;
            chart.draw_series(std::iter::once(Circle::new((*median, y), px(8.0, w), color.filled())))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("{lane} {median:+.3} µs"),
                (lo - pad, y + 0.35),
                TextStyle::from(font(style::LEGEND_PX * 0.9, w)).pos(Pos::new(HPos::Left, VPos::Center)),
            )))?;
        }
        chart.draw_series(std::iter::once(Text::new(
            format!("{name}: peer − {reference}, µs per write (paired, 95% CI)"),
            (lo - pad, n + 0.95),
            TextStyle::from(font(style::LEGEND_PX, w)).pos(Pos::new(HPos::Left, VPos::Top)),
        )))?;
    }
    Ok(())
}
