//! The change between two runs as Markdown: the verdict, the drift, then
//! one row per figure (gated figures first).

use std::fmt::Write;

use hopscope_analyze::change::{Call, Change, ChangeFinding, FigureKind, StandsFor};
use hopscope_analyze::recorded::Recorded;

/// `change` as a Markdown receipt.
pub fn change_markdown(change: &Change) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# hopscope change: {}\n", headline(change));
    let _ = writeln!(md, "{}\n", judged_line(change));
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

/// The verdict and, for a regression or an improvement, the gated figure
/// that decided it with its move: the table's own row, in one line.
pub fn headline(change: &Change) -> String {
    match decided(change) {
        Some(decided) => format!("{}: {decided}", change.verdict),
        None => change.verdict.to_string(),
    }
}

/// The gated figure that decided a regression or an improvement, and its
/// move (`` `writer` wall time per operation +0.300 µs (+1.7%) ``).
pub fn decided(change: &Change) -> Option<String> {
    let f = change.decided_by.as_ref().and_then(|name| change.figures.iter().find(|f| &f.name == name))?;
    let latency = change.judged.as_ref().is_some_and(|j| j.figure == hopscope_analyze::ab::FigureKind::LatencyMedian);
    let what = match f.kind {
        FigureKind::Lane if latency => format!("`{}` median latency per operation", f.name),
        FigureKind::Lane => format!("`{}` wall time per operation", f.name),
        FigureKind::Derived => format!("the {} figure", f.name),
        FigureKind::Slice => format!("slice `{}`", f.name),
    };
    // A derived figure is a difference of two lanes: a share of its small
    // level says nothing (library 0.154 → 0.541 read +252%).
    let level = match f.kind {
        FigureKind::Derived => format!(" ({:.3} → {:.3} µs)", f.a_us, f.b_us),
        _ if f.a_us.abs() > 0.0 => format!(" ({:+.1}%)", f.delta_us / f.a_us * 100.0),
        _ => String::new(),
    };
    Some(format!("{what} {:+.3} µs{level}", f.delta_us))
}

/// What the verdict judged, in words: the gated lanes' figure and how
/// they ran, the slices, the library figure; or that the runs shared
/// nothing a verdict could judge.
pub fn judged_line(change: &Change) -> String {
    let Some(j) = &change.judged else {
        return if change.figures.is_empty() {
            "Judged nothing: the runs share no lane, slice or derived figure.".to_owned()
        } else {
            "Judged on every figure below marked gated.".to_owned()
        };
    };
    let latency = j.figure == hopscope_analyze::ab::FigureKind::LatencyMedian;
    let mut parts: Vec<String> = j
        .lanes
        .iter()
        .map(|l| {
            if latency {
                // A capture: its blocks are stretches of the program's
                // time, so what they compare is what one operation waited.
                return format!(
                    "`{}`'s median latency per operation (first mark to last: each block's median, the median over \
                     blocks; {} callers, as the program ran)",
                    l.lane, l.callers
                );
            }
            let build = if l.probed { "probed build: its marks' cost included" } else { "clean build" };
            let callers = if l.callers > 1 {
                format!("; {} callers at once: a throughput, not what one operation waits", l.callers)
            } else {
                String::new()
            };
            format!(
                "`{}`'s wall time per operation (a block's whole time over its operations, the median over blocks; \
                 {build}{callers})",
                l.lane
            )
        })
        .collect();
    if let (Some(lane), n) = (&j.slices_of, j.slices)
        && n > 0
    {
        parts.push(format!("{n} slices of `{lane}` (each its interquartile mean per block, the median over blocks)"));
    }
    if j.library {
        parts.push("the library figure (the subject less the floor, round by round)".to_owned());
    }
    format!("Judged on {}.", parts.join(", "))
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
        ChangeFinding::ControlMoved { control, refused, max_drift } => control_moved(control, *refused, *max_drift),
        ChangeFinding::ControlsApart { spread, max_spread } => format!(
            "The controls moved {:.1}% apart, more than the {:.0}% one drift can describe (the machine did not slow \
             down evenly): no verdict.",
            spread * 100.0,
            max_spread * 100.0
        ),
        ChangeFinding::NoControl => "No control lane in both runs: the drift between them is unknown (a capture of a \
                                     running program has none: nothing takes the host's drift or the program's \
                                     traffic off its figures)."
            .to_owned(),
        ChangeFinding::Unsteady { run, low_us, high_us, windows, max_drift } => format!(
            "No verdict: {run} changed inside itself — its {windows} windows' median latency ran {low_us:.2}–\
             {high_us:.2} µs, further apart than the {:.0}% a comparison stands, so its figure over all its blocks \
             stands for none of them; compare windows of it (`TRACE@N-M`) before and after the change.",
            max_drift * 100.0
        ),
        ChangeFinding::LaneRanDifferently { a, b } => ran_differently(a, b),
        ChangeFinding::BatchesMoved { lane, a, b } => format!(
            "Lane {lane} batched differently in the runs: {a:.1} operations per shared interval in A, {b:.1} in B; \
             its figures compare two ways of batching as much as the code (a batch's COMMIT is shared by more or \
             fewer operations, and each waits for more or fewer others)."
        ),
        ChangeFinding::SlicesApart { a, b } => format!(
            "No slice was compared: run A has {a} slices and run B {b}, none of the same name (its hops were \
             marked another way, spans against direct marks, or another hop table); the lanes are compared, \
             their slices are not."
        ),
        ChangeFinding::Moved(f) => moved(f),
    }
}

/// A control lane's move, in words.
fn control_moved(c: &hopscope_analyze::change::Control, refused: bool, max_drift: f64) -> String {
    let what = match c.stands_for {
        StandsFor::Sqlite => "SQLite alone",
        StandsFor::Boundary | StandsFor::Slice => "the bare thread boundary",
    };
    if refused {
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

/// A lane both runs ran differently, in words.
fn ran_differently(a: &hopscope_analyze::LaneRun, b: &hopscope_analyze::LaneRun) -> String {
    let how = |l: &hopscope_analyze::LaneRun| {
        format!(
            "{}, {} caller{}",
            if l.probed { "probed" } else { "clean" },
            l.callers,
            if l.callers == 1 { "" } else { "s" }
        )
    };
    format!(
        "Lane {} ran differently in the runs (A {}, B {}): its wall time per operation measures something \
         else in each, so its change is the method's as much as the code's",
        a.lane,
        how(a),
        how(b)
    )
}

/// A figure called slower, faster or drift, in words.
fn moved(f: &hopscope_analyze::change::FigureChange) -> String {
    let carried = f.carried_by.as_ref().map_or(String::new(), |m| {
        format!(
            "; the slice that moved most beyond the floor's: {} {:+.3} µs (95% CI {:+.3}…{:+.3})",
            m.slice, m.delta_us, m.ci95[0], m.ci95[1]
        )
    });
    let net = f.net_of_drift.map_or(String::new(), |n| {
        format!("; {:+.3} µs once its drift is off, short of the {:.3} µs bar or turned", n.delta_us, n.bar_us)
    });
    let against = match (&f.call, &f.control) {
        (Call::Drift, Some(c)) if c != &f.name => format!(" (as {c} moved{net})"),
        (Call::Drift, _) => format!(" (a control's own move{net})"),
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

#[cfg(test)]
mod tests {
    use hopscope_analyze::LaneRun;
    use hopscope_analyze::change::{ContendedSide, Control, FigureChange, Judged, SettingMove, SliceMove, Verdict};

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
        assert!(
            said(ChangeFinding::NoControl)
                .starts_with("No control lane in both runs: the drift between them is unknown")
        );
        let unsteady =
            ChangeFinding::Unsteady { run: "a.hop".into(), low_us: 80.0, high_us: 158.0, windows: 6, max_drift: 0.15 };
        assert!(said(unsteady).starts_with(
            "No verdict: a.hop changed inside itself — its 6 windows' median latency ran 80.00–158.00 µs"
        ));
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
            net_of_drift: None,
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
            net_of_drift: Some(hopscope_analyze::change::NetOfDrift { delta_us: 0.046, bar_us: 0.05 }),
            ..figure
        };
        assert!(said(ChangeFinding::Moved(drift)).starts_with(
            "Slice sent→woke drift (as floor-probed: sent→woke moved; +0.046 µs once its drift is off, short \
                     of the 0.050 µs bar or turned): +0.500 µs"
        ),);
        let json = serde_json::to_value(Recorded::Typed(ChangeFinding::NoControl)).expect("json");
        assert_eq!(json["finding"], "no_control");
    }

    /// A change of one probed lane of 8 callers, `a_us` → `b_us`.
    fn lone(a_us: f64, b_us: f64, b_probed: bool) -> Change {
        let run = |probed: bool| LaneRun { lane: "ingest".into(), probed, callers: 8 };
        let lane = FigureChange {
            name: "ingest".into(),
            kind: FigureKind::Lane,
            gated: true,
            a_us,
            b_us,
            delta_us: b_us - a_us,
            ci95: [b_us - a_us - 0.5, b_us - a_us + 0.5],
            control: None,
            call: if b_us < a_us { Call::Faster } else { Call::NoChange },
            carried_by: None,
            net_of_drift: None,
        };
        let ran_apart = (!b_probed).then(|| ChangeFinding::LaneRanDifferently { a: run(true), b: run(false) });
        Change {
            schema: hopscope_analyze::change::SCHEMA.into(),
            a: "live-txn1".into(),
            b: "live60".into(),
            rule: hopscope_analyze::change::Rule::FIXED,
            controls: Vec::new(),
            verdict: if b_us < a_us { Verdict::Improvement } else { Verdict::NoChange },
            judged: Some(Judged {
                lanes: vec![run(b_probed)],
                figure: hopscope_analyze::ab::FigureKind::WallPerOp,
                slices_of: None,
                slices: 0,
                library: false,
            }),
            decided_by: (b_us < a_us).then(|| "ingest".into()),
            findings: ran_apart.into_iter().map(Recorded::Typed).collect(),
            figures: vec![lane],
            contended: Vec::new(),
        }
    }

    #[test]
    fn the_headline_names_the_figure_its_table_moved() {
        let md = change_markdown(&lone(22.0, 10.1, true));
        assert!(
            md.starts_with("# hopscope change: improvement: `ingest` wall time per operation -11.900 µs (-54.1%)\n"),
            "{md}"
        );
        assert!(
            md.contains(
                "Judged on `ingest`'s wall time per operation (a block's whole time over its operations, the median \
                 over blocks; probed build: its marks' cost included; 8 callers at once: a throughput, not what one \
                 operation waits)."
            ),
            "{md}"
        );
        assert!(md.contains("| ingest | lane | 22.000 | 10.100 | -11.900 |"), "{md}");
        assert!(change_markdown(&lone(22.0, 22.0, true)).starts_with("# hopscope change: no change\n"));
    }

    #[test]
    fn a_probed_run_beside_a_clean_one_is_said() {
        let md = change_markdown(&lone(22.0, 10.1, false));
        assert!(
            md.contains("Lane ingest ran differently in the runs (A probed, 8 callers, B clean, 8 callers)"),
            "{md}"
        );
    }
}
