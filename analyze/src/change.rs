//! What changed between two runs: each lane's time per operation, the
//! derived figures (hop, boundary, library) and the subject's slices, each
//! with a CI and a verdict under a rule fixed before either run.
//!
//! Two runs are two processes, often minutes apart, and a machine drifts
//! between them: a frequency step or a noisy neighbour makes everything
//! slower by a few percent. The baseline lane (SQLite alone, no thread)
//! runs the same code in both runs whatever the change under test, so its
//! move is the drift. A change the drift can explain is refused a verdict
//! rather than called a regression.
//!
//! The rule ([`Rule::FIXED`]):
//! - each figure's change is the difference of its two medians over blocks
//!   (per-round differences for the derived figures), with a CI from the
//!   two medians' 97.5% order-statistic intervals (together ≥ 95%);
//! - it is a change when the CI excludes zero and its size reaches the
//!   minimum effect (a share of the figure and an absolute floor);
//! - the drift is the baseline lane's relative move (0 unless its CI
//!   excludes zero); a figure whose change
//!   stops being one once the drift's share is taken off is `drift` (not a
//!   change of the code under test);
//! - a drift beyond [`Rule::max_drift`] refuses every verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Role;
use crate::decomposition::Decomposition;
use crate::join::LaneOps;
use crate::stats::{median_ci_order_statistics, median_of_unsorted};

/// The rule a change is judged by, fixed in advance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Minimum effect as a share of the figure (0.05 = 5%).
    pub min_share: f64,
    /// Minimum effect for a lane or derived figure, µs.
    pub min_us: f64,
    /// Minimum effect for a slice, µs.
    pub min_slice_us: f64,
    /// The baseline's relative move beyond which no verdict is given.
    pub max_drift: f64,
}

impl Rule {
    /// The rule every comparison uses: 5%, 0.1 µs (slices 0.05 µs), no
    /// verdict past a 10% drift. Chosen from unchanged reruns on a 2-vCPU
    /// VM: between processes its lanes drifted by up to 8% together and
    /// its slices of a few tens of ns by up to 30 ns.
    pub const FIXED: Rule = Rule { min_share: 0.05, min_us: 0.1, min_slice_us: 0.05, max_drift: 0.10 };
}

/// What a figure did between the two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    /// Slower beyond the minimum effect, with a CI that excludes zero.
    Slower,
    /// Faster likewise.
    Faster,
    /// No change the rule can see.
    NoChange,
    /// A change the baseline's drift can explain: no verdict.
    Drift,
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Call::Slower => "slower",
            Call::Faster => "faster",
            Call::NoChange => "no change",
            Call::Drift => "drift",
        })
    }
}

/// What kind of figure a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A lane's time per operation.
    Lane,
    /// Hop, boundary or library.
    Derived,
    /// A slice of the subject's probed lane.
    Slice,
}

/// One figure's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureChange {
    /// Lane name, `hop`/`boundary`/`library`, or the slice's name.
    pub name: String,
    /// What it is.
    pub kind: FigureKind,
    /// Whether it decides the overall verdict (the subject and what is
    /// derived from it; not the reference lanes or peers).
    pub gated: bool,
    /// Median in run A, µs.
    pub a_us: f64,
    /// Median in run B, µs.
    pub b_us: f64,
    /// B − A, µs.
    pub delta_us: f64,
    /// ≥ 95% CI of B − A, µs.
    pub ci95: [f64; 2],
    /// The verdict.
    pub call: Call,
}

/// The overall verdict, from the gated figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A gated figure got slower beyond what the drift explains.
    Regression,
    /// A gated figure got faster and none slower.
    Improvement,
    /// No gated figure changed beyond what the drift explains.
    NoChange,
    /// The control lane moved more than a comparison can stand
    /// ([`Rule::max_drift`]): no verdict.
    DriftSuspected,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::NoChange => "no change",
            Verdict::DriftSuspected => "drift-suspected",
        })
    }
}

/// The change between two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// `hopscope.change/1`.
    pub schema: String,
    /// What run A is (a path, a baseline's name).
    pub a: String,
    /// What run B is.
    pub b: String,
    /// The rule.
    pub rule: Rule,
    /// The baseline lane whose move is the drift, if both runs have one.
    pub control: Option<String>,
    /// Its relative move, B / A − 1 (0 when its CI includes zero: no
    /// evidence of a drift).
    pub drift: Option<f64>,
    /// Every figure both runs have.
    pub figures: Vec<FigureChange>,
    /// The overall verdict.
    pub verdict: Verdict,
    /// One sentence per finding.
    pub findings: Vec<String>,
}

/// The schema tag of [`Change`].
pub const SCHEMA: &str = "hopscope.change/1";

/// One run's per-block samples, as a change needs them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSamples {
    /// Per lane, `(pass, sample) → µs per op`.
    lanes: BTreeMap<String, BTreeMap<(u32, u32), f64>>,
    subject: Option<String>,
    baseline: Option<String>,
    floor: Option<String>,
    /// The subject's probed lane's slices: name → per-block interquartile
    /// means, µs.
    slices: Vec<(String, Vec<f64>)>,
}

impl RunSamples {
    /// A run's samples from its decomposition and, for its slices, its
    /// joined trace (`None`: lanes and derived figures only).
    pub fn new(d: &Decomposition, joined: Option<(&hopscope_probe::TraceHeader, &[LaneOps])>) -> RunSamples {
        let lanes = d
            .lanes
            .iter()
            .map(|(name, lane)| {
                (name.clone(), lane.blocks_us.iter().map(|b| ((b.pass, b.sample), b.us_per_op)).collect())
            })
            .collect();
        let role = |r: Role| d.derived.as_ref().and_then(|x| x.lane(r)).map(str::to_owned);
        let mut slices = Vec::new();
        if let (Some((header, joined)), Some(lane)) = (joined, d.insitu_lane.as_ref()) {
            let index = header.lanes.iter().position(|l| l == lane);
            if let Some(ops) = joined.iter().find(|o| Some(usize::from(o.lane)) == index) {
                for (i, slice) in ops.slices.iter().enumerate() {
                    // Interquartile means: robust as a median, but not
                    // stuck on the clock's grain as a median of quantised
                    // durations is.
                    let values: Vec<f64> = ops
                        .blocks
                        .iter()
                        .filter_map(|b| b.slice_iqm_ns.get(i).copied().flatten())
                        .map(|ns| ns / 1e3)
                        .collect();
                    slices.push((slice.name.clone(), values));
                }
            }
        }
        RunSamples {
            lanes,
            subject: role(Role::Subject),
            baseline: role(Role::Baseline),
            floor: role(Role::Floor),
            slices,
        }
    }

    /// Per-round `x − y` of two lanes.
    fn rounds(&self, x: Option<&String>, y: Option<&String>) -> Option<Vec<f64>> {
        let (x, y) = (self.lanes.get(x?)?, self.lanes.get(y?)?);
        let diffs: Vec<f64> = x.iter().filter_map(|(round, a)| y.get(round).map(|b| a - b)).collect();
        (!diffs.is_empty()).then_some(diffs)
    }

    /// The derived figures' per-round samples, by name.
    fn derived(&self) -> Vec<(&'static str, Vec<f64>)> {
        let (s, b, f) = (self.subject.as_ref(), self.baseline.as_ref(), self.floor.as_ref());
        [("hop", self.rounds(s, b)), ("boundary", self.rounds(f, b)), ("library", self.rounds(s, f))]
            .into_iter()
            .filter_map(|(name, v)| v.map(|v| (name, v)))
            .collect()
    }
}

/// Median and its interval with each tail ≤ 1.25%.
fn median_interval(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    let median = median_of_unsorted(&mut sorted);
    let (lo, hi) = median_ci_order_statistics(&mut sorted, 0.0125);
    Some((median, lo, hi))
}

/// One figure under `rule`, with `drift` (the baseline's relative move)
/// taken into account.
fn judge(
    (name, kind, gated): (&str, FigureKind, bool),
    a: &[f64],
    b: &[f64],
    rule: &Rule,
    drift: Option<f64>,
) -> Option<FigureChange> {
    let (a_med, a_lo, a_hi) = median_interval(a)?;
    let (b_med, b_lo, b_hi) = median_interval(b)?;
    let (delta, lo, hi) = (b_med - a_med, b_lo - a_hi, b_hi - a_lo);
    let floor = if kind == FigureKind::Slice { rule.min_slice_us } else { rule.min_us };
    let min = floor.max(rule.min_share * a_med.abs());
    let is_change = |d: f64, lo: f64, hi: f64| (lo > 0.0 || hi < 0.0) && d.abs() >= min;
    let call = match drift {
        _ if !is_change(delta, lo, hi) => Call::NoChange,
        Some(drift) if drift.abs() > rule.max_drift => Call::Drift,
        Some(drift) => {
            // The drift's share of this figure, taken off.
            let share = drift * a_med.abs();
            if is_change(delta - share, lo - share, hi - share) {
                if delta > 0.0 { Call::Slower } else { Call::Faster }
            } else {
                Call::Drift
            }
        }
        None if delta > 0.0 => Call::Slower,
        None => Call::Faster,
    };
    Some(FigureChange {
        name: name.to_owned(),
        kind,
        gated,
        a_us: a_med,
        b_us: b_med,
        delta_us: delta,
        ci95: [lo, hi],
        call,
    })
}

/// The change from run `a` to run `b` (labelled `a_label`, `b_label`).
pub fn compare(a: &RunSamples, b: &RunSamples, a_label: &str, b_label: &str) -> Change {
    let rule = Rule::FIXED;
    let control = a.baseline.clone().filter(|l| b.lanes.contains_key(l) && a.lanes.contains_key(l));
    let values = |run: &RunSamples, lane: &str| -> Vec<f64> {
        run.lanes.get(lane).map(|m| m.values().copied().collect()).unwrap_or_default()
    };
    // The drift is the control's move when its CI excludes zero; a move
    // within the control's own noise is no evidence of one.
    let drift = control.as_ref().and_then(|lane| {
        let (a, b) = (median_interval(&values(a, lane))?, median_interval(&values(b, lane))?);
        let moved = b.1 > a.2 || b.2 < a.1;
        (a.0 > 0.0).then(|| if moved { b.0 / a.0 - 1.0 } else { 0.0 })
    });
    let mut figures = Vec::new();
    for lane in a.lanes.keys().filter(|l| b.lanes.contains_key(*l)) {
        let gated = a.subject.as_ref() == Some(lane);
        // The control's own move is the drift, not a change of it.
        let is_control = control.as_ref() == Some(lane);
        let lane_drift = if is_control { None } else { drift };
        let mut figure = judge((lane, FigureKind::Lane, gated), &values(a, lane), &values(b, lane), &rule, lane_drift);
        if let Some(f) = figure.as_mut().filter(|f| is_control && f.call != Call::NoChange) {
            f.call = Call::Drift;
        }
        figures.extend(figure);
    }
    let b_derived: BTreeMap<&str, Vec<f64>> = b.derived().into_iter().collect();
    for (name, av) in a.derived() {
        if let Some(bv) = b_derived.get(name) {
            let gated = name != "boundary";
            figures.extend(judge((name, FigureKind::Derived, gated), &av, bv, &rule, drift));
        }
    }
    for (name, av) in &a.slices {
        if let Some((_, bv)) = b.slices.iter().find(|(n, _)| n == name) {
            figures.extend(judge((name, FigureKind::Slice, true), av, bv, &rule, drift));
        }
    }
    let gated: Vec<&FigureChange> = figures.iter().filter(|f| f.gated).collect();
    // A change the drift explains is not called one (its row says
    // `drift`); past the largest drift the adjustment can stand, nothing is.
    let verdict = if drift.is_some_and(|d| d.abs() > rule.max_drift) {
        Verdict::DriftSuspected
    } else if gated.iter().any(|f| f.call == Call::Slower) {
        Verdict::Regression
    } else if gated.iter().any(|f| f.call == Call::Faster) {
        Verdict::Improvement
    } else {
        Verdict::NoChange
    };
    let findings = findings(&figures, control.as_deref(), drift, &rule);
    Change {
        schema: SCHEMA.to_owned(),
        a: a_label.to_owned(),
        b: b_label.to_owned(),
        rule,
        control,
        drift,
        figures,
        verdict,
        findings,
    }
}

/// One sentence per changed figure, and the drift.
fn findings(figures: &[FigureChange], control: Option<&str>, drift: Option<f64>, rule: &Rule) -> Vec<String> {
    let mut out = Vec::new();
    match (control, drift) {
        (Some(lane), Some(d)) if d.abs() > rule.max_drift => out.push(format!(
            "The control lane {lane} moved {:+.1}% between the runs, beyond the {:.0}% a comparison can stand: no verdict.",
            d * 100.0,
            rule.max_drift * 100.0
        )),
        (Some(lane), Some(d)) if d.abs() < f64::EPSILON => out.push(format!(
            "The control lane {lane} did not move beyond its own noise between the runs: no drift is taken off."
        )),
        (Some(lane), Some(d)) => out.push(format!(
            "The control lane {lane} moved {:+.1}% between the runs (the machine's drift); each change is judged with that share taken off.",
            d * 100.0
        )),
        _ => out.push("No control lane in both runs: the drift between them is unknown.".to_owned()),
    }
    for f in figures.iter().filter(|f| f.call != Call::NoChange) {
        out.push(format!(
            "{} {} {}: {:+.3} µs ({:.3} → {:.3}; 95% CI {:+.3}…{:+.3}){}",
            match f.kind {
                FigureKind::Lane => "Lane",
                FigureKind::Derived => "Figure",
                FigureKind::Slice => "Slice",
            },
            f.name,
            f.call,
            f.delta_us,
            f.a_us,
            f.b_us,
            f.ci95[0],
            f.ci95[1],
            if f.gated { "" } else { " (not gated)" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose lanes' blocks scatter around their given µs per op
    /// (a fixed ±2% pattern) and whose subject has two slices.
    fn run(scale: f64, writer_extra: f64, slice_extra: f64) -> RunSamples {
        let wobble = |i: u32| 1.0 + 0.02 * (f64::from(i % 7) - 3.0) / 3.0;
        let lane = |us: f64| -> BTreeMap<(u32, u32), f64> {
            (0..60).map(|i| ((i / 30, i % 30), us * scale * wobble(i))).collect()
        };
        let slice = |us: f64| -> Vec<f64> { (0..60).map(|i| us * scale * wobble(i + 3)).collect() };
        RunSamples {
            lanes: BTreeMap::from([
                ("inline".to_owned(), lane(12.0)),
                ("floor".to_owned(), lane(17.5)),
                ("writer".to_owned(), lane(18.0 + writer_extra)),
            ]),
            subject: Some("writer".into()),
            baseline: Some("inline".into()),
            floor: Some("floor".into()),
            slices: vec![("locked→built".into(), slice(0.06 + slice_extra)), ("sent→woke".into(), slice(4.0))],
        }
    }

    #[test]
    fn the_same_run_twice_is_no_change() {
        let c = compare(&run(1.0, 0.0, 0.0), &run(1.0, 0.0, 0.0), "a", "b");
        assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.findings);
        assert_eq!(c.drift, Some(0.0));
        assert!(c.figures.iter().all(|f| f.call == Call::NoChange));
    }

    #[test]
    fn a_slower_slice_is_a_regression_that_names_it() {
        let c = compare(&run(1.0, 0.0, 0.0), &run(1.0, 0.5, 0.5), "a", "b");
        assert_eq!(c.verdict, Verdict::Regression);
        let slice = c.figures.iter().find(|f| f.name == "locked→built").expect("slice");
        assert_eq!(slice.call, Call::Slower);
        assert!(slice.ci95[0] > 0.0 && (slice.delta_us - 0.5).abs() < 0.05, "{slice:?}");
        assert_eq!(c.figures.iter().find(|f| f.name == "sent→woke").map(|f| f.call), Some(Call::NoChange));
        assert!(c.findings.iter().any(|f| f.starts_with("Slice locked→built slower")), "{:#?}", c.findings);
        let faster = compare(&run(1.0, 0.5, 0.5), &run(1.0, 0.0, 0.0), "a", "b");
        assert_eq!(faster.verdict, Verdict::Improvement);
    }

    #[test]
    fn a_machine_that_got_slower_everywhere_is_drift_not_a_regression() {
        // Everything 6% slower: above the 5% minimum effect on its own,
        // but the control lane moved as much.
        let c = compare(&run(1.0, 0.0, 0.0), &run(1.06, 0.0, 0.0), "a", "b");
        assert!((c.drift.expect("drift") - 0.06).abs() < 1e-9);
        assert_eq!(c.verdict, Verdict::NoChange, "{:#?}", c.figures);
        let writer = c.figures.iter().find(|f| f.name == "writer").expect("writer");
        assert_eq!(writer.call, Call::Drift, "{writer:?}");
        // A real regression on top of the drift is still one.
        let c = compare(&run(1.0, 0.0, 0.0), &run(1.06, 3.0, 0.0), "a", "b");
        assert_eq!(c.verdict, Verdict::Regression, "{:#?}", c.figures);
        // Past a 10% drift nothing is judged.
        let c = compare(&run(1.0, 0.0, 0.0), &run(1.15, 3.0, 0.0), "a", "b");
        assert_eq!(c.verdict, Verdict::DriftSuspected);
        assert!(c.findings[0].contains("no verdict"), "{}", c.findings[0]);
    }
}
