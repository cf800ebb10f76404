//! What a harness run gives back: its [`Outcome`] (the files, the figures,
//! the exit status a CI gate reads), or the [`HarnessError`] that stopped
//! it before any result.

use std::path::PathBuf;
use std::process::ExitCode;

use hopscope_analyze::experiment::Experiment;
use hopscope_analyze::{AnalyzeError, Decomposition};
use hopscope_probe::TraceError;
use hopscope_reports::{ReportError, Written};

use crate::error::RunError;
use crate::interrupt::Signal;
use crate::spec::SpecError;

/// Why a harness run produced no result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// A flag's value is not usable (`--ops 0`, `--lanes` naming no
    /// declared lane): a usage error, exit status 2 as for clap's own.
    #[error("{0}")]
    Flag(String),
    /// The declaration or the machine cannot give what the run needs.
    #[error("{0}")]
    Usage(String),
    /// The A/B spec is not usable.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The run could not start or complete.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The trace written could not be read back.
    #[error("cannot read back {}: {source}", path.display())]
    Trace {
        /// The trace.
        path: PathBuf,
        /// Why.
        source: TraceError,
    },
    /// The trace holds nothing to analyze.
    #[error("cannot analyze {}: {source}", path.display())]
    Analyze {
        /// The trace.
        path: PathBuf,
        /// Why.
        source: AnalyzeError,
    },
    /// The result files could not be written.
    #[error("cannot write the results in {}: {source}", dir.display())]
    Report {
        /// The run directory.
        dir: PathBuf,
        /// Why.
        source: ReportError,
    },
    /// A file beside the results could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run index could not record the run or find a baseline.
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    /// The baseline's run could not be read to compare with.
    #[error(transparent)]
    Compare(#[from] crate::gate::CompareError),
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The run directory.
    pub dir: PathBuf,
    /// The trace.
    pub trace: PathBuf,
    /// The decomposition (a decomposition run that measured any block).
    pub decomposition: Option<Decomposition>,
    /// The A/B verdict (an `--ab` run that measured any block).
    pub experiment: Option<Experiment>,
    /// The causal profile (a `--what-if` run).
    pub causal: Option<hopscope_analyze::causal::CausalProfile>,
    /// Every file written.
    pub written: Written,
    /// What stopped the run early (a lane's failure, a signal), in one line.
    pub stopped: Option<String>,
    /// The signal that stopped the run, if one did.
    pub signal: Option<Signal>,
    /// Pins the kernel refused during the run (see
    /// [`crate::placement::pin_failures`]).
    pub pin_failures: u64,
    /// The run's id in the run index (a decomposition that finished).
    pub run_id: Option<i64>,
    /// The change from `--baseline`.
    pub change: Option<hopscope_analyze::change::Change>,
    /// The exit status `--fail-on` asks for, from the change or the A/B
    /// verdict (0: nothing the gate fails on; see [`crate::gate`]).
    pub gate: u8,
}

impl Outcome {
    /// Success, unless the run stopped early (128 + the signal after a
    /// signal, 130 for SIGINT; failure after a lane's failure) or the gate
    /// fails it (3 a regression, 4 an improvement, 5 drift: [`crate::gate`]).
    pub fn exit_code(&self) -> ExitCode {
        match (&self.signal, &self.stopped) {
            (Some(signal), _) => ExitCode::from(signal.exit_status()),
            (None, Some(_)) => ExitCode::FAILURE,
            (None, None) => ExitCode::from(self.gate),
        }
    }
}
