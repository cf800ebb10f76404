//! What a person reads in the terminal after an A/B run: the verdict and
//! the figure it judged, the passes, the reasons, the slices that changed,
//! and the warnings.

use std::fmt::Write as _;

use hopscope_analyze::experiment::Experiment;

/// What a person reads in the terminal after an A/B run.
pub fn experiment(e: &Experiment) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", e.name, crate::receipt::experiment::verdict_line(e));
    if let Some(figure) = &e.outcome.figure {
        let _ = writeln!(out, "  judged on {}", crate::receipt::experiment::figure_line(figure));
    }
    if let Some(line) = crate::receipt::experiment::resolution_line(e) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(a) = &e.outcome.across {
        let _ = writeln!(
            out,
            "  across {} passes, each by fresh processes: Δ {:+.3} µs ({:+.2}%, 20%-trimmed mean), {:.0}% CI {:+.3}…{:+.3}, SD {:.3}",
            a.passes, a.delta.mean_us, a.delta.pct, a.delta.level_pct, a.delta.ci[0], a.delta.ci[1], a.delta.sd_us
        );
        if let Some(c) = &a.control {
            let _ = writeln!(
                out,
                "  control − A (two processes of A): {:+.3} µs, {:.0}% CI {:+.3}…{:+.3}, SD {:.3}",
                c.mean_us, c.level_pct, c.ci[0], c.ci[1], c.sd_us
            );
        }
        if let Some(l) = &a.layouts {
            let pairs: Vec<String> =
                l.pairs.iter().map(|p| format!("{}−{} {:+.3}", p.control, p.a, p.mean_us)).collect();
            let _ = writeln!(
                out,
                "  builds of one commit ({} layouts): spread {:.3} µs (layout pairs of A: {} µs)",
                l.builds,
                l.spread_us,
                pairs.join(", ")
            );
        }
    }
    // Passes of fresh processes are many and each only one set's figure:
    // the table in the receipt lists them.
    let listed = if e.outcome.across.is_some() { &[][..] } else { &e.outcome.passes[..] };
    for p in listed {
        let _ = writeln!(
            out,
            "  pass {} ({}): Δ {:+.3} µs ({:+.2}%), CI {:+.3}…{:+.3}, control {}",
            p.pass,
            p.order,
            p.delta_us.median,
            p.delta_pct,
            p.delta_us.ci95[0],
            p.delta_us.ci95[1],
            p.control_pct.map_or("–".to_owned(), |c| format!("{c:+.2}%"))
        );
    }
    for reason in &e.outcome.reasons {
        let _ = writeln!(out, "  · {}", crate::receipt::reason(reason));
    }
    if let Some(v) = &e.slices {
        let changed: Vec<String> = v
            .changed()
            .map(|s| format!("{} {:+.1} ns (CI {:+.1}…{:+.1})", s.name, s.delta_ns, s.ci95_ns[0], s.ci95_ns[1]))
            .collect();
        let _ = if changed.is_empty() {
            writeln!(out, "  slices: none changed (Holm, α = {})", v.alpha)
        } else {
            writeln!(out, "  slices changed: {}", changed.join("; "))
        };
        if let Some(line) = crate::receipt::experiment::knock_on_line(e) {
            let _ = writeln!(out, "  {line}");
        }
    }
    for warning in &e.warnings {
        let _ = writeln!(out, "warning: {}", crate::receipt::warning(warning));
    }
    out
}
