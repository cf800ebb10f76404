//! The paired differences — hop, boundary (and its switches and machinery
//! when the run has a handoff lane), library and the observer effect — each in its own panel on its own scale, a point at the median and the
//! 95% CI as a whisker. These figures are the point of a decomposition, and
//! a bar chart from zero hides them: a 0.3 µs library figure beside a 25 µs
//! lane is a hairline. Zero is drawn whenever it is near enough to matter,
//! so a CI that touches it can be seen to.

use hopscope_analyze::{Decomposition, Role};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{DrawResult, figure_panel, font, note, px};
use super::kind::ChartKind;
use crate::style;

/// One panel: what the figure is, its median and CI, and its colour.
struct Panel {
    label: String,
    median: f64,
    ci: [f64; 2],
    color: RGBColor,
}

fn panels(d: &Decomposition) -> Vec<Panel> {
    let mut panels = Vec::new();
    if let Some(x) = &d.derived {
        let lane = |role: Role| x.lane(role).unwrap_or(role.name()).to_owned();
        let (subject, floor, baseline) = (lane(Role::Subject), lane(Role::Floor), lane(Role::Baseline));
        let handoff = lane(Role::Handoff);
        // The boundary's two parts right under it, in its colour, lighter.
        let part = RGBColor(165, 165, 165);
        let figures = [
            ("hop", format!("{subject} − {baseline}"), Some(&x.hop_us), RGBColor(40, 40, 40)),
            ("boundary", format!("{floor} − {baseline}"), x.boundary_us.as_ref(), style::BOUNDARY_COLOR),
            ("· switches", format!("{handoff}: a bare turn to a thread and back"), x.switches_us.as_ref(), part),
            ("· machinery", format!("{floor} − {baseline} − {handoff}"), x.machinery_us.as_ref(), part),
            ("library", format!("{subject} − {floor}"), x.library_us.as_ref(), style::LIBRARY_COLOR),
        ];
        for (name, definition, figure, color) in figures {
            if let Some(f) = figure {
                panels.push(Panel {
                    label: format!("{name} ({definition}, {} rounds)", f.rounds),
                    median: f.median,
                    ci: f.ci95,
                    color,
                });
            }
        }
    }
    if let Some(o) = &d.observer_effect {
        panels.push(Panel {
            label: "observer effect (probed − clean writer)".to_owned(),
            median: o.delta_us,
            ci: o.delta_ci95,
            color: style::TAIL_COLOR,
        });
    }
    panels
}

/// The x range of a panel: the CI padded by a quarter of its width, widened
/// to take in zero when zero lies within one CI width of it.
fn x_range(p: &Panel) -> (f64, f64) {
    let (lo, hi) = (p.ci[0].min(p.median), p.ci[1].max(p.median));
    let width = (hi - lo).max(0.02 * hi.abs().max(lo.abs())).max(1e-3);
    let (mut x0, mut x1) = (lo - width * 0.25, hi + width * 0.25);
    if x0 > 0.0 && lo <= width {
        x0 = -width * 0.1;
    }
    if x1 < 0.0 && -hi <= width {
        x1 = width * 0.1;
    }
    (x0, x1)
}

/// Draw one panel per figure the run has.
pub(crate) fn differences_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = ChartKind::Differences.title();
    let panels = panels(d);
    if panels.is_empty() {
        return note(area, title, "This run has no lane arithmetic and no observer effect: nothing was paired.");
    }
    let (w, _) = area.dim_in_pixel();
    let body = area.margin(px(14.0, w), 0, 0, 0).titled(title, font(style::CAPTION_PX, w))?;
    for (region, p) in body.split_evenly((panels.len(), 1)).iter().zip(&panels) {
        let (x0, x1) = x_range(p);
        let mut chart = figure_panel(region, x0..x1, 0f64..1f64)?;
        if x0 <= 0.0 && x1 >= 0.0 {
            chart.draw_series(DashedLineSeries::new(
                [(0.0, 0.0), (0.0, 0.7)],
                px(10.0, w),
                px(6.0, w),
                BLACK.stroke_width(px(2.0, w).max(1)),
            ))?;
        }
        let y = 0.38;
        chart.draw_series(std::iter::once(ErrorBar::new_horizontal(
            y,
            p.ci[0],
            p.median,
            p.ci[1],
            p.color.stroke_width(px(4.0, w).max(1)),
            px(26.0, w),
        )))?;
        chart.draw_series(std::iter::once(Circle::new((p.median, y), px(9.0, w), p.color.filled())))?;
        let zero = if p.ci[0] > 0.0 || p.ci[1] < 0.0 { "CI excludes 0" } else { "CI includes 0" };
        let text = format!("{}: {:.3} µs (95% CI {:.3}…{:.3}) · {zero}", p.label, p.median, p.ci[0], p.ci[1]);
        chart.draw_series(std::iter::once(Text::new(
            text,
            (x0, 0.97),
            TextStyle::from(font(style::LEGEND_PX, w)).pos(Pos::new(HPos::Left, VPos::Top)),
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(median: f64, ci: [f64; 2]) -> Panel {
        Panel { label: String::new(), median, ci, color: BLACK }
    }

    #[test]
    fn a_panel_shows_its_ci_and_zero_when_zero_is_near() {
        // 0.87 µs, CI 0.31…1.41: zero is within one CI width, so in view.
        let (x0, x1) = x_range(&panel(0.87, [0.31, 1.41]));
        assert!(x0 <= 0.0 && x1 >= 1.41);
        // 8.2 µs, CI 7.2…10.1: zero is far; the panel zooms on the CI.
        let (x0, x1) = x_range(&panel(8.2, [7.2, 10.1]));
        assert!(x0 > 6.0 && x0 < 7.2 && x1 > 10.1 && x1 < 11.0, "{x0}…{x1}");
        // A negative difference near zero keeps zero too.
        let (x0, x1) = x_range(&panel(-0.2, [-0.4, -0.05]));
        assert!(x0 < -0.4 && x1 >= 0.0);
        // A zero-width CI still gets a range.
        let (x0, x1) = x_range(&panel(0.0, [0.0, 0.0]));
        assert!(x0 < x1);
    }
}
