//! The change between two runs as Markdown: the verdict, the drift, then
//! one row per figure (gated figures first).

use std::fmt::Write;

use hopscope_analyze::change::{Call, Change, ChangeFinding, FigureKind, StandsFor};
use hopscope_analyze::recorded::Recorded;

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
        let _ = writeln!(md, "- {}", sentence(finding));
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

/// A finding of a change in words (an older change's sentence as it was).
pub fn sentence(finding: &Recorded<ChangeFinding>) -> String {
    let finding = match finding {
        Recorded::Typed(f) => f,
        Recorded::Sentence(said) => return said.clone(),
    };
    match finding {
        ChangeFinding::Contended(side) => format!(
            "No verdict: another process held a run's CPUs — {}: {}",
            side.run,
            crate::receipt::contention::line(&side.waited)
        ),
        ChangeFinding::MadeDifferently { settings } => {
            let each: Vec<String> = settings.iter().map(|s| format!("{} {} → {}", s.fact, s.a, s.b)).collect();
            format!(
                "The runs were made differently ({}): a change below may be the method's as much as the code's",
                each.join(", ")
            )
        }
        ChangeFinding::ControlMoved { control: c, refused, max_drift } => {
            let what = match c.stands_for {
                StandsFor::Sqlite => "SQLite alone",
                StandsFor::Boundary | StandsFor::Slice => "the bare thread boundary",
            };
            if *refused {
                format!(
                    "The control lane {} ({what}) moved {:+.1}% between the runs, beyond the {:.0}% a comparison can \
                     stand: no verdict.",
                    c.lane,
                    c.drift * 100.0,
                    max_drift * 100.0
                )
            } else {
                let noise = if c.significant { "" } else { " (within its own noise)" };
                format!(
                    "The control lane {} ({what}) moved {:+.1}% between the runs{noise}: the machine's drift, taken \
                     off the figures it stands for.",
                    c.lane,
                    c.drift * 100.0
                )
            }
        }
        ChangeFinding::ControlsApart { spread, max_spread } => format!(
            "The controls moved {:.1}% apart, more than the {:.0}% one drift can describe (the machine did not slow \
             down evenly): no verdict.",
            spread * 100.0,
            max_spread * 100.0
        ),
        ChangeFinding::NoControl => "No control lane in both runs: the drift between them is unknown.".to_owned(),
        ChangeFinding::Moved(f) => {
            let carried = f.carried_by.as_ref().map_or(String::new(), |m| {
                format!(
                    "; the slice that moved most beyond the floor's: {} {:+.3} µs (95% CI {:+.3}…{:+.3})",
                    m.slice, m.delta_us, m.ci95[0], m.ci95[1]
                )
            });
            let against = match (&f.call, &f.control) {
                (Call::Drift, Some(c)) if c != &f.name => format!(" (as {c} moved)"),
                _ => String::new(),
            };
            let kind = match f.kind {
                FigureKind::Lane => "Lane",
                FigureKind::Derived => "Figure",
                FigureKind::Slice => "Slice",
            };
            format!(
                "{kind} {} {}{against}: {:+.3} µs ({:.3} → {:.3}; 95% CI {:+.3}…{:+.3}){}{carried}",
                f.name,
                f.call,
                f.delta_us,
                f.a_us,
                f.b_us,
                f.ci95[0],
                f.ci95[1],
                if f.gated { "" } else { " (not gated)" }
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use hopscope_analyze::change::{ContendedSide, Control, FigureChange, SettingMove, SliceMove};

    use super::*;

    fn said(f: ChangeFinding) -> String {
        sentence(&Recorded::Typed(f))
    }

    fn control(stands_for: StandsFor, drift: f64, significant: bool) -> Control {
        Control { lane: "floor".into(), stands_for, moved: drift, drift, significant }
    }

    #[test]
    fn the_method_and_the_controls_are_said_before_the_figures() {
        let order = SettingMove { fact: "order".into(), a: "Rotate".into(), b: "Balanced".into() };
        assert_eq!(
            said(ChangeFinding::MadeDifferently { settings: vec![order] }),
            "The runs were made differently (order Rotate → Balanced): a change below may be the method's as much as \
             the code's"
        );
        let waited = crate::receipt::contention::tests::contended();
        let contended = said(ChangeFinding::Contended(ContendedSide { run: "b".into(), waited }));
        assert!(
            contended.starts_with(
                "No verdict: another process held a run's CPUs — b: another process held this run's CPUs: 30 of 40 \
                 rounds waited for it"
            ),
            "{contended}"
        );
        let quiet = control(StandsFor::Boundary, 0.015, false);
        assert_eq!(
            said(ChangeFinding::ControlMoved { control: quiet, refused: false, max_drift: 0.15 }),
            "The control lane floor (the bare thread boundary) moved +1.5% between the runs (within its own noise): \
             the machine's drift, taken off the figures it stands for."
        );
        let far = control(StandsFor::Sqlite, 0.3, true);
        assert_eq!(
            said(ChangeFinding::ControlMoved { control: far, refused: true, max_drift: 0.15 }),
            "The control lane floor (SQLite alone) moved +30.0% between the runs, beyond the 15% a comparison can \
             stand: no verdict."
        );
        assert!(
            said(ChangeFinding::ControlsApart { spread: 0.12, max_spread: 0.1 })
                .starts_with("The controls moved 12.0% apart, more than the 10%")
        );
        assert_eq!(said(ChangeFinding::NoControl), "No control lane in both runs: the drift between them is unknown.");
    }

    #[test]
    fn a_moved_figure_is_said_with_its_interval_and_what_carried_it() {
        let figure = FigureChange {
            name: "library".into(),
            kind: FigureKind::Derived,
            gated: true,
            a_us: 0.9,
            b_us: 1.4,
            delta_us: 0.5,
            ci95: [0.45, 0.55],
            control: Some("floor".into()),
            call: Call::Slower,
            carried_by: Some(SliceMove { slice: "woke→executed".into(), delta_us: 0.5, ci95: [0.48, 0.52] }),
        };
        assert_eq!(
            said(ChangeFinding::Moved(figure.clone())),
            "Figure library slower: +0.500 µs (0.900 → 1.400; 95% CI +0.450…+0.550); the slice that moved most \
             beyond the floor's: woke→executed +0.500 µs (95% CI +0.480…+0.520)"
        );
        let drift = FigureChange {
            name: "sent→woke".into(),
            kind: FigureKind::Slice,
            gated: false,
            call: Call::Drift,
            control: Some("floor-probed: sent→woke".into()),
            carried_by: None,
            ..figure
        };
        assert!(
            said(ChangeFinding::Moved(drift))
                .starts_with("Slice sent→woke drift (as floor-probed: sent→woke moved): +0.500 µs"),
        );
        let json = serde_json::to_value(Recorded::Typed(ChangeFinding::NoControl)).expect("json");
        assert_eq!(json["finding"], "no_control");
    }
}
