//! Reads a Perfetto protobuf timeline with Perfetto's own generated types
//! (the `perfetto_protos` crate) and prints one line per row, in the form
//! `hopscope_analyze::timeline::track_events::TrackEventRow` displays: the
//! workspace's timeline test compares the two, so hopscope's hand-declared
//! messages are held to Perfetto's field numbers and types.
//!
//! Beyond decoding, it refuses what Perfetto's importer would not read as
//! written: a field Perfetto does not know (a wrong number or wire type), a
//! packet outside the one writer sequence, a first packet that does not
//! clear the sequence's state, an event type the timeline does not write.
//!
//! Usage: `perfetto-decode FILE`; rows on stdout, one clear line on stderr
//! and exit 1 when the file is refused.

use std::fmt::Write as _;
use std::process::ExitCode;

use perfetto_protos::debug_annotation::debug_annotation;
use perfetto_protos::trace::Trace;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::trace_packet::trace_packet::Data;
use perfetto_protos::track_event::TrackEvent;
use perfetto_protos::track_event::track_event::Type;
use protobuf::{Message, UnknownFields};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: perfetto-decode FILE");
        return ExitCode::from(2);
    };
    let rows = std::fs::read(&path).map_err(|e| format!("{path}: {e}")).and_then(|bytes| rows(&bytes));
    match rows {
        Ok(rows) => {
            print!("{rows}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("perfetto-decode: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every row of the file, one per line.
fn rows(bytes: &[u8]) -> Result<String, String> {
    let trace = Trace::parse_from_bytes(bytes).map_err(|e| format!("not a Perfetto Trace message: {e}"))?;
    known("the trace", trace.special_fields.unknown_fields())?;
    let mut out = String::new();
    for (index, packet) in trace.packet.iter().enumerate() {
        let at = format!("packet {index}");
        known(&at, packet.special_fields.unknown_fields())?;
        if packet.trusted_packet_sequence_id() != 1 {
            return Err(format!("{at} is on sequence {}, not 1", packet.trusted_packet_sequence_id()));
        }
        let wanted = if index == 0 { 1 } else { 2 };
        if packet.sequence_flags() != wanted {
            return Err(format!("{at} has sequence flags {}, not {wanted}", packet.sequence_flags()));
        }
        match &packet.data {
            Some(Data::TrackDescriptor(track)) => {
                known(&at, track.special_fields.unknown_fields())?;
                if let Some(thread) = track.thread.as_ref() {
                    known(&at, thread.special_fields.unknown_fields())?;
                    writeln!(out, "thread\t{}\t{}\t{}", track.uuid(), thread.pid(), thread.tid()).expect("a String");
                }
            }
            Some(Data::TrackEvent(event)) => event_row(&mut out, &at, packet, event)?,
            _ => return Err(format!("{at} holds neither a track descriptor nor a track event")),
        }
    }
    Ok(out)
}

/// A track event's row.
fn event_row(out: &mut String, at: &str, packet: &TracePacket, event: &TrackEvent) -> Result<(), String> {
    known(at, event.special_fields.unknown_fields())?;
    let (ts, track) = (packet.timestamp(), event.track_uuid());
    match event.type_() {
        Type::TYPE_SLICE_BEGIN => {
            let mut op = "-".to_owned();
            for annotation in &event.debug_annotations {
                known(at, annotation.special_fields.unknown_fields())?;
                if let ("op", Some(debug_annotation::Value::UintValue(v))) =
                    (annotation.name(), annotation.value.as_ref())
                {
                    op = v.to_string();
                }
            }
            let (flows, ends) = (ids(&event.flow_ids), ids(&event.terminating_flow_ids));
            let name = event.name();
            writeln!(out, "begin\t{ts}\t{track}\t{name:?}\t{op}\t{flows}\t{ends}").expect("a String");
        }
        Type::TYPE_SLICE_END => writeln!(out, "end\t{ts}\t{track}").expect("a String"),
        Type::TYPE_COUNTER if event.has_double_counter_value() => {
            writeln!(out, "counter\t{ts}\t{track}\t{}", event.double_counter_value()).expect("a String");
        }
        other => return Err(format!("{at} is a track event of type {other:?} without what the timeline writes")),
    }
    Ok(())
}

/// Refuses fields Perfetto does not declare: a number or wire type the
/// hand-declared messages got wrong lands here.
fn known(at: &str, unknown: &UnknownFields) -> Result<(), String> {
    match unknown.iter().next() {
        None => Ok(()),
        Some((number, value)) => Err(format!("{at} has field {number} ({value:?}), which Perfetto does not declare")),
    }
}

/// Ids comma-separated, `-` for none.
fn ids(ids: &[u64]) -> String {
    if ids.is_empty() { "-".to_owned() } else { ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",") }
}
