//! `receipt.md` of the keep-warm sweep: its findings and one row per
//! placement and setting.

use hopscope_analyze::keep_warm::SweepResult;
use hopscope_analyze::sweep::{PlacedSetting, SweepFinding};
use hopscope_analyze::wake::{WakeBound, WakeFloor};

/// The sweep table as Markdown, its findings first, then the machine's
/// wake floor (when measured) and what it bounds.
pub fn markdown(sweep: &SweepResult) -> String {
    let cell = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.2}"));
    let mut out = String::from("# hopscope keep-warm sweep: sequential single inserts\n\n");
    for f in &sweep.findings {
        out.push_str(&format!("- {}\n", sentence(f)));
    }
    if let Some(floor) = &sweep.wake_floor {
        out.push_str(&format!("- {}\n", floor_sentence(floor)));
    }
    if let Some(bound) = &sweep.wake_bound {
        out.push_str(&format!("- {}\n", bound_sentence(bound)));
    }
    let rows = &sweep.rows;
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

/// One finding of the sweep, in words.
pub fn sentence(finding: &SweepFinding) -> String {
    match finding {
        SweepFinding::Fastest { at, wall_us, wall_ci95 } => format!(
            "Lowest wall time: {} on {}: {wall_us:.2} µs per write (95% CI {:.2}…{:.2}).",
            at.setting, at.placement, wall_ci95[0], wall_ci95[1]
        ),
        SweepFinding::Price { setting, placement, cpu_us, parking_cpu_us, wall_delta_us } => format!(
            "Its price: {setting} takes {cpu_us:.2} µs of CPU per write against {parking_cpu_us:.2} µs for parking \
             on {placement} ({:+.2} µs CPU for {wall_delta_us:+.2} µs wall).",
            cpu_us - parking_cpu_us
        ),
        SweepFinding::BeatParking { settings, .. } if settings.is_empty() => {
            "No setting beats parking on both wall time and CPU.".to_owned()
        }
        SweepFinding::BeatParking { settings, of } => {
            let named: Vec<String> = settings
                .iter()
                .map(|PlacedSetting { setting, placement }| format!("{setting} on {placement}"))
                .collect();
            format!(
                "{} of {of} settings beat parking (same placement) on both wall time and CPU: {}.",
                settings.len(),
                named.join(", ")
            )
        }
    }
}

/// The machine's wake floor in one sentence.
pub fn floor_sentence(floor: &WakeFloor) -> String {
    let (s, p) = (&floor.sleep_late_us, &floor.park_wake_us);
    format!(
        "Wake floor ({}): a {:.0} µs sleep returns {:.2} µs late (median; p10 {:.2}, p90 {:.2}); a parked thread \
         runs {:.2} µs after its unpark (median; p10 {:.2}, p90 {:.2}).",
        floor.placement, floor.sleep_request_us, s.median, s.p10, s.p90, p.median, p.p10, p.p90
    )
}

/// What the wake floor bounds, in one sentence (two with the fastest
/// setting's price).
pub fn bound_sentence(bound: &WakeBound) -> String {
    let mut out = format!(
        "So on {} any wait that gives its CPU up adds at least {:.2} µs to the hop: a hop under that needs both \
         threads on their CPUs for the whole wait, the caller spinning through the writer's whole turn.",
        bound.placement, bound.least_us
    );
    if let Some(kept) = &bound.fastest {
        out.push_str(&format!(
            " The fastest there, {}, adds {:+.2} µs at {:.2} µs of CPU per write, {:.2}× inline's {:.2}.",
            kept.setting,
            kept.hop_us,
            kept.cpu_us,
            kept.cpu_us / kept.inline_cpu_us,
            kept.inline_cpu_us
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use hopscope_analyze::lanes::Difference;
    use hopscope_analyze::sweep::{BASELINE, INLINE, SettingKind, SweepRow};
    use hopscope_analyze::wake::Spread;

    use super::*;

    fn row(placement: &str, setting: &str, wall: f64, cpu: f64) -> SweepRow {
        let kind = match setting {
            INLINE => SettingKind::Inline,
            BASELINE => SettingKind::Parking,
            _ => SettingKind::Waiting,
        };
        SweepRow {
            placement: placement.into(),
            setting: setting.into(),
            kind,
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
        let rows = vec![
            row("different-cores", INLINE, 10.0, 10.0),
            row("different-cores", BASELINE, 100.0, 90.0),
            row("different-cores", "both-40us", 13.0, 27.0),
            row("different-cores", "spin-5us", 99.5, 95.0),
        ];
        let md = markdown(&SweepResult::new(rows, None));
        assert!(md.contains("| different-cores | both-40us | 13.00 |"), "{md}");
        assert!(
            md.contains("- Lowest wall time: both-40us on different-cores: 13.00 µs per write (95% CI 12.00…14.00)."),
            "the findings lead: {md}"
        );
        assert!(md.contains("(-63.00 µs CPU for -87.00 µs wall)"), "{md}");
        assert!(md.contains("- 1 of 2 settings beat parking (same placement) on both wall time and CPU: both-40us on different-cores."), "{md}");
        assert!(!md.contains("Wake floor"), "no floor measured, none said: {md}");
    }

    #[test]
    fn no_setting_beating_parking_is_said() {
        let rows = vec![row("same-core", BASELINE, 100.0, 90.0), row("same-core", "spin-5us", 99.5, 95.0)];
        let md = markdown(&SweepResult::new(rows, None));
        assert!(md.contains("- No setting beats parking on both wall time and CPU."), "{md}");
    }

    #[test]
    fn the_wake_floor_and_its_bound_are_said_with_their_figures() {
        let spread = |p10, median, p90| Spread { p10, median, p90, count: 300 };
        let (sleep_late_us, park_wake_us) = (spread(15.99, 19.95, 23.9), spread(60.0, 60.0, 60.0));
        let floor =
            WakeFloor { placement: "different-cores".into(), sleep_request_us: 2.0, sleep_late_us, park_wake_us };
        let boundary = |b: f64| Some(Difference { median: b, ci95: [b - 0.1, b + 0.1], rounds: 40 });
        let rows = vec![
            row("different-cores", INLINE, 12.0, 12.5),
            SweepRow { boundary_us: boundary(74.0), ..row("different-cores", BASELINE, 86.0, 70.0) },
            SweepRow { boundary_us: boundary(1.0), ..row("different-cores", "both-200us", 13.0, 28.0) },
        ];
        let sweep = SweepResult::new(rows, Some(floor));
        let md = markdown(&sweep);
        assert!(
            md.contains("- Wake floor (different-cores): a 2 µs sleep returns 19.95 µs late (median; p10 15.99"),
            "{md}"
        );
        assert!(md.contains("a parked thread runs 60.00 µs after its unpark"), "{md}");
        assert!(md.contains("adds at least 15.99 µs to the hop"), "the lower p10 of the two: {md}");
        assert!(md.contains("both-200us, adds +1.00 µs at 28.00 µs of CPU per write, 2.24× inline's 12.50"), "{md}");
        // The JSON carries what the receipt says.
        let json = serde_json::to_value(&sweep).expect("json");
        assert_eq!(json["findings"][0]["finding"], "fastest");
        assert_eq!(json["wake_bound"]["fastest"]["setting"], "both-200us");
        let back: SweepResult = serde_json::from_value(json).expect("reads back");
        assert_eq!(markdown(&back), md, "the receipt renders from the JSON alone");
    }
}
