//! The `.hop` format: round trips, and refusal of every kind of damage.

use hopscope_probe::trace::{FORMAT_VERSION, MAGIC};
use hopscope_probe::{
    Block, Hop, HopDef, Mark, OpId, Reading, Stream, Ticks, Trace, TraceError, TraceHeader, TraceWriter,
};
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
/// Encoded once: the header reads this host (its clock among it), which
/// cost 20 ms a case in the property tests.
fn small_trace() -> Vec<u8> {
    static ENCODED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    ENCODED.get_or_init(|| encode(header(), &[block(2, 0), block(0, 1)])).clone()
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
fn thread_roles_are_renamed_in_place_when_the_header_has_room() {
    let path = std::env::temp_dir().join(format!("hopscope-rename-{}.hop", std::process::id()));
    let mut writer = TraceWriter::create_with_room(&path, header(), 64).expect("file created");
    writer.write_block(&block(1, 0)).expect("block written");
    // A reader before the rename sees the first names.
    assert_eq!(Trace::salvage(&path).expect("salvage").0.header.threads, ["caller", "writer"]);
    assert!(writer.rename_threads(&[(1, "kv-writer".to_owned())]).expect("renamed"));
    // A name that does not fit the room is refused, and nothing changes.
    assert!(!writer.rename_threads(&[(1, "x".repeat(200))]).expect("no room"));
    writer.write_block(&block(2, 1)).expect("a block after the rename");
    writer.finish().expect("finished");
    let trace = Trace::read(&path).expect("read back: the checksum and the padding hold");
    std::fs::remove_file(&path).ok();
    assert_eq!(trace.header.threads, ["caller", "kv-writer"]);
    assert_eq!(trace.blocks, vec![block(1, 0), block(2, 1)]);
    let no_room = std::env::temp_dir().join(format!("hopscope-rename-tight-{}.hop", std::process::id()));
    let mut tight = TraceWriter::create(&no_room, header()).expect("file created");
    assert!(!tight.rename_threads(&[(1, "kv-writer-thread".to_owned())]).expect("no room"));
    assert!(!tight.rename_threads(&[(9, "w".to_owned())]).expect("no such thread"));
    tight.finish().expect("finished");
    assert_eq!(Trace::read(&no_room).expect("read").header.threads, ["caller", "writer"]);
    std::fs::remove_file(&no_room).ok();
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
    // The magic as a reader knows it, not as byte arrays.
    assert!(err.to_string().contains("where a trace starts with \"HOPSCOPE\""), "{err}");
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

/// A record framed and checksummed as the format says, whatever it holds.
fn record(tag: u8, payload: &[u8]) -> Vec<u8> {
    record_after(&[], tag, payload)
}

/// A record whose checksum covers `prefix` first (a version-3 header's
/// covers the format version).
fn record_after(prefix: &[u8], tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(prefix);
    hasher.update(&[tag]);
    hasher.update(&(payload.len() as u32).to_le_bytes());
    hasher.update(payload);
    let mut out = vec![tag];
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&hasher.finalize().to_le_bytes());
    out
}

/// A block payload with no marks: `op_count`, and one stream per drop count.
fn raw_block(op_count: u64, drops: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0u16.to_le_bytes()); // lane
    out.extend_from_slice(&0u32.to_le_bytes()); // pass
    out.extend_from_slice(&0u32.to_le_bytes()); // sample
    out.extend_from_slice(&op_count.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // start
    out.extend_from_slice(&0u64.to_le_bytes()); // end
    out.extend_from_slice(&(drops.len() as u16).to_le_bytes());
    for (thread, dropped) in drops.iter().enumerate() {
        out.extend_from_slice(&(thread as u16).to_le_bytes());
        out.extend_from_slice(&dropped.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes()); // marks
    }
    out.extend_from_slice(&0u16.to_le_bytes()); // readings
    out
}

/// A CRC-correct trace of these block payloads and an end record that sums
/// them as a saturating writer would.
fn crafted(blocks: &[Vec<u8>], end_dropped: u64) -> Vec<u8> {
    crafted_as(FORMAT_VERSION, blocks, end_dropped)
}

/// [`crafted`] in format `version`, its header's checksum as that version
/// computes it.
fn crafted_as(version: u16, blocks: &[Vec<u8>], end_dropped: u64) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&version.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    let json = serde_json::to_vec(&header()).expect("header json");
    let prefix = if version >= 3 { version.to_le_bytes().to_vec() } else { Vec::new() };
    bytes.extend(record_after(&prefix, b'H', &json));
    for payload in blocks {
        bytes.extend(record(b'B', payload));
    }
    let mut end = (blocks.len() as u64).to_le_bytes().to_vec();
    end.extend_from_slice(&end_dropped.to_le_bytes());
    bytes.extend(record(b'E', &end));
    bytes
}

#[test]
fn crafted_traces_whose_sums_overflow_are_refused_with_a_typed_error() {
    let cases = [
        ("two streams of one block dropping u64::MAX and 1", crafted(&[raw_block(1, &[u64::MAX, 1])], u64::MAX)),
        ("two blocks of u64::MAX operations", crafted(&[raw_block(u64::MAX, &[]), raw_block(u64::MAX, &[])], 0)),
        ("two blocks each dropping 2^63", crafted(&[raw_block(1, &[1 << 63]), raw_block(1, &[1 << 63])], u64::MAX)),
    ];
    for (what, bytes) in cases {
        match Trace::from_bytes(&bytes) {
            Err(TraceError::Corrupt { reason, .. }) => assert!(reason.contains("overflow"), "{what}: {reason}"),
            other => panic!("{what}: not refused as corrupt: {other:?}"),
        }
    }
    // One block of u64::MAX operations alone is a valid count.
    assert!(Trace::from_bytes(&crafted(&[raw_block(u64::MAX, &[])], 0)).is_ok());
}

#[test]
fn a_trace_cut_short_is_salvaged_block_by_block() {
    let blocks: Vec<Block> = (0..5).map(|i| block(i % 3, u32::from(i))).collect();
    let bytes = encode(header(), &blocks);
    let dir = std::env::temp_dir().join(format!("hopscope-salvage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // Without its end record (a killed run): every block kept.
    let end_record = 5 + 16 + 4;
    let path = dir.join("no-end.hop");
    std::fs::write(&path, &bytes[..bytes.len() - end_record]).expect("write");
    assert!(matches!(Trace::read(&path), Err(TraceError::Truncated { .. })), "strict reading refuses it");
    let (trace, salvage) = Trace::salvage(&path).expect("salvaged");
    let salvage = salvage.expect("marked as salvaged");
    assert_eq!(trace.blocks, blocks);
    assert_eq!((salvage.blocks_kept, salvage.bytes_dropped), (5, 0));
    assert!(salvage.reason.contains("truncated"), "{}", salvage.reason);
    // Cut inside the fourth block: three kept, the rest counted as dropped.
    let cut = bytes.len() - end_record - 2 * (bytes.len() - end_record - 1000) / 5;
    std::fs::write(&path, &bytes[..cut]).expect("write");
    let (trace, salvage) = Trace::salvage(&path).expect("salvaged");
    let salvage = salvage.expect("partial");
    assert_eq!(trace.blocks.len() as u64, salvage.blocks_kept);
    assert!(salvage.blocks_kept < 5 && salvage.bytes_dropped > 0, "{salvage:?}");
    assert_eq!(trace.blocks[..], blocks[..trace.blocks.len()]);
    // A complete trace is not marked.
    std::fs::write(&path, &bytes).expect("write");
    assert!(Trace::salvage(&path).expect("complete").1.is_none());
    // Nothing to salvage without a header.
    std::fs::write(&path, &bytes[..20]).expect("write");
    assert!(Trace::salvage(&path).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_that_is_not_a_trace_is_refused_from_its_first_bytes() {
    // /dev/zero never ends: the reader stops at its first eight bytes.
    let started = std::time::Instant::now();
    match Trace::read(std::path::Path::new("/dev/zero")) {
        Err(TraceError::BadMagic { found, .. }) => assert_eq!(found, [0; 8]),
        other => panic!("not refused by its magic: {other:?}"),
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // A record claiming more bytes than the file holds is refused without
    // reading (or allocating) them.
    let mut bytes = small_trace();
    let at = 12 + 5 + serde_json::to_vec(&header()).expect("json").len() + 4;
    bytes[at + 1..at + 5].copy_from_slice(&u32::MAX.to_le_bytes());
    match Trace::from_bytes(&bytes) {
        Err(TraceError::Corrupt { reason, .. }) => assert!(reason.contains("exceeds"), "{reason}"),
        Err(TraceError::Truncated { .. }) => {}
        other => panic!("{other:?}"),
    }
}

/// Byte offsets of the records of `bytes` after the header: each record's
/// start, from its frame's length.
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut at = 12;
    let mut out = Vec::new();
    while at + 5 <= bytes.len() {
        out.push(at);
        let len = u32::from_le_bytes([bytes[at + 1], bytes[at + 2], bytes[at + 3], bytes[at + 4]]) as usize;
        at += 5 + len + 4;
    }
    out.remove(0); // the header record
    out
}

#[test]
fn a_damaged_block_is_skipped_and_the_valid_blocks_after_it_are_kept() {
    let blocks: Vec<Block> = (0..5).map(|i| block(i % 3, u32::from(i))).collect();
    let bytes = encode(header(), &blocks);
    let records = record_offsets(&bytes);
    assert_eq!(records.len(), 6, "five blocks and the end record");
    let dir = std::env::temp_dir().join(format!("hopscope-skip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("damaged.hop");
    let salvaged = |damaged: &[u8]| {
        std::fs::write(&path, damaged).expect("write");
        assert!(Trace::read(&path).is_err(), "strict reading refuses damage");
        let (trace, salvage) = Trace::salvage(&path).expect("salvaged");
        (trace.blocks, salvage.expect("marked as damaged"))
    };

    // A flipped byte inside the second block's marks: that block goes, the
    // three after it stay, and the account names the skip.
    let mut damaged = bytes.clone();
    damaged[records[1] + 20] ^= 0x5a;
    let (kept, salvage) = salvaged(&damaged);
    let expected: Vec<Block> = blocks.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, b)| b.clone()).collect();
    assert_eq!(kept, expected);
    assert_eq!((salvage.blocks_kept, salvage.blocks_skipped), (4, 1));
    assert_eq!(salvage.bytes_dropped, (records[2] - records[1]) as u64);
    assert!(
        salvage.reason.contains("1 damaged block record skipped") && salvage.reason.contains("checksum"),
        "{}",
        salvage.reason
    );

    // The last block damaged: the end record still counts it, and is read.
    let mut damaged = bytes.clone();
    damaged[records[4] + 20] ^= 0x5a;
    let (kept, salvage) = salvaged(&damaged);
    assert_eq!(kept, blocks[..4]);
    assert_eq!(salvage.blocks_skipped, 1, "{salvage:?}");
    assert!(salvage.reason.ends_with("every other record read to the end"), "{}", salvage.reason);

    // Two damaged blocks in a row: the first one's length is not to be
    // trusted, so reading stops at it and everything from there is dropped.
    let mut damaged = bytes.clone();
    damaged[records[1] + 20] ^= 0x5a;
    damaged[records[2] + 20] ^= 0x5a;
    let (kept, salvage) = salvaged(&damaged);
    assert_eq!(kept, blocks[..1]);
    assert_eq!(salvage.blocks_skipped, 0);
    assert_eq!(salvage.bytes_dropped, (bytes.len() - records[1]) as u64);

    // A damaged length: the record after it cannot be found, so reading
    // stops there, keeping what came before.
    let mut damaged = bytes.clone();
    damaged[records[2] + 1] ^= 0x01;
    let (kept, salvage) = salvaged(&damaged);
    assert_eq!(kept, blocks[..2]);
    assert_eq!((salvage.blocks_kept, salvage.blocks_skipped), (2, 0), "{salvage:?}");
    assert!(!salvage.reason.contains("skipped"), "nothing was skipped: {}", salvage.reason);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A block payload of one stream holding `marks` (op, hop, ticks).
fn raw_block_of(marks: &[(u64, u16, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0u16.to_le_bytes()); // lane
    out.extend_from_slice(&0u32.to_le_bytes()); // pass
    out.extend_from_slice(&0u32.to_le_bytes()); // sample
    out.extend_from_slice(&1u64.to_le_bytes()); // op count
    out.extend_from_slice(&0u64.to_le_bytes()); // start
    out.extend_from_slice(&0u64.to_le_bytes()); // end
    out.extend_from_slice(&1u16.to_le_bytes()); // streams
    out.extend_from_slice(&0u16.to_le_bytes()); // thread
    out.extend_from_slice(&0u64.to_le_bytes()); // dropped
    out.extend_from_slice(&(marks.len() as u32).to_le_bytes());
    for (op, hop, ticks) in marks {
        out.extend_from_slice(&op.to_le_bytes());
        out.extend_from_slice(&hop.to_le_bytes());
        out.extend_from_slice(&u16::MAX.to_le_bytes()); // cpu
        out.extend_from_slice(&ticks.to_le_bytes());
    }
    out.extend_from_slice(&0u16.to_le_bytes()); // readings
    out
}

#[test]
fn links_round_trip_beside_the_marks_of_their_shared_interval() {
    let (batch, a, b) = (OpId(900), OpId(1), OpId(2));
    let mut linked = block(2, 0);
    linked.streams[1].marks = vec![
        mark(1, Hop::WOKE, 2_000),
        mark(2, Hop::WOKE, 2_050),
        Mark::serves(batch, a),
        Mark::serves(batch, b),
        Mark::new(batch, Hop::EXECUTED, Ticks(2_500)),
        mark(1, Hop::REPLIED, 3_000),
        mark(2, Hop::REPLIED, 3_010),
    ];
    let trace = Trace::from_bytes(&encode(header(), std::slice::from_ref(&linked))).expect("valid trace");
    assert_eq!(trace.blocks, vec![linked]);
    let links: Vec<(OpId, OpId)> =
        trace.blocks[0].streams[1].marks.iter().filter_map(|m| m.link().map(|shared| (m.op, shared))).collect();
    assert_eq!(links, [(a, batch), (b, batch)]);
    assert!(trace.blocks[0].streams[0].marks.iter().all(|m| m.link().is_none()));
}

#[test]
fn a_version_2_trace_reads_as_it_did_and_may_hold_no_link() {
    let plain = raw_block_of(&[(1, Hop::ENTER.0, 10), (1, Hop::DONE.0, 20)]);
    let trace = Trace::from_bytes(&crafted_as(2, &[plain], 0)).expect("a version-2 trace reads");
    assert_eq!(trace.blocks[0].streams[0].marks.len(), 2);

    let linked = raw_block_of(&[(1, Hop::ENTER.0, 10), (1, Hop::LINK.0, 900), (1, Hop::DONE.0, 20)]);
    let err = Trace::from_bytes(&crafted_as(2, std::slice::from_ref(&linked), 0)).unwrap_err();
    assert!(err.to_string().contains("link mark in a version-2 trace"), "{err}");
    Trace::from_bytes(&crafted_as(3, &[linked], 0)).expect("version 3 holds links");
}

#[test]
fn a_version_3_header_checksum_covers_the_version() {
    let bytes = crafted_as(3, &[raw_block_of(&[(1, Hop::ENTER.0, 10)])], 0);
    let mut older = bytes.clone();
    older[8..10].copy_from_slice(&2u16.to_le_bytes());
    assert!(matches!(Trace::from_bytes(&older), Err(TraceError::Checksum { .. })));
    let mut newer = crafted_as(2, &[raw_block_of(&[(1, Hop::ENTER.0, 10)])], 0);
    newer[8..10].copy_from_slice(&3u16.to_le_bytes());
    assert!(matches!(Trace::from_bytes(&newer), Err(TraceError::Checksum { .. })));
}

#[test]
fn a_header_declaring_more_hops_than_an_index_holds_is_not_written() {
    let mut header = header();
    // One past the cap, built as the table's serialized form (`add` looks
    // each name up first: 65,536 of them one by one took seconds).
    let mut defs: Vec<HopDef> = header.hops.iter().map(|(_, def)| def.clone()).collect();
    defs.extend((defs.len()..=hopscope_probe::MAX_HOPS).map(|i| HopDef {
        name: format!("h{i}"),
        side: hopscope_probe::Side::Writer,
        span: None,
        owns: None,
    }));
    header.hops = serde_json::from_value(serde_json::to_value(defs).expect("hop defs")).expect("a hop table");
    assert_eq!(header.hops.len(), hopscope_probe::MAX_HOPS + 1);
    let err = TraceWriter::new(Vec::new(), header).unwrap_err();
    assert!(err.to_string().contains("hops declared"), "{err}");
}
