//! `receipt.md` of a decomposition: the tables a reviewer pastes, rendered
//! from a [`Decomposition`]. Formatting only: every figure comes from the
//! analysis.

mod carryover;
mod cells;
mod cold_start;
mod comparison;
mod machinery;
mod peers;
mod run_date;
mod sections;

pub use run_date::date;

use std::fmt::Write as _;

use hopscope_analyze::{CounterFigure, Decomposition, Role};

/// Render `d` as Markdown: the title, the headline and warnings, then
/// every table.
pub fn markdown(d: &Decomposition) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = render_head(d, &mut out);
    let _ = render(d, &mut out);
    out
}

/// The tables alone, for a page that shows the title, headline and
/// warnings itself (the HTML report: each once).
pub fn body_markdown(d: &Decomposition) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = render(d, &mut out);
    out
}

/// One sentence with the headline figures (a capture's: its latency
/// quantiles), or `None` without lane arithmetic.
pub fn headline(d: &Decomposition) -> Option<String> {
    if let Some(c) = &d.capture {
        return super::capture::headline(d, c);
    }
    let derived = d.derived.as_ref()?;
    let mut sentence = match (&derived.boundary_us, &derived.library_us) {
        (Some(boundary), Some(library)) => format!(
            "Of the {} hop, {} is the thread boundary{} and {} is the writer's own work",
            super::crosscheck::difference(&derived.hop_us),
            super::crosscheck::difference(boundary),
            match (&derived.switches_us, &derived.machinery_us) {
                (Some(switches), Some(machinery)) => format!(
                    " ({} the bare switches, {} the machinery around them)",
                    super::crosscheck::difference(switches),
                    super::crosscheck::difference(machinery)
                ),
                // The switches measured past the boundary: not split (a
                // warning says why).
                (Some(_), None) => " (not split into switches and machinery: see the warnings)".to_owned(),
                _ => String::new(),
            },
            super::crosscheck::difference(library)
        ),
        _ => match (&derived.floor_refused, derived.lane(Role::Floor)) {
            (Some(_), Some(floor)) => format!(
                "The hop (subject − baseline) is {}; the floor lane `{floor}` cannot be compared with the subject \
                 (see the warnings), so the hop is not split into boundary and library",
                super::crosscheck::difference(&derived.hop_us)
            ),
            _ => format!(
                "The hop (subject − baseline) is {}; without a floor lane it is not split into boundary and library",
                super::crosscheck::difference(&derived.hop_us)
            ),
        },
    };
    if let Some(c) = &d.crosscheck {
        sentence.push_str(&super::crosscheck::headline_clause(c));
    }
    // A trailing "zero," clause before the end of the sentence.
    if sentence.ends_with(',') {
        sentence.pop();
    }
    sentence.push('.');
    Some(sentence)
}

fn render_head(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    // hopscope's own runs name their shape; a harness program and a
    // program's capture name themselves.
    let title = super::wording::run_title(&d.run.meta, d.lanes.keys().next().map(String::as_str));
    writeln!(out, "# hopscope receipt: {title}\n")?;
    if let Some(partial) = &d.partial {
        writeln!(out, "**Partial result:** {}.\n", super::warning::partial_sentence(partial))?;
    }
    // Said first: every figure after it is the scheduler's.
    if let Some(line) = super::contention::verdict_line(d.contention.as_ref()) {
        writeln!(out, "**Contended:** {line}\n")?;
    }
    if let Some(line) = super::contention::left_out_line(d.contention.as_ref()) {
        writeln!(out, "**Left out:** {line}.\n")?;
    }
    if let Some(h) = headline(d) {
        writeln!(out, "{h}\n")?;
    }
    if !d.warnings.is_empty() {
        writeln!(out, "## Warnings\n")?;
        for w in &d.warnings {
            writeln!(out, "- ⚠ {}", super::warning::warning(w))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn render(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    if let Some(c) = &d.capture {
        return render_capture(d, c, out);
    }
    sections::lanes(d, out)?;
    super::placements::section(d, out)?;
    sections::derived(d, out)?;
    cold_start::render(d, out)?;
    carryover::render(d, out)?;
    if let Some(c) = &d.comparison {
        render_comparison(d, c, out)?;
    }
    sections::slices(d, out)?;
    super::shared::section(d, out)?;
    peers::peer_slices(d, out)?;
    if let Some(c) = &d.crosscheck {
        let lane = |role: hopscope_probe::Role| d.derived.as_ref().and_then(|x| x.lane(role)).unwrap_or(role.name());
        let names = (lane(hopscope_probe::Role::Subject), lane(hopscope_probe::Role::Floor));
        super::crosscheck::render(c, names, out)?;
    }
    sections::observer(d, out)?;
    sections::cpu(d, out)?;
    sections::waits(d, out)?;
    render_counters(d, out)?;
    super::checkpoints::section(d, out)?;
    sections::drops(d, out)?;
    sections::run(d, out)
}

/// A capture's receipt: what it is, its slices and batches, its marks'
/// cost, and what the run recorded; none of the lanes' sections.
fn render_capture(
    d: &Decomposition,
    c: &hopscope_analyze::capture::CaptureFigures,
    out: &mut String,
) -> std::fmt::Result {
    super::capture::section(d, c, out)?;
    sections::slices(d, out)?;
    super::shared::section(d, out)?;
    super::capture::observer(c, out)?;
    sections::waits(d, out)?;
    super::checkpoints::section(d, out)?;
    sections::drops(d, out)?;
    sections::run(d, out)
}

/// The subject beside its peers, each build beside the subject's build of
/// the same kind.
fn render_comparison(
    d: &Decomposition,
    c: &hopscope_analyze::comparison::Comparison,
    out: &mut String,
) -> std::fmt::Result {
    let lane = |role: hopscope_probe::Role| d.derived.as_ref().and_then(|x| x.lane(role)).unwrap_or(role.name());
    let (subject, baseline) = (lane(hopscope_probe::Role::Subject), lane(hopscope_probe::Role::Baseline));
    writeln!(out, "## `{subject}` and its peers (µs per operation)\n")?;
    writeln!(
        out,
        "| lane | µs/op | 95% CI | hop vs {baseline} | beyond floor | − {subject} (same build) | CPU µs/op | ctx switches/op |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|")?;
    let diff = |d: &Option<hopscope_analyze::lanes::Difference>| {
        d.map_or("–".to_owned(), |d| format!("{:+.3} ({:+.3}…{:+.3})", d.median, d.ci95[0], d.ci95[1]))
    };
    let number = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.3}"));
    for r in &c.rows {
        let versus = match &r.versus {
            Some(v) => format!("{} vs {v}", diff(&r.vs_subject)),
            None => "–".to_owned(),
        };
        // Several callers at once make µs per operation a throughput: the
        // row says so beside the figure.
        let callers = if r.callers > 1 { format!(" ({} callers)", r.callers) } else { String::new() };
        writeln!(
            out,
            "| {}{callers} | {:.3} | {:.3}–{:.3} | {} | {} | {versus} | {} | {} |",
            r.lane,
            r.us_per_op.median,
            r.us_per_op.ci95[0],
            r.us_per_op.ci95[1],
            diff(&r.hop_vs_inline),
            diff(&r.beyond_floor),
            number(r.process_cpu_us),
            number(r.ctx_switches)
        )?;
    }
    writeln!(
        out,
        "\nEvery difference is paired by round. A peer is compared with `{subject}`'s build of the same kind (clean \
         with clean, probed with probed), and beyond the floor with the floor's, so no row carries an observer effect \
         the other lacks; the baseline has only a clean build. CPU and context switches count every thread of the \
         process.\n"
    )?;
    for f in &c.findings {
        writeln!(out, "- {}", comparison::sentence(f))?;
    }
    writeln!(out, "\nHow each lane runs:\n")?;
    for r in &c.rows {
        writeln!(out, "- `{}`: {}", r.lane, r.description)?;
    }
    writeln!(out)
}

fn render_counters(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let mut names: Vec<&str> = d
        .lanes
        .values()
        .flat_map(|l| l.counters.iter())
        .filter(|(_, f)| matches!(f, CounterFigure::PerOp(_)))
        .map(|(k, _)| k.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Counters per operation (total, then each thread role)\n")?;
    writeln!(
        out,
        "| lane | {} |",
        names.iter().map(|n| n.trim_end_matches("_per_op").replace('_', " ")).collect::<Vec<_>>().join(" | ")
    )?;
    writeln!(out, "|---|{}", "---:|".repeat(names.len()))?;
    for (lane, result) in d.lanes_in_order() {
        let cells: Vec<String> = names
            .iter()
            .map(|n| match result.counters.get(*n) {
                Some(CounterFigure::PerOp(roles)) => {
                    let total = roles.total().map_or("–".to_owned(), |v| format!("{v:.3}"));
                    let each: Vec<String> = roles.roles().map(|(r, v)| format!("{r} {v:.3}")).collect();
                    format!("{total} ({})", each.join(" / "))
                }
                Some(CounterFigure::Unsupported(why)) => why.clone(),
                None => "–".to_owned(),
            })
            .collect();
        writeln!(out, "| {lane} | {} |", cells.join(" | "))?;
    }
    writeln!(out, "\ntask-clock is in ns per operation; an unsupported counter is listed below, never shown as 0.\n")?;
    let crossing: Vec<(&str, f64, f64)> = d
        .lanes_in_order()
        .into_iter()
        .filter_map(|(lane, r)| Some((lane, r.cross_core_hops_per_op?, r.ops_crossing_cores?)))
        .collect();
    if !crossing.is_empty() {
        writeln!(out, "Cross-core hops (from the CPU each mark was taken on):\n")?;
        writeln!(out, "| lane | CPU changes per write | writes crossing cores |")?;
        writeln!(out, "|---|---:|---:|")?;
        for (lane, hops, share) in crossing {
            writeln!(out, "| {lane} | {hops:.3} | {:.1}% |", share * 100.0)?;
        }
        writeln!(out)?;
    }
    Ok(())
}
