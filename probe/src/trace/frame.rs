//! The file's framing: its magic and versions, the record tags and sizes,
//! and the checksums that bind each record. Reading and writing share
//! these, and nothing else of each other.

/// The first eight bytes of every trace.
pub const MAGIC: [u8; 8] = *b"HOPSCOPE";
/// The format version this build writes (2: marks carry the CPU they were
/// taken on; 3: a stream may hold links, marks of [`crate::Hop::LINK`]
/// that say which shared interval serves an operation).
pub const FORMAT_VERSION: u16 = 3;
/// The oldest format version this build reads: a version-2 trace reads as
/// it always did (it holds no links, and one that claims to is refused).
pub const OLDEST_READ_VERSION: u16 = 2;
/// The first version whose streams may hold links.
pub(super) const LINKS_VERSION: u16 = 3;

/// Preamble bytes: magic, version, flags.
pub(super) const PREAMBLE_BYTES: usize = 8 + 2 + 2;
/// Record framing bytes around a payload: tag, length, crc.
pub(super) const FRAME_BYTES: usize = 1 + 4 + 4;
/// Largest header accepted: far above any real header, small enough that a
/// corrupt length cannot make the reader allocate much.
pub(super) const MAX_HEADER_BYTES: usize = 16 << 20;

pub(super) const TAG_HEADER: u8 = b'H';
pub(super) const TAG_BLOCK: u8 = b'B';
pub(super) const TAG_END: u8 = b'E';
/// Payload bytes of the end record.
pub(super) const END_PAYLOAD_BYTES: usize = 16;

/// CRC-32 of a record's tag, length and payload.
pub(super) fn record_crc(tag: u8, payload: &[u8]) -> u32 {
    crc_after(&[], tag, payload)
}

/// CRC-32 of the header record of a trace of format `version`: from
/// version 3 on it covers the version too, so a damaged version (which no
/// other checksum covers) cannot pass for an older one whose traces read
/// alike.
pub(super) fn header_crc(version: u16, payload: &[u8]) -> u32 {
    if version >= LINKS_VERSION {
        crc_after(&version.to_le_bytes(), TAG_HEADER, payload)
    } else {
        record_crc(TAG_HEADER, payload)
    }
}

/// CRC-32 of `prefix`, then a record's tag, length and payload.
pub(super) fn crc_after(prefix: &[u8], tag: u8, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(prefix);
    hasher.update(&[tag]);
    hasher.update(&(payload.len() as u32).to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}
