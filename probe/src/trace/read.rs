//! Reading a trace: validate everything, return all of it or an error.

use std::path::Path;

use super::block::{self, Block};
use super::{
    END_PAYLOAD_BYTES, FORMAT_VERSION, FRAME_BYTES, MAGIC, MAX_HEADER_BYTES, PREAMBLE_BYTES, TAG_BLOCK, TAG_END,
    TAG_HEADER, TraceError, TraceHeader, record_crc,
};

/// A whole trace in memory, validated: every block refers only to lanes,
/// threads, hops and readings its header declares, and the end record's
/// totals match the blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The header.
    pub header: TraceHeader,
    /// The blocks in file order.
    pub blocks: Vec<Block>,
}

impl Trace {
    /// Read and validate the trace at `path`.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let bytes = std::fs::read(path).map_err(|source| TraceError::Open { path: path.to_owned(), source })?;
        Trace::from_bytes(&bytes)
    }

    /// Parse and validate a trace held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Trace, TraceError> {
        check_preamble(bytes)?;
        let mut pos = PREAMBLE_BYTES;

        let (tag, payload, next) = record(bytes, pos)?;
        if tag != TAG_HEADER {
            return Err(corrupt(pos, format!("expected the header record, found tag {tag:#04x}")));
        }
        if payload.len() > MAX_HEADER_BYTES {
            return Err(corrupt(pos, format!("header of {} bytes exceeds {MAX_HEADER_BYTES}", payload.len())));
        }
        let header: TraceHeader = serde_json::from_slice(payload)
            .map_err(|source| TraceError::Header { offset: (pos + 5) as u64, source })?;
        if header.hops.is_empty() {
            return Err(corrupt(pos + 5, "header declares no hops".to_owned()));
        }
        if !header.lane_info.is_empty() && header.lane_info.len() != header.lanes.len() {
            return Err(corrupt(
                pos + 5,
                format!("header declares {} lanes but roles for {}", header.lanes.len(), header.lane_info.len()),
            ));
        }
        pos = next;

        let mut blocks = Vec::new();
        let mut dropped: u64 = 0;
        loop {
            let (tag, payload, next) = record(bytes, pos)?;
            match tag {
                TAG_BLOCK => {
                    let block = block::decode(payload, (pos + 5) as u64)?;
                    block.check(&header).map_err(|reason| corrupt(pos, reason))?;
                    dropped = dropped.saturating_add(block.dropped());
                    blocks.push(block);
                }
                TAG_END => {
                    check_end(payload, pos, blocks.len() as u64, dropped)?;
                    if next != bytes.len() {
                        return Err(corrupt(next, format!("{} bytes after the end record", bytes.len() - next)));
                    }
                    return Ok(Trace { header, blocks });
                }
                TAG_HEADER => return Err(corrupt(pos, "a second header record".to_owned())),
                other => return Err(corrupt(pos, format!("unknown record tag {other:#04x}"))),
            }
            pos = next;
        }
    }

    /// Marks dropped across the whole trace.
    pub fn dropped(&self) -> u64 {
        self.blocks.iter().map(Block::dropped).sum()
    }
}

fn check_preamble(bytes: &[u8]) -> Result<(), TraceError> {
    if bytes.len() < MAGIC.len() {
        return Err(truncated(0, "magic", MAGIC.len(), bytes.len()));
    }
    if bytes[..8] != MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&bytes[..8]);
        return Err(TraceError::BadMagic { found, expected: MAGIC });
    }
    if bytes.len() < PREAMBLE_BYTES {
        return Err(truncated(8, "version and flags", PREAMBLE_BYTES - 8, bytes.len() - 8));
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != FORMAT_VERSION {
        return Err(TraceError::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
    }
    let flags = u16::from_le_bytes([bytes[10], bytes[11]]);
    if flags != 0 {
        return Err(corrupt(10, format!("reserved flags are {flags:#06x}, must be 0")));
    }
    Ok(())
}

/// Read the record framed at `pos`: its tag, its checksum-verified payload
/// and the offset of the next record.
fn record(bytes: &[u8], pos: usize) -> Result<(u8, &[u8], usize), TraceError> {
    let available = bytes.len() - pos;
    if available < 5 {
        return Err(truncated(pos, "record tag and length", 5, available));
    }
    let tag = bytes[pos];
    let len = u32::from_le_bytes([bytes[pos + 1], bytes[pos + 2], bytes[pos + 3], bytes[pos + 4]]) as usize;
    let needed = len + FRAME_BYTES;
    if needed > available {
        return Err(truncated(pos, record_name(tag), needed, available));
    }
    let payload = &bytes[pos + 5..pos + 5 + len];
    let crc_at = pos + 5 + len;
    let stored = u32::from_le_bytes([bytes[crc_at], bytes[crc_at + 1], bytes[crc_at + 2], bytes[crc_at + 3]]);
    let computed = record_crc(tag, payload);
    if stored != computed {
        return Err(TraceError::Checksum { offset: pos as u64, what: record_name(tag), stored, computed });
    }
    Ok((tag, payload, pos + needed))
}

fn check_end(payload: &[u8], pos: usize, blocks: u64, dropped: u64) -> Result<(), TraceError> {
    if payload.len() != END_PAYLOAD_BYTES {
        return Err(corrupt(pos, format!("end record holds {} bytes, expected {END_PAYLOAD_BYTES}", payload.len())));
    }
    let mut word = [0u8; 8];
    word.copy_from_slice(&payload[..8]);
    let declared_blocks = u64::from_le_bytes(word);
    word.copy_from_slice(&payload[8..]);
    let declared_dropped = u64::from_le_bytes(word);
    if declared_blocks != blocks {
        return Err(corrupt(pos, format!("end record counts {declared_blocks} blocks, the file holds {blocks}")));
    }
    if declared_dropped != dropped {
        return Err(corrupt(
            pos,
            format!("end record counts {declared_dropped} dropped marks, the blocks sum to {dropped}"),
        ));
    }
    Ok(())
}

fn record_name(tag: u8) -> &'static str {
    match tag {
        TAG_HEADER => "header record",
        TAG_BLOCK => "block record",
        TAG_END => "end record",
        _ => "record",
    }
}

fn truncated(offset: usize, what: &'static str, needed: usize, available: usize) -> TraceError {
    TraceError::Truncated { offset: offset as u64, what, needed: needed as u64, available: available as u64 }
}

fn corrupt(offset: usize, reason: String) -> TraceError {
    TraceError::Corrupt { offset: offset as u64, reason }
}
