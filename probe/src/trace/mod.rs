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
mod frame;
mod header;
mod read;
mod write;

pub use block::{Block, Reading, Stream};
pub use error::TraceError;
pub use frame::{FORMAT_VERSION, MAGIC, OLDEST_READ_VERSION};
pub use header::TraceHeader;
pub use read::{MAX_BLOCK_BYTES, Salvage, Trace, TraceReader};
pub use write::TraceWriter;
