//! The change between two runs as Markdown: the verdict, the drift, then
//! one row per figure (gated figures first).

use std::fmt::Write;

use hopscope_analyze::change::{Call, Change, FigureKind};

/// `change` as a Markdown receipt.
pub fn change_markdown(change: &Change) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# hopscope change: {}\n", change.verdict);
    let _ = writeln!(md, "- A: `{}`\n- B: `{}`", change.a, change.b);
    let rule = &change.rule;
    let _ = writeln!(
        md,
        "- Rule (fixed): a change is a difference of medians whose 95% CI excludes zero and that reaches {:.0}% of \
         the figure and at least {:.2} µs for a lane, {:.2} µs for a derived figure, {:.2} µs for a slice, after the \
         control lanes' drift is taken off; no verdict past a {:.0}% drift or with controls more than {:.0}% \
         apart.\n",
        rule.min_share * 100.0,
        rule.min_us,
        rule.min_derived_us,
        rule.min_slice_us,
        rule.max_drift * 100.0,
        rule.max_drift_spread * 100.0
    );
    for finding in &change.findings {
        let _ = writeln!(md, "- {finding}");
    }
    let _ = writeln!(
        md,
        "\n| figure | kind | A µs | B µs | B − A µs | 95% CI | verdict |\n|---|---|---:|---:|---:|---|---|"
    );
    let mut rows: Vec<_> = change.figures.iter().collect();
    rows.sort_by_key(|f| !f.gated);
    for f in rows {
        let kind = match f.kind {
            FigureKind::Lane => "lane",
            FigureKind::Derived => "derived",
            FigureKind::Slice => "slice",
        };
        let call = match f.call {
            Call::NoChange => f.call.to_string(),
            _ => format!("**{}**", f.call),
        };
        let gate = if f.gated { "" } else { " (not gated)" };
        let _ = writeln!(
            md,
            "| {}{gate} | {kind} | {:.3} | {:.3} | {:+.3} | {:+.3}…{:+.3} | {call} |",
            escape(&f.name),
            f.a_us,
            f.b_us,
            f.delta_us,
            f.ci95[0],
            f.ci95[1]
        );
    }
    md
}

/// A name as table text: pipes and newlines would break the row.
fn escape(name: &str) -> String {
    name.replace('|', "\\|").replace(['\n', '\r'], " ")
}
