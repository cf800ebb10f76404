//! What a comparison of two runs finds, as data: the rule fixed in
//! advance, each figure's change and verdict, the controls and the
//! findings. Kept apart from the comparing so the steps that find things
//! (shape, samples) can name them without reaching back into it.

use serde::{Deserialize, Serialize};

use crate::decomposition::LaneRun;
use crate::recorded::Recorded;

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
    /// A capture of a running program changed inside itself: its windows'
    /// median latencies lie further apart than a comparison stands (the
    /// rule's drift), so its figure over all its blocks stands for none of
    /// them: no verdict; its windows compare one by one.
    Unsteady {
        /// The run's label.
        run: String,
        /// The lowest window median latency, µs.
        low_us: f64,
        /// The highest, µs.
        high_us: f64,
        /// Windows with enough blocks to have a median.
        windows: usize,
        /// The rule's limit, as a fraction.
        max_drift: f64,
    },
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
