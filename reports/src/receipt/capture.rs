//! A capture's receipt sections: what the capture is (how it was taken,
//! its sampling and windows, its throughput), how long one operation took
//! (its quantiles), and what its marks cost. A capture is one lane, the
//! program, so the lanes' sections (arithmetic, cold starts, a clean build
//! beside the probed one) are left out, not filled with their absence.

use std::fmt::Write as _;

use hopscope_analyze::Decomposition;
use hopscope_analyze::capture::{CaptureFigures, CaptureWindow};

/// The receipt's sections of a capture, in place of the lanes' ones.
pub(super) fn section(d: &Decomposition, c: &CaptureFigures, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## The capture\n")?;
    writeln!(out, "{}\n", what_it_is(d, c))?;
    latency(d, c, out)?;
    windows(c, out)
}

/// Windows shown one by one, at most: past it, the slowest by p99.
const WINDOW_ROWS: usize = 40;

/// The capture window by window: operations, rate, latency quantiles and,
/// when the capture read them, the program's and the host's CPUs.
fn windows(c: &CaptureFigures, out: &mut String) -> std::fmt::Result {
    if c.windows.len() < 2 {
        return Ok(());
    }
    writeln!(out, "### Window by window\n")?;
    let mut shown: Vec<&CaptureWindow> = c.windows.iter().collect();
    if shown.len() > WINDOW_ROWS {
        shown.sort_by(|a, b| b.latency_us[2].partial_cmp(&a.latency_us[2]).unwrap_or(std::cmp::Ordering::Equal));
        shown.truncate(WINDOW_ROWS);
        shown.sort_by_key(|w| w.window);
        writeln!(out, "The {WINDOW_ROWS} of {} windows with the highest p99, in time order.\n", c.windows.len())?;
    }
    let cpus = c.windows.iter().any(|w| w.process_cpus.is_some() || w.host_busy_cpus.is_some());
    let (cpu_head, cpu_rule) = if cpus {
        (" program CPUs | host busy CPUs | steal CPUs | waited ms/s |", "---:|---:|---:|---:|")
    } else {
        ("", "")
    };
    writeln!(
        out,
        "| window | from–to (s) | operations | operations/s | p50 µs | p90 µs | p99 µs | p99.9 µs |{cpu_head} marks dropped |"
    )?;
    writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|{cpu_rule}---:|")?;
    for w in shown {
        writeln!(out, "{}", window_row(w, cpus))?;
    }
    if cpus {
        writeln!(
            out,
            "\nCPUs are CPU time over the window's length: the program's threads (the capture's drain included, \
             measured), the whole host busy (the program included; the kernel samples it at its ticks, so on a VM \
             it can read a little below the program's), the time the hypervisor gave other guests (steal), and how \
             long the program's threads were runnable without running, per second (a woken thread's wait to be \
             scheduled included, so a handoff-heavy program shows some on an idle host; – where the kernel keeps no \
             scheduler statistics). A window whose latency moved while the host's other work or steal grew was \
             slowed by its neighbours, not its code."
        )?;
    }
    writeln!(
        out,
        "\nA window's quantiles are exact up to {} operations, past that within {} % (the capture's own within {} %), \
         so a day of windows stays small to analyse.",
        hopscope_analyze::distribution::WINDOW_EXACT_VALUES,
        hopscope_analyze::distribution::WINDOW_RELATIVE_ACCURACY * 100.0,
        hopscope_analyze::distribution::RELATIVE_ACCURACY * 100.0,
    )?;
    writeln!(
        out,
        "\nTwo windows, or two runs of windows, are compared as two captures are: `hopscope compare TRACE@A TRACE@B` \
         (`TRACE@3-5` for windows 3 to 5).\n"
    )
}

/// One window's row of the table (with the CPU columns when `cpus`).
fn window_row(w: &CaptureWindow, cpus: bool) -> String {
    let number = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    let rate = w.ops_per_s.map_or_else(|| "–".to_owned(), |r| format!("{r:.0}"));
    let [p50, p90, p99, p999] = w.latency_us.map(number);
    let cpu = if cpus {
        let waited = w.run_queue_ms_per_s.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"));
        format!(
            " {} | {} | {} | {waited} |",
            number(w.process_cpus),
            number(w.host_busy_cpus),
            number(w.host_steal_cpus)
        )
    } else {
        String::new()
    };
    format!(
        "| {} | {:.1}–{:.1} | {} | {rate} | {p50} | {p90} | {p99} | {p999} |{cpu} {} |",
        w.window, w.from_s, w.to_s, w.operations, w.dropped
    )
}

/// One paragraph: how it was taken, what it holds, its rate and drops.
fn what_it_is(d: &Decomposition, c: &CaptureFigures) -> String {
    let f = &c.facts;
    let lane = d.lanes.values().next();
    let ops = lane.map_or(0, |l| l.ops);
    let mut parts = vec![format!("Taken by the program itself (`{}`), one lane: the program", f.how)];
    if let Some(seconds) = f.seconds {
        parts.push(format!("over {seconds:.1} s"));
    }
    if let Some(window) = f.window_s {
        let windows =
            d.lanes.values().next().map_or(0, |l| l.blocks_us.iter().map(|b| b.pass).max().map_or(0, |p| p + 1));
        parts.push(format!("in {windows} windows of {window} s (a window is a pass: its blocks are compared as one)"));
    }
    let mut text = parts.join(", ") + ".";
    if f.keeps_all() {
        write!(text, " Every operation was kept: {ops} operations joined.").ok();
    } else {
        write!(
            text,
            " One operation in {} was kept, decided by its id so every thread keeps the same ones and a kept one \
             keeps every hop: {ops} operations joined, the figures below are theirs.",
            f.sample_every
        )
        .ok();
    }
    if let Some(rate) = c.ops_per_s {
        let estimated = if f.keeps_all() { "" } else { " (the kept operations × N)" };
        write!(text, " Throughput {rate:.0} operations/s{estimated}.").ok();
    }
    if let Some(callers) = f.callers {
        write!(text, " {callers} caller threads, as the program declared.").ok();
    }
    match f.dropped {
        Some(0) => text.push_str(" No mark was dropped."),
        Some(n) => {
            write!(text, " **{n} marks were dropped** (per thread under Drops): their operations are incomplete.")
                .ok()
                .unwrap_or(())
        }
        None => {}
    }
    if let Some(cut) = f.cut.filter(|&n| n > 0) {
        write!(text, " {cut} operations were handed on before they settled (the held marks at their cap): any later mark of theirs is apart.").ok();
    }
    if let Some(n) = f.undeclared_hops.filter(|&n| n > 0) {
        write!(text, " {n} marks of hops its table does not declare were left out.").ok();
    }
    text
}

/// The whole operation's latency quantiles.
fn latency(d: &Decomposition, c: &CaptureFigures, out: &mut String) -> std::fmt::Result {
    let Some(lane) = d.lanes.values().next().filter(|l| l.op_latency_quantiles_us.len() == 101) else {
        return Ok(());
    };
    let q = &lane.op_latency_quantiles_us;
    let p999 = lane.op_latency_p999_us.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    writeln!(out, "### One operation, first mark to last (µs)\n")?;
    writeln!(out, "| p50 | p90 | p99 | p99.9 | operations |")?;
    writeln!(out, "|---:|---:|---:|---:|---:|")?;
    writeln!(out, "| {:.2} | {:.2} | {:.2} | {p999} | {} |\n", q[50], q[90], q[99], lane.ops)?;
    if !c.facts.keeps_all() {
        writeln!(
            out,
            "Quantiles of the kept operations: sampling by id keeps operations alike, so they stand for all, \
             within their count's precision (a p99.9 of {} operations rests on about {} of them).\n",
            lane.ops,
            lane.ops / 1000
        )?;
    }
    Ok(())
}

/// What the capture's marks cost each operation: estimated from their
/// count and their cost measured at the start; a capture runs no clean
/// build beside to measure it.
pub(super) fn observer(c: &CaptureFigures, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## Observer effect (estimated)\n")?;
    let (Some(marks), Some(cost)) = (c.marks_per_op, c.marks_us_per_op) else {
        return writeln!(
            out,
            "Not estimated: this capture recorded no mark cost (a capture made before live captures measured one).\n"
        );
    };
    let kept = c.mark_ns.map_or_else(String::new, |ns| format!("{ns:.1} ns a kept operation's mark"));
    let left = match (c.facts.keeps_all(), c.left_out_mark_ns) {
        (false, Some(ns)) => format!(", {ns:.1} ns a left-out one's (the sampling's decision alone)"),
        _ => String::new(),
    };
    let share =
        c.marks_share_of_latency.map_or_else(String::new, |s| format!(", {:.2}% of the median operation", s * 100.0));
    writeln!(
        out,
        "{marks:.1} marks per operation ({kept}{left}, measured on this host when the capture started): about \
         {cost:.3} µs per operation{share}. Nothing ran beside the program to compare it with, so this is an estimate \
         from the marks' count and cost, not a paired measurement; the drain thread's own CPU is not in it.\n"
    )
}

/// The capture's headline: one operation's latency quantiles, its rate,
/// and its largest slice.
pub(super) fn headline(d: &Decomposition, c: &CaptureFigures) -> Option<String> {
    let lane = d.lanes.values().next().filter(|l| l.op_latency_quantiles_us.len() == 101)?;
    let q = &lane.op_latency_quantiles_us;
    let p999 = lane.op_latency_p999_us.map_or_else(String::new, |v| format!(", p99.9 {v:.1}"));
    let kept = if c.facts.keeps_all() {
        "operations".to_owned()
    } else {
        format!("kept operations (1 in {})", c.facts.sample_every)
    };
    let rate = c.ops_per_s.map_or_else(String::new, |r| format!(" at {r:.0} operations/s"));
    let largest = d
        .slices
        .iter()
        .filter(|s| s.on_path)
        .max_by(|a, b| a.median_us.total_cmp(&b.median_us))
        .map_or_else(String::new, |s| format!("; its largest slice is {} at {:.3} µs (median)", s.name, s.median_us));
    Some(format!(
        "One operation took {:.1} µs at the median (p90 {:.1}, p99 {:.1}{p999} µs) over {} {kept}{rate}{largest}.",
        q[50], q[90], q[99], lane.ops
    ))
}

/// What the machine did while the capture ran: the program's and the
/// host's CPUs over the whole capture, the windows having them one by one.
pub(super) fn machine(c: &CaptureFigures, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## What the machine did\n")?;
    let read: Vec<&CaptureWindow> = c.windows.iter().filter(|w| w.process_cpus.is_some()).collect();
    if read.is_empty() {
        return writeln!(
            out,
            "This capture read nothing of its CPUs (one made before captures read them, or off Linux), so it cannot \
             say whether another process held them.\n"
        );
    }
    // Each window's rate weighted by its length: the capture's mean.
    let seconds: f64 = read.iter().map(|w| w.to_s - w.from_s).sum();
    let mean = |of: fn(&CaptureWindow) -> Option<f64>| {
        let (mut sum, mut span) = (0.0, 0.0);
        for w in &read {
            if let Some(v) = of(w) {
                sum += v * (w.to_s - w.from_s);
                span += w.to_s - w.from_s;
            }
        }
        (span > 0.0).then(|| sum / span)
    };
    let number = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    let waited = match mean(|w| w.run_queue_ms_per_s) {
        Some(ms) => format!("its threads waited runnable for a CPU {ms:.1} ms per second"),
        None => "the kernel keeps no scheduler statistics, so its threads' waits for a CPU are unknown".to_owned(),
    };
    let by_window = if c.windows.len() >= 2 {
        " The windows above have them one by one: a window whose latency rose while the host's other work or steal \
         grew was slowed by its neighbours."
    } else {
        ""
    };
    writeln!(
        out,
        "Over {seconds:.1} s the program kept {} CPUs busy on average (its threads' CPU time, the capture's drain \
         included) and the whole host {} (steal {}); {waited}.{by_window}\n",
        number(mean(|w| w.process_cpus)),
        number(mean(|w| w.host_busy_cpus)),
        number(mean(|w| w.host_steal_cpus)),
    )
}
