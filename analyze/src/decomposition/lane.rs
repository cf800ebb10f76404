//! One lane's result: its figures, counters per operation, latency
//! quantiles and how often its writes crossed cores; every lane's, with
//! the warnings a lane's own figures call for.

use std::collections::BTreeMap;

use hopscope_probe::counters::Support;
use hopscope_probe::{LaneFact, Placement, RunFact, RunFacts, ThreadFigure, TraceHeader};

use super::result::{BlockFigure, CounterFigure, LaneResult, PerRole};
use crate::join::LaneOps;
use crate::lanes::{LaneBlocks, LaneFigures};
use crate::warning::Warning;

/// The result of `lane` (its joined operations `ops`, its figures when it
/// measured any), with every counter the trace's header lists.
pub(super) fn lane_result(
    header: &TraceHeader,
    lane: &LaneBlocks,
    ops: &LaneOps,
    figures: Option<&LaneFigures>,
) -> LaneResult {
    let mut result = figures_of(lane, ops, figures);
    for support in &header.counters {
        let key = format!("{}_per_op", support.counter.name().replace('-', "_"));
        let figure = match &support.support {
            Support::Unsupported { .. } => Some(CounterFigure::Unsupported(support.support.to_string())),
            Support::Supported => figures
                .and_then(|f| f.counters_per_op.get(support.counter.name()))
                .map(|roles| CounterFigure::PerOp(PerRole::from_roles(roles))),
        };
        if let Some(figure) = figure {
            result.counters.insert(key, figure);
        }
    }
    result
}

fn figures_of(lane: &LaneBlocks, ops: &LaneOps, figures: Option<&LaneFigures>) -> LaneResult {
    let pooled = Some(&ops.total_ns).filter(|d| d.usable());
    let op_latency_quantiles_us = pooled
        .map(|d| (0..=100).filter_map(|q| d.quantile(f64::from(q) / 100.0)).map(|ns| ns / 1_000.0).collect())
        .unwrap_or_default();
    // Each block's median latency, by round.
    let latency: BTreeMap<(u32, u32), f64> =
        ops.blocks.iter().filter_map(|b| Some(((b.pass, b.sample), b.total_median_ns? / 1_000.0))).collect();
    LaneResult {
        ops: lane.ops,
        blocks: lane.us_per_op.len(),
        probed: !ops.hops.is_empty(),
        us_per_op: figures.map(|f| f.us_per_op),
        cv_by_pass: figures.map(|f| f.cv_by_pass.clone()).unwrap_or_default(),
        counters: BTreeMap::new(),
        blocks_us: lane
            .us_per_op
            .iter()
            .map(|(&(pass, sample), &us_per_op)| BlockFigure {
                pass,
                sample,
                us_per_op,
                latency_median_us: latency.get(&(pass, sample)).copied(),
            })
            .collect(),
        op_latency_quantiles_us,
        op_latency_p999_us: pooled.and_then(|d| d.quantile(0.999)).map(|ns| ns / 1_000.0),
        batches: crate::batches::batch_figures(ops),
        cross_core_hops_per_op: cross_core(ops).map(|(hops, _)| hops),
        ops_crossing_cores: cross_core(ops).map(|(_, share)| share),
    }
}

/// Mean CPU changes per op and the share of ops with any, over `ops`.
fn cross_core(ops: &LaneOps) -> Option<(f64, f64)> {
    let c = ops.core_changes;
    if c.ops == 0 {
        return None;
    }
    let n = c.ops as f64;
    Some((c.changes as f64 / n, c.ops_changed as f64 / n))
}

/// Every lane's result and its CPU and context-switch figures by role.
pub(super) struct PerLane {
    pub(super) results: BTreeMap<String, LaneResult>,
    pub(super) cpu: BTreeMap<String, BTreeMap<String, f64>>,
    pub(super) ctx_switches: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Each lane's figures, warning about lanes that measured nothing or whose
/// blocks spread beyond [`NOISY_SPREAD`].
pub(super) fn per_lane(
    header: &TraceHeader,
    blocks: &[LaneBlocks],
    joined: &[LaneOps],
    seed: u64,
    warnings: &mut Vec<Warning>,
) -> PerLane {
    let mut out = PerLane { results: BTreeMap::new(), cpu: BTreeMap::new(), ctx_switches: BTreeMap::new() };
    for (lane, ops) in blocks.iter().zip(joined) {
        let figures = crate::lanes::figures(lane, seed);
        match &figures {
            None => warnings.push(Warning::NoOperations { lane: lane.name.clone() }),
            Some(f) => {
                out.cpu.insert(lane.name.clone(), f.cpu_us_per_op.clone());
                if let Some(switches) = f.counters_per_op.get(ThreadFigure::CtxSwitches.name()) {
                    out.ctx_switches.insert(lane.name.clone(), switches.clone());
                }
                let spread = f.us_per_op.mad / f.us_per_op.median;
                // A capture's blocks spread with the program's traffic, not
                // with the host's noise.
                if spread > NOISY_SPREAD && !crate::capture::is_capture(header) {
                    warnings.push(Warning::Noisy { lane: lane.name.clone(), spread, limit: NOISY_SPREAD });
                }
            }
        }
        let result = lane_result(header, lane, ops, figures.as_ref());
        if let Some(warning) = placement_missed(header, &lane.name, &result) {
            warnings.push(warning);
        }
        if let Some(warning) = few_per_caller(header, lane) {
            warnings.push(warning);
        }
        out.results.insert(lane.name.clone(), result);
    }
    out
}

/// A warning when a lane of several callers gave each fewer than
/// [`crate::warning::LEAST_OPS_PER_CALLER`] operations a block (its blocks'
/// operations on average, over its callers). A capture's blocks are
/// stretches of a running program's time, not rounds of calls: none.
pub(crate) fn few_per_caller(header: &TraceHeader, lane: &LaneBlocks) -> Option<Warning> {
    if crate::capture::is_capture(header) {
        return None;
    }
    let callers = crate::contention::lane_callers(header, &lane.name);
    let blocks = lane.us_per_op.len();
    if callers < 2 || blocks == 0 {
        return None;
    }
    let per_caller = lane.ops as f64 / blocks as f64 / f64::from(callers);
    (per_caller < crate::warning::LEAST_OPS_PER_CALLER as f64).then(|| Warning::FewOpsPerCaller {
        lane: lane.name.clone(),
        callers,
        per_caller,
    })
}

/// A warning when a probed lane's marks show its threads ran elsewhere than
/// its recorded placement asked: a `same-core` lane whose writes' marks were
/// taken on different CPUs (more than 5% of them), or a `different-cores`
/// lane whose writes mostly stayed on one.
fn placement_missed(header: &TraceHeader, lane: &str, result: &LaneResult) -> Option<Warning> {
    // A word no build of ours writes is no placement to hold the lane to.
    let placement: Placement = header.run.fact(&RunFact::Lane(lane.to_owned(), LaneFact::Placement))?.parse().ok()?;
    let crossing = result.ops_crossing_cores?;
    let missed = match placement {
        Placement::SameCore => crossing > 0.05,
        Placement::DifferentCores => crossing < 0.5,
        Placement::Unpinned => false,
    };
    missed.then(|| Warning::PlacementMissed { lane: lane.to_owned(), placement: placement.to_string(), crossing })
}

/// Robust block-to-block spread (MAD / median) above which a lane is
/// flagged as noisy. Robust on purpose: one block that caught a WAL
/// checkpoint moves the CV a lot and the MAD not at all.
const NOISY_SPREAD: f64 = 0.05;
