//! What a person reads in the terminal after a decomposition: each lane's µs per
//! operation, the derived figures, the slices, the cross-check and the
//! observer effect, with their intervals, then the headline and warnings.

use std::fmt::Write as _;

use crate::receipt;
use hopscope_analyze::Decomposition;

/// The summary of `d`, as lines of text.
pub fn decomposition(d: &Decomposition) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write(d, &mut out);
    out
}

fn write(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    match &d.capture {
        Some(c) => capture(d, c, out)?,
        None => lanes(d, out)?,
    }
    if !d.slices.is_empty() {
        slices(d, out)?;
    }
    for (name, lane) in d.lanes_in_order() {
        if let Some(b) = &lane.batches {
            writeln!(out, "batches              {}", receipt::shared::batch_line(name, b).replace('`', ""))?;
        }
    }
    if let Some(sweep) = &d.batch_sweep {
        writeln!(out, "batch sweep          {}", receipt::shared::knee_line(sweep).replace('`', ""))?;
    }
    crosscheck(d, out)?;
    if let Some(o) = &d.observer_effect {
        writeln!(
            out,
            "observer effect      {:+.3} µs per op (CI {:+.3} – {:+.3}, {:+.1}%)",
            o.delta_us, o.delta_ci95[0], o.delta_ci95[1], o.delta_pct
        )?;
    }
    if let Some(h) = receipt::headline(d) {
        writeln!(out, "\n{h}")?;
    }
    // Last, beside the warnings, where a reader of the terminal looks:
    // every figure above is the scheduler's when it says so.
    let contention = d.contention.as_ref();
    if let Some(line) = receipt::contention::verdict_line(contention) {
        writeln!(out, "contended: {line}")?;
    }
    if let Some(line) = receipt::contention::left_out_line(contention) {
        writeln!(out, "left out: {line}")?;
    }
    for w in &d.warnings {
        writeln!(out, "warning: {}", receipt::warning(w))?;
    }
    Ok(())
}

/// A capture's operations, rate and drops, its latency quantiles and what
/// its marks cost.
fn capture(d: &Decomposition, c: &hopscope_analyze::capture::CaptureFigures, out: &mut String) -> std::fmt::Result {
    let Some(lane) = d.lanes.values().next() else { return Ok(()) };
    let f = &c.facts;
    let kept = if f.keeps_all() { String::new() } else { format!(" (1 in {} kept)", f.sample_every) };
    let rate = c.ops_per_s.map_or_else(String::new, |r| format!(", {r:.0} operations/s"));
    let seconds = f.seconds.map_or_else(String::new, |s| format!(" over {s:.1} s"));
    let dropped = f.dropped.map_or_else(String::new, |n| format!(", {n} marks dropped"));
    writeln!(out, "{:<20} {} operations{kept}{rate}{seconds}{dropped}", "capture", lane.ops)?;
    let q = &lane.op_latency_quantiles_us;
    if q.len() == 101 {
        let p999 = lane.op_latency_p999_us.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
        writeln!(out, "{:<20} p50 {:.2}   p90 {:.2}   p99 {:.2}   p99.9 {p999}", "latency µs", q[50], q[90], q[99])?;
    }
    if let Some(cost) = c.marks_us_per_op {
        let share =
            c.marks_share_of_latency.map_or_else(String::new, |s| format!(" ({:.2}% of the median)", s * 100.0));
        writeln!(out, "{:<20} ≈ {cost:.3} µs per operation{share}, estimated", "marks cost")?;
    }
    capture_windows(c, out)
}

/// One line on the windows: how far their medians range, and the window
/// with the highest p99.
fn capture_windows(c: &hopscope_analyze::capture::CaptureFigures, out: &mut String) -> std::fmt::Result {
    let p50s: Vec<f64> = c.windows.iter().filter_map(|w| w.latency_us[0]).collect();
    let worst = c
        .windows
        .iter()
        .filter(|w| w.latency_us[2].is_some())
        .max_by(|a, b| a.latency_us[2].partial_cmp(&b.latency_us[2]).unwrap_or(std::cmp::Ordering::Equal));
    let (Some(worst), true) = (worst, p50s.len() >= 2) else { return Ok(()) };
    let low = p50s.iter().copied().fold(f64::INFINITY, f64::min);
    let high = p50s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    writeln!(
        out,
        "{:<20} {}: p50 {low:.2}–{high:.2} µs; highest p99 {:.2} µs in window {} ({:.1}–{:.1} s)",
        "windows",
        c.windows.len(),
        worst.latency_us[2].unwrap_or(f64::NAN),
        worst.window,
        worst.from_s,
        worst.to_s
    )
}

/// Each lane's µs per operation, then the lane arithmetic.
fn lanes(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    writeln!(out, "{:<20} {:>10} {:>21}", "lane", "µs/op", "95% CI")?;
    for (name, lane) in d.lanes_in_order() {
        match &lane.us_per_op {
            Some(s) => writeln!(out, "{name:<20} {:>10.3} {:>10.3} – {:<8.3}", s.median, s.ci95[0], s.ci95[1])?,
            None => writeln!(out, "{name:<20} {:>10}", "no ops")?,
        }
    }
    if let Some(derived) = &d.derived {
        for (name, diff) in derived.figures() {
            writeln!(out, "{name:<20} {:>10.3} {:>10.3} – {:<8.3}", diff.median, diff.ci95[0], diff.ci95[1])?;
        }
    }
    Ok(())
}

/// The in-situ slices, one line each, and the time between marks.
fn slices(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let lane = d.insitu_lane.as_deref().unwrap_or("?");
    // Names as wide as the longest (span edges make long ones).
    let width = d.slices.iter().map(|s| s.name.chars().count()).max().unwrap_or(0).max(22);
    let spans = d.slices.iter().any(|s| s.machinery_us.is_some() || s.machinery_unknown.is_some());
    let extra = if spans { "; span machinery, net of it" } else { "" };
    if d.capture.is_some() {
        return capture_slices(d, lane, width, out);
    }
    writeln!(out, "\nslices of {lane} (µs per op, median of block medians, 95% CI, share{extra})")?;
    for s in &d.slices {
        let name = format!("{:<width$}", s.name);
        let after = slice_notes(d, lane, s);
        if s.within_two_grains {
            let median = receipt::median_text(s, d.clock.grain_ns());
            writeln!(out, "  {name} {median} {:>5.1}%{after}", s.share * 100.0)?;
            continue;
        }
        writeln!(
            out,
            "  {name} {:>10.3} {:>10.3} – {:<8.3} {:>5.1}%{after}",
            s.median_us,
            s.ci95[0],
            s.ci95[1],
            s.share * 100.0
        )?;
    }
    if let Some(c) = &d.coverage {
        let b = &c.between;
        writeln!(
            out,
            "  {:<width$} {:>10.3} {:>10.3} – {:<8.3} {:>5.1}%",
            "(between marks)",
            b.median_us,
            b.ci95[0],
            b.ci95[1],
            c.between_share * 100.0
        )?;
    }
    Ok(())
}

/// A capture's slices: each one's median with its CI, then its tail.
fn capture_slices(d: &Decomposition, lane: &str, width: usize, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\nslices of {lane} (µs per op: median of block medians, 95% CI; p90, p99, p99.9 of every operation)"
    )?;
    for s in &d.slices {
        let p999 = s.p999_us.map_or_else(|| "–".to_owned(), |v| format!("{v:.3}"));
        writeln!(
            out,
            "  {:<width$} {:>10.3} {:>10.3} – {:<8.3}  p90 {:.3}  p99 {:.3}  p99.9 {p999}",
            s.name, s.median_us, s.ci95[0], s.ci95[1], s.p90_us, s.p99_us
        )?;
    }
    Ok(())
}

/// What follows a slice's figures on its line: the span machinery in it
/// and the slice net of it, whether it is off the path, and of a batch's
/// slice what it costs one operation.
fn slice_notes(d: &Decomposition, lane: &str, s: &hopscope_analyze::slices::SliceFigures) -> String {
    let machinery = match (s.machinery_us, &s.machinery_unknown) {
        (Some(m), _) if !s.within_two_grains => format!("   {m:>6.3} {:>8.3}", s.median_us - m),
        (Some(m), _) => format!("   {m:>6.3}        —"),
        (None, Some(_)) => "   unknown (see the receipt)".to_owned(),
        (None, None) => String::new(),
    };
    // A tail slice's share is not part of the path's 100%.
    let machinery = if s.on_path { machinery } else { format!("{machinery}   (off the path)") };
    // Of a batch's slices, what each costs one operation (its own cost the
    // same as its wait, and left unsaid).
    match s.cost_us {
        Some(cost) if s.sharing != hopscope_analyze::join::Sharing::Own => {
            format!("{machinery}   costs {cost:.3} ({})", receipt::shared::kind_label(d, lane, s.sharing))
        }
        _ => machinery,
    }
}

/// The cross-check of the two instruments, and the accounting by owner.
fn crosscheck(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let Some(c) = &d.crosscheck else { return Ok(()) };
    let (what, figure) = match &c.accounting {
        Some(a) => ("accounting", a.net_us),
        None => ("library slices", c.insitu_library_us),
    };
    writeln!(
        out,
        "cross-check          {what} {figure:.3} µs vs lanes {:.3} µs (CI {:.3} – {:.3}): {:+.3} µs apart → \
         within {:.1} µs: {}",
        c.lanes_library_us, c.lanes_library_ci95[0], c.lanes_library_ci95[1], c.difference_us, c.tolerance_us, c.agree
    )?;
    if let Some(a) = &c.accounting {
        let owners: Vec<String> =
            a.by_owner.iter().map(|o| format!("{} {:+.3}", receipt::owner_label(o.owner), o.delta.median_us)).collect();
        let lane = |role| d.derived.as_ref().and_then(|x| x.lane(role)).unwrap_or(role.name());
        let (s, f) = (lane(hopscope_probe::Role::Subject), lane(hopscope_probe::Role::Floor));
        writeln!(out, "  by owner           {} (µs, {s} − {f})", owners.join(", "))?;
    }
    Ok(())
}
