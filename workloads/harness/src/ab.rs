//! A/B experiments through the harness: two lanes as arms A and B, an inert
//! second copy of A as the control, passes in flipped order (`a→b`, then
//! `b→a`), judged under the rule the spec fixed before the run. `hopscope
//! ab` and a program's `--ab SPEC` both run here.

use std::fmt::Write as _;

use hopscope_analyze::experiment::Experiment;
use hopscope_probe::{Role, Variant};

use crate::lane::Lane;
use crate::spec::ExperimentSpec;

/// The lanes of an A/B run of `a` against `b` under `spec`: `a` as arm A,
/// `b` as arm B, and (if the spec keeps it) `a` again as `<a>-control`;
/// each in the build the spec asks for (probed or clean).
pub fn arms(spec: &ExperimentSpec, a: Lane, b: Lane) -> Vec<Lane> {
    let variant = if spec.probed { Variant::Probed } else { Variant::Clean };
    let a = a.only(variant);
    let mut lanes = vec![a.clone().with_role(Role::ArmA), b.only(variant).with_role(Role::ArmB)];
    if spec.control {
        let name = format!("{}-control", a.name());
        lanes.push(a.renamed(&name).with_role(Role::Control));
    }
    lanes
}

impl Lane {
    /// The lane with one build only, `variant`'s if it has that build (its
    /// first otherwise), running under the lane's own name: an A/B arm is
    /// one build, and whether it marks, the trace shows.
    pub fn only(mut self, variant: Variant) -> Lane {
        let keep = self.builds.iter().position(|b| b.variant == Some(variant)).unwrap_or(0);
        if keep < self.builds.len() {
            let mut build = self.builds.swap_remove(keep);
            build.variant = None;
            self.builds = vec![build];
        }
        self
    }
}

/// What a person reads in the terminal after an A/B run.
pub fn summary(e: &Experiment) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", e.name, hopscope_reports::receipt::experiment::verdict_line(e));
    if let Some(figure) = &e.outcome.figure {
        let _ = writeln!(out, "  judged on {}", hopscope_reports::receipt::experiment::figure_line(figure));
    }
    if let Some(line) = hopscope_reports::receipt::experiment::resolution_line(e) {
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
        let _ = writeln!(out, "  · {}", hopscope_reports::receipt::reason(reason));
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
        if let Some(line) = hopscope_reports::receipt::experiment::knock_on_line(e) {
            let _ = writeln!(out, "  {line}");
        }
    }
    for warning in &e.warnings {
        let _ = writeln!(out, "warning: {}", hopscope_reports::receipt::warning(warning));
    }
    out
}
