//! The trace header a run writes first: its lanes with their roles, thread
//! roles, readings, counters, the caller's metadata and every plan setting,
//! so a trace says on its own how it was measured.

use std::collections::BTreeMap;

use hopscope_probe::{LaneFact, LaneInfo, RunFact, RunFacts, TraceHeader};

use super::block::OpenLane;
use crate::lane::Lane;
use crate::plan::Plan;
use crate::readings::ReadingKeys;

/// One probe mark's cost on this host, ns, timed on a thread of its own
/// (timing attaches a mark buffer, which must not be the driving
/// thread's): ~70,000 marks, a millisecond or two.
fn mark_ns() -> Option<f64> {
    let plan = hopscope_probe::calibrate::CostPlan { batch: 1_000, rounds: 31, warmup_rounds: 4 };
    let costs = std::thread::scope(|s| s.spawn(|| hopscope_probe::calibrate::measure_costs(plan)).join()).ok()?;
    costs.mark.median_ns.is_finite().then_some(costs.mark.median_ns)
}

/// The trace header of a run: lanes with their roles, thread roles,
/// readings, counters, `meta` and every plan setting.
pub(super) fn header(
    plan: &Plan,
    lanes: &[Lane],
    open: &[OpenLane],
    threads: &[String],
    keys: &ReadingKeys,
    counters: Vec<hopscope_probe::counters::CounterSupport>,
    meta: BTreeMap<String, String>,
) -> TraceHeader {
    let names: Vec<&str> = open.iter().map(|l| l.name.as_str()).collect();
    let thread_names: Vec<&str> = threads.iter().map(String::as_str).collect();
    let mut header = TraceHeader::for_this_host(&names, &thread_names);
    header.hops = plan.hops.clone();
    header.mark_ns = mark_ns();
    #[cfg(feature = "tracing")]
    crate::spans::declare_hops(plan, lanes, &mut header);
    header.counters = counters;
    header.readings = keys.names();
    header.run = meta;
    let settings = [
        (RunFact::OpsPerBlock, plan.ops_per_block.to_string()),
        (RunFact::Samples, plan.samples.to_string()),
        (RunFact::Passes, plan.passes.to_string()),
        (RunFact::WarmupBlocks, plan.warmup_blocks.to_string()),
        (RunFact::Order, format!("{:?}", plan.order)),
        (RunFact::CallerGapNs, plan.caller_gap_ns.to_string()),
        (RunFact::PerfCounters, if plan.perf_counters { "on" } else { "off" }.to_owned()),
        (RunFact::Placement, plan.placement.to_string()),
        (RunFact::BlockDeadlineS, plan.block_deadline.as_secs_f64().to_string()),
        (RunFact::SettleUs, plan.settle.as_micros().to_string()),
    ];
    for (fact, value) in settings {
        header.run.entry(fact.to_string()).or_insert(value);
    }
    for lane in lanes {
        for (name, build) in lane.trace_lanes() {
            header.lane_info.push(LaneInfo {
                role: lane.role,
                variant: build.variant,
                code: lane.name.clone(),
                reference: lane.peers_reference,
                baseline: lane.peers_baseline,
            });
            let placement = lane.placement.unwrap_or(plan.placement);
            // Without a description the receipt says so, rather than
            // repeating the name and role it prints beside it.
            let described = lane
                .description
                .clone()
                .unwrap_or_else(|| "no description (`Lane::describe` says what the lane runs)".to_owned());
            let description = match build.variant {
                Some(hopscope_probe::Variant::Clean) => format!("{described} · clean build"),
                Some(hopscope_probe::Variant::Probed) => format!("{described} · probed build"),
                None => described,
            };
            header.run.entry(RunFact::LaneDescription(name.clone()).to_string()).or_insert(description);
            header.run.record(RunFact::Lane(name.clone(), LaneFact::Role), lane.role.to_string());
            header.run.record(RunFact::Lane(name.clone(), LaneFact::Placement), placement.to_string());
            if let Some(base) = &lane.twin_of {
                // The twin of each build is that build's: `unpinned/writer-probed` of `writer-probed`.
                let base = name.replacen(&lane.name, base, 1);
                header.run.record(RunFact::Lane(name.clone(), LaneFact::TwinOf), base);
            }
            let probed = match build.variant {
                Some(v) => (v == hopscope_probe::Variant::Probed).to_string(),
                None => "as built".to_owned(),
            };
            header.run.record(RunFact::Lane(name.clone(), LaneFact::Probed), probed);
            header.run.record(RunFact::Lane(name.clone(), LaneFact::Callers), lane.callers.to_string());
            header
                .run
                .record(RunFact::Lane(name.clone(), LaneFact::OpsPerBlock), plan.ops_for(lane.callers).to_string());
        }
    }
    header
}
