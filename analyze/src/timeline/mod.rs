//! Timeline export: a trace as the slices and flow arrows a trace viewer
//! draws, in Chrome Trace Event JSON ([`chrome`]) or Perfetto's native
//! protobuf ([`perfetto`]).
//!
//! The model is the join's: each lane is a process and each of its threads
//! a track. On a track, the interval between two consecutive marks of one
//! operation is a slice named `from→to` — a *step* when the analyzer has it
//! as a slice of the operation (on its path or a tail), a *gap* when the
//! other thread ran in between (the caller waiting for its reply). Each of
//! the path's cross-thread slices (`sent→woke`, `replied→received`) is a
//! flow arrow from the slice that ends at its first mark to the slice that
//! starts at its second, so a viewer draws the arrow from the send to the
//! wake it caused, inside the same operation.
//!
//! Viewers bind a flow to a slice, not to a time: Perfetto binds a flow end
//! to the slice it is attached to (`bind_id` in JSON, `flow_ids` in
//! protobuf). Where a mark has no slice to carry an arrow's end (a thread's
//! only mark of the operation), a zero-length *anchor* slice at the mark
//! carries it. [`importer`] replays Perfetto's importer over what was
//! written, so tests check the binding as the viewer will make it.
//!
//! [`Timeline`] streams: it turns one block at a time into
//! [`BlockTimeline`]s, so memory stays one block however long the trace.

pub mod chrome;
mod export;
pub mod importer;
pub mod perfetto;
mod proto;
pub mod track_events;

pub use export::{ExportError, Exported, Selection, TimelineFormat, export};
mod layout;

pub use layout::{BlockTimeline, Cut, FlowEnd, Ids, SliceKind, Timeline, TimelineSlice, origin_of};

use crate::join::HopScan;

/// The first pass over an in-memory trace: each lane's hops and the
/// timeline's origin (0 for a trace without blocks).
pub fn first_pass(trace: &hopscope_probe::Trace) -> (HopScan, u64) {
    let mut scan = HopScan::new(&trace.header);
    let mut origin = u64::MAX;
    for block in &trace.blocks {
        scan.add(block);
        origin = origin.min(origin_of(block));
    }
    (scan, if origin == u64::MAX { 0 } else { origin })
}

/// A whole in-memory trace as a timeline, block by block (the `export`
/// command streams from the file instead).
pub fn blocks(trace: &hopscope_probe::Trace, cut: Cut) -> Vec<BlockTimeline> {
    let (scan, origin) = first_pass(trace);
    let mut timeline = Timeline::new(&trace.header, &scan, origin, cut);
    trace.blocks.iter().filter_map(|b| timeline.block(b)).collect()
}

/// A whole in-memory trace as one Chrome Trace Event JSON value.
pub fn chrome_trace(trace: &hopscope_probe::Trace, cut: Cut) -> std::io::Result<serde_json::Value> {
    let mut bytes = Vec::new();
    let mut writer = chrome::ChromeWriter::start(&mut bytes, &trace.header)?;
    for block in blocks(trace, cut) {
        writer.block(&block)?;
    }
    writer.finish(None)?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

/// A whole in-memory trace as Perfetto protobuf bytes.
pub fn perfetto_trace(trace: &hopscope_probe::Trace, cut: Cut) -> std::io::Result<Vec<u8>> {
    let mut writer = perfetto::PerfettoWriter::start(Vec::new(), &trace.header)?;
    for block in blocks(trace, cut) {
        writer.block(&block)?;
    }
    Ok(writer.finish()?.0)
}
