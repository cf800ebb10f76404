//! What a decomposition holds, as `result.json` stores it, and reading it
//! back.

use std::collections::BTreeMap;

use hopscope_probe::counters::CounterSupport;
use hopscope_probe::{ClockInfo, HostInfo, LaneFact, Role, RunFact, RunFacts};
use serde::{Deserialize, Serialize};

pub use super::lane_result::{BlockFigure, CounterFigure, LaneResult, PerRole};
use super::partial::Partial;
use crate::lanes::Difference;
use crate::recorded::Recorded;
use crate::slices::{CrossCheck, SliceFigures};
use crate::warning::Warning;

/// Schema name and version written into every result.
pub const SCHEMA: &str = "hopscope.decomposition/1";

/// Everything measured in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decomposition {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// How the run was made.
    pub run: RunInfo,
    /// The machine.
    pub host: HostInfo,
    /// The clock and its calibration.
    pub clock: ClockInfo,
    /// perf-event counter support on the host.
    pub counters: Vec<CounterSupport>,
    /// Per lane, keyed by lane name.
    pub lanes: BTreeMap<String, LaneResult>,
    /// Lane names in reading order: baseline, floor, subject, peers, A/B
    /// arms, control; a lane's clean build before its probed one; ties in
    /// the order the run declared them. Tables and charts list lanes this
    /// way ([`Decomposition::lanes_in_order`]). Empty in results written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_order: Vec<String>,
    /// `hop`, `boundary`, `library`, when the trace has the lanes for them.
    pub derived: Option<Derived>,
    /// Lane whose in-situ marks give the slices.
    pub insitu_lane: Option<String>,
    /// Slices of the in-situ lane, in hop order.
    pub slices: Vec<SliceFigures>,
    /// Slices of the probed floor, in hop order (empty without one).
    pub floor_slices: Vec<SliceFigures>,
    /// The lane [`Self::floor_slices`] come from (results written before
    /// it was recorded lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_slices_lane: Option<String>,
    /// Each probed peer's slices (marked through SQLite's trace hook), in
    /// the order the run declared them; empty without probed peers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_slices: Vec<super::peers::LaneSlices>,
    /// How much of the sliced lane's operation its path slices cover: the
    /// time between marks, and whether the marks close every thread's
    /// cycle (absent in results written before it, or without wall times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<crate::coverage::Coverage>,
    /// In-situ library slices against the lane arithmetic.
    pub crosscheck: Option<CrossCheck>,
    /// Cost of the probe itself: probed vs clean writer.
    pub observer_effect: Option<ObserverEffect>,
    /// Median CPU µs per operation, per lane, per thread role.
    pub cpu_us_per_op: BTreeMap<String, BTreeMap<String, f64>>,
    /// Median context switches per operation (from `getrusage`, recorded
    /// whether or not perf counters were), per lane, per thread role
    /// (`caller`, `writer`, `process`: every thread of the process).
    #[serde(default)]
    pub ctx_switches_per_op: BTreeMap<String, BTreeMap<String, f64>>,
    /// How long each lane's threads waited runnable for a CPU, and whether
    /// another process held the run's CPUs (absent where the kernel keeps
    /// no run-queue delay, and in results written before it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<crate::contention::Contention>,
    /// The reference writer beside every non-reference lane (peers), when
    /// the run has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<crate::comparison::Comparison>,
    /// What a capture of a running program is, when the run is one: its
    /// sampling, windows, throughput and what its marks cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<crate::capture::CaptureFigures>,
    /// The `tracing` span machinery measured before the run, when spans
    /// mark some hops: what each kind of span-to-span slice holds besides
    /// the code under study (slices state their share in
    /// [`SliceFigures::machinery_us`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_machinery: Option<hopscope_probe::SpanMachinery>,
    /// What SQLite's trace hook costs a statement, measured before the run
    /// when some lane marks statements through it: stated beside the
    /// slices it marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement_hook: Option<hopscope_probe::HookCost>,
    /// How much more each probed lane's first operation of a block costs
    /// than its median one, and the library's share of that, when a lane
    /// has blocks of two or more complete operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<crate::cold_start::ColdStart>,
    /// Each lane's figure by the lane that ran just before it, and whether
    /// the order was balanced (every lane after every other about equally
    /// often).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carryover: Option<crate::carryover::Carryover>,
    /// Marks dropped and operations excluded.
    pub drops: Drops,
    /// Batch sizes against latency and throughput, when two or more lanes
    /// batched (`decompose --group-lanes 1,8,64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_sweep: Option<crate::batches::BatchSweep>,
    /// Rounds in which every lane ran slow at once (a shared cost such as a
    /// WAL checkpoint, which the run cannot tell apart), when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_rounds: Option<crate::slow_rounds::SlowRounds>,
    /// Each lane's WAL checkpoints: the blocks that held one, their cost,
    /// the lane's figures with and without them; absent when the run
    /// recorded none (a build without the harness's `sqlite` feature, or a
    /// result written before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<crate::checkpoints::Checkpoints>,
    /// Each placement twin beside the lane it repeats
    /// (`--placement same-core,unpinned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placements: Option<super::placements::Placements>,
    /// Set when the figures cover only part of the run: a trace salvaged
    /// from a killed run, or a run stopped early (a signal, a lane's
    /// failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
    /// What a reader must know before trusting the figures.
    pub warnings: Vec<Recorded<Warning>>,
}

impl Decomposition {
    /// Every lane, in [`Self::lane_order`] (then any lane it omits, by name).
    pub fn lanes_in_order(&self) -> Vec<(&str, &LaneResult)> {
        let ordered = self.lane_order.iter().filter_map(|name| self.lanes.get_key_value(name));
        let rest = self.lanes.iter().filter(|(name, _)| !self.lane_order.contains(name));
        ordered.chain(rest).map(|(name, lane)| (name.as_str(), lane)).collect()
    }

    /// The lane that plays `role`: the one the lane arithmetic used, or,
    /// in a run without it (no baseline, a `--lanes` subset), the lane
    /// declared in that role that ran, its clean build before its probed
    /// one. A comparison and the run index both gate on the subject found
    /// this way, so a run of one subject lane is still judged.
    pub fn role_lane(&self, role: Role) -> Option<&str> {
        let ran = |name: &str| self.lanes.get(name).is_some_and(|lane| lane.us_per_op.is_some());
        if let Some(lane) = self.derived.as_ref().and_then(|d| d.lane(role)).filter(|l| ran(l)) {
            return Some(lane);
        }
        let meta = &self.run.meta;
        let declared = |name: &str| {
            meta.fact(&RunFact::Lane(name.to_owned(), LaneFact::Role)).and_then(|r| r.parse::<Role>().ok())
                == Some(role)
        };
        let mut lanes: Vec<(&str, &LaneResult)> =
            self.lanes_in_order().into_iter().filter(|(name, _)| declared(name) && ran(name)).collect();
        lanes.sort_by_key(|(_, lane)| lane.probed);
        lanes.first().map(|(name, _)| *name)
    }

    /// How `lane` ran, as its figures depend on it, when the run has it.
    pub fn lane_run(&self, lane: &str) -> Option<LaneRun> {
        let result = self.lanes.get(lane)?;
        let callers = self.run.meta.parsed::<u32>(&RunFact::Lane(lane.to_owned(), LaneFact::Callers));
        Some(LaneRun { lane: lane.to_owned(), probed: result.probed, callers: callers.unwrap_or(1).max(1) })
    }
}

/// How a lane ran, as far as it changes what its wall time per operation
/// means: a probed build carries its marks' cost, and with several
/// callers at once a block's wall time over its operations is a
/// throughput, not what one operation waits. A verdict names it beside
/// the figure it judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneRun {
    /// The lane.
    pub lane: String,
    /// Whether it carried probe marks.
    pub probed: bool,
    /// Callers at once (1 when the run did not say).
    pub callers: u32,
}

/// How the run was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Trace creation time, ms since the Unix epoch.
    pub created_unix_ms: u64,
    /// Run metadata from the trace header (command, commit, shape, ...).
    pub meta: BTreeMap<String, String>,
    /// Bootstrap seed used for every CI.
    pub bootstrap_seed: u64,
    /// Bootstrap draws per CI.
    pub bootstrap_resamples: usize,
}

/// The lane arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// `subject − baseline`: what the architecture costs.
    pub hop_us: Difference,
    /// `floor − baseline`: what any writer thread costs (needs a floor).
    pub boundary_us: Option<Difference>,
    /// `subject − floor`: the only part a change to the subject can collect
    /// (needs a floor).
    pub library_us: Option<Difference>,
    /// The handoff lane's own time per operation: a turn passed to a thread
    /// and back with no work, the boundary's context switches and wakes
    /// alone (needs a handoff lane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches_us: Option<Difference>,
    /// `floor − baseline − handoff`: what the boundary costs beyond the bare
    /// switches — the floor's channel and mailbox, and the statement running
    /// on another thread (needs a floor and a handoff lane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machinery_us: Option<Difference>,
    /// The lanes used, by role name (`subject`, `floor`, `baseline`, `handoff`).
    pub lanes: BTreeMap<String, String>,
    /// Why the floor lane cannot be compared with the subject, when it
    /// cannot: `boundary`, `machinery` and `library` are then left out
    /// rather than printed from a floor that is not one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_refused: Option<Recorded<crate::floor::FloorRefusal>>,
}

/// One figure of the lane arithmetic, by the stable name results, tables
/// and `change.json` give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DerivedFigure {
    /// `subject − baseline`.
    Hop,
    /// `floor − baseline`.
    Boundary,
    /// The handoff lane alone.
    Switches,
    /// `floor − baseline − handoff`.
    Machinery,
    /// `subject − floor`.
    Library,
}

impl DerivedFigure {
    /// Every figure, in reading order.
    pub const ALL: [DerivedFigure; 5] = [
        DerivedFigure::Hop,
        DerivedFigure::Boundary,
        DerivedFigure::Switches,
        DerivedFigure::Machinery,
        DerivedFigure::Library,
    ];

    /// The figure's stable name.
    pub fn name(self) -> &'static str {
        match self {
            DerivedFigure::Hop => "hop",
            DerivedFigure::Boundary => "boundary",
            DerivedFigure::Switches => "switches",
            DerivedFigure::Machinery => "machinery",
            DerivedFigure::Library => "library",
        }
    }
}

impl std::fmt::Display for DerivedFigure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl Derived {
    /// Every figure the run has, in reading order: `hop`, `boundary`,
    /// `switches`, `machinery`, `library`.
    pub fn figures(&self) -> Vec<(DerivedFigure, &Difference)> {
        DerivedFigure::ALL.into_iter().filter_map(|figure| Some((figure, self.figure(figure)?))).collect()
    }

    /// One figure, when the run has it.
    pub fn figure(&self, figure: DerivedFigure) -> Option<&Difference> {
        match figure {
            DerivedFigure::Hop => Some(&self.hop_us),
            DerivedFigure::Boundary => self.boundary_us.as_ref(),
            DerivedFigure::Switches => self.switches_us.as_ref(),
            DerivedFigure::Machinery => self.machinery_us.as_ref(),
            DerivedFigure::Library => self.library_us.as_ref(),
        }
    }

    /// The lane that stood for `role`; results written before roles keyed
    /// them `writer` and `inline`.
    pub fn lane(&self, role: Role) -> Option<&str> {
        let legacy = match role {
            Role::Subject => "writer",
            Role::Baseline => "inline",
            _ => role.name(),
        };
        self.lanes.get(role.name()).or_else(|| self.lanes.get(legacy)).map(String::as_str)
    }
}

/// Probed writer against clean writer, alternated in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserverEffect {
    /// Clean writer, µs per op (median).
    pub clean_us: f64,
    /// Probed writer, µs per op (median).
    pub probed_us: f64,
    /// Paired difference `probed − clean`, µs per op.
    pub delta_us: f64,
    /// 95% CI of the difference (sign test, over paired rounds).
    pub delta_ci95: [f64; 2],
    /// `delta / clean`, percent.
    pub delta_pct: f64,
    /// What the instrument was measured to cost in this run, per operation
    /// of the probed build: the part of `delta` it explains (absent when
    /// the run measured neither the span machinery nor a mark's cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrument: Option<InstrumentCost>,
}

/// The observer effect's explained part: what the probed build's spans
/// and marks cost per operation at the cost this run measured for each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstrumentCost {
    /// Watched spans per operation (each a whole life: created, entered,
    /// exited, closed; the clean build creates none).
    pub spans_per_op: u64,
    /// One span's life through the run's span path (Registry + HopLayer,
    /// or HopSubscriber), ns (measured on empty operations in this process).
    pub span_life_ns: f64,
    /// Marks per operation that are not span edges (`hop!` or a `Probe`).
    pub marks_per_op: u64,
    /// One mark's cost, ns (the run's calibration).
    pub mark_ns: f64,
    /// Statements per operation marked through SQLite's trace hook (their
    /// start and end marks are not counted in [`Self::marks_per_op`]).
    #[serde(default)]
    pub statements_per_op: u64,
    /// What the hook costs one statement, ns (measured before the run).
    #[serde(default)]
    pub statement_ns: f64,
    /// `spans × span life + marks × mark cost + statements × hook cost`, µs.
    pub explained_us: f64,
    /// `delta − explained`, µs: what the measured costs do not account for.
    pub unexplained_us: f64,
}

/// Losses in the instrument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drops {
    /// Marks dropped because a buffer was full.
    pub marks_dropped: u64,
    /// Operations excluded for a missing or repeated hop, per lane.
    pub incomplete_ops: BTreeMap<String, u64>,
    /// Operations fully joined, per lane.
    pub complete_ops: BTreeMap<String, u64>,
}

/// Why a `result.json` cannot be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// Not JSON, or not the shape of a decomposition.
    #[error("not a valid decomposition: {0}")]
    Json(#[from] serde_json::Error),
    /// Another schema or version.
    #[error("schema is `{found}`, this build reads `{SCHEMA}`")]
    Schema {
        /// The schema the file declares.
        found: String,
    },
}

impl Decomposition {
    /// Read a decomposition back from `result.json` text, refusing any other
    /// schema.
    pub fn from_json(text: &str) -> Result<Decomposition, ResultError> {
        // Check the schema first so a future version is named as such rather
        // than reported as a missing field.
        #[derive(Deserialize)]
        struct Head {
            schema: String,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.schema != SCHEMA {
            return Err(ResultError::Schema { found: head.schema });
        }
        Ok(serde_json::from_str(text)?)
    }
}
