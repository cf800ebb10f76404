//! A trace file streamed to a timeline file: one pass over the trace finds
//! each lane's hops, time zero and where a cut trace ends, a second writes
//! each block's slices as it is read, so memory stays one block however
//! long the trace. A trace cut short (a killed run) is exported from every
//! complete block, and the result says what was left out.

use std::io::Write;
use std::path::{Path, PathBuf};

use hopscope_probe::{TraceError, TraceReader};

use super::chrome::ChromeWriter;
use super::layout::{Cut, Timeline, origin_of};
use super::perfetto::PerfettoWriter;
use crate::join::HopScan;

/// The timeline formats a trace is exported to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineFormat {
    /// Chrome Trace Event JSON (Perfetto's UI, chrome://tracing).
    Chrome,
    /// Perfetto's native protobuf trace (TrackEvent packets).
    Perfetto,
}

/// Which operations of which lanes an export keeps, by the names a user
/// gives (checked against the trace's header before anything is written).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// At most this many operations of each lane; `None` keeps them all.
    pub ops_per_lane: Option<u64>,
    /// Only these lanes, by name; empty keeps every lane.
    pub lanes: Vec<String>,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Slices written (steps, gaps and anchors).
    pub slices: u64,
    /// Flow arrows written (one per cross-thread slice kept).
    pub flows: u64,
    /// Slices left off because they overlapped another operation's on
    /// their thread (their flow ends kept on zero-length slices).
    pub overlapping: u64,
    /// Complete blocks read.
    pub blocks: u64,
    /// Why the trace ended early, when it did: the export holds every
    /// complete block before that point.
    pub partial: Option<String>,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The trace could not be opened or read.
    #[error("cannot export {path}: {source}")]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// What the reader said.
        #[source]
        source: TraceError,
    },
    /// A lane the selection names is not in the trace.
    #[error("{path} has no lane {lane:?}; its lanes: {known}")]
    NoLane {
        /// The trace file.
        path: PathBuf,
        /// The name asked for.
        lane: String,
        /// The trace's lanes, comma-separated.
        known: String,
    },
    /// A selection that keeps nothing.
    #[error("--ops 0 leaves nothing to export")]
    Empty,
    /// Writing the timeline failed.
    #[error("cannot write the timeline: {0}")]
    Write(#[from] std::io::Error),
}

/// Export the trace at `path` as `format` into `out` (flushed), keeping
/// what `selection` names.
pub fn export<W: Write>(
    path: &Path,
    format: TimelineFormat,
    selection: &Selection,
    out: W,
) -> Result<Exported, ExportError> {
    if selection.ops_per_lane == Some(0) {
        return Err(ExportError::Empty);
    }
    let cannot = |source| ExportError::Trace { path: path.to_owned(), source };
    // Pass 1: each lane's hops, time zero, and where a cut trace ends.
    let mut reader = TraceReader::open(path).map_err(cannot)?;
    let header = reader.header().clone();
    let mut scan = HopScan::new(&header);
    let (mut origin, mut exported) = (u64::MAX, Exported::default());
    loop {
        match reader.next_block() {
            Ok(Some(block)) => {
                scan.add(&block);
                origin = origin.min(origin_of(&block));
                exported.blocks += 1;
            }
            Ok(None) => break,
            Err(err) => {
                exported.partial = Some(err.to_string());
                break;
            }
        }
    }
    let mut lanes = Vec::with_capacity(selection.lanes.len());
    for name in &selection.lanes {
        let index = header.lanes.iter().position(|l| l == name).and_then(|i| u16::try_from(i).ok());
        let Some(index) = index else {
            return Err(ExportError::NoLane {
                path: path.to_owned(),
                lane: name.clone(),
                known: header.lanes.join(", "),
            });
        };
        lanes.push(index);
    }
    let cut = Cut { ops_per_lane: selection.ops_per_lane, lanes: (!lanes.is_empty()).then_some(lanes) };
    let origin = if exported.blocks == 0 { 0 } else { origin };
    let mut timeline = Timeline::new(&header, &scan, origin, cut);

    // Pass 2: the slices, block by block.
    let mut writer = match format {
        TimelineFormat::Chrome => Writer::Chrome(ChromeWriter::start(out, &header)?),
        TimelineFormat::Perfetto => Writer::Perfetto(PerfettoWriter::start(out, &header)?),
    };
    let mut reader = TraceReader::open(path).map_err(cannot)?;
    for _ in 0..exported.blocks {
        let Some(block) = reader.next_block().map_err(cannot)? else { break };
        let Some(part) = timeline.block(&block) else { continue };
        exported.slices += part.slices.len() as u64;
        exported.overlapping += part.overlapping;
        exported.flows += part.slices.iter().filter(|s| s.flow.is_some_and(|f| f.incoming)).count() as u64;
        match &mut writer {
            Writer::Chrome(w) => w.block(&part)?,
            Writer::Perfetto(w) => w.block(&part)?,
        }
    }
    let partial = exported
        .partial
        .as_ref()
        .map(|reason| format!("{} blocks exported; the trace ended early: {reason}", exported.blocks));
    let mut out = match writer {
        // JSON ends with a newline, as a text file does.
        Writer::Chrome(w) => {
            let mut out = w.finish(partial.as_deref())?;
            writeln!(out)?;
            out
        }
        Writer::Perfetto(w) => w.finish()?.0,
    };
    out.flush()?;
    exported.partial = partial;
    Ok(exported)
}

/// The two writers behind one interface.
enum Writer<W: Write> {
    Chrome(ChromeWriter<W>),
    Perfetto(PerfettoWriter<W>),
}
