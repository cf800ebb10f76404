//! One lane's result: its figures, counters per operation, latency
//! quantiles and how often its writes crossed cores.

use std::collections::BTreeMap;

use hopscope_probe::TraceHeader;
use hopscope_probe::counters::Support;

use super::result::{BlockFigure, CounterFigure, LaneResult};
use crate::join::LaneOps;
use crate::lanes::{LaneBlocks, LaneFigures};

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
            Support::Supported => figures.and_then(|f| f.counters_per_op.get(support.counter.name())).map(|roles| {
                let mut per_op = roles.clone();
                per_op.insert("total".to_owned(), roles.values().sum());
                CounterFigure::PerOp(per_op)
            }),
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
            .map(|(&(pass, sample), &us_per_op)| BlockFigure { pass, sample, us_per_op })
            .collect(),
        op_latency_quantiles_us,
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
