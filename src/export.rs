//! `hopscope export --format chrome|perfetto TRACE`: the trace as a
//! timeline that Perfetto's UI (both formats) and chrome://tracing (JSON)
//! load, on stdout or into `--output`.
//!
//! Streams: one pass over the file finds each lane's hops and time zero, a
//! second writes each block's slices as it is read, so memory stays one
//! block however long the trace. A trace cut short (a killed run) is
//! exported from every complete block; one line on stderr says what was
//! left out (and the JSON says `partial`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hopscope_analyze::join::HopScan;
use hopscope_analyze::timeline::chrome::ChromeWriter;
use hopscope_analyze::timeline::perfetto::PerfettoWriter;
use hopscope_analyze::timeline::{Cut, Timeline, origin_of};
use hopscope_probe::TraceReader;

/// Timeline formats `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Chrome Trace Event JSON (Perfetto, chrome://tracing).
    Chrome,
    /// Perfetto's native protobuf trace (TrackEvent packets).
    Perfetto,
}

/// Flags of `hopscope export`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "chrome")]
    format: Format,
    /// At most this many operations of each lane (the first ones): a
    /// careful run holds more than a viewer loads or a person reads.
    #[arg(long, value_name = "N")]
    ops: Option<u64>,
    /// Only this lane (repeat for more); default every lane.
    #[arg(long = "lane", value_name = "NAME")]
    lanes: Vec<String>,
    /// Write here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// The `.hop` trace.
    trace: PathBuf,
}

/// The two writers behind one interface.
enum Writer<W: Write> {
    Chrome(ChromeWriter<W>),
    Perfetto(PerfettoWriter<W>),
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let path = &args.trace;
    let cannot = || format!("cannot export {}", path.display());
    // Pass 1: each lane's hops, time zero, and where a cut trace ends.
    let mut reader = TraceReader::open(path).with_context(cannot)?;
    let header = reader.header().clone();
    let mut scan = HopScan::new(&header);
    let (mut origin, mut blocks, mut cut) = (u64::MAX, 0u64, None);
    loop {
        match reader.next_block() {
            Ok(Some(block)) => {
                scan.add(&block);
                origin = origin.min(origin_of(&block));
                blocks += 1;
            }
            Ok(None) => break,
            Err(err) => {
                cut = Some(err.to_string());
                break;
            }
        }
    }
    let mut lanes = Vec::new();
    for name in &args.lanes {
        let Some(lane) = header.lanes.iter().position(|l| l == name) else {
            bail!("{} has no lane {name:?}; its lanes: {}", path.display(), header.lanes.join(", "));
        };
        lanes.push(u16::try_from(lane).context("lane index")?);
    }
    if args.ops == Some(0) {
        bail!("--ops 0 leaves nothing to export");
    }
    let selection = Cut { ops_per_lane: args.ops, lanes: (!lanes.is_empty()).then_some(lanes) };
    let mut timeline = Timeline::new(&header, &scan, if blocks == 0 { 0 } else { origin }, selection);

    // Pass 2: the slices, block by block.
    let out: Box<dyn Write> = match &args.output {
        Some(file) => Box::new(File::create(file).with_context(|| format!("cannot create {}", file.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let out = BufWriter::new(out);
    let write = || "cannot write the timeline";
    let mut writer = match args.format {
        Format::Chrome => Writer::Chrome(ChromeWriter::start(out, &header).context(write())?),
        Format::Perfetto => Writer::Perfetto(PerfettoWriter::start(out, &header).context(write())?),
    };
    let mut reader = TraceReader::open(path).with_context(cannot)?;
    let (mut slices, mut flows, mut overlapping) = (0u64, 0u64, 0u64);
    for _ in 0..blocks {
        let Some(block) = reader.next_block().with_context(cannot)? else { break };
        let Some(part) = timeline.block(&block) else { continue };
        slices += part.slices.len() as u64;
        overlapping += part.overlapping;
        flows += part.slices.iter().filter(|s| s.flow.is_some_and(|f| f.incoming)).count() as u64;
        match &mut writer {
            Writer::Chrome(w) => w.block(&part),
            Writer::Perfetto(w) => w.block(&part),
        }
        .context(write())?;
    }
    let partial = cut.as_ref().map(|reason| format!("{blocks} blocks exported; the trace ended early: {reason}"));
    let mut out = match writer {
        Writer::Chrome(w) => w.finish(partial.as_deref()).context(write())?,
        Writer::Perfetto(w) => w.finish().context(write())?.0,
    };
    if args.format == Format::Chrome {
        writeln!(out).context(write())?;
    }
    out.flush().context(write())?;
    drop(out);
    if let Some(partial) = partial {
        eprintln!("hopscope: partial: {partial}");
    }
    if let Some(file) = &args.output {
        let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        eprintln!("hopscope: {slices} slices, {flows} flow arrows, {bytes} bytes → {}", file.display());
    }
    if overlapping > 0 {
        eprintln!(
            "hopscope: {overlapping} slices overlapped another operation's on their thread and were left off \
             (their flow ends kept on zero-length slices)"
        );
    }
    Ok(ExitCode::SUCCESS)
}
