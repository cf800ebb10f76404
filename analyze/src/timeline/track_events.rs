//! A Perfetto protobuf timeline read back as rows: the thread tracks, slice
//! begins and ends, and counter values the importer replay and the tests
//! read, in file order.
//!
//! Read with this crate's own declaration of Perfetto's messages, so it
//! agrees with the writer by construction; what holds that declaration to
//! Perfetto's field numbers is Perfetto's own generated decoder, run in CI
//! (`checks/perfetto-decode`), which prints the same rows in the same
//! one-line form ([`TrackEventRow`]'s `Display`) for the two to be compared.

use std::fmt;

use prost::Message;

use super::proto::{COUNTER, SLICE_BEGIN, SLICE_END, Trace};

/// One event of a protobuf timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum TrackEventRow {
    /// A thread track's descriptor.
    Thread {
        /// Track uuid.
        uuid: u64,
        /// Process id.
        pid: i64,
        /// Thread id.
        tid: i64,
    },
    /// `TYPE_SLICE_BEGIN`.
    Begin {
        /// Time, ns.
        ts: i64,
        /// Track uuid.
        track: u64,
        /// Name.
        name: String,
        /// The `op` debug annotation.
        op: Option<u64>,
        /// `flow_ids`.
        flow_ids: Vec<u64>,
        /// `terminating_flow_ids`.
        terminating_flow_ids: Vec<u64>,
    },
    /// `TYPE_SLICE_END`.
    End {
        /// Time, ns.
        ts: i64,
        /// Track uuid.
        track: u64,
    },
    /// `TYPE_COUNTER`: one reading's value.
    Counter {
        /// Time, ns.
        ts: i64,
        /// Track uuid.
        track: u64,
        /// The value.
        value: f64,
    },
}

/// Ids as one field: comma-separated, `-` for none.
struct IdList<'a>(&'a [u64]);

impl fmt::Display for IdList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("-");
        }
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{id}")?;
        }
        Ok(())
    }
}

/// One row as one tab-separated line: its kind, then its fields in
/// declaration order; a name as a quoted, escaped string, so any name stays
/// on its line.
impl fmt::Display for TrackEventRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Thread { uuid, pid, tid } => write!(f, "thread\t{uuid}\t{pid}\t{tid}"),
            Self::Begin { ts, track, name, op, flow_ids, terminating_flow_ids } => {
                write!(f, "begin\t{ts}\t{track}\t{name:?}\t")?;
                match op {
                    Some(op) => write!(f, "{op}")?,
                    None => f.write_str("-")?,
                }
                write!(f, "\t{}\t{}", IdList(flow_ids), IdList(terminating_flow_ids))
            }
            Self::End { ts, track } => write!(f, "end\t{ts}\t{track}"),
            Self::Counter { ts, track, value } => write!(f, "counter\t{ts}\t{track}\t{value}"),
        }
    }
}

/// Why bytes could not be read as a timeline.
#[derive(Debug, thiserror::Error)]
pub enum TrackEventsError {
    /// Not a `Trace` message.
    #[error("not a Perfetto trace: {0}")]
    Decode(#[from] prost::DecodeError),
    /// A packet holds neither a track nor an event.
    #[error("packet {packet} holds neither a track descriptor nor a track event")]
    EmptyPacket {
        /// Its index in the file.
        packet: usize,
    },
    /// An event of a type the timeline does not write.
    #[error("packet {packet} is a track event of type {kind}, which the timeline does not write")]
    EventType {
        /// Its index in the file.
        packet: usize,
        /// `TrackEvent.type`.
        kind: i32,
    },
    /// A time past `i64` nanoseconds.
    #[error("packet {packet}'s timestamp {ts} is past what a timeline holds")]
    Timestamp {
        /// Its index in the file.
        packet: usize,
        /// The timestamp.
        ts: u64,
    },
}

/// Every row of a protobuf timeline, in file order (process and counter
/// track descriptors are not rows: the importer binds nothing to them).
pub fn read(bytes: &[u8]) -> Result<Vec<TrackEventRow>, TrackEventsError> {
    let trace = Trace::decode(bytes)?;
    let mut rows = Vec::with_capacity(trace.packet.len());
    for (packet, message) in trace.packet.into_iter().enumerate() {
        if let Some(track) = message.track_descriptor {
            if let Some(thread) = track.thread {
                let (pid, tid) = (thread.pid.unwrap_or_default().into(), thread.tid.unwrap_or_default().into());
                rows.push(TrackEventRow::Thread { uuid: track.uuid.unwrap_or_default(), pid, tid });
            }
            continue;
        }
        let Some(event) = message.track_event else { return Err(TrackEventsError::EmptyPacket { packet }) };
        let raw = message.timestamp.unwrap_or_default();
        let ts = i64::try_from(raw).map_err(|_| TrackEventsError::Timestamp { packet, ts: raw })?;
        let track = event.track_uuid.unwrap_or_default();
        rows.push(match event.r#type.unwrap_or_default() {
            SLICE_BEGIN => TrackEventRow::Begin {
                ts,
                track,
                op: event.debug_annotations.iter().find(|a| a.name.as_deref() == Some("op")).and_then(|a| a.uint_value),
                name: event.name.unwrap_or_default(),
                flow_ids: event.flow_ids,
                terminating_flow_ids: event.terminating_flow_ids,
            },
            SLICE_END => TrackEventRow::End { ts, track },
            COUNTER => TrackEventRow::Counter { ts, track, value: event.double_counter_value.unwrap_or_default() },
            kind => return Err(TrackEventsError::EventType { packet, kind }),
        });
    }
    Ok(rows)
}
