//! Blocks: one measured stretch of one lane, with its marks and readings,
//! and their binary encoding.

use crate::clock::Ticks;
use crate::hop::{Hop, Mark, OpId};

use super::TraceHeader;
use super::error::TraceError;

/// One block of a run: a number of operations of one lane, measured
/// back-to-back between two block boundaries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Block {
    /// Index into [`TraceHeader::lanes`].
    pub lane: u16,
    /// Which pass over all lanes this block belongs to (0-based).
    pub pass: u32,
    /// The sample index within the pass (lanes rotate order per sample).
    pub sample: u32,
    /// Operations the block ran.
    pub op_count: u64,
    /// Clock at the start of the block's first operation.
    pub start: Ticks,
    /// Clock after the block's last operation.
    pub end: Ticks,
    /// Marks, one stream per participating thread.
    pub streams: Vec<Stream>,
    /// Readings taken at the block boundaries (CPU time, counters).
    pub readings: Vec<Reading>,
}

/// The marks one thread recorded during a block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stream {
    /// Index into [`TraceHeader::threads`].
    pub thread: u16,
    /// Marks dropped on this thread during the block (buffer full).
    pub dropped: u64,
    /// Marks in recording order.
    pub marks: Vec<Mark>,
}

/// One number measured over a block, e.g. writer CPU nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Index into [`TraceHeader::readings`].
    pub key: u16,
    /// The value, in the unit its key names.
    pub value: u64,
}

impl Block {
    /// Marks dropped across all streams of this block (saturating; a
    /// block read from a trace cannot overflow it: the reader refuses one
    /// that would).
    pub fn dropped(&self) -> u64 {
        self.checked_dropped().unwrap_or(u64::MAX)
    }

    /// Marks dropped across all streams, or `None` if the sum overflows.
    pub fn checked_dropped(&self) -> Option<u64> {
        self.streams.iter().try_fold(0u64, |sum, s| sum.checked_add(s.dropped))
    }

    /// Check that every index refers to something the header declares.
    /// Returns the reason for the first violation.
    pub(super) fn check(&self, header: &TraceHeader) -> Result<(), String> {
        if usize::from(self.lane) >= header.lanes.len() {
            return Err(format!("lane index {} but the header declares {} lanes", self.lane, header.lanes.len()));
        }
        if self.end < self.start {
            return Err(format!("block ends (tick {}) before it starts (tick {})", self.end.0, self.start.0));
        }
        for (i, stream) in self.streams.iter().enumerate() {
            if usize::from(stream.thread) >= header.threads.len() {
                return Err(format!(
                    "stream thread index {} but the header declares {} threads",
                    stream.thread,
                    header.threads.len()
                ));
            }
            if self.streams[..i].iter().any(|s| s.thread == stream.thread) {
                return Err(format!("two streams for thread index {}", stream.thread));
            }
            if let Some(mark) = stream.marks.iter().find(|m| !m.is_link() && usize::from(m.hop.0) >= header.hops.len())
            {
                return Err(format!("hop index {} but the header declares {} hops", mark.hop.0, header.hops.len()));
            }
        }
        if let Some(r) = self.readings.iter().find(|r| usize::from(r.key) >= header.readings.len()) {
            return Err(format!("reading key {} but the header declares {} readings", r.key, header.readings.len()));
        }
        Ok(())
    }
}

/// Bytes of one mark on disk: op u64, hop u16, cpu u16, ticks u64.
pub(super) const MARK_BYTES: usize = 20;
/// Bytes of a block's fixed part: lane, pass, sample, op count, start, end.
const BLOCK_FIXED_BYTES: usize = 2 + 4 + 4 + 8 + 8 + 8;
const STREAM_FIXED_BYTES: usize = 2 + 8 + 4;
const READING_BYTES: usize = 2 + 8;

/// Append the little-endian encoding of `block` to `out`.
pub(super) fn encode(block: &Block, out: &mut Vec<u8>) {
    out.extend_from_slice(&block.lane.to_le_bytes());
    out.extend_from_slice(&block.pass.to_le_bytes());
    out.extend_from_slice(&block.sample.to_le_bytes());
    out.extend_from_slice(&block.op_count.to_le_bytes());
    out.extend_from_slice(&block.start.0.to_le_bytes());
    out.extend_from_slice(&block.end.0.to_le_bytes());
    out.extend_from_slice(&(block.streams.len() as u16).to_le_bytes());
    for stream in &block.streams {
        out.extend_from_slice(&stream.thread.to_le_bytes());
        out.extend_from_slice(&stream.dropped.to_le_bytes());
        out.extend_from_slice(&(stream.marks.len() as u32).to_le_bytes());
        for mark in &stream.marks {
            out.extend_from_slice(&mark.op.0.to_le_bytes());
            out.extend_from_slice(&mark.hop.0.to_le_bytes());
            out.extend_from_slice(&mark.cpu.to_le_bytes());
            out.extend_from_slice(&mark.ticks.0.to_le_bytes());
        }
    }
    out.extend_from_slice(&(block.readings.len() as u16).to_le_bytes());
    for reading in &block.readings {
        out.extend_from_slice(&reading.key.to_le_bytes());
        out.extend_from_slice(&reading.value.to_le_bytes());
    }
}

/// Bytes `block` takes on disk, so limits can be checked before writing.
pub(super) fn encoded_len(block: &Block) -> usize {
    BLOCK_FIXED_BYTES
        + 2
        + block.streams.iter().map(|s| STREAM_FIXED_BYTES + s.marks.len() * MARK_BYTES).sum::<usize>()
        + 2
        + block.readings.len() * READING_BYTES
}

/// Decode a block payload that starts at file offset `base`.
pub(super) fn decode(payload: &[u8], base: u64) -> Result<Block, TraceError> {
    let mut cur = Cursor { bytes: payload, pos: 0, base };
    let mut block = Block {
        lane: cur.u16("block lane")?,
        pass: cur.u32("block pass")?,
        sample: cur.u32("block sample")?,
        op_count: cur.u64("block op count")?,
        start: Ticks(cur.u64("block start")?),
        end: Ticks(cur.u64("block end")?),
        streams: Vec::new(),
        readings: Vec::new(),
    };
    let streams = cur.u16("stream count")?;
    for _ in 0..streams {
        let thread = cur.u16("stream thread")?;
        let dropped = cur.u64("stream drop count")?;
        let count = cur.u32("stream mark count")? as usize;
        // Check the marks fit before allocating, so a corrupt count cannot
        // request gigabytes.
        cur.need(count.saturating_mul(MARK_BYTES), "stream marks")?;
        let marks = cur.marks(count);
        block.streams.push(Stream { thread, dropped, marks });
    }
    let readings = cur.u16("reading count")?;
    cur.need(usize::from(readings) * READING_BYTES, "readings")?;
    for _ in 0..readings {
        block.readings.push(Reading { key: cur.u16("reading key")?, value: cur.u64("reading value")? });
    }
    if cur.pos != payload.len() {
        return Err(TraceError::Corrupt {
            offset: cur.offset(),
            reason: format!("{} unexpected bytes after the block's readings", payload.len() - cur.pos),
        });
    }
    Ok(block)
}

/// A bounds-checked little-endian reader over one record's payload.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl Cursor<'_> {
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// `count` marks, their bytes checked present by [`Cursor::need`]: one
    /// slice taken whole and cut in fixed records, no check per field (the
    /// block's decode is most of a trace's read).
    fn marks(&mut self, count: usize) -> Vec<Mark> {
        let end = (self.pos + count * MARK_BYTES).min(self.bytes.len());
        let bytes = &self.bytes[self.pos..end];
        self.pos = end;
        let u64_at = |m: &[u8], at: usize| u64::from_le_bytes(std::array::from_fn(|i| m[at + i]));
        bytes
            .chunks_exact(MARK_BYTES)
            .map(|m| Mark {
                op: OpId(u64_at(m, 0)),
                hop: Hop(u16::from_le_bytes([m[8], m[9]])),
                cpu: u16::from_le_bytes([m[10], m[11]]),
                ticks: Ticks(u64_at(m, 12)),
            })
            .collect()
    }

    fn need(&self, n: usize, what: &'static str) -> Result<(), TraceError> {
        let available = self.bytes.len() - self.pos;
        if n > available {
            // Inside a checksummed record, a short payload means the counts
            // in it are wrong, not that the file was cut.
            return Err(TraceError::Corrupt {
                offset: self.offset(),
                reason: format!("{what} need {n} bytes but the block has {available} left"),
            });
        }
        Ok(())
    }

    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], TraceError> {
        self.need(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, TraceError> {
        self.take::<2>(what).map(u16::from_le_bytes)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, TraceError> {
        self.take::<4>(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, TraceError> {
        self.take::<8>(what).map(u64::from_le_bytes)
    }
}
