//! Timeline export: a trace as Chrome Trace Event JSON, which Perfetto's UI
//! and `chrome://tracing` load.
//!
//! Each lane is a process, each of its threads a track. Every interval
//! between two consecutive marks of one operation on one thread is a slice
//! (`ph: "X"`) named `from→to`; an interval that crosses threads (a wake or
//! a transport) is a flow arrow (`ph: "s"` on the sending thread, `ph: "f"`
//! on the receiving one). Block readings (CPU, counters) become counter
//! tracks (`ph: "C"`) at each block's start. Times are microseconds from the
//! earliest block's start.
//!
//! [`ChromeWriter`] streams: events are written block by block as they are
//! made, so memory stays one block's worth of events however long the
//! trace (it writes to any `Write`, the caller owns the file).

use std::collections::BTreeMap;
use std::io::Write;

use hopscope_probe::{Block, Mark, Trace, TraceHeader};
use serde_json::{Value, json};

/// Writes one Chrome Trace Event JSON object, block by block.
#[derive(Debug)]
pub struct ChromeWriter<W: Write> {
    out: W,
    header: TraceHeader,
    /// Tick of time zero: the earliest block's start.
    origin: u64,
    flow_id: u64,
    events: u64,
}

impl<W: Write> ChromeWriter<W> {
    /// Start the JSON on `out`: the opening, and the process and thread
    /// names of `header`'s lanes. `origin` is the earliest block's start
    /// tick (times are microseconds from it).
    pub fn start(mut out: W, header: &TraceHeader, origin: u64) -> std::io::Result<ChromeWriter<W>> {
        out.write_all(b"{\"traceEvents\":[")?;
        let mut writer = ChromeWriter { out, header: header.clone(), origin, flow_id: 0, events: 0 };
        for (lane, name) in header.lanes.iter().enumerate() {
            let pid = lane + 1;
            writer.event(&json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}))?;
            for (tid, thread) in header.threads.iter().enumerate() {
                writer.event(
                    &json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": thread}}),
                )?;
            }
        }
        Ok(writer)
    }

    fn event(&mut self, event: &Value) -> std::io::Result<()> {
        if self.events > 0 {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut self.out, event)?;
        self.events += 1;
        Ok(())
    }

    fn us(&self, ticks: u64) -> f64 {
        (i128::from(ticks) - i128::from(self.origin)) as f64 * self.header.clock.ns_per_tick / 1_000.0
    }

    fn hop_name(&self, hop: hopscope_probe::Hop) -> String {
        self.header.hops.get(hop).map_or_else(|| format!("hop{}", hop.0), |d| d.name.clone())
    }

    /// Write `block`'s counters, slices and flows.
    pub fn block(&mut self, block: &Block) -> std::io::Result<()> {
        let pid = usize::from(block.lane) + 1;
        let counters: serde_json::Map<String, Value> = block
            .readings
            .iter()
            .filter_map(|r| self.header.readings.get(usize::from(r.key)).map(|k| (k.clone(), json!(r.value))))
            .collect();
        if !counters.is_empty() {
            let at = self.us(block.start.0);
            self.event(&json!({"name": "block readings", "ph": "C", "pid": pid, "ts": at, "args": counters}))?;
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
                let name = format!("{}→{}", self.hop_name(from.hop), self.hop_name(to.hop));
                let (start, end) = (self.us(from.ticks.0), self.us(to.ticks.0));
                if from_tid == to_tid {
                    self.event(&json!({
                        "name": name, "cat": "slice", "ph": "X", "pid": pid, "tid": from_tid,
                        "ts": start, "dur": end - start, "args": {"op": op}
                    }))?;
                } else {
                    self.flow_id += 1;
                    let id = self.flow_id;
                    self.event(&json!({
                        "name": name, "cat": "hop", "ph": "s", "id": id, "pid": pid, "tid": from_tid,
                        "ts": start, "args": {"op": op}
                    }))?;
                    self.event(&json!({
                        "name": name, "cat": "hop", "ph": "f", "bp": "e", "id": id, "pid": pid, "tid": to_tid,
                        "ts": end, "args": {"op": op}
                    }))?;
                }
            }
        }
        Ok(())
    }

    /// Close the JSON (noting `partial`, what a salvaged trace left out, in
    /// `otherData`) and hand back the output.
    pub fn finish(mut self, partial: Option<&str>) -> std::io::Result<W> {
        let other = json!({"source": "hopscope", "lanes": self.header.lanes, "partial": partial});
        self.out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        serde_json::to_writer(&mut self.out, &other)?;
        self.out.write_all(b"}")?;
        Ok(self.out)
    }
}

/// The whole trace as one Chrome Trace Event JSON object (in memory; the
/// `export` command streams with [`ChromeWriter`] instead).
pub fn chrome_trace(trace: &Trace) -> Value {
    let origin = trace.blocks.iter().map(|b| b.start.0).min().unwrap_or(0);
    let mut bytes = Vec::new();
    let written = ChromeWriter::start(&mut bytes, &trace.header, origin).and_then(|mut w| {
        for block in &trace.blocks {
            w.block(block)?;
        }
        w.finish(None).map(|_| ())
    });
    // Writing into a Vec cannot fail, and what was written is valid JSON.
    match written {
        Ok(()) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}
