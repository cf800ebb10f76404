//! Causal profiles: what making one slice faster would buy the lane.
//!
//! A what-if run (`hopscope what-if`, `--what-if` on a harness program)
//! runs one probed lane in blocks, each block under one *arm*: the slice
//! changed by a share of its median, virtually faster (coz's rule, see
//! `hopscope_probe::whatif`) or really slower, or the *reference* (an
//! experiment that changes nothing, so both sides pay the same
//! bookkeeping). Arms take turns in a shuffled order every round. A
//! block's time per operation is its wall time less the delay the
//! experiment inserted during it.
//!
//! Each arm is judged against the reference of the same round (paired, so
//! a host-speed episode moves both): the lane's throughput change, the time
//! per operation saved and the callers' latency change, each a median over
//! rounds with a bootstrap CI. The *reach* of a change is the time per
//! operation saved over the time the slice lost: 1 when every nanosecond
//! of the slice is a nanosecond of the lane's (one caller, or the writer's
//! serial work when it is the bottleneck), 0 when the lane does not wait
//! for the slice at all (a caller's work running beside a busy writer).

use std::collections::BTreeMap;

use hopscope_probe::{ClockInfo, HostInfo};
use serde::{Deserialize, Serialize};

use crate::join::SliceSide;
use crate::recorded::Recorded;
use crate::stats;

mod point;
mod warning;

pub use point::{Estimate, MAX_CREDIBLE_REACH, Point, SliceProfile};
pub use warning::{CausalWarning, MEDIANS_APART, MIN_COMPARED_NS, PACE_GAP, REACH_GAP, SLOW_PACE, TWO_PACES_SHARE};

/// Schema of a what-if run's samples (`samples.json`).
pub const CAUSAL_SAMPLES_SCHEMA: &str = "hopscope.causal-samples/1";

/// Schema of a causal profile (`causal.json`).
pub const CAUSAL_SCHEMA: &str = "hopscope.causal/1";

/// Rounds a profile needs before it states any effect.
pub const MIN_ROUNDS: usize = 5;

/// A slice a what-if run may change, as the run's own short decomposition
/// measured it first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceBase {
    /// `from→to`.
    pub name: String,
    /// Caller, writer, or cross-thread.
    pub side: SliceSide,
    /// Its median, ns per operation.
    pub median_ns: f64,
    /// What a change's share is taken of, ns: the median of a slice on one
    /// thread; of a cross-thread slice its fastest tenth (p10), the
    /// hand-off itself rather than the queueing in it (four callers
    /// sharing a core with their writer: 50 % of an `idle→received` whose
    /// median was mostly waiting for the core read as +809 % throughput).
    #[serde(default)]
    pub base_ns: f64,
}

/// One arm: a change to one slice, or the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// Index into [`CausalSamples::slices`]; `None` for the reference.
    pub slice: Option<usize>,
    /// The change as a share of the slice's median, percent: positive is a
    /// virtual speedup, negative a real slowdown.
    pub change_pct: f64,
    /// The same change, ns per pass of the slice's end.
    pub change_ns: f64,
}

impl Arm {
    /// Whether this arm is a virtual speedup (the others are real
    /// slowdowns or the reference).
    pub fn is_virtual(&self) -> bool {
        self.slice.is_some() && self.change_pct > 0.0
    }
}

/// One block of a what-if run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ArmBlock {
    /// The round it ran in.
    pub round: u32,
    /// Index into [`CausalSamples::arms`].
    pub arm: usize,
    /// Operations it ran.
    pub ops: u64,
    /// Virtual wall time, ns: from the first caller's start to the last
    /// caller's end less what the experiment charged that caller (the
    /// delays it waited or inherited): the block's time as if the change
    /// were real.
    pub wall_ns: f64,
    /// Delay the experiment owed every thread over the block, ns (what the
    /// passes added; for the record).
    pub inserted_ns: f64,
    /// What the lane's threads really waited paying it, ns, summed over
    /// threads (the rest they inherited across hand-offs or still owed).
    #[serde(default)]
    pub waited_ns: f64,
    /// The change applied at the slice's end over the block, ns, summed
    /// over its passes, speedup or slowdown (`hopscope_probe::whatif::taken`):
    /// over the block's operations, what the slice lost or gained per
    /// operation. A shared interval passes once for the operations it
    /// serves. 0 in samples written before it was recorded.
    #[serde(default)]
    pub taken_ns: f64,
}

impl ArmBlock {
    /// Time per operation as if the change were real, ns.
    pub fn ns_per_op(&self) -> f64 {
        self.wall_ns / self.ops.max(1) as f64
    }
}

/// Everything a what-if run measured, before any judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CausalSamples {
    /// [`CAUSAL_SAMPLES_SCHEMA`].
    pub schema: String,
    /// The trace lane changed (a probed build).
    pub lane: String,
    /// Its caller threads.
    pub callers: usize,
    /// Every thread of the lane ran on one core, and the serial rule was
    /// used: nobody paused, every thread was charged what was owed.
    #[serde(default)]
    pub serial: bool,
    /// The slices the arms change.
    pub slices: Vec<SliceBase>,
    /// The arms; the first is the reference.
    pub arms: Vec<Arm>,
    /// Every measured block.
    pub blocks: Vec<ArmBlock>,
    /// The machine.
    pub host: HostInfo,
    /// The marks' clock.
    pub clock: ClockInfo,
    /// Command line, commit and the run's settings.
    pub meta: BTreeMap<String, String>,
    /// Seconds the run took, its short decomposition included.
    pub seconds: f64,
    /// What the run itself says weakens its profile (carried into the
    /// profile's warnings).
    #[serde(default)]
    pub notes: Vec<Recorded<CausalWarning>>,
    /// The short decomposition's time per operation, ns (median over its
    /// blocks): the conditions the slices' medians, and so each change's
    /// share, were measured in.
    #[serde(default)]
    pub decomposition_ns_per_op: Option<f64>,
}

/// A lane's causal profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CausalProfile {
    /// [`CAUSAL_SCHEMA`].
    pub schema: String,
    /// The lane changed.
    pub lane: String,
    /// Its caller threads.
    pub callers: usize,
    /// The serial rule was used (every thread on one core).
    #[serde(default)]
    pub serial: bool,
    /// The reference arm's time per operation, ns (median over rounds).
    pub reference_ns_per_op: Estimate,
    /// The reference arm's throughput, operations per second.
    pub reference_ops_per_s: f64,
    /// Every slice tried, ranked by what its ranking speedup buys (most
    /// first).
    pub slices: Vec<SliceProfile>,
    /// Rounds run.
    pub rounds: usize,
    /// Seconds the run took.
    pub seconds: f64,
    /// The machine.
    pub host: HostInfo,
    /// The marks' clock.
    pub clock: ClockInfo,
    /// Command line, commit and the run's settings.
    pub meta: BTreeMap<String, String>,
    /// What weakens the profile, as data (an older profile's are
    /// sentences).
    pub warnings: Vec<Recorded<CausalWarning>>,
}

/// Why samples cannot be profiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CausalError {
    /// The samples name a schema this build does not read.
    #[error("samples of schema `{0}`, this build reads `{CAUSAL_SAMPLES_SCHEMA}`")]
    Schema(String),
    /// The first arm is not the reference.
    #[error("the first arm must be the reference (no slice, no change)")]
    NoReference,
    /// An arm or block points past what the samples hold.
    #[error("{0}")]
    Inconsistent(String),
    /// Too few complete rounds.
    #[error("{got} complete rounds, a profile needs at least {MIN_ROUNDS}")]
    TooFewRounds {
        /// Complete rounds found.
        got: usize,
    },
}

/// Judge every arm of `samples` against the reference, round by round.
pub fn profile(samples: &CausalSamples, seed: u64) -> Result<CausalProfile, CausalError> {
    check(samples)?;
    let complete = complete_rounds(samples);
    if complete.len() < MIN_ROUNDS {
        return Err(CausalError::TooFewRounds { got: complete.len() });
    }
    let reference: Vec<f64> = complete.iter().map(|r| r[0]).collect();
    let reference_ns_per_op = Estimate::of(&reference, seed);
    let slices = ranked(slice_points(samples, &complete, seed));
    let warnings = warnings(samples, &reference, reference_ns_per_op.median, &slices);
    Ok(CausalProfile {
        schema: CAUSAL_SCHEMA.to_owned(),
        lane: samples.lane.clone(),
        callers: samples.callers,
        serial: samples.serial,
        reference_ops_per_s: if reference_ns_per_op.median > 0.0 { 1e9 / reference_ns_per_op.median } else { 0.0 },
        reference_ns_per_op,
        slices,
        rounds: complete.len(),
        seconds: samples.seconds,
        host: samples.host.clone(),
        clock: samples.clock.clone(),
        meta: samples.meta.clone(),
        warnings,
    })
}

/// Time per operation of each arm, by round; only rounds where every arm
/// ran a block are paired (an interrupted run's last round is not).
fn complete_rounds(samples: &CausalSamples) -> Vec<Vec<f64>> {
    let mut rounds: BTreeMap<u32, Vec<Option<f64>>> = BTreeMap::new();
    for b in &samples.blocks {
        rounds.entry(b.round).or_insert_with(|| vec![None; samples.arms.len()])[b.arm] = Some(b.ns_per_op());
    }
    rounds.into_values().filter_map(|arms| arms.into_iter().collect::<Option<Vec<f64>>>()).collect()
}

/// Every slice tried with its points (each arm judged against the
/// reference of its round), points slowest to fastest.
fn slice_points(samples: &CausalSamples, complete: &[Vec<f64>], seed: u64) -> Vec<SliceProfile> {
    let callers = samples.callers.max(1) as f64;
    let mut slices: Vec<SliceProfile> = samples
        .slices
        .iter()
        .map(|s| SliceProfile {
            name: s.name.clone(),
            side: s.side,
            median_ns: s.median_ns,
            base_ns: s.base_ns,
            points: Vec::new(),
        })
        .collect();
    for (a, arm) in samples.arms.iter().enumerate().skip(1) {
        let Some(slice) = arm.slice else { continue };
        let pick = |f: &dyn Fn(f64, f64) -> f64| complete.iter().map(|r| f(r[0], r[a])).collect::<Vec<f64>>();
        let seed = seed.wrapping_add(a as u64 * 3);
        let saved_ns = Estimate::of(&pick(&|reference, arm| reference - arm), seed);
        let taken_ns = taken_per_op(samples, a);
        let taken = if taken_ns > 0.0 { taken_ns } else { arm.change_ns };
        let point = Point {
            change_pct: arm.change_pct,
            change_ns: arm.change_ns,
            virtual_speedup: arm.is_virtual(),
            throughput_pct: Estimate::of(&pick(&|reference, arm| (reference / arm - 1.0) * 100.0), seed + 1),
            latency_us: Estimate::of(&pick(&|reference, arm| (arm - reference) * callers / 1e3), seed + 2),
            // Saved over the signed change: a slowdown's cost over what it
            // added reads as positive too, so the two sides compare.
            reach: if taken.abs() > 0.0 { saved_ns.median / (taken * arm.change_pct.signum()) } else { 0.0 },
            taken_ns,
            saved_ns,
            rounds: complete.len(),
        };
        slices[slice].points.push(point);
    }
    for s in &mut slices {
        s.points.sort_by(|a, b| a.change_pct.total_cmp(&b.change_pct));
    }
    slices
}

/// The slices that were tried, most bought first. An effect the point
/// does not tell counts as none (`Point::tells_an_effect`); among those,
/// the larger slice first. A slice without a speedup tried goes last.
fn ranked(mut slices: Vec<SliceProfile>) -> Vec<SliceProfile> {
    slices.retain(|s| !s.points.is_empty());
    let bought = |s: &SliceProfile| {
        s.ranking_point().map_or(f64::NEG_INFINITY, |p| if p.tells_an_effect() { p.throughput_pct.median } else { 0.0 })
    };
    slices.sort_by(|a, b| bought(b).total_cmp(&bought(a)).then(b.median_ns.total_cmp(&a.median_ns)));
    slices
}

/// What weakens the profile: the samples' own notes, a reference at two
/// paces or far from the decomposition's, slices that respond out of
/// proportion, and savings beyond what a change took.
fn warnings(
    samples: &CausalSamples,
    reference: &[f64],
    reference_median: f64,
    slices: &[SliceProfile],
) -> Vec<Recorded<CausalWarning>> {
    let mut warnings = samples.notes.clone();
    let typed = warning::two_paces(reference, samples.callers)
        .into_iter()
        .chain(samples.decomposition_ns_per_op.and_then(|d| warning::medians_elsewhere(d, reference_median)))
        .chain(slices.iter().filter_map(|s| warning::nonlinear(s, samples.serial)));
    warnings.extend(typed.map(Recorded::Typed));
    for s in slices {
        // Only when the CI itself lies past the change, and the change is
        // one the lane can resolve: a 7 ns change "saving" 76 ns on a host
        // that moved is no finding.
        let beyond = |p: &&Point| p.saved_ns.ci95[0] > 1.25 * p.taken() && p.taken() >= MIN_COMPARED_NS;
        for p in s.points.iter().filter(|p| p.virtual_speedup).filter(beyond) {
            warnings.push(Recorded::Typed(CausalWarning::MoreThanTaken {
                slice: s.name.clone(),
                change_pct: p.change_pct,
                saved_ns: p.saved_ns.median,
                change_ns: p.taken(),
            }));
        }
    }
    warnings
}

/// What arm `arm` took off its slice per operation, ns: the median over
/// its blocks of the change applied over each block's operations; 0 when
/// the samples did not count it.
fn taken_per_op(samples: &CausalSamples, arm: usize) -> f64 {
    let mut per_op: Vec<f64> = samples
        .blocks
        .iter()
        .filter(|b| b.arm == arm && b.ops > 0 && b.taken_ns.is_finite())
        .map(|b| b.taken_ns / b.ops as f64)
        .collect();
    if per_op.is_empty() || per_op.iter().all(|t| *t == 0.0) {
        return 0.0;
    }
    stats::median_of_unsorted(&mut per_op)
}

/// Refuse samples whose arms and blocks do not fit together.
fn check(samples: &CausalSamples) -> Result<(), CausalError> {
    if samples.schema != CAUSAL_SAMPLES_SCHEMA {
        return Err(CausalError::Schema(samples.schema.clone()));
    }
    match samples.arms.first() {
        Some(Arm { slice: None, change_pct, .. }) if *change_pct == 0.0 => {}
        _ => return Err(CausalError::NoReference),
    }
    if let Some((a, _)) =
        samples.arms.iter().enumerate().skip(1).find(|(_, arm)| arm.slice.is_none_or(|s| s >= samples.slices.len()))
    {
        return Err(CausalError::Inconsistent(format!("arm {a} names no slice of the {}", samples.slices.len())));
    }
    if let Some(b) = samples.blocks.iter().find(|b| b.arm >= samples.arms.len()) {
        return Err(CausalError::Inconsistent(format!(
            "a block of round {} names arm {}, the samples have {}",
            b.round,
            b.arm,
            samples.arms.len()
        )));
    }
    if let Some(b) = samples.blocks.iter().find(|b| !(b.wall_ns.is_finite() && b.inserted_ns.is_finite()) || b.ops == 0)
    {
        return Err(CausalError::Inconsistent(format!("a block of round {} has no operations or no time", b.round)));
    }
    Ok(())
}
