//! The decomposition: every figure of a run, as `result.json` holds it
//! (schema `hopscope.decomposition/1`, documented in
//! `docs/decomposition-schema.md`).

mod lane;
mod result;

use std::collections::BTreeMap;

use hopscope_probe::Trace;

pub use result::{
    BlockFigure, CounterFigure, Decomposition, Derived, Drops, LaneResult, ObserverEffect, ResultError, RunInfo,
};

use crate::join::{self, LaneOps};
use crate::lanes::{self, LaneBlocks};
use crate::slices::{self, CrossCheck, SliceFigures};
use crate::stats::BOOTSTRAP_RESAMPLES;

/// Schema name and version written into every result.
pub const SCHEMA: &str = "hopscope.decomposition/1";

/// Seed of every bootstrap in a decomposition; recorded in the result so a
/// reader can reproduce each interval exactly.
pub const BOOTSTRAP_SEED: u64 = 0x0b5e_55ed_5eed_2840;

/// Why a trace cannot be decomposed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyzeError {
    /// The trace holds no measured block at all.
    #[error("the trace holds no measured blocks")]
    NoBlocks,
}

/// Decompose `trace`. Pure: reads nothing but the trace, writes nothing.
pub fn decompose(trace: &Trace) -> Result<Decomposition, AnalyzeError> {
    if trace.blocks.is_empty() {
        return Err(AnalyzeError::NoBlocks);
    }
    let seed = BOOTSTRAP_SEED;
    let blocks = lanes::lane_blocks(trace);
    let joined = join::join(trace);
    let mut warnings = Vec::new();
    let per_lane = per_lane(trace, &blocks, &joined, seed, &mut warnings);

    let find = |name: &str| blocks.iter().find(|l| l.name == name && l.ops > 0);
    let inline = find("inline").or(find("inline-probed"));
    let floor = find("floor").or(find("floor-probed"));
    let clean = find("writer");
    let probed = find("writer-probed");
    let writer = clean.or(probed);

    // A user's own capture has none of the reference lanes: say so once
    // rather than warn about each figure it cannot have.
    let has_reference = [inline, floor, writer].iter().any(Option::is_some);
    if !has_reference {
        warnings.push(
            "no reference lanes (inline, floor, writer): slices only; lane arithmetic and the observer effect \
             come from `hopscope decompose`"
                .to_owned(),
        );
    }
    let derived = match (writer, floor, inline) {
        (Some(w), Some(f), Some(i)) => derive(w, f, i, seed),
        _ => {
            if has_reference {
                warnings
                    .push("the trace lacks one of the inline, floor and writer lanes: no lane arithmetic".to_owned());
            }
            None
        }
    };
    let insitu = insitu(trace, &joined, derived.as_ref(), seed, &mut warnings);
    let observer_effect = match (clean, probed) {
        (Some(c), Some(p)) => observer(c, p, seed),
        _ => {
            if has_reference {
                warnings.push("no clean and probed writer pair: the observer effect is not measured".to_owned());
            }
            None
        }
    };
    let drops = drops(trace, &joined, &mut warnings);
    let comparison = comparison(trace, &blocks, &per_lane, seed);

    Ok(Decomposition {
        schema: SCHEMA.to_owned(),
        run: RunInfo {
            created_unix_ms: trace.header.created_unix_ms,
            meta: trace.header.run.clone(),
            bootstrap_seed: seed,
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        },
        host: trace.header.host.clone(),
        clock: trace.header.clock.clone(),
        counters: trace.header.counters.clone(),
        lanes: per_lane.results,
        derived,
        insitu_lane: insitu.lane,
        slices: insitu.slices,
        floor_slices: insitu.floor_slices,
        crosscheck: insitu.crosscheck,
        observer_effect,
        cpu_us_per_op: per_lane.cpu,
        ctx_switches_per_op: per_lane.ctx_switches,
        comparison,
        drops,
        warnings,
    })
}

/// Every lane's result and its CPU and context-switch figures by role.
struct PerLane {
    results: BTreeMap<String, LaneResult>,
    cpu: BTreeMap<String, BTreeMap<String, f64>>,
    ctx_switches: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Each lane's figures, warning about lanes that measured nothing or whose
/// blocks spread beyond [`NOISY_SPREAD`].
fn per_lane(
    trace: &Trace,
    blocks: &[LaneBlocks],
    joined: &[LaneOps],
    seed: u64,
    warnings: &mut Vec<String>,
) -> PerLane {
    let mut out = PerLane { results: BTreeMap::new(), cpu: BTreeMap::new(), ctx_switches: BTreeMap::new() };
    for (lane, ops) in blocks.iter().zip(joined) {
        let figures = lanes::figures(lane, seed);
        match &figures {
            None => warnings.push(format!("lane `{}` has no measured operations", lane.name)),
            Some(f) => {
                out.cpu.insert(lane.name.clone(), f.cpu_us_per_op.clone());
                if let Some(switches) = f.counters_per_op.get("ctx_switches") {
                    out.ctx_switches.insert(lane.name.clone(), switches.clone());
                }
                let spread = f.us_per_op.mad / f.us_per_op.median;
                if spread > NOISY_SPREAD {
                    warnings.push(format!(
                        "lane `{}`: blocks spread by {:.0}% (MAD / median); the host was noisy",
                        lane.name,
                        spread * 100.0
                    ));
                }
            }
        }
        out.results.insert(lane.name.clone(), lane::lane_result(trace, lane, ops, figures.as_ref()));
    }
    out
}

/// The in-situ instrument: the sliced lane, its slices, the probed floor's,
/// and their cross-check against the lane arithmetic.
struct InSitu {
    lane: Option<String>,
    slices: Vec<SliceFigures>,
    floor_slices: Vec<SliceFigures>,
    crosscheck: Option<CrossCheck>,
}

/// Slice the probed reference writer in hopscope's own runs, or a user's
/// lane (one lane, marks from their own code) as it is.
fn insitu(
    trace: &Trace,
    joined: &[LaneOps],
    derived: Option<&Derived>,
    seed: u64,
    warnings: &mut Vec<String>,
) -> InSitu {
    let sliced = joined
        .iter()
        .find(|o| o.complete > 0 && is_named(trace, o, "writer-probed"))
        .or_else(|| joined.iter().find(|o| o.complete > 0 && !is_reference_lane(trace, o)));
    let slices = sliced.map(|o| slices::slice_figures(o, seed)).unwrap_or_default();
    let floor_slices = joined
        .iter()
        .find(|o| o.complete > 0 && is_named(trace, o, "floor-probed"))
        .map(|o| slices::slice_figures(o, seed));
    if sliced.is_some_and(|o| is_named(trace, o, "writer-probed")) && floor_slices.is_none() {
        warnings.push(
            "no probed floor lane: the in-situ library figure includes the channel sends any writer pays".to_owned(),
        );
    }
    let crosscheck = match (derived, slices.is_empty()) {
        (Some(d), false) => Some(slices::cross_check(&slices, floor_slices.as_deref(), &d.library_us)),
        _ => None,
    };
    if crosscheck.as_ref().is_some_and(|c| !c.agree) {
        warnings.push("the two instruments disagree about the library's cost beyond the stated tolerance".to_owned());
    }
    InSitu {
        lane: sliced.map(|o| trace.header.lanes[usize::from(o.lane)].clone()),
        slices,
        floor_slices: floor_slices.unwrap_or_default(),
        crosscheck,
    }
}

/// What the instrument lost, warning about dropped marks and counters the
/// host cannot count.
fn drops(trace: &Trace, joined: &[LaneOps], warnings: &mut Vec<String>) -> Drops {
    let name = |o: &LaneOps| trace.header.lanes[usize::from(o.lane)].clone();
    let drops = Drops {
        marks_dropped: trace.dropped(),
        incomplete_ops: joined.iter().map(|o| (name(o), o.incomplete)).collect(),
        complete_ops: joined.iter().map(|o| (name(o), o.complete)).collect(),
    };
    if drops.marks_dropped > 0 {
        warnings
            .push(format!("{} marks were dropped (buffers full); their operations are excluded", drops.marks_dropped));
    }
    let unsupported: Vec<&str> =
        trace.header.counters.iter().filter(|c| !c.support.is_supported()).map(|c| c.counter.name()).collect();
    if !unsupported.is_empty() {
        warnings.push(format!("counters unsupported on this host: {}", unsupported.join(", ")));
    }
    drops
}

/// The reference writer beside every other lane (peers), when there are any.
fn comparison(
    trace: &Trace,
    blocks: &[LaneBlocks],
    per_lane: &PerLane,
    seed: u64,
) -> Option<crate::comparison::Comparison> {
    let summaries = per_lane.results.iter().filter_map(|(k, v)| Some((k.clone(), v.us_per_op?))).collect();
    let process = |map: &BTreeMap<String, BTreeMap<String, f64>>| {
        map.iter().filter_map(|(k, v)| Some((k.clone(), *v.get("process")?))).collect::<BTreeMap<_, _>>()
    };
    let (process_cpu_us, ctx) = (process(&per_lane.cpu), process(&per_lane.ctx_switches));
    let facts = crate::comparison::LaneFacts {
        summaries: &summaries,
        process_cpu_us: &process_cpu_us,
        ctx_switches: &ctx,
        meta: &trace.header.run,
    };
    let shape = trace.header.run.get("shape").map_or("this shape", String::as_str);
    crate::comparison::compare(blocks, &facts, shape, seed)
}

/// Robust block-to-block spread (MAD / median) above which a lane is
/// flagged as noisy. Robust on purpose: one block that caught a WAL
/// checkpoint moves the CV a lot and the MAD not at all.
const NOISY_SPREAD: f64 = 0.05;

/// Whether `ops` is one of hopscope's reference lanes (inline, floor,
/// writer, clean or probed), which are never the sliced lane by default.
fn is_reference_lane(trace: &Trace, ops: &LaneOps) -> bool {
    crate::comparison::REFERENCE_LANES.iter().any(|name| is_named(trace, ops, name))
}

fn is_named(trace: &Trace, ops: &LaneOps, name: &str) -> bool {
    trace.header.lanes.get(usize::from(ops.lane)).is_some_and(|l| l == name)
}

fn derive(writer: &LaneBlocks, floor: &LaneBlocks, inline: &LaneBlocks, seed: u64) -> Option<Derived> {
    Some(Derived {
        hop_us: lanes::difference(writer, inline, seed)?,
        boundary_us: lanes::difference(floor, inline, seed.wrapping_add(1))?,
        library_us: lanes::difference(writer, floor, seed.wrapping_add(2))?,
        lanes: [("writer", &writer.name), ("floor", &floor.name), ("inline", &inline.name)]
            .into_iter()
            .map(|(role, name)| (role.to_owned(), name.clone()))
            .collect(),
    })
}

fn observer(clean: &LaneBlocks, probed: &LaneBlocks, seed: u64) -> Option<ObserverEffect> {
    let delta = lanes::difference(probed, clean, seed.wrapping_add(3))?;
    let median = |l: &LaneBlocks| {
        let mut v: Vec<f64> = l.us_per_op.values().copied().collect();
        crate::stats::median_of_unsorted(&mut v)
    };
    let clean_us = median(clean);
    Some(ObserverEffect {
        clean_us,
        probed_us: median(probed),
        delta_us: delta.median,
        delta_ci95: delta.ci95,
        delta_pct: if clean_us > 0.0 { delta.median / clean_us * 100.0 } else { 0.0 },
    })
}
