//! `receipt.md` of the keep-warm sweep: its findings and one row per
//! placement and setting.

use hopscope_analyze::sweep::{SweepRow, findings};
use hopscope_analyze::wake::{self, WakeFloor};

/// The sweep table as Markdown, its findings first, then the machine's
/// wake floor (when measured) and what it bounds.
pub fn markdown(rows: &[SweepRow], floor: Option<&WakeFloor>) -> String {
    let cell = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.2}"));
    let mut out = String::from("# hopscope keep-warm sweep: sequential single inserts\n\n");
    let floor_findings = floor.map(|f| wake::findings(f, rows)).unwrap_or_default();
    for f in findings(rows).iter().chain(&floor_findings) {
        out.push_str(&format!("- {f}\n"));
    }
    out.push_str("\n| placement | setting | wall µs/op | 95% CI | caller CPU µs | writer CPU µs | process CPU µs | ctx switches/op | migrations/op | cross-core hops/op | boundary µs (vs inline) |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {:.2}…{:.2} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.placement,
            r.setting,
            r.wall_us,
            r.wall_ci95[0],
            r.wall_ci95[1],
            cell(r.caller_cpu_us),
            cell(r.writer_cpu_us),
            cell(r.process_cpu_us),
            cell(r.context_switches),
            cell(r.cpu_migrations),
            cell(r.cross_core_hops),
            r.boundary_us.map_or("–".to_owned(), |b| format!("{:+.2}", b.median)),
        ));
    }
    out.push_str(
        "\nSettings: `park` parks both threads at once; `spin-Wus` spins the writer W µs before parking; \
         `yield-Wus` yields instead of spinning; `both-Wus` spins writer and caller; `tick-Wus` has both \
         sleep in 5 µs timer ticks for W µs; `adaptive-Wus` has both spin for up to W µs only while their \
         recent spins mostly got their message within W; `budgetBx-Wus` (B with `_` for its point) is adaptive \
         with each thread's spin also capped at (B − 1)× its own work between waits. On one core a spin becomes a yield and an adaptive wait parks \
         (spinning there starves the other thread).\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use hopscope_analyze::sweep::{BASELINE, INLINE};

    use super::*;

    fn row(placement: &str, setting: &str, wall: f64, cpu: f64) -> SweepRow {
        SweepRow {
            placement: placement.into(),
            setting: setting.into(),
            wall_us: wall,
            wall_ci95: [wall - 1.0, wall + 1.0],
            caller_cpu_us: None,
            writer_cpu_us: None,
            process_cpu_us: Some(cpu),
            context_switches: Some(2.0),
            cpu_migrations: Some(0.0),
            cross_core_hops: Some(2.0),
            boundary_us: None,
        }
    }

    #[test]
    fn the_table_has_a_row_per_setting_under_the_findings() {
        let rows = [
            row("different-cores", INLINE, 10.0, 10.0),
            row("different-cores", BASELINE, 100.0, 90.0),
            row("different-cores", "both-40us", 13.0, 27.0),
        ];
        let md = markdown(&rows, None);
        assert!(md.contains("| different-cores | both-40us | 13.00 |"), "{md}");
        assert!(md.contains("- Lowest wall time: both-40us on different-cores: 13.00"), "the findings lead: {md}");
    }
}
