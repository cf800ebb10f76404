//! `hopscope export --format chrome|perfetto TRACE`: the trace as a
//! timeline that Perfetto's UI (both formats) and chrome://tracing (JSON)
//! load, on stdout or into `--output`. `--format parquet RUN…` writes the
//! runs' results as Parquet tables instead (`hopscope_reports::tables`).
//!
//! A timeline streams: one pass over the file finds each lane's hops and time zero, a
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
    /// Parquet tables of one or more runs' results, into the `-o`
    /// directory (runs, lanes, figures, blocks, slices; marks with
    /// `--marks`). Opt-in: a build without the `parquet` feature says so.
    Parquet,
}

/// Flags of `hopscope export`.
#[derive(Debug, clap::Args)]
#[command(after_help = "A timeline (chrome, perfetto) is of one trace: a `.hop` file, a run directory, or a run \
key. Parquet takes one or more RUNs (a run directory, a baseline's name, `latest`, `#ID`, a date or a commit, as \
`compare` reads them) and writes one file per table into the -o directory; the columns are documented in \
docs/parquet.md.")]
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
    /// Write here instead of stdout (parquet: the directory, required).
    #[arg(long, short = 'o', value_name = "PATH")]
    output: Option<PathBuf>,
    /// Parquet: add `marks.parquet`, every mark of each run's trace.
    #[arg(long)]
    marks: bool,
    /// The trace (timeline), or the runs (parquet).
    #[arg(required = true, value_name = "TRACE|RUN")]
    inputs: Vec<String>,
}

/// Exit 2 with clap's usage line: flags that do not go together.
fn usage(message: &str) -> ! {
    crate::usage("export", clap::error::ErrorKind::ArgumentConflict, message)
}

/// The trace a timeline input names: a `.hop` file, a run directory, or a
/// run key the index resolves.
fn trace_of(input: &str) -> anyhow::Result<PathBuf> {
    let path = PathBuf::from(input);
    if path.is_file() {
        return Ok(path);
    }
    let dir = if path.is_dir() { path } else { hopscope_harness::index::RunIndex::located().find(input)?.dir };
    let trace = dir.join("trace.hop");
    if !trace.is_file() {
        bail!("{} holds no trace.hop", dir.display());
    }
    Ok(trace)
}

/// The two writers behind one interface.
enum Writer<W: Write> {
    Chrome(ChromeWriter<W>),
    Perfetto(PerfettoWriter<W>),
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let protobuf = match args.format {
        Format::Chrome => false,
        Format::Perfetto => true,
        Format::Parquet => {
            if args.ops.is_some() || !args.lanes.is_empty() {
                usage("--ops and --lane cut a timeline; parquet exports whole runs");
            }
            let Some(out) = &args.output else { usage("--format parquet needs -o DIR (one file per table)") };
            return parquet(&args.inputs, out, args.marks);
        }
    };
    if args.marks {
        usage("--marks goes with --format parquet");
    }
    let [input] = args.inputs.as_slice() else { usage("a timeline is of one trace: give one TRACE") };
    let path = &trace_of(input)?;
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
    let mut writer = if protobuf {
        Writer::Perfetto(PerfettoWriter::start(out, &header).context(write())?)
    } else {
        Writer::Chrome(ChromeWriter::start(out, &header).context(write())?)
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
    if !protobuf {
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

/// `--format parquet`: the runs' tables into `out`.
fn parquet(keys: &[String], out: &std::path::Path, marks: bool) -> anyhow::Result<ExitCode> {
    use hopscope_analyze::Decomposition;
    use hopscope_reports::tables::{self, RunSource, TableError};

    // Said before any run is read, in a build without the writer.
    if !tables::BUILT {
        return Err(TableError::NotBuilt.into());
    }
    let index = hopscope_harness::index::RunIndex::located();
    let mut runs = Vec::with_capacity(keys.len());
    for key in keys {
        let dir = index.find(key)?.dir;
        let file = dir.join("result.json");
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let d = Decomposition::from_json(&text).with_context(|| format!("cannot read {}", file.display()))?;
        runs.push((d, dir));
    }
    let sources: Vec<RunSource<'_>> = runs.iter().map(|(d, dir)| RunSource { decomposition: d, dir }).collect();
    let written = tables::write_tables(&sources, out, marks)?;
    for cut in &written.partial {
        eprintln!("hopscope: partial: {cut}");
    }
    for table in &written.tables {
        eprintln!("hopscope: {:>8} rows → {}", table.rows, table.path.display());
    }
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}
