//! The part of Perfetto's trace protobuf the timeline writes, declared with
//! prost's derive. Field numbers and types are Perfetto's own
//! (`protos/perfetto/trace/trace_packet.proto`, `track_event/*.proto`);
//! CI decodes the output with the generated bindings of those files (the
//! `perfetto_protos` crate, in `checks/perfetto-decode`) to hold them to it.
//! Perfetto's protos are proto2: repeated numbers are not packed.

/// `Trace`: the file, a sequence of packets (read back by
/// [`super::track_events`]; the writer streams the packets one by one).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub(crate) packet: Vec<TracePacket>,
}

/// `TracePacket`: one event or descriptor.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TracePacket {
    /// Time of the event, ns.
    #[prost(uint64, optional, tag = "8")]
    pub(crate) timestamp: Option<u64>,
    /// Which writer sequence the packet belongs to.
    #[prost(uint32, optional, tag = "10")]
    pub(crate) trusted_packet_sequence_id: Option<u32>,
    /// `SEQ_INCREMENTAL_STATE_CLEARED` (1) on a sequence's first packet,
    /// `SEQ_NEEDS_INCREMENTAL_STATE` (2) on its events.
    #[prost(uint32, optional, tag = "13")]
    pub(crate) sequence_flags: Option<u32>,
    /// A slice begin or end, or a counter value.
    #[prost(message, optional, tag = "11")]
    pub(crate) track_event: Option<TrackEvent>,
    /// A track: a process, a thread or a counter.
    #[prost(message, optional, tag = "60")]
    pub(crate) track_descriptor: Option<TrackDescriptor>,
}

/// `TrackDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub(crate) uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub(crate) name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub(crate) process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub(crate) thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub(crate) parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub(crate) counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub(crate) pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub(crate) process_name: Option<String>,
}

/// `ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub(crate) pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub(crate) tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub(crate) thread_name: Option<String>,
}

/// `CounterDescriptor`: its presence makes a track a counter track.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct CounterDescriptor {}

/// `TrackEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    pub(crate) debug_annotations: Vec<DebugAnnotation>,
    /// `TYPE_SLICE_BEGIN` 1, `TYPE_SLICE_END` 2, `TYPE_COUNTER` 4.
    #[prost(int32, optional, tag = "9")]
    pub(crate) r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub(crate) track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub(crate) categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    pub(crate) name: Option<String>,
    #[prost(double, optional, tag = "44")]
    pub(crate) double_counter_value: Option<f64>,
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub(crate) flow_ids: Vec<u64>,
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub(crate) terminating_flow_ids: Vec<u64>,
}

/// `DebugAnnotation`: a named argument shown with the slice.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DebugAnnotation {
    #[prost(uint64, optional, tag = "3")]
    pub(crate) uint_value: Option<u64>,
    #[prost(string, optional, tag = "10")]
    pub(crate) name: Option<String>,
}

/// `TrackEvent.Type` values the timeline uses.
pub(crate) const SLICE_BEGIN: i32 = 1;
pub(crate) const SLICE_END: i32 = 2;
pub(crate) const COUNTER: i32 = 4;
