//! `receipt.md` of the merge measurement: imports, the gap, each step's
//! share, and the slices inside one merged change.

use std::fmt::Write as _;

use hopscope_analyze::ab::Verdict;
use hopscope_analyze::merge::{MergeResult, Phase, RULE};
use hopscope_analyze::stats::BOOTSTRAP_RESAMPLES;

/// The receipt: imports, the gap, each step's share, and the slices.
pub fn markdown(r: &MergeResult) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = render(r, &mut out);
    out
}

fn render(r: &MergeResult, out: &mut String) -> std::fmt::Result {
    writeln!(out, "# hopscope receipt: changeset merge\n")?;
    let meta = |k: &str| r.meta.get(k).map_or("?", String::as_str);
    writeln!(
        out,
        "{} changes ({} rows × {} columns, {} site(s)) per import, {} rounds; each import one transaction run in {} parts, the arms' parts interleaved in an order drawn per part, every import on a freshly opened connection; SQLite {}.\n",
        r.changes,
        meta("rows"),
        meta("columns"),
        meta("sites"),
        r.rounds,
        meta("parts_per_import"),
        meta("sqlite_version")
    )?;
    for (phase, ratio) in &r.speedup {
        let what = phase.parse::<Phase>().map_or(phase.as_str(), |p| p.describe());
        writeln!(out, "- {what}: naive ÷ tuned = **{ratio:.1}×**")?;
    }
    writeln!(
        out,
        "\n## Imports (µs per merged change, median over every part of every import, 95% CI; whole import in seconds)\n"
    )?;
    writeln!(out, "| arm | cold µs | cold CI | cold s | again µs | again CI | again s |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|")?;
    for (arm, phases) in &r.arms {
        let cell = |p: &str| {
            phases.get(p).map_or("– | – | –".to_owned(), |f| {
                let s = f.us_per_change;
                format!("{:.2} | {:.2}–{:.2} | {:.3}", s.median, s.ci95[0], s.ci95[1], f.import_s)
            })
        };
        writeln!(out, "| {arm} | {} | {} |", cell(Phase::Cold.name()), cell(Phase::Again.name()))?;
    }
    writeln!(out, "\n## Each step tuned alone, against naive (paired by part)\n")?;
    writeln!(out, "| step | phase | saves µs/change | 95% CI | share of the gap | verdict |")?;
    writeln!(out, "|---|---|---:|---:|---:|---|")?;
    for s in &r.steps {
        writeln!(
            out,
            "| {} | {} | {:+.2} | {:+.2}…{:+.2} | {:.0}% | {} |",
            s.step,
            s.phase,
            s.saving_us.median,
            s.saving_us.ci95[0],
            s.saving_us.ci95[1],
            s.share_of_gap * 100.0,
            s.verdict
        )?;
    }
    writeln!(
        out,
        "\nShares need not add to 100%: steps overlap (a memo hit also skips a statement that caching would have made cheaper). Verdicts come from the A/B machinery under a rule fixed in the code: at least {}% and {} µs per change, in both orders, control drift at most {}%.\n",
        RULE.min_effect_pct, RULE.min_effect_us, RULE.max_control_drift_pct
    )?;
    for s in r.steps.iter().filter(|s| s.verdict != Verdict::Reproduced) {
        if let Some(reason) = s.reasons.first() {
            writeln!(out, "- {} ({}): {}", s.step, s.phase, super::reason(reason))?;
        }
    }
    writeln!(out)?;
    for (lane, slices) in &r.slices {
        writeln!(out, "## Inside one change: `{lane}` (µs, median of the parts' medians)\n")?;
        writeln!(out, "| slice | median | 95% CI | p90 | share |")?;
        writeln!(out, "|---|---:|---:|---:|---:|")?;
        for s in slices {
            writeln!(
                out,
                "| {} | {:.3} | {:.3}–{:.3} | {:.3} | {:.0}% |",
                s.name,
                s.median_us,
                s.ci95[0],
                s.ci95[1],
                s.p90_us,
                s.share * 100.0
            )?;
        }
        writeln!(out)?;
    }
    writeln!(out, "Statistics: bootstrap {BOOTSTRAP_RESAMPLES} resamples.")
}
