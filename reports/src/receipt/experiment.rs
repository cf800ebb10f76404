//! `receipt.md` of an A/B experiment: the verdict, why, each pass's effect
//! and each slice's.

use hopscope_probe::{ArmFact, RunFact, RunFacts};
use std::fmt::Write as _;

use hopscope_analyze::ab::{AbFigure, FigureKind};
use hopscope_analyze::experiment::Experiment;
use hopscope_analyze::slice_verdict::SliceVerdicts;

/// The per-slice verdicts: every slice, flagged ones first named.
fn render_slices(v: &SliceVerdicts, out: &mut String) -> std::fmt::Result {
    writeln!(out, "\n## Effect per slice (per operation, B − A paired by round)\n")?;
    let changed: Vec<&str> = v.changed().map(|s| s.name.as_str()).collect();
    if changed.is_empty() {
        writeln!(out, "No slice changed by more than its smallest claimed effect.\n")?;
    } else {
        writeln!(out, "Changed: {}.\n", changed.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))?;
    }
    // Two figures are the two orders (a lockstep run's passes pooled by
    // order, or one flipped pair); more are passes in run order.
    let by_order = v.slices.iter().all(|s| s.pass_delta_ns.len() == 2);
    let (column, every) =
        if by_order { ("by order (a→b / b→a)", "both orders") } else { ("per pass", "every pass") };
    writeln!(out, "| slice | A median | Δ | 95% CI | {column} | adjusted p | smallest claimed | changed |")?;
    writeln!(out, "|---|---:|---:|---:|---|---:|---:|---|")?;
    for s in &v.slices {
        let passes: Vec<String> = s.pass_delta_ns.iter().map(|d| signed(*d)).collect();
        writeln!(
            out,
            "| `{}` | {} | {} | {}…{} | {} | {:.2e} | ±{} | {} |",
            s.name,
            amount(s.level_ns),
            signed(s.delta_ns),
            signed(s.ci95_ns[0]),
            signed(s.ci95_ns[1]),
            passes.join(" / "),
            s.adjusted_p,
            amount(s.min_effect_ns),
            if s.changed { "**yes**" } else { "no" }
        )?;
    }
    writeln!(
        out,
        "\nEach slice: per-block interquartile means paired by round, judged by {} across the slices \
         at α = {}; a slice changed when its adjusted p is below α, it moved the same way in {every}, \
         and its CI clears the smallest claimed effect (the larger of {:.1} ns \
         and {:.1}% of the slice).",
        v.method,
        v.alpha,
        v.min_effect.ns,
        v.min_effect.share * 100.0
    )
}

/// `ns` with its unit: ns below 10 µs, µs from there (a batching arm's
/// wait of 100,260 ns reads 100.3 µs).
fn amount(ns: f64) -> String {
    if ns.abs() >= 10_000.0 { format!("{:.1} µs", ns / 1_000.0) } else { format!("{ns:.1} ns") }
}

/// [`amount`] with its sign.
fn signed(ns: f64) -> String {
    if ns.abs() >= 10_000.0 { format!("{:+.1} µs", ns / 1_000.0) } else { format!("{ns:+.1} ns") }
}

/// What an A/B verdict judged, in words: which figure of each block, and
/// what it stands for with the arms' callers.
pub fn figure_line(figure: &AbFigure) -> String {
    let callers = figure.callers;
    match (figure.kind, callers) {
        (FigureKind::WallPerOp, 1) => "each block's wall time per operation (clean arms)".to_owned(),
        (FigureKind::WallPerOp, n) => format!(
            "each block's wall time per operation, {n} callers at once (clean arms): a throughput, not what one \
             operation waits"
        ),
        (FigureKind::LatencyMedian, 1) => {
            "each block's median latency per operation, first mark to last (probed arms)".to_owned()
        }
        (FigureKind::LatencyMedian, n) => format!(
            "each block's median latency per operation, first mark to last, {n} callers at once (probed arms): \
             what one operation waits, not the lane's throughput (clean arms judge wall time per operation)"
        ),
    }
}

/// The verdict with its direction and size, so "reproduced" cannot read
/// as the hypothesis confirmed: `reproduced: B slower than A by +0.360 µs
/// per operation (the lane: …); its flagged slices account for +0.264`,
/// or, when the slices decided or account for it, their sum and its
/// interval with the lane's own beside.
pub fn verdict_line(e: &Experiment) -> String {
    use hopscope_analyze::slice_account::{self, EstimateSource};
    let o = &e.outcome;
    // A result written before estimates were stored gets one from its own
    // figures.
    let estimate = o.estimate.clone().or_else(|| slice_account::estimate(o));
    if o.verdict != hopscope_analyze::ab::Verdict::Reproduced {
        // Not called, the estimate still says where B stood.
        return match &estimate {
            Some(est) => format!(
                "{}: B − A {:+.3} µs per operation ({}, {:.0}% CI {:+.3}…{:+.3})",
                o.verdict,
                est.delta_us,
                match est.source {
                    EstimateSource::Slices => "its flagged slices' sum",
                    EstimateSource::Lane => "the lane, its trimmed mean over passes",
                },
                est.level_pct,
                est.ci_us[0],
                est.ci_us[1]
            ),
            None => o.verdict.to_string(),
        };
    }
    let (delta, what) = match &estimate {
        Some(est) if est.source == EstimateSource::Slices => (
            est.delta_us,
            format!(
                "as its flagged slices account for it, {:.0}% CI {:+.3}…{:+.3}",
                est.level_pct, est.ci_us[0], est.ci_us[1]
            ),
        ),
        Some(est) => (est.delta_us, "the lane, its trimmed mean over passes".to_owned()),
        None => {
            let passes = o.passes.iter().map(|p| p.delta_us.median).collect::<Vec<_>>();
            (passes.iter().sum::<f64>() / passes.len().max(1) as f64, "the lane, its mean over passes".to_owned())
        }
    };
    let mut line = format!(
        "{}: B {} than A by {delta:+.3} µs per operation ({what})",
        o.verdict,
        if o.slower() { "slower" } else { "faster" }
    );
    match (&estimate, &o.by_slices, &o.across) {
        (Some(est), _, Some(lane)) if est.source == EstimateSource::Slices => line.push_str(&format!(
            "; the lane's own trimmed mean {:+.3} ({:.0}% CI {:+.3}…{:+.3})",
            lane.delta.mean_us, lane.delta.level_pct, lane.delta.ci[0], lane.delta.ci[1]
        )),
        (Some(est), Some(a), _) if est.source == EstimateSource::Lane => {
            line.push_str(&format!("; its flagged slices account for {:+.3}", a.delta_us));
        }
        _ => {}
    }
    line
}

/// What the run could see, said before why it called what it called: the
/// smallest lane change it could tell from none, and the flagged slices'.
pub fn resolution_line(e: &Experiment) -> Option<String> {
    let half = e.outcome.resolution_us?;
    let level = e.outcome.across.as_ref().map_or(95.0, |a| a.delta.level_pct);
    let mut line = format!(
        "Resolution: this run could tell a lane change of ±{:.1} ns per operation from none (its {level:.0}% CI's \
         half-width)",
        half * 1e3
    );
    let flagged: Vec<String> = e
        .slices
        .iter()
        .flat_map(|v| v.changed())
        .map(|s| format!("`{}` ±{:.1} ns", s.name, (s.ci95_ns[1] - s.ci95_ns[0]) / 2.0))
        .collect();
    if !flagged.is_empty() {
        line.push_str(&format!("; the slices it flagged, each by its 95% CI: {}", flagged.join(", ")));
    }
    line.push('.');
    Some(line)
}

/// When the flagged slices hold both an operation's own step and waits on
/// its batch's others, which part of the effect is the waits: in the
/// latency view each operation also waits for the others' changed steps,
/// so a 240 ns step read +0.9 µs per operation with three to a batch.
pub fn knock_on_line(e: &Experiment) -> Option<String> {
    use hopscope_analyze::join::Sharing;
    let v = e.slices.as_ref()?;
    let (waits, own): (Vec<_>, Vec<_>) = v.changed().partition(|s| s.sharing == Sharing::Siblings);
    let steps: Vec<_> = own.iter().filter(|s| s.sharing == Sharing::Own).collect();
    if waits.is_empty() || steps.is_empty() {
        return None;
    }
    let names = |of: &[&hopscope_analyze::slice_verdict::SliceEffect]| {
        of.iter().map(|s| format!("`{}`", s.name)).collect::<Vec<_>>().join(", ")
    };
    let waited: f64 = waits.iter().map(|s| s.delta_ns).sum();
    let stepped: f64 = steps.iter().map(|s| s.delta_ns).sum();
    Some(format!(
        "Of the flagged slices, {} {} the wait on the batch's others ({waited:+.1} ns per operation): each \
         operation waits for the others' steps as well as its own, so they move with {} ({stepped:+.1} ns), \
         the step that changed; a cost per operation is that step's figure, the latency's is the sum.",
        names(&waits),
        if waits.len() == 1 { "is" } else { "are" },
        names(&steps.iter().map(|s| **s).collect::<Vec<_>>()),
    ))
}

/// Render `e` as Markdown: title, verdict and warnings, then the body.
pub fn markdown(e: &Experiment) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = render_head(e, &mut out);
    let _ = render(e, &mut out);
    out
}

/// Everything after the verdict and warnings, for a page that shows those
/// itself (each once).
pub fn body_markdown(e: &Experiment) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = render(e, &mut out);
    out
}

fn render_head(e: &Experiment, out: &mut String) -> std::fmt::Result {
    writeln!(out, "# hopscope A/B: {}\n", e.name)?;
    writeln!(out, "**Verdict: {}**\n", verdict_line(e))?;
    if let Some(figure) = &e.outcome.figure {
        writeln!(out, "Judged on {}.\n", figure_line(figure))?;
    }
    if let Some(line) = resolution_line(e) {
        writeln!(out, "{line}\n")?;
    }
    if let Some(line) = knock_on_line(e) {
        writeln!(out, "{line}\n")?;
    }
    for w in &e.warnings {
        writeln!(out, "- ⚠ {}", super::warning(w))?;
    }
    if !e.warnings.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

/// The effect judged over passes of fresh processes, beside the noise
/// floor two processes of build A show in the same run.
fn render_across(a: &hopscope_analyze::generations::AcrossPasses, out: &mut String) -> std::fmt::Result {
    writeln!(out, "\n## Effect across passes (µs per operation; each pass by fresh processes)\n")?;
    let level = a.delta.level_pct;
    writeln!(out, "| | 20%-trimmed mean | {level:.0}% CI (Tukey–McLaughlin) | % of A | winsorized SD | passes |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    let row = |out: &mut String, what: &str, m: &hopscope_analyze::generations::PassMean| {
        writeln!(
            out,
            "| {what} | {:+.3} | {:+.3}…{:+.3} | {:+.2}% | {:.3} | {} |",
            m.mean_us, m.ci[0], m.ci[1], m.pct, m.sd_us, a.passes
        )
    };
    row(out, "B − A", &a.delta)?;
    if let Some(c) = &a.control {
        row(out, "control − A (two processes of A: the noise floor)", c)?;
    }
    let orders: Vec<String> = a.by_order.iter().map(|(o, m)| format!("{o} {m:+.3} µs")).collect();
    writeln!(out, "\nB − A by order (20%-trimmed mean): {}.", orders.join(", "))?;
    if let Some(l) = &a.layouts {
        render_layouts(l, out)?;
    }
    Ok(())
}

/// How far builds of one commit differ by layout alone: the bar a change
/// had to clear.
fn render_layouts(l: &hopscope_analyze::generations::LayoutSpread, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\n## Builds of one commit ({} layouts of each side)\n\nEach pass ran one layout of each side as arms a and b \
         and build A's next layout as the control, so the control measures what layout alone moves.\n",
        l.builds
    )?;
    writeln!(out, "| build A layouts | mean control − a µs | passes |")?;
    writeln!(out, "|---|---:|---:|")?;
    for p in &l.pairs {
        writeln!(out, "| layout {} − layout {} | {:+.3} | {} |", p.control, p.a, p.mean_us, p.passes)?;
    }
    writeln!(out, "\nLayout spread: {:.3} µs per operation; a change no larger than this is not called.", l.spread_us)
}

fn render(e: &Experiment, out: &mut String) -> std::fmt::Result {
    writeln!(out, "Hypothesis: {}\n", e.hypothesis)?;
    writeln!(out, "## Why\n")?;
    for r in &e.outcome.reasons {
        writeln!(out, "- {}", super::reason(r))?;
    }
    writeln!(out, "\n## Arms\n")?;
    for (arm, description) in &e.arms {
        writeln!(out, "- `{arm}`: {description}")?;
    }
    if let Some(across) = &e.outcome.across {
        render_across(across, out)?;
        writeln!(
            out,
            "\n## Effect per pass (µs per operation, B − A paired by round)\n\nEach pass is one set of processes: \
             its rounds share their layout, so a pass's CI is that set's, and the verdict is judged across passes \
             above.\n"
        )?;
    } else {
        writeln!(out, "\n## Effect per pass (µs per operation, B − A paired by round)\n")?;
    }
    writeln!(
        out,
        "Δ is the median of the rounds' paired differences, not the difference of A's and B's medians.{}\n",
        if e.outcome.across.is_some() {
            " Across fresh processes the control's limit is judged on its mean over passes (above), not pass by pass."
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "| pass | order | A | B | Δ | 95% CI | Δ % | control − A | spread A | spread B | Δ clears the rule |"
    )?;
    writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")?;
    for p in &e.outcome.passes {
        let control = p.control_pct.map_or("–".to_owned(), |c| format!("{c:+.2}%"));
        writeln!(
            out,
            "| {} | {} | {:.3} | {:.3} | {:+.3} | {:+.3}…{:+.3} | {:+.2}% | {control} | {:.1}% | {:.1}% | {} |",
            p.pass,
            p.order,
            p.a_us,
            p.b_us,
            p.delta_us.median,
            p.delta_us.ci95[0],
            p.delta_us.ci95[1],
            p.delta_pct,
            p.spread_a * 100.0,
            p.spread_b * 100.0,
            if p.clear { "yes" } else { "no" }
        )?;
    }
    if let Some(v) = &e.slices {
        render_slices(v, out)?;
    }
    writeln!(out)?;
    super::checkpoints::render(e.checkpoints.as_ref(), out)?;
    let r = &e.rule;
    writeln!(out, "\n## Decision rule (recorded before the run)\n")?;
    writeln!(out, "- minimum effect: {}% and {} µs per operation", r.min_effect_pct, r.min_effect_us)?;
    writeln!(out, "- reproduced in both orders required: {}", r.both_orders)?;
    writeln!(out, "- control may drift at most {}%", r.max_control_drift_pct)?;
    writeln!(out, "- arms' spreads may differ at most {}×", r.max_spread_ratio)?;
    writeln!(out, "- spec SHA-256: `{}`", e.spec_sha256)?;
    run_section(e, out)
}

/// How, when and where the run was made: the command, the commit or the
/// two builds, the sizes, the host and its clock.
fn run_section(e: &Experiment, out: &mut String) -> std::fmt::Result {
    let facts = &e.meta;
    let meta = |fact: RunFact| facts.fact(&fact).unwrap_or("unknown");
    let arm = |arm: &str, fact: ArmFact| facts.fact(&RunFact::LockstepArm(arm.to_owned(), fact));
    writeln!(out, "\n## Run\n")?;
    writeln!(out, "- command: {}", super::wording::code_span(meta(RunFact::Command)))?;
    match facts.fact(&RunFact::Commit) {
        Some(commit) => writeln!(out, "- commit: {commit}")?,
        // Two builds: each names its own below.
        None if arm("a", ArmFact::Program).is_some() => {}
        None => writeln!(out, "- commit: unknown")?,
    }
    let what = match (facts.fact(&RunFact::Shape), facts.fact(&RunFact::Harness)) {
        (Some(shape), _) => format!("shape: {shape}"),
        (None, Some(program)) => format!("program: {program}"),
        (None, None) => "shape: unknown".to_owned(),
    };
    let lanes = super::lane_facts::lanes_of(facts);
    writeln!(
        out,
        "- {what} · {} ops per block{} · {} samples × {} passes",
        meta(RunFact::OpsPerBlock),
        super::lane_facts::grown_blocks(facts, lanes.iter().map(String::as_str)),
        meta(RunFact::Samples),
        meta(RunFact::Passes)
    )?;
    for name in ["a", "b"] {
        if let Some(program) = arm(name, ArmFact::Program) {
            let command =
                arm(name, ArmFact::Build).map_or(String::new(), |c| format!(" by {}", super::wording::code_span(c)));
            match arm(name, ArmFact::Commit) {
                Some(commit) => writeln!(
                    out,
                    "- build {name}: {} (built from commit {commit}{command})",
                    super::wording::code_span(program)
                )?,
                None => writeln!(out, "- build {name}: {}", super::wording::code_span(program))?,
            }
        }
    }
    if let (Some(n), Some(method)) = (facts.fact(&RunFact::LockstepLayouts), facts.fact(&RunFact::LockstepLayoutMethod))
    {
        writeln!(out, "- layouts: {n} builds of each side, {method}")?;
    }
    if let Some(files) = facts.fact(&RunFact::LockstepFiles) {
        writeln!(out, "- processes: new ones each pass, each run from {files}")?;
    }
    writeln!(out, "- host: {} · {} cores · kernel {}", e.host.cpu_model, e.host.cores, e.host.kernel)?;
    writeln!(out, "- clock: {} · {:.6} ns/tick", e.clock.source, e.clock.ns_per_tick)?;
    Ok(())
}
