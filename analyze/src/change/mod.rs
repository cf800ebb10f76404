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

use serde::{Deserialize, Serialize};

use crate::decomposition::{DerivedFigure, LaneRun};
use crate::recorded::Recorded;
use crate::stats::{median_ci_order_statistics, median_of_unsorted};

mod samples;
mod shape;

pub use samples::RunSamples;

/// The rule a change is judged by, fixed in advance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Minimum effect as a share of the figure (0.05 = 5%).
    pub min_share: f64,
    /// Minimum effect for a lane, µs.
    pub min_us: f64,
    /// Minimum effect for a derived figure (a difference of two lanes), µs.
    pub min_derived_us: f64,
    /// Minimum effect for a slice, µs.
    pub min_slice_us: f64,
    /// A control's relative move beyond which no verdict is given.
    pub max_drift: f64,
    /// The largest difference between the controls' relative moves for
    /// which one drift still describes the machine.
    #[serde(default = "Rule::default_spread")]
    pub max_drift_spread: f64,
}

impl Rule {
    /// The rule every comparison uses: 5% of the figure, and at least
    /// 0.1 µs for a lane, 0.35 µs for a derived figure, 0.05 µs for a
    /// slice; no verdict past a 25% drift or controls more than 8 points
    /// apart. Chosen from unchanged reruns on a 2-vCPU VM: between
    /// processes its lanes drifted by up to 21% together (the two controls
    /// never more than 3.5 points apart), the library figure (a difference
    /// of two ~30 µs lanes) ranged 0.68–1.18 µs, and slices of a few tens
    /// of ns moved by up to 30 ns — more than any one run's CI shows.
    pub const FIXED: Rule = Rule {
        min_share: 0.05,
        min_us: 0.1,
        min_derived_us: 0.35,
        min_slice_us: 0.05,
        max_drift: 0.25,
        max_drift_spread: 0.08,
    };

    /// Whether a control's relative move `drift` is past [`Rule::max_drift`],
    /// either way round: 25% slower and 20% faster are the same step seen
    /// from its two ends, so `compare A B` and `compare B A` agree.
    pub fn refuses(&self, drift: f64) -> bool {
        let ratio = 1.0 + drift;
        if ratio.is_nan() || ratio <= 0.0 {
            return true;
        }
        ratio.max(1.0 / ratio) - 1.0 > self.max_drift
    }

    /// `max_drift_spread` for a change written before the field existed.
    fn default_spread() -> f64 {
        Rule::FIXED.max_drift_spread
    }
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
    /// Whether it decides the overall verdict: the subject lane, its
    /// slices and `library` (not the reference lanes, peers, or hop and
    /// boundary, which drift moves unevenly).
    pub gated: bool,
    /// Median in run A, µs.
    pub a_us: f64,
    /// Median in run B, µs.
    pub b_us: f64,
    /// B − A, µs.
    pub delta_us: f64,
    /// ≥ 95% CI of B − A, µs.
    pub ci95: [f64; 2],
    /// The control whose drift was taken off, if any.
    pub control: Option<String>,
    /// The verdict.
    pub call: Call,
    /// For `library` called slower or faster: the subject's slice that
    /// moved most beyond the floor's same slice, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_by: Option<SliceMove>,
    /// For a figure called drift: what is left of its change once the
    /// control's drift is off, and the bar that no longer clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_of_drift: Option<NetOfDrift>,
}

/// A change with a control's drift taken off.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetOfDrift {
    /// B − A less the drift's share, µs.
    pub delta_us: f64,
    /// The smallest change the rule calls for this figure, µs.
    pub bar_us: f64,
}

/// How much one of the subject's slices moved beyond the floor's same
/// slice between the runs (per-round differences within each run, so the
/// drift cancels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceMove {
    /// The slice.
    pub slice: String,
    /// Its move beyond the floor's, B − A, µs.
    pub delta_us: f64,
    /// ≥ 95% CI of it.
    pub ci95: [f64; 2],
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

/// What a comparison's verdict judged: which figures gate it, and how
/// their lanes ran. Two runs' "µs per operation" can be a clean build's
/// wall time, a probed one's (its marks' cost in it) or, with several
/// callers at once, a throughput; a verdict says which it compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The lanes whose figure gates (the subject's clean build when both
    /// runs ran it; every lane but the controls in runs without a
    /// subject), as run B ran them.
    pub lanes: Vec<LaneRun>,
    /// Their figure: a block's wall time over its operations, the median
    /// over blocks.
    pub figure: crate::ab::FigureKind,
    /// The lane whose slices gate (each slice's interquartile mean per
    /// block, the median over blocks), when both runs sliced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slices_of: Option<String>,
    /// How many of its slices both runs have.
    pub slices: usize,
    /// Whether the library figure (subject less floor, round by round)
    /// gates.
    pub library: bool,
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
    /// The control lanes and their drift, as the figures used them.
    pub controls: Vec<Control>,
    /// Every figure both runs have.
    pub figures: Vec<FigureChange>,
    /// The overall verdict.
    pub verdict: Verdict,
    /// What it judged (absent in changes written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged>,
    /// The gated figure that decided a regression or an improvement: the
    /// one that moved most that way, relative to its level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// What the change says, as data (the receipt renders each in
    /// words); a change written before findings were data holds sentences.
    pub findings: Vec<Recorded<ChangeFinding>>,
    /// The runs another process held the CPUs of, each with what it
    /// waited: no verdict is drawn when there is any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contended: Vec<ContendedSide>,
}

/// A lane whose move between the runs is the machine's drift, not a change
/// of the code under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Control {
    /// The lane.
    pub lane: String,
    /// What drift it stands for.
    pub stands_for: StandsFor,
    /// Its relative move, B / A − 1.
    pub moved: f64,
    /// The drift taken off: its move.
    pub drift: f64,
    /// Whether the move's CI excludes zero (said in the findings: a move
    /// within the control's own noise is taken off all the same).
    #[serde(default)]
    pub significant: bool,
}

/// What a change between two runs says, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
pub enum ChangeFinding {
    /// Another process held a run's CPUs: no verdict.
    Contended(ContendedSide),
    /// The runs were made with different settings: a change may be the
    /// method's as much as the code's.
    MadeDifferently {
        /// The run facts that differ.
        settings: Vec<SettingMove>,
    },
    /// A control lane's move: the machine's drift, taken off the figures
    /// it stands for, or past what a comparison can stand.
    ControlMoved {
        /// The control.
        control: Control,
        /// Whether its drift is past the rule's limit (no verdict).
        refused: bool,
        /// The rule's limit on drift, as a fraction.
        max_drift: f64,
    },
    /// The controls moved too far apart for one drift to describe them:
    /// no verdict.
    ControlsApart {
        /// How far apart, as a fraction ([`Rule::max_drift_spread`]'s
        /// measure).
        spread: f64,
        /// The rule's limit, as a fraction.
        max_spread: f64,
    },
    /// No control lane in both runs: the drift is unknown.
    NoControl,
    /// A lane both runs have ran differently in them (probed in one,
    /// clean in the other, or with other callers at once): its figure
    /// means something else in each.
    LaneRanDifferently {
        /// How run A ran it.
        a: LaneRun,
        /// How run B ran it.
        b: LaneRun,
    },
    /// A lane's batches moved between the runs: its figures compare
    /// writers that batched differently as much as the code.
    BatchesMoved {
        /// The lane.
        lane: String,
        /// Its mean operations per shared interval in run A.
        a: f64,
        /// In run B.
        b: f64,
    },
    /// Both runs have slices, none in common (hops marked another way):
    /// no slice was compared.
    SlicesApart {
        /// Slices run A has.
        a: usize,
        /// Slices run B has.
        b: usize,
    },
    /// A figure called slower, faster or drift.
    Moved(FigureChange),
}

/// One of the two runs another process held the CPUs of, and what it
/// waited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContendedSide {
    /// Which run (its label: a path, a baseline's name).
    pub run: String,
    /// What it waited.
    pub waited: crate::contention::ContendedRun,
}

/// A run fact recorded in both runs with different values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingMove {
    /// The run fact's key.
    pub fact: String,
    /// Its value in run A.
    pub a: String,
    /// Its value in run B.
    pub b: String,
}

/// The schema tag of [`Change`].
pub const SCHEMA: &str = "hopscope.change/1";

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

/// What drift a control lane stands for (`sqlite`, `boundary` or `slice`
/// in a change's JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StandsFor {
    /// The baseline: SQLite alone, for work on one thread.
    Sqlite,
    /// The floor: a bare thread boundary, for wakes and handoffs.
    Boundary,
    /// The probed floor's same slice, for one of the subject's slices
    /// (the control is named `lane: slice`).
    Slice,
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
    // No one drift describes the machine: every change could be it.
    let refused = controls.iter().any(|c| rule.refuses(c.drift))
        || drift_spread(&controls) > rule.max_drift_spread
        || !contended.is_empty();
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
    let verdict = if refused {
        Verdict::DriftSuspected
    } else if gated.iter().any(|f| f.call == Call::Slower) {
        Verdict::Regression
    } else if gated.iter().any(|f| f.call == Call::Faster) {
        Verdict::Improvement
    } else {
        Verdict::NoChange
    };
    let decided_by = decided_by(&gated, verdict, b);
    let judged = judged(b, &gate, &figures);
    let mut findings = findings(&figures, &controls, &rule);
    findings.splice(0..0, ran_differently(a, b).into_iter().chain(shape::batches_moved(a, b)));
    findings.extend(shape::slices_apart(a, b));
    if let Some(different) = made_differently(a, b) {
        findings.insert(0, different);
    }
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
    Some(Judged { lanes, figure: crate::ab::FigureKind::WallPerOp, slices_of, slices, library })
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
