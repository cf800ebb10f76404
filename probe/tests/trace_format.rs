//! The `.hop` format: round trips, and refusal of every kind of damage.

use hopscope_probe::trace::{FORMAT_VERSION, MAGIC};
use hopscope_probe::{Block, Hop, Mark, OpId, Reading, Stream, Ticks, Trace, TraceError, TraceHeader, TraceWriter};
use proptest::prelude::*;

fn header() -> TraceHeader {
    let mut header = TraceHeader::for_this_host(&["inline", "floor", "writer"], &["caller", "writer"]);
    header.readings = vec!["caller.cpu_ns".to_owned(), "writer.cpu_ns".to_owned()];
    header.run.insert("command".to_owned(), "test".to_owned());
    header
}

fn mark(op: u64, hop: Hop, ticks: u64) -> Mark {
    Mark { op: OpId(op), hop, cpu: (op % 2) as u16, ticks: Ticks(ticks) }
}

fn block(lane: u16, sample: u32) -> Block {
    Block {
        lane,
        pass: 1,
        sample,
        op_count: 2,
        start: Ticks(1_000),
        end: Ticks(9_000),
        streams: vec![
            Stream {
                thread: 0,
                dropped: 3,
                marks: vec![mark(1, Hop::ENTER, 1_000), mark(1, Hop::SENT, 1_200), mark(1, Hop::DONE, 4_000)],
            },
            Stream { thread: 1, dropped: 0, marks: vec![mark(1, Hop::WOKE, 2_000), mark(1, Hop::REPLIED, 3_000)] },
        ],
        readings: vec![Reading { key: 0, value: 1234 }, Reading { key: 1, value: 5678 }],
    }
}

fn encode(header: TraceHeader, blocks: &[Block]) -> Vec<u8> {
    let mut writer = TraceWriter::new(Vec::new(), header).expect("header written");
    for b in blocks {
        writer.write_block(b).expect("block written");
    }
    writer.finish().expect("trace finished")
}

/// A small trace: header, two blocks, end.
fn small_trace() -> Vec<u8> {
    encode(header(), &[block(2, 0), block(0, 1)])
}

#[test]
fn a_trace_round_trips_exactly() {
    let header = header();
    let blocks = vec![block(2, 0), block(0, 1), Block { lane: 1, ..Block::default() }];
    let trace = Trace::from_bytes(&encode(header.clone(), &blocks)).expect("valid trace");
    assert_eq!(trace.header, header);
    assert_eq!(trace.blocks, blocks);
    assert_eq!(trace.dropped(), 6);
}

#[test]
fn a_trace_with_no_blocks_is_valid() {
    let trace = Trace::from_bytes(&encode(header(), &[])).expect("valid trace");
    assert!(trace.blocks.is_empty());
}

#[test]
fn a_trace_round_trips_through_a_file() {
    let path = std::env::temp_dir().join(format!("hopscope-roundtrip-{}.hop", std::process::id()));
    let mut writer = TraceWriter::create(&path, header()).expect("file created");
    writer.write_block(&block(1, 0)).expect("block written");
    writer.finish().expect("finished");
    let trace = Trace::read(&path).expect("read back");
    std::fs::remove_file(&path).ok();
    assert_eq!(trace.blocks, vec![block(1, 0)]);
}

#[test]
fn a_missing_file_is_an_open_error_naming_the_path() {
    let err = Trace::read(std::path::Path::new("/nonexistent/x.hop")).unwrap_err();
    assert!(matches!(err, TraceError::Open { .. }));
    assert!(err.to_string().contains("/nonexistent/x.hop"));
}

#[test]
fn wrong_magic_is_refused() {
    let mut bytes = small_trace();
    bytes[..8].copy_from_slice(b"NOTATRAC");
    let err = Trace::from_bytes(&bytes).unwrap_err();
    assert!(matches!(err, TraceError::BadMagic { found, .. } if &found == b"NOTATRAC"), "{err}");
    assert!(err.to_string().contains("not a hopscope trace"));
}

#[test]
fn a_future_version_is_refused_with_both_versions_named() {
    let mut bytes = small_trace();
    bytes[8..10].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let err = Trace::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(err, TraceError::UnsupportedVersion { found, supported } if found == FORMAT_VERSION + 1 && supported == FORMAT_VERSION)
    );
}

#[test]
fn truncation_at_every_byte_offset_is_refused() {
    let bytes = small_trace();
    for len in 0..bytes.len() {
        match Trace::from_bytes(&bytes[..len]) {
            Err(TraceError::Truncated { offset, .. }) => {
                assert!(offset as usize <= len, "offset {offset} past cut {len}")
            }
            Err(other) => panic!("cut at {len}: expected Truncated, got {other}"),
            Ok(_) => panic!("cut at {len} of {} was accepted", bytes.len()),
        }
    }
}

#[test]
fn every_single_bit_flip_is_refused() {
    let bytes = small_trace();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[i] ^= 1 << bit;
            assert!(Trace::from_bytes(&damaged).is_err(), "flip of bit {bit} at byte {i} was accepted");
        }
    }
}

#[test]
fn a_flipped_payload_byte_is_a_checksum_error_at_its_record() {
    let bytes = small_trace();
    // The last record is the 25-byte end record; the block before it ends
    // just ahead of it. Damage the middle of the trace's last block.
    let end_record = bytes.len() - 25;
    let mut damaged = bytes.clone();
    damaged[end_record - 20] ^= 0xff;
    let err = Trace::from_bytes(&damaged).unwrap_err();
    assert!(matches!(err, TraceError::Checksum { what: "block record", .. }), "{err}");
    assert!(err.to_string().contains("at byte"));
}

#[test]
fn bytes_after_the_end_record_are_refused() {
    let mut bytes = small_trace();
    bytes.push(0);
    let err = Trace::from_bytes(&bytes).unwrap_err();
    assert!(matches!(err, TraceError::Corrupt { .. }), "{err}");
}

#[test]
fn the_writer_refuses_blocks_the_header_does_not_declare() {
    let mut writer = TraceWriter::new(Vec::new(), header()).expect("header written");
    let bad_lane = Block { lane: 3, ..block(0, 0) };
    let mut bad_hop = block(0, 0);
    bad_hop.streams[0].marks[0].hop = Hop(99);
    let mut bad_thread = block(0, 0);
    bad_thread.streams[1].thread = 7;
    let mut bad_reading = block(0, 0);
    bad_reading.readings[0].key = 9;
    let backwards = Block { start: Ticks(10), end: Ticks(5), ..block(0, 0) };
    for bad in [bad_lane, bad_hop, bad_thread, bad_reading, backwards] {
        assert!(matches!(writer.write_block(&bad), Err(TraceError::Unwritable { .. })));
    }
    // Nothing was written for the refused blocks: the trace is still valid.
    let trace = Trace::from_bytes(&writer.finish().expect("finished")).expect("valid");
    assert!(trace.blocks.is_empty());
}

#[test]
fn the_magic_is_what_the_docs_say() {
    assert_eq!(&small_trace()[..8], &MAGIC);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_reader(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Trace::from_bytes(&bytes);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_preamble_never_panic_the_reader(
        tail in proptest::collection::vec(any::<u8>(), 0..512)
    ) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&[0, 0]);
        bytes.extend_from_slice(&tail);
        let _ = Trace::from_bytes(&bytes);
    }

    #[test]
    fn random_damage_to_a_valid_trace_is_refused_or_harmless(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)
    ) {
        let original = small_trace();
        let mut bytes = original.clone();
        for (at, value) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *value;
        }
        // An edit may write back the byte that was there; any real change
        // must be refused.
        if let Ok(trace) = Trace::from_bytes(&bytes) {
            prop_assert_eq!(bytes, original, "damaged trace accepted with {} blocks", trace.blocks.len());
        }
    }
}
