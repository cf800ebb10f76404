//! Timeline export: a trace as Chrome Trace Event JSON, which Perfetto's UI
//! and `chrome://tracing` load.
//!
//! Each lane is a process, each of its threads a track. Every interval
//! between two consecutive marks of one operation on one thread is a slice
//! (`ph: "X"`) named `from→to`; an interval that crosses threads (a wake or
//! a transport) is a flow arrow (`ph: "s"` on the sending thread, `ph: "f"`
//! on the receiving one). Block readings (CPU, counters) become counter
//! tracks (`ph: "C"`) at each block's start. Times are microseconds from the
//! first block's start.

use std::collections::BTreeMap;

use hopscope_probe::{Mark, Trace};
use serde_json::{Value, json};

/// The whole trace as one Chrome Trace Event JSON object.
pub fn chrome_trace(trace: &Trace) -> Value {
    let ns_per_tick = trace.header.clock.ns_per_tick;
    let origin = trace.blocks.iter().map(|b| b.start.0).min().unwrap_or(0);
    let us = |ticks: u64| (i128::from(ticks) - i128::from(origin)) as f64 * ns_per_tick / 1_000.0;
    let hop_name = |hop: hopscope_probe::Hop| {
        trace.header.hops.get(hop).map_or_else(|| format!("hop{}", hop.0), |d| d.name.clone())
    };
    let mut events = Vec::new();
    for (lane, name) in trace.header.lanes.iter().enumerate() {
        let pid = lane + 1;
        events.push(json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}));
        for (tid, thread) in trace.header.threads.iter().enumerate() {
            events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": thread}}));
        }
    }
    let mut flow_id = 0u64;
    for block in &trace.blocks {
        let pid = usize::from(block.lane) + 1;
        let counters: serde_json::Map<String, Value> = block
            .readings
            .iter()
            .filter_map(|r| trace.header.readings.get(usize::from(r.key)).map(|k| (k.clone(), json!(r.value))))
            .collect();
        if !counters.is_empty() {
            events.push(
                json!({"name": "block readings", "ph": "C", "pid": pid, "ts": us(block.start.0), "args": counters}),
            );
        }
        let mut ops: BTreeMap<u64, Vec<(u16, Mark)>> = BTreeMap::new();
        for stream in &block.streams {
            for mark in &stream.marks {
                ops.entry(mark.op.0).or_default().push((stream.thread, *mark));
            }
        }
        for (op, mut marks) in ops {
            marks.sort_by_key(|(_, m)| (m.ticks, m.hop));
            for pair in marks.windows(2) {
                let ((from_tid, from), (to_tid, to)) = (pair[0], pair[1]);
                let name = format!("{}→{}", hop_name(from.hop), hop_name(to.hop));
                if from_tid == to_tid {
                    events.push(json!({
                        "name": name, "cat": "slice", "ph": "X", "pid": pid, "tid": from_tid,
                        "ts": us(from.ticks.0), "dur": us(to.ticks.0) - us(from.ticks.0), "args": {"op": op}
                    }));
                } else {
                    flow_id += 1;
                    events.push(json!({
                        "name": name, "cat": "hop", "ph": "s", "id": flow_id, "pid": pid, "tid": from_tid,
                        "ts": us(from.ticks.0), "args": {"op": op}
                    }));
                    events.push(json!({
                        "name": name, "cat": "hop", "ph": "f", "bp": "e", "id": flow_id, "pid": pid, "tid": to_tid,
                        "ts": us(to.ticks.0), "args": {"op": op}
                    }));
                }
            }
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"source": "hopscope", "lanes": trace.header.lanes}})
}
