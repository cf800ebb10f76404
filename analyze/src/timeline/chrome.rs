//! The timeline as Chrome Trace Event JSON, which Perfetto's UI and
//! `chrome://tracing` load.
//!
//! Each slice is a complete event (`ph: "X"`) on its thread; a flow end
//! rides on the slice that carries it (`bind_id` with `flow_out` /
//! `flow_in`, the format's second flow version), so a viewer binds it to
//! that slice and no other, whatever else starts at the same instant.
//! Every event names its thread (`tid`), metadata and counters included:
//! an event without one would make the viewer invent a thread.
//!
//! Times are microseconds with nanosecond digits. Perfetto converts a
//! timestamp by truncating `µs × 1000`, so a value printed for `n` ns can
//! come back as `n − 1`; each time is written a quarter nanosecond late, so
//! it truncates to exactly `n` and a slice's end meets the next one's start.

use std::collections::BTreeSet;
use std::io::Write;

use hopscope_probe::TraceHeader;
use serde_json::{Value, json};

use super::layout::{BlockTimeline, Ids, TimelineSlice};

/// Writes one Chrome Trace Event JSON object, block by block.
#[derive(Debug)]
pub struct ChromeWriter<W: Write> {
    out: W,
    header: TraceHeader,
    ids: Ids,
    named: BTreeSet<(u16, Option<u16>)>,
    events: u64,
    overlapping: u64,
}

/// Microseconds for a viewer that truncates `µs × 1000` to whole ns.
fn us(ns: i64) -> f64 {
    (ns as f64 + 0.25) / 1_000.0
}

impl<W: Write> ChromeWriter<W> {
    /// Start the JSON on `out` for a trace with `header`.
    pub fn start(mut out: W, header: &TraceHeader) -> std::io::Result<ChromeWriter<W>> {
        let ids = Ids::new(header)?;
        out.write_all(b"{\"traceEvents\":[")?;
        Ok(ChromeWriter { out, header: header.clone(), ids, named: BTreeSet::new(), events: 0, overlapping: 0 })
    }

    fn event(&mut self, event: &Value) -> std::io::Result<()> {
        if self.events > 0 {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut self.out, event)?;
        self.events += 1;
        Ok(())
    }

    /// Name `lane`'s process (ordered by lane) and `thread`'s track the
    /// first time either appears.
    fn name(&mut self, lane: u16, thread: u16) -> std::io::Result<()> {
        let (pid, tid) = (self.ids.process(lane), self.ids.thread(lane, thread));
        if self.named.insert((lane, None)) {
            let name = self.header.lanes.get(usize::from(lane)).cloned().unwrap_or_default();
            self.event(&json!({"name": "process_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}))?;
            self.event(
                &json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": lane}}),
            )?;
        }
        if self.named.insert((lane, Some(thread))) {
            let name = self.header.threads.get(usize::from(thread)).cloned().unwrap_or_default();
            self.event(&json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}))?;
        }
        Ok(())
    }

    /// Write one block's counters, slices and flow ends.
    pub fn block(&mut self, block: &BlockTimeline) -> std::io::Result<()> {
        self.overlapping += block.overlapping;
        if !block.readings.is_empty() {
            let thread = block.thread;
            self.name(block.lane, thread)?;
            let args: serde_json::Map<String, Value> =
                block.readings.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let (pid, tid) = (self.ids.process(block.lane), self.ids.thread(block.lane, thread));
            self.event(
                &json!({"name": "block readings", "ph": "C", "pid": pid, "tid": tid, "ts": us(block.start_ns), "args": args}),
            )?;
        }
        for slice in &block.slices {
            self.slice(slice)?;
        }
        Ok(())
    }

    fn slice(&mut self, slice: &TimelineSlice) -> std::io::Result<()> {
        self.name(slice.lane, slice.thread)?;
        let (pid, tid) = (self.ids.process(slice.lane), self.ids.thread(slice.lane, slice.thread));
        let mut event = json!({
            "name": slice.name, "cat": slice.kind.category(), "ph": "X", "pid": pid, "tid": tid,
            "ts": us(slice.start_ns), "dur": us(slice.end_ns - slice.start_ns), "args": {"op": slice.op},
        });
        if let (Some(flow), Some(fields)) = (slice.flow, event.as_object_mut()) {
            fields.insert("bind_id".into(), json!(flow.id));
            if flow.incoming {
                fields.insert("flow_in".into(), json!(true));
            }
            if flow.outgoing {
                fields.insert("flow_out".into(), json!(true));
            }
        }
        self.event(&event)
    }

    /// Close the JSON (noting `partial`, what a salvaged trace left out, in
    /// `otherData`) and hand back the output.
    pub fn finish(mut self, partial: Option<&str>) -> std::io::Result<W> {
        let other = json!({
            "source": "hopscope", "lanes": self.header.lanes, "partial": partial,
            "overlapping_slices": self.overlapping,
        });
        self.out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        serde_json::to_writer(&mut self.out, &other)?;
        self.out.write_all(b"}")?;
        Ok(self.out)
    }
}
