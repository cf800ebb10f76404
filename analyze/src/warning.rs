//! What a decomposition warns about, as data: each warning with the
//! figures and names it rests on, so `result.json` carries what the
//! receipt says and a program can act on a warning without parsing a
//! sentence. The reports render each in words.

use serde::{Deserialize, Serialize};

use crate::attribution::{Declared, SqliteFix};
use crate::decomposition::Partial;
use crate::recorded::Recorded;

/// Operations per caller below which a block of several callers is warned
/// of ([`Warning::FewOpsPerCaller`]); the harness sizes blocks to give each
/// caller at least this many unless told a size.
pub const LEAST_OPS_PER_CALLER: u64 = 100;

/// One warning of a decomposition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "warning", rename_all = "snake_case")]
pub enum Warning {
    /// The figures cover only part of the run: it stopped early, or the
    /// trace was cut or damaged.
    Partial(Partial),
    /// A lane measured no operation.
    NoOperations {
        /// The lane.
        lane: String,
    },
    /// A lane's blocks spread beyond the noisy limit (MAD / median).
    Noisy {
        /// The lane.
        lane: String,
        /// Its blocks' MAD / median.
        spread: f64,
        /// The spread past which a lane is called noisy.
        limit: f64,
    },
    /// A lane's writes were marked on CPUs its placement did not ask for.
    PlacementMissed {
        /// The lane.
        lane: String,
        /// The placement it asked for.
        placement: String,
        /// Share of its writes marked on more than one CPU.
        crossing: f64,
    },
    /// The kernel refused some of the run's thread pins.
    PinsRefused {
        /// How many.
        count: u64,
    },
    /// A run of the user's lanes without a baseline or floor lane.
    NoReference {
        /// Whether a probed build ran (the run has slices).
        probed: bool,
        /// Whether both builds of the subject ran (it has the observer
        /// effect).
        observer: bool,
        /// Whether a subject lane ran.
        subject: bool,
    },
    /// Reference lanes but no baseline or subject: no lane arithmetic.
    NoArithmetic,
    /// No floor lane: the hop is not split, nothing is cross-checked.
    NoFloor,
    /// The floor cannot stand for the subject's boundary
    /// ([`crate::floor::refusal`]).
    FloorRefused(crate::floor::FloorRefusal),
    /// The bare switches measured more than the whole boundary (the
    /// machinery's CI below zero): the boundary is not split.
    SwitchesPastBoundary {
        /// The handoff lane's switches, µs.
        switches_us: f64,
        /// The boundary (floor − baseline), µs.
        boundary_us: f64,
        /// What the machinery came to (floor − baseline − handoff).
        machinery: crate::lanes::Difference,
    },
    /// No probed floor: the in-situ library includes the channel sends.
    NoProbedFloor,
    /// The sliced lane ran several callers at once: its slices are each
    /// write's latency, queueing behind the other callers included, and do
    /// not add up to its µs per write (wall time ÷ writes).
    SeveralCallers {
        /// The sliced lane.
        lane: String,
        /// Its callers.
        callers: u32,
    },
    /// The subject and the baseline ran different numbers of callers at
    /// once: no lane arithmetic is taken between them.
    CallersApart {
        /// The subject's lane.
        subject: String,
        /// Its callers.
        subject_callers: u32,
        /// The baseline's lane.
        baseline: String,
        /// Its callers.
        baseline_callers: u32,
    },
    /// A lane of several callers ran blocks that gave each caller fewer
    /// than [`LEAST_OPS_PER_CALLER`] operations: a block's start (callers
    /// filling the writer's queue) and end (draining it) weigh on its
    /// figure.
    FewOpsPerCaller {
        /// The lane.
        lane: String,
        /// Its callers.
        callers: u32,
        /// Operations per caller in its blocks.
        per_caller: f64,
    },
    /// Most of a probed lane's marked operations were not complete (a
    /// hop of its path never marked for them, or marked twice): its
    /// slices stand on the few that were, or on none.
    IncompleteOps {
        /// The lane.
        lane: String,
        /// Operations with marks but not every hop.
        incomplete: u64,
        /// Complete ones.
        complete: u64,
    },
    /// The two instruments disagree about the library's cost.
    InstrumentsDisagree {
        /// The fixed tolerance, µs.
        tolerance_us: f64,
    },
    /// The instruments disagree and the subject marks spans its probed
    /// floor does not: their edges cost more than the bare marks the
    /// marks' figure prices them as.
    FloorLacksSpans {
        /// The probed floor.
        floor: String,
        /// The spans, in path order.
        spans: Vec<String>,
    },
    /// A peer's slices do not add up to its clean lanes' hop.
    PeerOutsideMarks {
        /// The peer lane.
        lane: String,
        /// The hop its slices add up to, µs.
        slices_hop_us: f64,
        /// The hop of its clean lanes, µs.
        lanes_hop_us: f64,
        /// The tolerance, µs.
        tolerance_us: f64,
    },
    /// A library-owned slice as long as the baseline's whole operation:
    /// probably the database call, declared as the writer's own work.
    SliceLikeBaseline {
        /// The slice.
        slice: String,
        /// Its median, µs.
        slice_us: f64,
        /// Its 95% CI, µs.
        slice_ci95: [f64; 2],
        /// The baseline lane.
        baseline: String,
        /// The baseline's median µs per operation.
        baseline_us: f64,
        /// Its 95% CI, µs.
        baseline_ci95: [f64; 2],
        /// The declaration that makes it SQLite's (an older result's is
        /// the code, as text).
        fix: Recorded<SqliteFix>,
    },
    /// A slice whose median and CI lie below zero: its end mark came
    /// before its start on most operations (see
    /// [`crate::attribution::backwards`]).
    SliceBackwards {
        /// The slice.
        slice: String,
        /// Its median, µs.
        median_us: f64,
        /// Its 95% CI, µs.
        ci95: [f64; 2],
        /// Whether its two marks are on different threads.
        across_threads: bool,
    },
    /// A hop marked on the other side from the one declared.
    WrongSide {
        /// What was declared (the span or hop and its side; an older
        /// result's is a phrase).
        declared: Recorded<Declared>,
        /// The threads that marked it.
        threads: Vec<String>,
        /// Whether it was declared on the caller's side.
        caller_side: bool,
        /// The fix an older result wrote beside its phrase (a typed
        /// declaration implies its fix, and is written without one).
        #[serde(rename = "fix", default, skip_serializing_if = "Option::is_none")]
        legacy_fix: Option<String>,
    },
    /// No clean and probed build of the subject: no observer effect.
    NoObserverEffect,
    /// Every lane was slow together in some rounds.
    SlowRounds {
        /// Lanes compared.
        lanes: usize,
        /// Rounds in which all were slow.
        rounds: usize,
        /// Rounds compared.
        of: usize,
        /// Rounds between slow rounds, when evenly spaced.
        every: Option<u32>,
        /// The slow factor over each lane's median.
        factor: f64,
        /// Of the slow rounds, those in which a lane's block held a WAL
        /// checkpoint, when the run recorded them (absent: not recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        with_checkpoint: Option<usize>,
    },
    /// The lanes did not follow each other equally often, and one lane's
    /// figure depends on the lane before it.
    Carryover {
        /// The lane.
        lane: String,
        /// How much slower after `slow_after` than after `fast_after`, µs.
        slower_us: f64,
        /// The neighbour it ran slower after.
        slow_after: String,
        /// The neighbour it ran faster after.
        fast_after: String,
    },
    /// An A/B run's rounds that waited for another process, kept: a
    /// verdict pairs each round's arms, so its CI carries those waits.
    ContendedKept {
        /// Rounds that waited.
        waited: usize,
        /// Rounds in all.
        rounds: usize,
    },
    /// An A/B run's spec was edited after the run: the verdict uses the
    /// rule the trace recorded.
    SpecEdited {
        /// The recorded spec's sha256 (first 12 hex digits).
        recorded: String,
        /// The spec file now.
        path: String,
        /// Its sha256 now (first 12 hex digits).
        now: String,
    },
    /// Marks an A/B run dropped.
    MarksLost {
        /// How many.
        count: u64,
    },
    /// Marks dropped because buffers were full.
    MarksDropped {
        /// How many.
        count: u64,
    },
    /// Counters the host cannot count.
    CountersUnsupported {
        /// Their names.
        counters: Vec<String>,
    },
}
