//! The `.hop` trace file: a versioned, checksummed binary format.
//!
//! # Layout (all integers little-endian)
//!
//! ```text
//! preamble   magic "HOPSCOPE" [8] | version u16 | flags u16 (must be 0)
//! record*    tag u8 | length u32 | payload [length] | crc32 u32
//! ```
//!
//! The CRC-32 of each record covers its tag, length and payload; from
//! version 3 on, the header record's covers the version before them.
//! Records:
//!
//! | tag | payload | occurs |
//! |-----|---------|--------|
//! | `H` | the [`TraceHeader`] as JSON | first, once |
//! | `B` | one [`Block`]: lane u16, pass u32, sample u32, op count u64, start u64, end u64, streams (count u16; each thread u16, dropped u64, mark count u32, marks of op u64, hop u16, cpu u16, ticks u64), readings (count u16; each key u16, value u64) | any number |
//! | `E` | block count u64, dropped marks u64 | last, once |
//!
//! A mark whose hop is `0xFFFF` ([`crate::Hop::LINK`], version 3) is a
//! link, not a hop: its op is served by the shared interval whose id its
//! ticks field holds ([`crate::Mark::serves`]).
//!
//! The end record makes truncation detectable even at a record boundary, and
//! its totals are checked against the blocks read. The reader refuses a wrong
//! magic, an unknown version, a truncated or corrupt record and any byte after
//! the end record, with a [`TraceError`] naming the byte offset; it never
//! panics and never returns a partial trace.

mod block;
mod error;
mod header;
mod read;
mod write;

pub use block::{Block, Reading, Stream};
pub use error::TraceError;
pub use header::TraceHeader;
pub use read::{MAX_BLOCK_BYTES, Salvage, Trace, TraceReader};
pub use write::TraceWriter;

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
const LINKS_VERSION: u16 = 3;

/// Preamble bytes: magic, version, flags.
const PREAMBLE_BYTES: usize = 8 + 2 + 2;
/// Record framing bytes around a payload: tag, length, crc.
const FRAME_BYTES: usize = 1 + 4 + 4;
/// Largest header accepted: far above any real header, small enough that a
/// corrupt length cannot make the reader allocate much.
const MAX_HEADER_BYTES: usize = 16 << 20;

const TAG_HEADER: u8 = b'H';
const TAG_BLOCK: u8 = b'B';
const TAG_END: u8 = b'E';
/// Payload bytes of the end record.
const END_PAYLOAD_BYTES: usize = 16;

/// CRC-32 of a record's tag, length and payload.
fn record_crc(tag: u8, payload: &[u8]) -> u32 {
    crc_after(&[], tag, payload)
}

/// CRC-32 of the header record of a trace of format `version`: from
/// version 3 on it covers the version too, so a damaged version (which no
/// other checksum covers) cannot pass for an older one whose traces read
/// alike.
fn header_crc(version: u16, payload: &[u8]) -> u32 {
    if version >= LINKS_VERSION {
        crc_after(&version.to_le_bytes(), TAG_HEADER, payload)
    } else {
        record_crc(TAG_HEADER, payload)
    }
}

/// CRC-32 of `prefix`, then a record's tag, length and payload.
fn crc_after(prefix: &[u8], tag: u8, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(prefix);
    hasher.update(&[tag]);
    hasher.update(&(payload.len() as u32).to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}
