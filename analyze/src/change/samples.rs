//! One run's samples as a change compares them: each lane's per-block
//! figures, which lane plays which role, and the subject's slices.

use std::collections::BTreeMap;

use hopscope_probe::{RunFact, RunFacts};

use serde::{Deserialize, Serialize};

use crate::Role;
use crate::decomposition::{Decomposition, DerivedFigure};
use crate::join::LaneOps;

/// One run's per-block samples, as a change needs them. They serialise
/// (`samples.json`, [`SAMPLES_SCHEMA`]) so a run whose trace is elsewhere
/// (a capture analysed into a directory of its own) can be judged again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSamples {
    /// Per lane, `(pass, sample) → µs per op`.
    #[serde(with = "by_round")]
    pub(super) lanes: BTreeMap<String, BTreeMap<(u32, u32), f64>>,
    pub(super) subject: Option<String>,
    /// Every lane declared the subject that ran, its clean build first: a
    /// comparison gates on the first both runs have.
    pub(super) subjects: Vec<String>,
    /// How each lane ran (probed, callers at once).
    pub(super) runs: BTreeMap<String, crate::decomposition::LaneRun>,
    /// The lane [`Self::slices`] are of.
    pub(super) slices_lane: Option<String>,
    pub(super) baseline: Option<String>,
    pub(super) floor: Option<String>,
    pub(super) handoff: Option<String>,
    /// The subject's probed lane's slices: name, per-block interquartile
    /// means (µs).
    pub(super) slices: Vec<(String, Vec<f64>)>,
    /// How each of those slices is shared (a batch's COMMIT, a wait on
    /// the batch's others), by name: a wait moves with the others' work.
    pub(super) slice_sharing: BTreeMap<String, crate::join::Sharing>,
    /// Each lane's mean operations per shared interval, when it batched.
    pub(super) batch_means: BTreeMap<String, f64>,
    /// Each of those slices beyond the probed floor's: name, per-round
    /// `subject − floor` of their interquartile means (µs), and a slice the
    /// floor does not mark, whole (when the run has a probed floor).
    /// Within one run both lanes ran in the same rounds, so the machine's
    /// drift cancels in it as it does in `library`.
    pub(super) beyond_floor: Vec<(String, Vec<f64>)>,
    /// The probed floor's own per-block figures of each of those slices
    /// (µs): the slice's control, as the floor lane is the subject's.
    pub(super) floor_slices: BTreeMap<String, Vec<f64>>,
    /// The probed floor's lane name, when it marks any subject slice.
    pub(super) floor_slices_lane: Option<String>,
    /// Whether the run's floor stands for the boundary (it has a library
    /// figure: see [`crate::floor`]).
    pub(super) floor_stands: bool,
    /// How the run was made, as far as it moves the figures: the run facts
    /// of [`SETTINGS`] the run recorded.
    pub(super) settings: BTreeMap<String, String>,
    /// What the run waited, when another process held its CPUs.
    pub(super) contended: Option<crate::contention::ContendedRun>,
    /// What a lane's per-block figure is: its wall time per operation, or,
    /// for a capture of a running program (whose blocks are stretches of
    /// its time, sampled, not operations back to back), its median latency.
    pub(super) figure: crate::ab::FigureKind,
}

/// The schema of a run's samples as a file.
pub const SAMPLES_SCHEMA: &str = "hopscope.samples/1";

/// A run's samples as `samples.json` holds them.
#[derive(Serialize, Deserialize)]
struct SamplesFile {
    schema: String,
    samples: RunSamples,
}

impl RunSamples {
    /// The samples as JSON ([`SAMPLES_SCHEMA`]).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&SamplesFile { schema: SAMPLES_SCHEMA.to_owned(), samples: self.clone() })
    }

    /// Samples written by [`RunSamples::to_json`]; another schema is
    /// refused.
    pub fn from_json(text: &str) -> Result<RunSamples, String> {
        let file: SamplesFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.schema != SAMPLES_SCHEMA {
            return Err(format!("schema {:?}, not {SAMPLES_SCHEMA:?}", file.schema));
        }
        Ok(file.samples)
    }
}

/// Per-lane maps keyed by `(pass, sample)`, as JSON can hold them: each
/// lane's `[pass, sample, value]` triples.
mod by_round {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Lanes = BTreeMap<String, BTreeMap<(u32, u32), f64>>;

    pub(super) fn serialize<S: Serializer>(lanes: &Lanes, out: S) -> Result<S::Ok, S::Error> {
        let flat: BTreeMap<&String, Vec<(u32, u32, f64)>> =
            lanes.iter().map(|(name, blocks)| (name, blocks.iter().map(|(&(p, s), &v)| (p, s, v)).collect())).collect();
        flat.serialize(out)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Lanes, D::Error> {
        let flat = BTreeMap::<String, Vec<(u32, u32, f64)>>::deserialize(input)?;
        Ok(flat
            .into_iter()
            .map(|(name, blocks)| (name, blocks.into_iter().map(|(p, s, v)| ((p, s), v)).collect()))
            .collect())
    }
}

/// Run facts that change what a figure measures: two runs that differ in
/// one compare the method as much as the code.
pub(super) const SETTINGS: [RunFact; 9] = [
    RunFact::Shape,
    RunFact::Db,
    RunFact::Placement,
    RunFact::Order,
    RunFact::SettleUs,
    RunFact::OpsPerBlock,
    RunFact::CallerGapNs,
    RunFact::Build,
    RunFact::PerfCounters,
];

/// The subject's slices as a change compares them.
#[derive(Default)]
struct SubjectSlices {
    slices: Vec<(String, Vec<f64>)>,
    slice_sharing: BTreeMap<String, crate::join::Sharing>,
    beyond_floor: Vec<(String, Vec<f64>)>,
    floor_slices: BTreeMap<String, Vec<f64>>,
}

/// Slice `slice` of `ops` per round: its interquartile mean per block, µs
/// (robust as a median, but not stuck on the clock's grain as a median of
/// quantised durations is).
fn by_round(ops: &LaneOps, slice: &str) -> BTreeMap<(u32, u32), f64> {
    let Some(i) = ops.slices.iter().position(|s| s.name == slice) else { return BTreeMap::new() };
    ops.blocks
        .iter()
        .filter_map(|b| Some(((b.pass, b.sample), b.slice_iqm_ns.get(i).copied().flatten()? / 1e3)))
        .collect()
}

/// The subject's slices (`ops`), each beside the probed floor's same
/// slice (`floor`) when it marks one.
fn subject_slices(ops: &LaneOps, floor: Option<&LaneOps>) -> SubjectSlices {
    let mut out = SubjectSlices::default();
    for slice in &ops.slices {
        let own = by_round(ops, &slice.name);
        out.slices.push((slice.name.clone(), own.values().copied().collect()));
        out.slice_sharing.insert(slice.name.clone(), slice.sharing);
        let Some(floor) = floor else { continue };
        let diffs = if floor.slices.iter().any(|s| s.name == slice.name) {
            let theirs = by_round(floor, &slice.name);
            if !theirs.is_empty() {
                out.floor_slices.insert(slice.name.clone(), theirs.values().copied().collect());
            }
            crate::lanes::per_round(&own, &[&theirs])
        } else {
            // A slice the floor does not mark (the subject's own span) lies
            // wholly beyond it: a user's `validate` that grew 1 µs was
            // passed over for a wake's 0.02 before.
            crate::lanes::per_round(&own, &[])
        };
        if !diffs.is_empty() {
            out.beyond_floor.push((slice.name.clone(), diffs));
        }
    }
    out
}

impl RunSamples {
    /// A run's samples from its decomposition and, for its slices, its
    /// joined trace (`None`: lanes and derived figures only).
    pub fn new(d: &Decomposition, joined: Option<(&hopscope_probe::TraceHeader, &[LaneOps])>) -> RunSamples {
        let figure =
            if d.capture.is_some() { crate::ab::FigureKind::LatencyMedian } else { crate::ab::FigureKind::WallPerOp };
        let lanes = d
            .lanes
            .iter()
            .map(|(name, lane)| {
                let per_block = lane.blocks_us.iter().filter_map(|b| {
                    let value = match figure {
                        crate::ab::FigureKind::WallPerOp => Some(b.us_per_op),
                        crate::ab::FigureKind::LatencyMedian => b.latency_median_us,
                    };
                    Some(((b.pass, b.sample), value?))
                });
                (name.clone(), per_block.collect())
            })
            .collect();
        let role = |r: Role| d.role_lane(r).map(str::to_owned);
        let declared = |name: &str| {
            d.run.meta.fact(&RunFact::Lane(name.to_owned(), hopscope_probe::LaneFact::Role))
                == Some(Role::Subject.name())
        };
        let mut subjects: Vec<String> = d
            .lanes
            .iter()
            .filter(|(name, lane)| {
                lane.us_per_op.is_some() && (declared(name) || role(Role::Subject).as_ref() == Some(*name))
            })
            .map(|(name, _)| name.clone())
            .collect();
        subjects.sort_by_key(|name| (role(Role::Subject).as_ref() != Some(name), d.lanes[name].probed));
        let lane_ops = |lane: Option<&String>| {
            let (header, joined) = joined?;
            let index = header.lanes.iter().position(|l| Some(l) == lane)?;
            joined.iter().find(|o| usize::from(o.lane) == index)
        };
        let (subject_ops, floor_ops) = (lane_ops(d.insitu_lane.as_ref()), lane_ops(d.floor_slices_lane.as_ref()));
        let SubjectSlices { slices, slice_sharing, beyond_floor, floor_slices } =
            subject_ops.map(|ops| subject_slices(ops, floor_ops)).unwrap_or_default();
        RunSamples {
            lanes,
            subject: role(Role::Subject),
            subjects,
            runs: d.lanes.keys().filter_map(|name| Some((name.clone(), d.lane_run(name)?))).collect(),
            slices_lane: subject_ops.and(d.insitu_lane.clone()),
            baseline: role(Role::Baseline),
            floor: role(Role::Floor),
            handoff: role(Role::Handoff),
            slices,
            slice_sharing,
            batch_means: d
                .lanes
                .iter()
                .filter_map(|(name, lane)| Some((name.clone(), lane.batches.as_ref()?.mean)))
                .collect(),
            beyond_floor,
            floor_slices_lane: (!floor_slices.is_empty()).then(|| d.floor_slices_lane.clone()).flatten(),
            floor_slices,
            floor_stands: d.derived.as_ref().is_some_and(|x| x.library_us.is_some()),
            settings: SETTINGS
                .iter()
                .filter_map(|fact| Some((fact.to_string(), d.run.meta.fact(fact)?.to_owned())))
                .collect(),
            contended: d.contention.as_ref().and_then(|c| c.verdict()),
            figure,
        }
    }

    /// Per-round `x − y₁ − y₂ − …` of lanes, over the rounds all of them ran.
    pub(super) fn rounds(&self, x: Option<&String>, minus: &[Option<&String>]) -> Option<Vec<f64>> {
        let x = self.lanes.get(x?)?;
        let minus = minus.iter().map(|y| self.lanes.get(*y.as_ref()?)).collect::<Option<Vec<_>>>()?;
        let diffs = crate::lanes::per_round(x, &minus);
        (!diffs.is_empty()).then_some(diffs)
    }

    /// The derived figures' per-round samples, by figure.
    pub(super) fn derived(&self) -> Vec<(DerivedFigure, Vec<f64>)> {
        let (s, b, f) = (self.subject.as_ref(), self.baseline.as_ref(), self.floor.as_ref());
        let h = self.handoff.as_ref();
        [
            (DerivedFigure::Hop, self.rounds(s, &[b])),
            (DerivedFigure::Boundary, self.rounds(f, &[b])),
            (DerivedFigure::Switches, self.rounds(h, &[])),
            (DerivedFigure::Machinery, self.rounds(f, &[b, h])),
            (DerivedFigure::Library, self.rounds(s, &[f])),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| (name, v)))
        .collect()
    }
}
