//! The slice waterfall: each slice of the probed lane as a bar starting
//! where the previous one ended, coloured by who owns it, with its CI as a
//! whisker and the inline, floor and writer lane figures as reference
//! lines, so `boundary` (floor − inline) and `library` (writer − floor)
//! show as lengths. The time between marks (what no slice covers) is the
//! last bar, so the bars reach the lane's whole operation. Slices too
//! small to see at that scale are drawn again, zoomed, beside it.

use hopscope_analyze::slices::{Owner, SliceFigures};
use hopscope_analyze::{Decomposition, Role};
use hopscope_probe::SliceName;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{DrawResult, RowChart, fine_tick, font, lane_names, note, px, row_chart, row_of};
use super::kind::ChartKind;
use crate::style::{self, LEGEND_PX};

/// A slice narrower than this share of the full scale is drawn again in
/// the zoomed panel: at full scale it is a hairline (the writer's own
/// steps are tens of nanoseconds beside a 15 µs execute).
const ZOOM_BELOW: f64 = 0.03;

/// One bar: where it starts, the slice, and whether it is zoomed.
struct Bar<'a> {
    start: f64,
    slice: &'a SliceFigures,
    zoomed: bool,
}

/// Where each slice starts: on the path, where the previous one ended; a
/// tail beside the path, where its first hop was marked (the caller
/// already runs on).
/// `between`, the time between marks, comes last, on the path.
fn bars<'a>(d: &'a Decomposition, between: Option<&'a SliceFigures>) -> (Vec<Bar<'a>>, f64) {
    let mut bars: Vec<Bar<'a>> = Vec::with_capacity(d.slices.len() + 1);
    let mut end = 0.0;
    for slice in d.slices.iter().chain(between) {
        let start = if slice.on_path {
            let start = end;
            end += slice.median_us.max(0.0);
            start
        } else {
            // A tail starts where the path slice that ends at its first hop
            // ends.
            let from = slice.name.parse::<SliceName>().map(|s| s.from).unwrap_or_default();
            bars.iter()
                .find(|b| b.slice.on_path && SliceName::ends_at(&b.slice.name, &from))
                .map_or(end, |b| b.start + b.slice.median_us.max(0.0))
        };
        bars.push(Bar { start, slice, zoomed: false });
    }
    (bars, end)
}

/// A lane's reference line on the full scale: its name, its µs per write
/// and its colour.
type Reference<'a> = (&'a str, f64, RGBColor);

/// Draw the waterfall of `d.slices`: the full scale on the left with the
/// lanes as reference lines, the slices too small to see zoomed on the
/// right, and the legend beneath the zoom, off the reference lines.
pub(crate) fn waterfall_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Decomposition) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if d.slices.is_empty() {
        return note(area, ChartKind::Waterfall.title(), "No probed lane in this run: no slices to draw.");
    }
    let (w, h) = area.dim_in_pixel();
    let between = d.coverage.as_ref().map(between_marks);
    let (mut bars, end) = bars(d, between.as_ref());
    // With several callers at once a lane's wall time per write is a
    // throughput and the slices one write's latency: no line of one on
    // the scale of the other.
    let several = several_callers(d);
    let references = if several.is_none() { references(d) } else { Vec::new() };
    let x_max = full_scale(&mut bars, &references, end);
    let (left, right) = area.split_horizontally((f64::from(w) * 0.63) as i32);
    full_panel(&left, d, &bars, &references, x_max, w)?;
    let (zoom, key) = right.split_vertically((f64::from(h) * 0.62) as i32);
    zoomed_panel(&zoom, d, &bars, w)?;
    legend_panel(&key, d, &references, several, w)
}

/// The baseline's, the floor's and the subject's lane figures, each in its
/// lane's colour, for the lanes the run has.
fn references(d: &Decomposition) -> Vec<Reference<'_>> {
    let names = lane_names(d);
    [Role::Baseline, Role::Floor, Role::Subject]
        .into_iter()
        .filter_map(|role| {
            let lane = d.derived.as_ref()?.lane(role)?;
            let median = d.lanes.get(lane)?.us_per_op?.median;
            let index = names.iter().position(|n| *n == lane).unwrap_or(0);
            Some((lane, median, style::lane_color(index)))
        })
        .collect()
}

/// The full scale's reach: past the path's `end`, every bar's whisker and
/// every reference line, with room for the figures; marks the bars too
/// small to see at that scale as zoomed.
fn full_scale(bars: &mut [Bar<'_>], references: &[Reference<'_>], end: f64) -> f64 {
    let reach = |b: &Bar<'_>| b.start + b.slice.ci95[1].max(b.slice.median_us).max(0.0);
    let x_max = references.iter().map(|r| r.1).chain(bars.iter().map(reach)).fold(end, f64::max).max(1e-3) * 1.12;
    for bar in bars {
        bar.zoomed = bar.slice.ci95[1].max(bar.slice.median_us) < ZOOM_BELOW * x_max;
    }
    x_max
}

/// The full-scale panel: a row per slice, the lanes' reference lines
/// across them, and the bars.
fn full_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &Decomposition,
    bars: &[Bar<'_>],
    references: &[Reference<'_>],
    x_max: f64,
    w: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let labels: Vec<String> = bars
        .iter()
        .map(|b| if b.slice.on_path { b.slice.name.clone() } else { format!("{} (beside the path)", b.slice.name) })
        .collect();
    // Name the lane sliced: hopscope's probed writer, or a program's own.
    let caption = format!("Where one write goes: slices of {}", d.insitu_lane.as_deref().unwrap_or("the probed lane"));
    let mut chart = row_chart(area, &caption, &labels, x_max, "µs per write, cumulative (median, 95% CI)", 340.0, w)?;
    let n = labels.len() as i32;
    for (_, median, color) in references {
        chart.draw_series(DashedLineSeries::new(
            [(*median, SegmentValue::Exact(0)), (*median, SegmentValue::Exact(n))],
            px(12.0, w),
            px(6.0, w),
            color.stroke_width(px(3.0, w)),
        ))?;
    }
    full_bars(&mut chart, bars, w)
}

/// Each slice's bar from where the previous one ended, its whisker (unless
/// zoomed) and its figure.
fn full_bars<DB: DrawingBackend>(chart: &mut RowChart<'_, DB>, bars: &[Bar<'_>], w: u32) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let row = |i: usize| row_of(i, bars.len());
    let margin = px(10.0, w);
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let mut bar = Rectangle::new(
            [
                (b.start, SegmentValue::Exact(row(i))),
                (b.start + b.slice.median_us.max(0.0), SegmentValue::Exact(row(i) + 1)),
            ],
            owner_color(b.slice.owner).filled(),
        );
        bar.set_margin(margin, margin, 0, 0);
        bar
    }))?;
    chart.draw_series(bars.iter().enumerate().filter(|(_, b)| !b.zoomed).map(|(i, b)| {
        ErrorBar::new_horizontal(
            SegmentValue::CenterOf(row(i)),
            b.start + b.slice.ci95[0],
            b.start + b.slice.median_us,
            b.start + b.slice.ci95[1],
            BLACK.stroke_width(px(2.0, w).max(1)),
            px(14.0, w),
        )
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let text = if b.zoomed { " → zoomed".to_owned() } else { format!(" {:.2} µs", b.slice.median_us) };
        Text::new(
            text,
            (b.start + b.slice.ci95[1].max(b.slice.median_us).max(0.0), SegmentValue::CenterOf(row(i))),
            TextStyle::from(font(LEGEND_PX, w)).pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))?;
    Ok(())
}

/// The callers of the sliced lane, when it ran more than one at once.
fn several_callers(d: &Decomposition) -> Option<u32> {
    d.warnings.iter().filter_map(|w| w.typed()).find_map(|w| match w {
        hopscope_analyze::warning::Warning::SeveralCallers { lane, callers }
            if d.insitu_lane.as_ref() == Some(lane) =>
        {
            Some(*callers)
        }
        _ => None,
    })
}

/// The slices too small to see at full scale, each from zero on a scale of
/// their own, with their CIs and figures.
fn zoomed_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &Decomposition,
    bars: &[Bar<'_>],
    w: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let small: Vec<&Bar<'_>> = bars.iter().filter(|b| b.zoomed).collect();
    if small.is_empty() {
        return Ok(());
    }
    let x_max = small.iter().map(|b| b.slice.ci95[1].max(b.slice.median_us)).fold(0.0, f64::max).max(1e-3) * 1.6;
    let labels: Vec<String> = small.iter().map(|b| b.slice.name.clone()).collect();
    let caption = "Small slices, zoomed (median, 95% CI)";
    let mut chart = zoom_chart(area, caption, &labels, x_max, w)?;
    let row = |i: usize| row_of(i, labels.len());
    let margin = px(8.0, w);
    chart.draw_series(small.iter().enumerate().map(|(i, b)| {
        let mut bar = Rectangle::new(
            [(0.0, SegmentValue::Exact(row(i))), (b.slice.median_us.max(0.0), SegmentValue::Exact(row(i) + 1))],
            owner_color(b.slice.owner).filled(),
        );
        bar.set_margin(margin, margin, 0, 0);
        bar
    }))?;
    chart.draw_series(small.iter().enumerate().map(|(i, b)| {
        ErrorBar::new_horizontal(
            SegmentValue::CenterOf(row(i)),
            b.slice.ci95[0],
            b.slice.median_us,
            b.slice.ci95[1],
            BLACK.stroke_width(px(2.0, w).max(1)),
            px(12.0, w),
        )
    }))?;
    let grain = d.clock.grain_ns();
    chart.draw_series(small.iter().enumerate().map(|(i, b)| {
        let text = if b.slice.within_two_grains {
            format!(" ≤ 2 grains{}", grain.map_or(String::new(), |g| format!(" ({:.0} ns)", 2.0 * g)))
        } else {
            format!(" {:.0} ns", b.slice.median_us * 1_000.0)
        };
        Text::new(
            text,
            (b.slice.ci95[1].max(b.slice.median_us).max(0.0), SegmentValue::CenterOf(row(i))),
            TextStyle::from(font(LEGEND_PX * 0.85, w)).pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))?;
    Ok(())
}

/// A row chart for the zoomed panel: smaller type and a µs axis in fine steps.
fn zoom_chart<'a, DB: DrawingBackend + 'a>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    labels: &[String],
    x_max: f64,
    w: u32,
) -> Result<RowChart<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let n = labels.len() as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, font(style::LABEL_PX, w))
        .margin(px(16.0, w))
        .x_label_area_size(px(50.0, w))
        .y_label_area_size(px(210.0, w))
        .build_cartesian_2d(0f64..x_max, (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(style::GRID_COLOR.mix(0.5))
        .x_labels(5)
        .x_label_formatter(&|x| fine_tick(*x))
        .y_labels(labels.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(y) => labels.get((n - 1 - *y) as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc("µs")
        .label_style(font(LEGEND_PX * 0.8, w))
        .axis_desc_style(font(LEGEND_PX * 0.8, w))
        .draw()?;
    Ok(chart)
}

/// Who owns each colour, and the lanes' reference lines, in a panel of
/// their own so no key covers a line or a bar.
fn legend_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &Decomposition,
    references: &[Reference<'_>],
    several: Option<u32>,
    w: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let size = px(LEGEND_PX * 0.9, w) as i32;
    let step = size * 3 / 2;
    let text = TextStyle::from(font(LEGEND_PX * 0.85, w)).pos(Pos::new(HPos::Left, VPos::Center));
    let (x, mut y) = (px(24.0, w) as i32, px(16.0, w) as i32 + size / 2);
    let owners =
        [Owner::Library, Owner::Tail, Owner::Caller, Owner::Sqlite, Owner::Wait, Owner::Boundary, Owner::Between];
    let drawn = |o: Owner| d.slices.iter().any(|s| s.owner == o) || (o == Owner::Between && d.coverage.is_some());
    for owner in owners.into_iter().filter(|o| drawn(*o)) {
        area.draw(&Rectangle::new([(x, y - size / 3), (x + size, y + size / 3)], owner_color(owner).filled()))?;
        area.draw(&Text::new(owner_label(owner), (x + size * 3 / 2, y), text.clone()))?;
        y += step;
    }
    for (lane, median, color) in references {
        let dash = size / 3;
        for k in 0..2 {
            let x0 = x + k * 2 * dash;
            area.draw(&PathElement::new([(x0, y), (x0 + dash, y)], color.stroke_width(px(3.0, w))))?;
        }
        area.draw(&Text::new(format!("lane {lane}: {median:.2} µs/write"), (x + size * 3 / 2, y), text.clone()))?;
        y += step;
    }
    if let Some(callers) = several {
        // Two lines: the panel is narrow.
        let lines =
            [format!("{callers} callers at once: one write's latency;"), "lanes' wall ÷ writes not drawn".into()];
        for line in lines {
            area.draw(&Text::new(line, (x, y), text.clone()))?;
            y += step;
        }
    }
    Ok(())
}

/// The time between marks as a bar of its own: median and CI over blocks.
fn between_marks(c: &hopscope_analyze::coverage::Coverage) -> SliceFigures {
    let b = &c.between;
    SliceFigures {
        name: "(between marks)".to_owned(),
        side: hopscope_analyze::join::SliceSide::Caller,
        median_us: b.median_us,
        ci95: b.ci95,
        mad_us: 0.0,
        p10_us: b.median_us,
        p90_us: b.median_us,
        p99_us: b.median_us,
        p999_us: None,
        outliers: 0,
        share: c.between_share,
        owner: Owner::Between,
        library: false,
        machinery_us: None,
        span_kind: None,
        span_events: None,
        machinery_unknown: None,
        mean_us: Some(c.between_mean_us),
        on_path: true,
        within_two_grains: false,
        sharing: hopscope_analyze::join::Sharing::Own,
        cost_us: None,
    }
}

fn owner_color(owner: Owner) -> RGBColor {
    match owner {
        Owner::Library => style::LIBRARY_COLOR,
        Owner::Sqlite => style::SQLITE_COLOR,
        Owner::Boundary => style::BOUNDARY_COLOR,
        Owner::Tail => style::TAIL_COLOR,
        Owner::Caller => style::CALLER_COLOR,
        Owner::Wait => style::WAIT_COLOR,
        Owner::Between => style::BETWEEN_COLOR,
    }
}

fn owner_label(owner: Owner) -> &'static str {
    match owner {
        Owner::Library => "library (the writer's own code)",
        Owner::Sqlite => "SQLite (the database call)",
        Owner::Boundary => "thread boundary (wake, transport)",
        Owner::Tail => "tails (a thread's closing work)",
        Owner::Caller => "the caller's own code",
        Owner::Wait => "a wait (others' work: the other thread's, or the batch's other operations')",
        Owner::Between => "between marks (no pair of marks covers it)",
    }
}
