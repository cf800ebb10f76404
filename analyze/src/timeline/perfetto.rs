//! The timeline as Perfetto's native protobuf trace: `TracePacket`s of
//! track descriptors and `TrackEvent`s, which Perfetto's UI and trace
//! processor load without a JSON importer's guesses.
//!
//! One process track per lane, one thread track per thread it uses, one
//! counter track per block reading. A slice is a `SLICE_BEGIN` and a
//! `SLICE_END` on its thread's track; a flow leaves a slice through
//! `flow_ids` on its begin and arrives through `terminating_flow_ids`
//! (a slice that passes a chained flow on lists it in `flow_ids`, which the
//! importer reads as a step). Times are whole nanoseconds from the origin.
//!
//! The file is a `Trace` message written one packet at a time (each packet
//! is field 1 of `Trace`, length-delimited), so memory stays one block.

use std::collections::BTreeSet;
use std::io::Write;

use hopscope_probe::TraceHeader;
use prost::Message;

use super::layout::{BlockTimeline, Ids, TimelineSlice};
use super::proto::{
    COUNTER, CounterDescriptor, DebugAnnotation, ProcessDescriptor, SLICE_BEGIN, SLICE_END, ThreadDescriptor,
    TracePacket, TrackDescriptor, TrackEvent,
};

/// The one writer sequence every packet belongs to.
const SEQUENCE: u32 = 1;
/// `TracePacket.sequence_flags`.
const INCREMENTAL_STATE_CLEARED: u32 = 1;
const NEEDS_INCREMENTAL_STATE: u32 = 2;

/// Track uuid of a lane's process.
fn process_track(lane: u16) -> u64 {
    (u64::from(lane) + 1) << 32
}

/// Track uuid of a lane's thread.
fn thread_track(lane: u16, thread: u16) -> u64 {
    process_track(lane) | (u64::from(thread) + 1)
}

/// Track uuid of a lane's counter for reading `key`.
fn counter_track(lane: u16, key: usize) -> u64 {
    process_track(lane) | (1 << 31) | (key as u64 & 0x7fff_ffff)
}

/// Writes a Perfetto protobuf trace, block by block.
#[derive(Debug)]
pub struct PerfettoWriter<W: Write> {
    out: W,
    header: TraceHeader,
    ids: Ids,
    described: BTreeSet<u64>,
    packets: u64,
    overlapping: u64,
    scratch: Vec<u8>,
}

impl<W: Write> PerfettoWriter<W> {
    /// Start a trace on `out` for a trace with `header`.
    pub fn start(out: W, header: &TraceHeader) -> std::io::Result<PerfettoWriter<W>> {
        let ids = Ids::new(header)?;
        Ok(PerfettoWriter {
            out,
            header: header.clone(),
            ids,
            described: BTreeSet::new(),
            packets: 0,
            overlapping: 0,
            scratch: Vec::new(),
        })
    }

    fn packet(&mut self, mut packet: TracePacket) -> std::io::Result<()> {
        packet.trusted_packet_sequence_id = Some(SEQUENCE);
        packet.sequence_flags =
            Some(if self.packets == 0 { INCREMENTAL_STATE_CLEARED } else { NEEDS_INCREMENTAL_STATE });
        self.scratch.clear();
        // `Trace.packet` is field 1, length-delimited: tag byte 0x0A.
        self.scratch.push(0x0A);
        packet.encode_length_delimited(&mut self.scratch).map_err(std::io::Error::other)?;
        self.out.write_all(&self.scratch)?;
        self.packets += 1;
        Ok(())
    }

    fn describe(&mut self, track: TrackDescriptor) -> std::io::Result<()> {
        let uuid = track.uuid.unwrap_or_default();
        if !self.described.insert(uuid) {
            return Ok(());
        }
        self.packet(TracePacket { track_descriptor: Some(track), ..TracePacket::default() })
    }

    /// Describe `lane`'s process and `thread`'s track the first time
    /// either appears.
    fn tracks(&mut self, lane: u16, thread: u16) -> std::io::Result<()> {
        let pid = self.ids.process(lane);
        if !self.described.contains(&process_track(lane)) {
            let name = self.header.lanes.get(usize::from(lane)).cloned();
            self.describe(TrackDescriptor {
                uuid: Some(process_track(lane)),
                process: Some(ProcessDescriptor { pid: Some(pid), process_name: name }),
                ..TrackDescriptor::default()
            })?;
        }
        if !self.described.contains(&thread_track(lane, thread)) {
            let name = self.header.threads.get(usize::from(thread)).cloned();
            self.describe(TrackDescriptor {
                uuid: Some(thread_track(lane, thread)),
                parent_uuid: Some(process_track(lane)),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid),
                    tid: Some(self.ids.thread(lane, thread)),
                    thread_name: name,
                }),
                ..TrackDescriptor::default()
            })?;
        }
        Ok(())
    }

    fn event(&mut self, at_ns: i64, event: TrackEvent) -> std::io::Result<()> {
        let timestamp = Some(u64::try_from(at_ns).unwrap_or(0));
        self.packet(TracePacket { timestamp, track_event: Some(event), ..TracePacket::default() })
    }

    /// Write one block's counters, slices and flow ends.
    pub fn block(&mut self, block: &BlockTimeline) -> std::io::Result<()> {
        self.overlapping += block.overlapping;
        {
            let thread = block.thread;
            for (name, value) in &block.readings {
                self.tracks(block.lane, thread)?;
                let key = self.header.readings.iter().position(|k| k == name).unwrap_or(0);
                let uuid = counter_track(block.lane, key);
                self.describe(TrackDescriptor {
                    uuid: Some(uuid),
                    name: Some(name.clone()),
                    parent_uuid: Some(process_track(block.lane)),
                    counter: Some(CounterDescriptor {}),
                    ..TrackDescriptor::default()
                })?;
                let counter = TrackEvent {
                    r#type: Some(COUNTER),
                    track_uuid: Some(uuid),
                    double_counter_value: Some(*value as f64),
                    ..TrackEvent::default()
                };
                self.event(block.start_ns, counter)?;
            }
        }
        // Begins and ends in time order; on one track an end comes before
        // a begin at the same instant (the earlier slice closes first).
        let mut open: Vec<(i64, u64)> = Vec::new();
        for slice in &block.slices {
            self.tracks(slice.lane, slice.thread)?;
            let track = thread_track(slice.lane, slice.thread);
            self.close(&mut open, slice.start_ns, Some(track))?;
            self.begin(slice, track)?;
            open.push((slice.end_ns, track));
            if slice.end_ns == slice.start_ns {
                self.close(&mut open, slice.start_ns, Some(track))?;
            }
        }
        self.close(&mut open, i64::MAX, None)
    }

    /// End every open slice that ends by `until` (on `track` when given:
    /// what a begin there must follow), earliest first.
    fn close(&mut self, open: &mut Vec<(i64, u64)>, until: i64, track: Option<u64>) -> std::io::Result<()> {
        loop {
            // The innermost open slice of each track is its last one.
            let next = open
                .iter()
                .enumerate()
                .filter(|&(i, &(end, t))| {
                    end <= until && track.is_none_or(|k| k == t) && !open[i + 1..].iter().any(|&(_, later)| later == t)
                })
                .min_by_key(|&(_, &(end, _))| end)
                .map(|(i, _)| i);
            let Some(i) = next else { return Ok(()) };
            let (end, t) = open.remove(i);
            self.event(end, TrackEvent { r#type: Some(SLICE_END), track_uuid: Some(t), ..TrackEvent::default() })?;
        }
    }

    fn begin(&mut self, slice: &TimelineSlice, track: u64) -> std::io::Result<()> {
        let (mut flow_ids, mut terminating) = (Vec::new(), Vec::new());
        if let Some(flow) = slice.flow {
            if flow.outgoing {
                flow_ids.push(flow.id);
            } else {
                terminating.push(flow.id);
            }
        }
        let event = TrackEvent {
            r#type: Some(SLICE_BEGIN),
            track_uuid: Some(track),
            name: Some(slice.name.clone()),
            categories: vec![slice.kind.category().to_owned()],
            debug_annotations: vec![DebugAnnotation { name: Some("op".into()), uint_value: Some(slice.op) }],
            flow_ids,
            terminating_flow_ids: terminating,
            ..TrackEvent::default()
        };
        self.event(slice.start_ns, event)
    }

    /// Finish the trace and hand back the output, with how many slices
    /// overlapped another on their track (dropped; their flows kept on
    /// anchors).
    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        self.out.flush()?;
        Ok((self.out, self.overlapping))
    }
}
