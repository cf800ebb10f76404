//! What changed between two runs: each lane's time per operation, the
//! derived figures (hop, boundary, library) and the subject's slices, each
//! with a CI and a verdict under a rule fixed before either run.
//!
//! Two runs are two processes, often minutes apart, and a machine drifts
//! between them: a frequency step or a noisy neighbour makes everything
//! slower by a few percent. The baseline lane (SQLite alone, no thread)
//! and the floor (a bare thread boundary) run the same code in both runs
//! whatever the change under test, so their moves are the drift. A change the drift can explain is refused a verdict
//! rather than called a regression.
//!
//! The rule ([`Rule::FIXED`]):
//! - each figure's change is the difference of its two medians over blocks
//!   (per-round differences for the derived figures), with a CI from the
//!   two medians' 97.5% order-statistic intervals (together ≥ 95%);
//! - it is a change when the CI excludes zero and its size reaches the
//!   minimum effect (a share of the figure and an absolute floor);
//! - the drift is each control lane's relative move of its median: the
//!   baseline's (SQLite alone) and the floor's (a bare thread boundary); a
//!   figure whose change stops being one once either drift's share is taken
//!   off is `drift` (not a change of the code under test). Taking a drift
//!   off can only turn a change into `drift`, never make one, so it is
//!   taken off whether or not the control's own CI excludes zero: a short
//!   run's wide CI is no evidence that the machine stood still;
//! - a drift beyond [`Rule::max_drift`], or two controls that disagree by
//!   more than [`Rule::max_drift_spread`] (the machine did not slow down
//!   evenly, so no one share describes it), refuses every verdict.

use std::collections::BTreeMap;

use crate::decomposition::{DerivedFigure, LaneRun};
use crate::recorded::Recorded;
use crate::stats::{median_ci_order_statistics, median_of_unsorted};

mod outcome;
mod samples;
mod shape;

pub use outcome::*;
pub use samples::{RunSamples, SAMPLES_SCHEMA};

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

/// One figure under `rule`. Every control's drift is taken off in turn:
/// a change any of them can explain is `drift`, named after it.
fn judge(
    (name, kind, gated): (&str, FigureKind, bool),
    a: &[f64],
    b: &[f64],
    rule: &Rule,
    (controls, refused): (&[Control], bool),
) -> Option<FigureChange> {
    let (a_med, a_lo, a_hi) = median_interval(a)?;
    let (b_med, b_lo, b_hi) = median_interval(b)?;
    let (delta, lo, hi) = (b_med - a_med, b_lo - a_hi, b_hi - a_lo);
    let floor = match kind {
        FigureKind::Lane => rule.min_us,
        FigureKind::Derived => rule.min_derived_us,
        FigureKind::Slice => rule.min_slice_us,
    };
    let min = floor.max(rule.min_share * a_med.abs());
    let is_change = |d: f64, lo: f64, hi: f64| (lo > 0.0 || hi < 0.0) && d.abs() >= min;
    // The drift's share of this figure, taken off: it explains the change
    // unless a change the same way remains (a drift larger than the change
    // leaves the figure no slower, not faster).
    let explains = |c: &&Control| {
        let share = c.drift * a_med.abs();
        let (d, lo, hi) = (delta - share, lo - share, hi - share);
        let remains = is_change(d, lo, hi) && (d > 0.0) == (delta > 0.0);
        refused || !remains
    };
    let (call, control) = if !is_change(delta, lo, hi) {
        (Call::NoChange, None)
    } else if let Some(c) = controls.iter().find(explains) {
        (Call::Drift, Some(c))
    } else if delta > 0.0 {
        (Call::Slower, None)
    } else {
        (Call::Faster, None)
    };
    // What is left once the drift that explains it is off, beside the bar
    // it no longer clears: a 21 % move called drift beside a 2 % one reads
    // as a mistake without it.
    let net = control.filter(|_| !refused).map(|c| NetOfDrift { delta_us: delta - c.drift * a_med.abs(), bar_us: min });
    let control = control.map(|c| c.lane.clone());
    Some(FigureChange {
        name: name.to_owned(),
        kind,
        gated,
        a_us: a_med,
        b_us: b_med,
        delta_us: delta,
        ci95: [lo, hi],
        control,
        call,
        carried_by: None,
        net_of_drift: net,
    })
}

/// The subject slice of `a`'s and `b`'s beyond-floor figures that moved
/// most in the direction of `delta` (its sign), when any moved that way.
fn carrier(a: &RunSamples, b: &RunSamples, delta: f64) -> Option<SliceMove> {
    let moves = a.beyond_floor.iter().filter_map(|(name, av)| {
        let (_, bv) = b.beyond_floor.iter().find(|(n, _)| n == name)?;
        let (am, alo, ahi) = median_interval(av)?;
        let (bm, blo, bhi) = median_interval(bv)?;
        Some(SliceMove { slice: name.clone(), delta_us: bm - am, ci95: [blo - ahi, bhi - alo] })
    });
    moves.filter(|m| m.delta_us * delta > 0.0).max_by(|x, y| x.delta_us.abs().total_cmp(&y.delta_us.abs()))
}

/// The probed floor's own `slice` as a control of the subject's same
/// slice, when both runs' floors mark it.
fn slice_control(a: &RunSamples, b: &RunSamples, slice: &str) -> Option<Control> {
    let lane = a.floor_slices_lane.as_ref().filter(|l| b.floor_slices_lane.as_ref() == Some(*l))?;
    let (x, y) = (median_interval(a.floor_slices.get(slice)?)?, median_interval(b.floor_slices.get(slice)?)?);
    let moved = (x.0 > 0.0).then(|| y.0 / x.0 - 1.0)?;
    let significant = y.1 > x.2 || y.2 < x.1;
    Some(Control { lane: format!("{lane}: {slice}"), stands_for: StandsFor::Slice, moved, drift: moved, significant })
}

/// The change from run `a` to run `b` (labelled `a_label`, `b_label`).
pub fn compare(a: &RunSamples, b: &RunSamples, a_label: &str, b_label: &str) -> Change {
    let rule = Rule::FIXED;
    let controls = controls(a, b);
    // A run whose figures are the scheduler's measures no change.
    let contended: Vec<ContendedSide> = [(a_label, a), (b_label, b)]
        .into_iter()
        .filter_map(|(label, run)| Some(ContendedSide { run: label.to_owned(), waited: run.contended.clone()? }))
        .collect();
    // A capture that ran two ways inside itself has no one figure.
    let unsteady: Vec<ChangeFinding> = [(a, a_label), (b, b_label)]
        .into_iter()
        .filter_map(|(run, label)| shape::unsteady(run, label, &rule))
        .collect();
    // No one drift describes the machine: every change could be it.
    let refused = controls.iter().any(|c| rule.refuses(c.drift))
        || drift_spread(&controls) > rule.max_drift_spread
        || !contended.is_empty()
        || !unsteady.is_empty();
    let gate = gated_lanes(a, b, &controls);
    let judging = (&controls[..], refused);
    let mut figures = lane_figures(a, b, &gate, &rule, judging);
    figures.extend(derived_figures(a, b, &rule, judging));
    figures.extend(slice_figures(a, b, &controls, &rule, refused));
    // The subject's slices beyond the floor's are not judged one by one:
    // across unchanged reruns they move by up to ~0.13 µs, past their own
    // CIs and a slice's 0.05 µs bar; they name the slice a change of
    // `library` sits in (`carried_by`).
    let gated: Vec<&FigureChange> = figures.iter().filter(|f| f.gated).collect();
    // A change the drift explains is not called one (its row says
    // `drift`); past the largest drift the adjustment can stand, nothing is.
    // Two captures of a running program are judged on what one operation
    // waited: when that moved, it decides, and the slices are where it
    // moved (a batching writer halves the latency while one slice, the
    // wait behind the batch, grows). When it did not, a slice that moved
    // still decides.
    let deciding: Vec<&FigureChange> = match b.figure {
        crate::ab::FigureKind::LatencyMedian
            if gated.iter().any(|f| f.kind == FigureKind::Lane && f.call != Call::NoChange) =>
        {
            gated.iter().copied().filter(|f| f.kind == FigureKind::Lane).collect()
        }
        _ => gated.clone(),
    };
    let verdict = if refused {
        Verdict::DriftSuspected
    } else if deciding.iter().any(|f| f.call == Call::Slower) {
        Verdict::Regression
    } else if deciding.iter().any(|f| f.call == Call::Faster) {
        Verdict::Improvement
    } else {
        Verdict::NoChange
    };
    let decided_by = decided_by(&deciding, verdict, b);
    let judged = judged(b, &gate, &figures);
    let mut findings = findings(&figures, &controls, &rule);
    findings.splice(0..0, ran_differently(a, b).into_iter().chain(shape::batches_moved(a, b)));
    findings.extend(shape::slices_apart(a, b));
    if let Some(different) = made_differently(a, b) {
        findings.insert(0, different);
    }
    findings.splice(0..0, unsteady);
    for (i, side) in contended.iter().enumerate() {
        findings.insert(i, ChangeFinding::Contended(side.clone()));
    }
    let findings = findings.into_iter().map(Recorded::Typed).collect();
    Change {
        schema: SCHEMA.to_owned(),
        a: a_label.to_owned(),
        b: b_label.to_owned(),
        rule,
        controls,
        figures,
        verdict,
        judged,
        decided_by,
        findings,
        contended,
    }
}

/// A lane's per-block figures in `run` (µs per op).
fn values(run: &RunSamples, lane: &str) -> Vec<f64> {
    run.lanes.get(lane).map(|m| m.values().copied().collect()).unwrap_or_default()
}

/// The control lanes both runs ran (the baseline, the floor) and how far
/// each moved: the machine's drift.
fn controls(a: &RunSamples, b: &RunSamples) -> Vec<Control> {
    let control = |lane: Option<&String>, stands_for: StandsFor| -> Option<Control> {
        let lane = lane.filter(|l| b.lanes.contains_key(*l))?;
        let (x, y) = (median_interval(&values(a, lane))?, median_interval(&values(b, lane))?);
        let moved = (x.0 > 0.0).then(|| y.0 / x.0 - 1.0)?;
        let significant = y.1 > x.2 || y.2 < x.1;
        Some(Control { lane: lane.clone(), stands_for, moved, drift: moved, significant })
    };
    [control(a.baseline.as_ref(), StandsFor::Sqlite), control(a.floor.as_ref(), StandsFor::Boundary)]
        .into_iter()
        .flatten()
        .collect()
}

/// The lanes whose figure gates the verdict: the first subject lane of
/// run A's (clean before probed) that run B ran too, else run B's that A
/// ran; in runs without a common subject, every lane both ran but the
/// controls. A run of one subject lane and no baseline has no lane
/// arithmetic, and was judged on nothing: "no change" over a table whose
/// lane read −54 %.
fn gated_lanes(a: &RunSamples, b: &RunSamples, controls: &[Control]) -> Vec<String> {
    let both = |lane: &&String| a.lanes.contains_key(*lane) && b.lanes.contains_key(*lane);
    if let Some(subject) = a.subjects.iter().find(both).or_else(|| b.subjects.iter().find(both)) {
        return vec![subject.clone()];
    }
    a.lanes.keys().filter(both).filter(|l| !controls.iter().any(|c| &c.lane == *l)).cloned().collect()
}

/// Every lane both runs ran, judged; `gate` the ones that gate.
fn lane_figures(
    a: &RunSamples,
    b: &RunSamples,
    gate: &[String],
    rule: &Rule,
    (controls, refused): (&[Control], bool),
) -> Vec<FigureChange> {
    let is_control = |lane: &str| controls.iter().any(|c| c.lane == lane);
    let mut figures = Vec::new();
    for lane in a.lanes.keys().filter(|l| b.lanes.contains_key(*l)) {
        let gated = gate.contains(lane);
        // A control's own move is the drift, not a change of it.
        let against: &[Control] = if is_control(lane) { &[] } else { controls };
        let mut figure =
            judge((lane, FigureKind::Lane, gated), &values(a, lane), &values(b, lane), rule, (against, refused));
        if let Some(f) = figure.as_mut().filter(|f| is_control(&f.name) && f.call != Call::NoChange) {
            f.call = Call::Drift;
            f.control = Some(f.name.clone());
        }
        figures.extend(figure);
    }
    figures
}

/// The derived figures both runs have, judged; `library` gates.
fn derived_figures(
    a: &RunSamples,
    b: &RunSamples,
    rule: &Rule,
    (controls, refused): (&[Control], bool),
) -> Vec<FigureChange> {
    let b_derived: BTreeMap<DerivedFigure, Vec<f64>> = b.derived().into_iter().collect();
    let floors_stand = a.floor_stands && b.floor_stands;
    let mut figures = Vec::new();
    for (name, av) in a.derived() {
        let Some(bv) = b_derived.get(&name) else { continue };
        if name == DerivedFigure::Library && !floors_stand {
            // A floor that cannot stand for the boundary gives no library.
            continue;
        }
        // `library` gates: it is the subject less the floor round by round
        // within each run, so the drift that moves both lanes cancels in
        // it (kv-writer, eleven unchanged careful reruns: 0.09–0.34 µs; a
        // 300 ns busy-wait in its writer: 0.54–0.64), and it is what a
        // change to the writer moves. The other derived figures are
        // judged, not gated: hop and boundary set a thread against
        // SQLite alone, which drift moves unevenly.
        let gated = name == DerivedFigure::Library;
        let mut figure = judge((name.name(), FigureKind::Derived, gated), &av, bv, rule, (controls, refused));
        if let Some(f) = figure.as_mut().filter(|f| gated && matches!(f.call, Call::Slower | Call::Faster)) {
            f.carried_by = carrier(a, b, f.delta_us);
        }
        figures.extend(figure);
    }
    figures
}

/// The subject's slices both runs have, judged (each gates).
fn slice_figures(
    a: &RunSamples,
    b: &RunSamples,
    controls: &[Control],
    rule: &Rule,
    refused: bool,
) -> Vec<FigureChange> {
    let mut figures = Vec::new();
    for (name, av) in &a.slices {
        if let Some((_, bv)) = b.slices.iter().find(|(n, _)| n == name) {
            // A slice the probed floor marks too has that slice for its
            // control: a wake slice moves with the host far more than the
            // floor's whole operation does (kv-writer, unchanged reruns:
            // the reply's wake +17% while the floor moved +5.9%).
            let mut against = controls.to_vec();
            against.extend(slice_control(a, b, name));
            figures.extend(judge((name, FigureKind::Slice, true), av, bv, rule, (&against, refused)));
        }
    }
    figures
}

/// The gated figure that decided `verdict`: of those called its way, a
/// lane before the library figure before a slice (the lane is what a
/// user's write takes; a slice of 20 ns that grew 3 µs reads +15,000 %),
/// and within a kind the one that moved most, an operation's own slice
/// before a wait on a batch's others ([`shape::slice_rank`], by run `b`).
fn decided_by(gated: &[&FigureChange], verdict: Verdict, b: &RunSamples) -> Option<String> {
    let call = match verdict {
        Verdict::Regression => Call::Slower,
        Verdict::Improvement => Call::Faster,
        Verdict::NoChange | Verdict::DriftSuspected => return None,
    };
    let rank = |f: &FigureChange| match f.kind {
        FigureKind::Lane => 0,
        FigureKind::Derived => 1,
        FigureKind::Slice => 2 + shape::slice_rank(b, &f.name),
    };
    gated
        .iter()
        .filter(|f| f.call == call)
        .min_by(|x, y| rank(x).cmp(&rank(y)).then(y.delta_us.abs().total_cmp(&x.delta_us.abs())))
        .map(|f| f.name.clone())
}

/// What the verdict judged: `gate`'s lanes as run `b` ran them, the
/// slices and the library figure among `figures`.
fn judged(b: &RunSamples, gate: &[String], figures: &[FigureChange]) -> Option<Judged> {
    let lanes: Vec<LaneRun> = gate.iter().filter_map(|lane| b.runs.get(lane).cloned()).collect();
    let slices = figures.iter().filter(|f| f.kind == FigureKind::Slice).count();
    let library = figures.iter().any(|f| f.gated && f.name == DerivedFigure::Library.name());
    if lanes.is_empty() && slices == 0 && !library {
        return None;
    }
    let slices_of = (slices > 0).then(|| b.slices_lane.clone()).flatten();
    Some(Judged { lanes, figure: b.figure, slices_of, slices, library })
}

/// Every lane both runs ran that they ran differently (probed in one and
/// clean in the other, or with other callers at once).
fn ran_differently(a: &RunSamples, b: &RunSamples) -> Vec<ChangeFinding> {
    a.runs
        .iter()
        .filter_map(|(lane, x)| {
            let y = b.runs.get(lane)?;
            (x != y && b.lanes.contains_key(lane) && a.lanes.contains_key(lane))
                .then(|| ChangeFinding::LaneRanDifferently { a: x.clone(), b: y.clone() })
        })
        .collect()
}

/// The run facts the two runs differ in (both recorded, different
/// values), when there are any.
fn made_differently(a: &RunSamples, b: &RunSamples) -> Option<ChangeFinding> {
    let settings: Vec<SettingMove> = samples::SETTINGS
        .iter()
        .map(hopscope_probe::RunFact::to_string)
        .filter_map(|fact| match (a.settings.get(&fact), b.settings.get(&fact)) {
            (Some(x), Some(y)) if x != y => Some(SettingMove { fact, a: x.clone(), b: y.clone() }),
            _ => None,
        })
        .collect();
    (!settings.is_empty()).then_some(ChangeFinding::MadeDifferently { settings })
}

/// How far apart the controls' drifts are, as the ratio of the larger
/// step to the smaller minus one (the same from either run's side; 0 with
/// fewer than two controls).
fn drift_spread(controls: &[Control]) -> f64 {
    let ratios = controls.iter().map(|c| 1.0 + c.drift);
    let (lo, hi) = ratios.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| (lo.min(r), hi.max(r)));
    if controls.len() < 2 {
        0.0
    } else if lo > 0.0 {
        hi / lo - 1.0
    } else {
        f64::INFINITY
    }
}

/// One finding per control, then one per changed figure.
fn findings(figures: &[FigureChange], controls: &[Control], rule: &Rule) -> Vec<ChangeFinding> {
    let mut out: Vec<ChangeFinding> = controls
        .iter()
        .map(|c| ChangeFinding::ControlMoved {
            control: c.clone(),
            refused: rule.refuses(c.drift),
            max_drift: rule.max_drift,
        })
        .collect();
    let spread = drift_spread(controls);
    if spread > rule.max_drift_spread {
        out.push(ChangeFinding::ControlsApart { spread, max_spread: rule.max_drift_spread });
    }
    if controls.is_empty() {
        out.push(ChangeFinding::NoControl);
    }
    out.extend(figures.iter().filter(|f| f.call != Call::NoChange).cloned().map(ChangeFinding::Moved));
    out
}

#[cfg(test)]
mod tests;
