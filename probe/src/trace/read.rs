//! Reading a trace: validate everything, block by block.
//!
//! [`TraceReader`] streams: it checks the magic and version from the first
//! twelve bytes before reading anything else, refuses a record whose
//! declared length exceeds what the file still holds (without allocating
//! it), and decodes one block at a time, so memory stays one block (plus
//! what the caller keeps). [`Trace::read`] collects every block of a
//! complete trace; [`Trace::salvage`] keeps every complete, checksum-valid
//! block of a trace that was cut short (a killed run) or damaged after its
//! header, and says what it dropped.

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

use super::block::{self, Block};
use super::frame::{
    END_PAYLOAD_BYTES, FORMAT_VERSION, FRAME_BYTES, LINKS_VERSION, MAGIC, MAX_HEADER_BYTES, OLDEST_READ_VERSION,
    PREAMBLE_BYTES, TAG_BLOCK, TAG_END, TAG_HEADER, header_crc, record_crc,
};
use super::{TraceError, TraceHeader};

/// Largest block record accepted: far above any real block (a block of a
/// million operations with ten marks each is 200 MB), small enough that a
/// corrupt length cannot make the reader allocate much on a stream of
/// unknown size.
pub const MAX_BLOCK_BYTES: u64 = 1 << 30;

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

/// What [`Trace::salvage`] left out of a trace that was not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Salvage {
    /// Complete, checksum-valid blocks kept.
    pub blocks_kept: u64,
    /// Bytes not used: the damaged block records skipped, and everything
    /// from where reading stopped.
    pub bytes_dropped: u64,
    /// Damaged block records skipped on the way (a checksum or a block that
    /// fails its checks, in a record whose frame was intact, followed by a
    /// record that reads cleanly): the blocks after them are kept.
    pub blocks_skipped: u64,
    /// Why reading stopped where it did (a missing end record, a cut or
    /// corrupt record) and the first damaged record skipped, with byte
    /// offsets.
    pub reason: String,
}

impl Trace {
    /// Read and validate the complete trace at `path`.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let mut reader = TraceReader::open(path)?;
        let mut blocks = Vec::new();
        while let Some(block) = reader.next_block()? {
            blocks.push(block);
        }
        Ok(Trace { header: reader.header, blocks })
    }

    /// Read the trace at `path`, keeping every complete, checksum-valid
    /// block when the trace was cut short or damaged after its header: the
    /// trace, and what was left out (`None` when the trace was complete).
    /// A file whose preamble or header is unusable is still an error.
    pub fn salvage(path: &Path) -> Result<(Trace, Option<Salvage>), TraceError> {
        let mut reader = TraceReader::open(path)?;
        let mut blocks = Vec::new();
        loop {
            match reader.next_salvaged() {
                Ok(Some(block)) => blocks.push(block),
                Ok(None) => return Ok((Trace { header: reader.header, blocks }, None)),
                Err(salvage) => return Ok((Trace { header: reader.header, blocks }, Some(salvage))),
            }
        }
    }

    /// Parse and validate a trace held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Trace, TraceError> {
        let mut reader = TraceReader::new(bytes, Some(bytes.len() as u64))?;
        let mut blocks = Vec::new();
        while let Some(block) = reader.next_block()? {
            blocks.push(block);
        }
        Ok(Trace { header: reader.header, blocks })
    }

    /// Marks dropped across the whole trace (saturating; a trace read from
    /// a file cannot overflow it: the reader refuses one that would).
    pub fn dropped(&self) -> u64 {
        self.blocks.iter().fold(0u64, |sum, b| sum.saturating_add(b.dropped()))
    }
}

/// Reads a trace block by block from any byte stream.
#[derive(Debug)]
pub struct TraceReader<R: Read> {
    input: R,
    header: TraceHeader,
    /// The format version in the preamble.
    version: u16,
    /// Bytes consumed so far.
    pos: u64,
    /// Total bytes, when known (a file): no record may claim more.
    size: Option<u64>,
    blocks: u64,
    dropped: u64,
    /// Operations of every block so far: a trace whose op counts overflow
    /// is refused, so no sum an analysis takes of them can.
    ops: u64,
    done: bool,
    scratch: Vec<u8>,
    /// Whether the last error was a block record read whole (its frame and
    /// length intact) and rejected: the next record starts right after it,
    /// so a salvage can skip it.
    skippable: bool,
    /// Damaged block records skipped by [`TraceReader::next_salvaged`], their
    /// bytes, and the first one's account.
    skipped: (u64, u64, Option<String>),
}

impl TraceReader<BufReader<File>> {
    /// Open the trace at `path` and read its preamble and header.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let file = File::open(path).map_err(|source| TraceError::Open { path: path.to_owned(), source })?;
        let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
        TraceReader::new(BufReader::with_capacity(1 << 16, file), size)
    }
}

impl<R: Read> TraceReader<R> {
    /// Read the preamble and header from `input`, of `size` bytes if known.
    pub fn new(mut input: R, size: Option<u64>) -> Result<Self, TraceError> {
        let mut preamble = [0u8; PREAMBLE_BYTES];
        let got = read_full(&mut input, &mut preamble)?;
        let version = check_preamble(&preamble[..got])?;
        let at = PREAMBLE_BYTES as u64;
        let mut scratch = Vec::new();
        let (tag, pos, mut crc) = read_record(&mut input, at, size, &mut scratch)?;
        if tag == TAG_HEADER {
            crc.computed = header_crc(version, &scratch);
        }
        crc.check(at, tag)?;
        if tag != TAG_HEADER {
            return Err(corrupt(at, format!("expected the header record, found tag {tag:#04x}")));
        }
        let header: TraceHeader =
            serde_json::from_slice(&scratch).map_err(|source| TraceError::Header { offset: at + 5, source })?;
        if header.hops.is_empty() {
            return Err(corrupt(at + 5, "header declares no hops".to_owned()));
        }
        if header.hops.len() > crate::MAX_HOPS {
            let count = header.hops.len();
            return Err(corrupt(at + 5, format!("header declares {count} hops, past {}", crate::MAX_HOPS)));
        }
        if !header.lane_info.is_empty() && header.lane_info.len() != header.lanes.len() {
            return Err(corrupt(
                at + 5,
                format!("header declares {} lanes but roles for {}", header.lanes.len(), header.lane_info.len()),
            ));
        }
        Ok(TraceReader {
            input,
            header,
            version,
            pos,
            size,
            blocks: 0,
            dropped: 0,
            ops: 0,
            done: false,
            scratch,
            skippable: false,
            skipped: (0, 0, None),
        })
    }

    /// The trace's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The format version the trace was written in.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The next block, or `None` after a valid end record. A damaged block
    /// record whose frame is intact (its checksum fails, or the block fails
    /// its checks) is skipped when the record after it reads cleanly, and
    /// the blocks after it are kept. Where the trace stops being readable
    /// (a run killed mid-block, a cut record, a second damaged record in a
    /// row, a damaged length), the error is the account of a salvage: the
    /// blocks read so far are kept, the bytes from there on are dropped,
    /// and why. A trace that had records skipped ends with that account
    /// too, in place of `None`.
    pub fn next_salvaged(&mut self) -> Result<Option<Block>, Salvage> {
        let mut stop_at = self.pos;
        let mut skipped_last = false;
        let mut last_skip = String::new();
        loop {
            let at = self.pos;
            match self.next_block() {
                Ok(Some(block)) => return Ok(Some(block)),
                Ok(None) if self.skipped.0 == 0 => return Ok(None),
                Ok(None) => return Err(self.account(0, None)),
                Err(err) if self.skippable && !skipped_last => {
                    let (count, bytes, first) = &mut self.skipped;
                    *count += 1;
                    *bytes += self.pos - at;
                    first.get_or_insert_with(|| err.to_string());
                    skipped_last = true;
                    stop_at = at;
                    last_skip = err.to_string();
                }
                Err(err) => {
                    // Two damaged records in a row: the first one's length
                    // cannot be trusted, so neither can where it ended.
                    let from = if skipped_last { stop_at } else { at };
                    if skipped_last {
                        let (count, bytes, first) = &mut self.skipped;
                        *count -= 1;
                        *bytes -= at - stop_at;
                        if *count == 0 {
                            *first = None;
                        }
                    }
                    let dropped = self.size.map_or(0, |s| s.saturating_sub(from));
                    let why = if skipped_last {
                        format!("{last_skip}, and the record after it does not read either ({err})")
                    } else {
                        err.to_string()
                    };
                    return Err(self.account(dropped, Some(why)));
                }
            }
        }
    }

    /// The salvage account of this reader so far, with `dropped` bytes left
    /// unread after where it stopped, for `why` (`None`: it read on to the
    /// end record).
    fn account(&self, dropped: u64, why: Option<String>) -> Salvage {
        let (count, bytes, first) = &self.skipped;
        let s = if *count == 1 { "" } else { "s" };
        let reason = match (first, why) {
            (Some(first), None) => {
                format!(
                    "{count} damaged block record{s} skipped (the first: {first}); every other record read to the end"
                )
            }
            (Some(first), Some(why)) => {
                format!("{count} damaged block record{s} skipped (the first: {first}); reading stopped at {why}")
            }
            (None, why) => why.unwrap_or_default(),
        };
        Salvage { blocks_kept: self.blocks, bytes_dropped: dropped + bytes, blocks_skipped: *count, reason }
    }

    /// The next block, or `None` after a valid end record (and nothing
    /// after it). Every error names its byte offset.
    pub fn next_block(&mut self) -> Result<Option<Block>, TraceError> {
        self.skippable = false;
        if self.done {
            return Ok(None);
        }
        let at = self.pos;
        let (tag, next, crc) = read_record(&mut self.input, at, self.size, &mut self.scratch)?;
        self.pos = next;
        // From here the record was read whole: the next one starts at `next`.
        self.skippable = tag == TAG_BLOCK || crc.stored != crc.computed;
        crc.check(at, tag)?;
        match tag {
            TAG_BLOCK => {
                let block = block::decode(&self.scratch, at + 5)?;
                block.check(&self.header).map_err(|reason| corrupt(at, reason))?;
                if self.version < LINKS_VERSION && block.streams.iter().flat_map(|s| &s.marks).any(|m| m.is_link()) {
                    let reason = format!("a link mark in a version-{} trace, which has none", self.version);
                    return Err(corrupt(at, reason));
                }
                let dropped = block.checked_dropped().ok_or_else(|| corrupt(at, "drop counts overflow".to_owned()))?;
                self.dropped = self
                    .dropped
                    .checked_add(dropped)
                    .ok_or_else(|| corrupt(at, "the trace's drop counts overflow".to_owned()))?;
                self.ops = self
                    .ops
                    .checked_add(block.op_count)
                    .ok_or_else(|| corrupt(at, "the trace's operation counts overflow".to_owned()))?;
                self.blocks += 1;
                self.skippable = false;
                Ok(Some(block))
            }
            TAG_END => {
                self.skippable = false;
                if self.skipped.0 == 0 {
                    check_end(&self.scratch, at, self.blocks, self.dropped)?;
                } else {
                    // Skipped blocks' drops are unknown: only the count of
                    // blocks can be held to the end record.
                    check_end_blocks(&self.scratch, at, self.blocks + self.skipped.0)?;
                }
                let mut extra = [0u8; 1];
                if read_full(&mut self.input, &mut extra)? != 0 {
                    return Err(corrupt(self.pos, "bytes after the end record".to_owned()));
                }
                self.done = true;
                Ok(None)
            }
            TAG_HEADER => Err(corrupt(at, "a second header record".to_owned())),
            other => Err(corrupt(at, format!("unknown record tag {other:#04x}"))),
        }
    }
}

/// A record's checksum as stored and as computed from its bytes.
struct Crc {
    stored: u32,
    computed: u32,
}

impl Crc {
    /// The checksum error of the record of `tag` at `at`, if they differ.
    fn check(&self, at: u64, tag: u8) -> Result<(), TraceError> {
        if self.stored == self.computed {
            return Ok(());
        }
        Err(TraceError::Checksum { offset: at, what: record_name(tag), stored: self.stored, computed: self.computed })
    }
}

/// Read the record at byte `at` of `input` (of `size` bytes, if known) into
/// `scratch`, checking its length against the limits and the bytes left
/// before reading it; its tag, the next record's offset and its checksum
/// (for the caller to check: a damaged record read whole can be skipped).
fn read_record(
    input: &mut impl Read,
    at: u64,
    size: Option<u64>,
    scratch: &mut Vec<u8>,
) -> Result<(u8, u64, Crc), TraceError> {
    let mut frame = [0u8; 5];
    let got = read_full(input, &mut frame)?;
    if got < frame.len() {
        let available = size.map_or(got as u64, |s| s.saturating_sub(at));
        return Err(truncated(at, "record tag and length", 5, available));
    }
    let tag = frame[0];
    let len = u64::from(u32::from_le_bytes([frame[1], frame[2], frame[3], frame[4]]));
    let limit = match tag {
        TAG_HEADER => MAX_HEADER_BYTES as u64,
        TAG_END => END_PAYLOAD_BYTES as u64,
        _ => MAX_BLOCK_BYTES,
    };
    if len > limit {
        return Err(corrupt(at, format!("{} of {len} bytes exceeds {limit}", record_name(tag))));
    }
    let needed = len + FRAME_BYTES as u64;
    if let Some(size) = size {
        let available = size.saturating_sub(at);
        if needed > available {
            return Err(truncated(at, record_name(tag), needed, available));
        }
    }
    scratch.clear();
    let read = input.take(len).read_to_end(scratch).map_err(TraceError::Read)? as u64;
    let mut crc = [0u8; 4];
    let crc_got = if read == len { read_full(input, &mut crc)? as u64 } else { 0 };
    if read != len || crc_got < 4 {
        return Err(truncated(at, record_name(tag), needed, 5 + read + crc_got));
    }
    let crc = Crc { stored: u32::from_le_bytes(crc), computed: record_crc(tag, scratch) };
    Ok((tag, at + needed, crc))
}

/// Fill `buf` as far as the input allows; the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> Result<usize, TraceError> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(TraceError::Read(e)),
        }
    }
    Ok(got)
}

/// Check the magic, version and flags; the version.
fn check_preamble(bytes: &[u8]) -> Result<u16, TraceError> {
    if bytes.len() < MAGIC.len() {
        return Err(truncated(0, "magic", MAGIC.len() as u64, bytes.len() as u64));
    }
    if bytes[..8] != MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&bytes[..8]);
        return Err(TraceError::BadMagic { found, expected: MAGIC });
    }
    if bytes.len() < PREAMBLE_BYTES {
        return Err(truncated(8, "version and flags", (PREAMBLE_BYTES - 8) as u64, (bytes.len() - 8) as u64));
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(TraceError::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
    }
    let flags = u16::from_le_bytes([bytes[10], bytes[11]]);
    if flags != 0 {
        return Err(corrupt(10, format!("reserved flags are {flags:#06x}, must be 0")));
    }
    Ok(version)
}

fn check_end(payload: &[u8], pos: u64, blocks: u64, dropped: u64) -> Result<(), TraceError> {
    let declared_dropped = check_end_blocks(payload, pos, blocks)?;
    if declared_dropped != dropped {
        return Err(corrupt(
            pos,
            format!("end record counts {declared_dropped} dropped marks, the blocks sum to {dropped}"),
        ));
    }
    Ok(())
}

/// Hold the end record's count of blocks to `blocks`; the drops it
/// declares.
fn check_end_blocks(payload: &[u8], pos: u64, blocks: u64) -> Result<u64, TraceError> {
    if payload.len() != END_PAYLOAD_BYTES {
        return Err(corrupt(pos, format!("end record holds {} bytes, expected {END_PAYLOAD_BYTES}", payload.len())));
    }
    let mut word = [0u8; 8];
    word.copy_from_slice(&payload[..8]);
    let declared_blocks = u64::from_le_bytes(word);
    word.copy_from_slice(&payload[8..]);
    if declared_blocks != blocks {
        return Err(corrupt(pos, format!("end record counts {declared_blocks} blocks, the file holds {blocks}")));
    }
    Ok(u64::from_le_bytes(word))
}

fn record_name(tag: u8) -> &'static str {
    match tag {
        TAG_HEADER => "header record",
        TAG_BLOCK => "block record",
        TAG_END => "end record",
        _ => "record",
    }
}

fn truncated(offset: u64, what: &'static str, needed: u64, available: u64) -> TraceError {
    TraceError::Truncated { offset, what, needed, available }
}

fn corrupt(offset: u64, reason: String) -> TraceError {
    TraceError::Corrupt { offset, reason }
}
