//! `hopscope export --format chrome|perfetto TRACE`: the trace as a
//! timeline that Perfetto's UI (both formats) and chrome://tracing (JSON)
//! load, on stdout or into `--output`. `--format parquet RUN…` writes the
//! runs' results as Parquet tables instead (`hopscope_reports::tables`).
//!
//! The timeline streams ([`hopscope_analyze::timeline::export`]); a trace
//! cut short (a killed run) is exported from every complete block, and one
//! line on stderr says what was left out (the JSON says `partial`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hopscope_analyze::timeline::{self, Selection, TimelineFormat};

use crate::usage::UsageError;

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

/// Flags that do not go together: exit 2 with clap's usage line.
fn usage(message: &str) -> anyhow::Error {
    UsageError::new("export", clap::error::ErrorKind::ArgumentConflict, message).into()
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

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let format = match args.format {
        Format::Chrome => TimelineFormat::Chrome,
        Format::Perfetto => TimelineFormat::Perfetto,
        Format::Parquet => {
            if args.ops.is_some() || !args.lanes.is_empty() {
                return Err(usage("--ops and --lane cut a timeline; parquet exports whole runs"));
            }
            let Some(out) = &args.output else {
                return Err(usage("--format parquet needs -o DIR (one file per table)"));
            };
            return parquet(&args.inputs, out, args.marks);
        }
    };
    if args.marks {
        return Err(usage("--marks goes with --format parquet"));
    }
    let [input] = args.inputs.as_slice() else {
        return Err(usage("a timeline is of one trace: give one TRACE"));
    };
    let path = &trace_of(input)?;
    let out: Box<dyn Write> = match &args.output {
        Some(file) => Box::new(File::create(file).with_context(|| format!("cannot create {}", file.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let selection = Selection { ops_per_lane: args.ops, lanes: args.lanes.clone() };
    let exported = timeline::export(path, format, &selection, BufWriter::new(out))?;
    if let Some(partial) = &exported.partial {
        eprintln!("hopscope: partial: {partial}");
    }
    if let Some(file) = &args.output {
        let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "hopscope: {} slices, {} flow arrows, {bytes} bytes → {}",
            exported.slices,
            exported.flows,
            file.display()
        );
    }
    if exported.overlapping > 0 {
        eprintln!(
            "hopscope: {} slices overlapped another operation's on their thread and were left off \
             (their flow ends kept on zero-length slices)",
            exported.overlapping
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
