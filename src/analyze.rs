//! `hopscope analyze`: decompose an existing trace without re-running it;
//! with `--save-baseline` or `--baseline`, record it in the run index as a
//! run (a capture of a running program saved as a baseline, or judged
//! against one).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hopscope_harness::gate::{FailOn, SAMPLES_FILE};
use hopscope_harness::record::{Gating, Recorder};
use hopscope_harness::rundir;
use hopscope_reports::{ChartOptions, Finished, RunResult};

/// Flags of `hopscope analyze`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The `.hop` trace to analyze.
    trace: PathBuf,
    /// Where to write result.json, receipt.md and the report (default:
    /// beside the trace; with --save-baseline or --baseline, a new run
    /// directory, so no later analysis overwrites a baseline).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Record this analysis in the run index and save it as baseline NAME,
    /// for a later `analyze --baseline NAME` or `hopscope compare NAME …`.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Judge this trace against baseline NAME (or any run `hopscope
    /// compare` accepts): `change.md` and `change.json` beside the
    /// results, the verdict on stdout.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// With --baseline: exit 3 on a regression and 5 when no verdict may be
    /// drawn, or with `any` also 4 on an improvement.
    #[arg(long, value_enum, requires = "baseline")]
    fail_on: Option<FailOn>,
}

impl Args {
    fn gating(&self) -> Gating<'_> {
        Gating {
            save_baseline: self.save_baseline.as_deref(),
            baseline: self.baseline.as_deref(),
            fail_on: self.fail_on,
        }
    }

    /// Whether the analysis is a run of the index.
    fn recorded(&self) -> bool {
        self.save_baseline.is_some() || self.baseline.is_some()
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let path = &args.trace;
    if let Some(name) = &args.save_baseline {
        hopscope_harness::index::check_name(name).context("--save-baseline")?;
    }
    // The baseline is found before anything is analysed: a typo costs
    // nothing.
    let recorder = args.recorded().then(|| Recorder::prepare(args.gating())).transpose()?;
    // Streamed: one block in memory at a time. A trace cut short (a killed
    // run) is analyzed from every complete block it holds, and the result
    // says so.
    let mut file = hopscope_analyze::source::TraceFile::open(path)
        .with_context(|| format!("cannot analyze {}", path.display()))?;
    let (d, samples) = hopscope_analyze::decompose_source_with_samples(&mut file, None)
        .with_context(|| format!("cannot analyze {}", path.display()))?;
    let dir = out_dir(args, path)?;
    let change = match &recorder {
        Some(recorder) => recorder.change(&dir, &samples)?,
        None => None,
    };
    let finished = Finished {
        result: RunResult::Decomposition(&d, ChartOptions::default()),
        trace: None,
        change: change.as_ref(),
    };
    let written = hopscope_reports::finish(&dir, &finished)
        .with_context(|| format!("cannot write the results in {}", dir.display()))?;
    // The trace stays where it is: its samples go with the results, so a
    // comparison with this directory (a baseline) judges its slices too.
    let samples_file = dir.join(SAMPLES_FILE);
    std::fs::write(&samples_file, samples.to_json().context("cannot write the samples")?)
        .with_context(|| format!("cannot write {}", samples_file.display()))?;
    print!("{}", hopscope_reports::terminal::decomposition(&d));
    print!("\n{written}");
    let Some(recorder) = recorder else { return Ok(ExitCode::SUCCESS) };
    let recorded = recorder.record(args.gating(), &dir, &d, change)?;
    for line in &recorded.lines {
        println!("{line}");
    }
    Ok(ExitCode::from(recorded.gate))
}

/// The directory the results go to: `--out`, a new run directory for an
/// analysis the index records, else beside the trace.
fn out_dir(args: &Args, trace: &Path) -> anyhow::Result<PathBuf> {
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        return Ok(out.clone());
    }
    if args.recorded() {
        return Ok(rundir::create(None, "analyze", rundir::LATEST)?);
    }
    Ok(trace.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_owned))
}
