//! Writing a trace, block by block, so a long run never holds it all.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use super::block::{self, Block};
use super::frame::{
    FORMAT_VERSION, MAGIC, MAX_HEADER_BYTES, PREAMBLE_BYTES, TAG_BLOCK, TAG_END, TAG_HEADER, header_crc, record_crc,
};
use super::{TraceError, TraceHeader};

/// Streams a trace to any [`Write`]: the header on creation, blocks as they
/// are measured, the end record on [`TraceWriter::finish`]. A trace that is
/// never finished is refused by the reader as truncated.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    header: TraceHeader,
    /// The header record's payload length: its JSON and any room after it.
    header_len: usize,
    blocks: u64,
    dropped: u64,
    /// How many threads, hops and readings the blocks written use.
    used: Used,
    scratch: Vec<u8>,
}

/// Counts of the header's lists that written blocks refer to: a rewritten
/// header may not drop what they use.
#[derive(Debug, Default, Clone, Copy)]
struct Used {
    threads: usize,
    hops: usize,
    readings: usize,
}

impl Used {
    fn add(&mut self, block: &Block) {
        for stream in &block.streams {
            self.threads = self.threads.max(usize::from(stream.thread) + 1);
            if let Some(hop) = stream.marks.iter().filter(|m| !m.is_link()).map(|m| usize::from(m.hop.0)).max() {
                self.hops = self.hops.max(hop + 1);
            }
        }
        if let Some(key) = block.readings.iter().map(|r| usize::from(r.key)).max() {
            self.readings = self.readings.max(key + 1);
        }
    }
}

impl TraceWriter<BufWriter<File>> {
    /// Create (or replace) the file at `path` and write the header.
    pub fn create(path: &Path, header: TraceHeader) -> Result<Self, TraceError> {
        TraceWriter::create_with_room(path, header, 0)
    }

    /// As [`TraceWriter::create`], with `room` spare bytes in the header
    /// record (JSON whitespace), so [`TraceWriter::rename_threads`] can
    /// rewrite the header in place once the run knows its threads' names.
    pub fn create_with_room(path: &Path, header: TraceHeader, room: usize) -> Result<Self, TraceError> {
        let file = File::create(path)?;
        TraceWriter::with_room(BufWriter::new(file), header, room)
    }
}

impl<W: Write + Seek> TraceWriter<W> {
    /// Rename thread roles of the header in place (`(thread index, new
    /// name)`), when the new header fits the record written at the start;
    /// whether it did. A trace cut short before this keeps the first names.
    pub fn rename_threads(&mut self, names: &[(u16, String)]) -> Result<bool, TraceError> {
        let mut header = self.header.clone();
        for (thread, name) in names {
            match header.threads.get_mut(usize::from(*thread)) {
                Some(slot) => name.clone_into(slot),
                None => return Ok(false),
            }
        }
        self.rewrite_header(header)
    }

    /// Replace the header in place with `header`, when it fits the record
    /// written at the start (see [`TraceWriter::create_with_room`]); whether
    /// it did. The blocks written so far must still read against it: the
    /// same lanes, and at least the threads, hops and readings they use,
    /// else it is refused. A live capture names its threads and states its
    /// totals so, once it knows them.
    pub fn rewrite_header(&mut self, header: TraceHeader) -> Result<bool, TraceError> {
        let used = &self.used;
        if header.lanes.len() != self.header.lanes.len()
            || header.threads.len() < used.threads
            || header.hops.len() < used.hops
            || header.readings.len() < used.readings
        {
            return Err(TraceError::Unwritable {
                reason: format!(
                    "a header of {} lanes, {} threads, {} hops and {} readings for blocks that use {} lanes, {} threads, {} hops and {} readings",
                    header.lanes.len(),
                    header.threads.len(),
                    header.hops.len(),
                    header.readings.len(),
                    self.header.lanes.len(),
                    used.threads,
                    used.hops,
                    used.readings
                ),
            });
        }
        let mut json = serde_json::to_vec(&header).map_err(|e| TraceError::Io(e.into()))?;
        if json.len() > self.header_len {
            return Ok(false);
        }
        json.resize(self.header_len, b' ');
        let end = self.out.stream_position()?;
        self.out.seek(SeekFrom::Start(PREAMBLE_BYTES as u64))?;
        write_record(&mut self.out, TAG_HEADER, &json, header_crc(FORMAT_VERSION, &json))?;
        self.out.seek(SeekFrom::Start(end))?;
        self.out.flush()?;
        self.header = header;
        Ok(true)
    }
}

impl<W: Write> TraceWriter<W> {
    /// Write the preamble and `header` to `out`.
    pub fn new(out: W, header: TraceHeader) -> Result<Self, TraceError> {
        TraceWriter::with_room(out, header, 0)
    }

    /// Write the preamble and `header` to `out`, with `room` spare bytes in
    /// the header record.
    fn with_room(mut out: W, header: TraceHeader, room: usize) -> Result<Self, TraceError> {
        if !header.lane_info.is_empty() && header.lane_info.len() != header.lanes.len() {
            return Err(TraceError::Unwritable {
                reason: format!("{} lanes but roles for {}", header.lanes.len(), header.lane_info.len()),
            });
        }
        if header.hops.len() > crate::MAX_HOPS {
            return Err(TraceError::Unwritable {
                reason: format!("{} hops declared, past {}", header.hops.len(), crate::MAX_HOPS),
            });
        }
        let mut json = serde_json::to_vec(&header).map_err(|e| TraceError::Io(e.into()))?;
        json.resize(json.len().saturating_add(room), b' ');
        if json.len() > MAX_HEADER_BYTES {
            return Err(TraceError::Unwritable {
                reason: format!("header is {} bytes, the limit is {MAX_HEADER_BYTES}", json.len()),
            });
        }
        out.write_all(&MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        out.write_all(&0u16.to_le_bytes())?;
        write_record(&mut out, TAG_HEADER, &json, header_crc(FORMAT_VERSION, &json))?;
        out.flush()?;
        let header_len = json.len();
        Ok(TraceWriter { out, header, header_len, blocks: 0, dropped: 0, used: Used::default(), scratch: Vec::new() })
    }

    /// The header this trace was opened with.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Append one block. A block that refers to an undeclared lane, thread,
    /// hop or reading is refused and nothing is written.
    pub fn write_block(&mut self, block: &Block) -> Result<(), TraceError> {
        block.check(&self.header).map_err(|reason| TraceError::Unwritable { reason })?;
        let len = block::encoded_len(block);
        if u32::try_from(len).is_err() || block.streams.len() > usize::from(u16::MAX) {
            return Err(TraceError::Unwritable { reason: format!("block of {len} bytes is too large") });
        }
        if block.streams.iter().any(|s| u32::try_from(s.marks.len()).is_err())
            || block.readings.len() > usize::from(u16::MAX)
        {
            return Err(TraceError::Unwritable { reason: "too many marks or readings in one block".to_owned() });
        }
        let total = block.checked_dropped().and_then(|d| self.dropped.checked_add(d));
        let Some(total) = total else {
            return Err(TraceError::Unwritable { reason: "the drop counts overflow".to_owned() });
        };
        self.scratch.clear();
        block::encode(block, &mut self.scratch);
        debug_assert_eq!(self.scratch.len(), len);
        write_record(&mut self.out, TAG_BLOCK, &self.scratch, record_crc(TAG_BLOCK, &self.scratch))?;
        // Durable as written: a run killed later leaves every block before
        // it in the file, for `Trace::salvage`.
        self.out.flush()?;
        self.blocks += 1;
        self.dropped = total;
        self.used.add(block);
        Ok(())
    }

    /// Write the end record, flush, and hand back the output.
    pub fn finish(mut self) -> Result<W, TraceError> {
        let mut payload = [0u8; 16];
        payload[..8].copy_from_slice(&self.blocks.to_le_bytes());
        payload[8..].copy_from_slice(&self.dropped.to_le_bytes());
        write_record(&mut self.out, TAG_END, &payload, record_crc(TAG_END, &payload))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Frame `payload` as a record of `tag` with checksum `crc`.
fn write_record(out: &mut impl Write, tag: u8, payload: &[u8], crc: u32) -> std::io::Result<()> {
    out.write_all(&[tag])?;
    out.write_all(&(payload.len() as u32).to_le_bytes())?;
    out.write_all(payload)?;
    out.write_all(&crc.to_le_bytes())
}
