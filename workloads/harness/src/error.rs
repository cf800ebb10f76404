//! Errors of a run: a plan or lane declaration refused before anything
//! runs, a lane that failed (what was measured before it is kept), and
//! file errors.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::run_summary::RunSummary;
use crate::workload::{BlockId, BoxError};

/// Why a run did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The plan or a lane declaration cannot run; nothing ran.
    #[error("invalid run: {0}")]
    Plan(String),
    /// A lane could not open; nothing was measured.
    #[error("lane `{lane}` could not open: {failure}")]
    Open {
        /// The trace lane.
        lane: String,
        /// What went wrong.
        failure: Failure,
    },
    /// A lane failed during the run. The trace holds every block measured
    /// before the failure and is complete and readable.
    #[error("{0}")]
    Stopped(Box<Stopped>),
    /// Another run holds the run directory.
    #[error("run directory {} is in use by {holder}: give this run its own --out", dir.display())]
    Busy {
        /// The directory.
        dir: PathBuf,
        /// Who holds it (`pid N`).
        holder: String,
    },
    /// A signal asked the run to stop; it finished the block in progress
    /// and the trace, complete, holds every block measured before.
    #[error("interrupted by {signal} after {} measured blocks", kept.blocks)]
    Interrupted {
        /// The signal.
        signal: crate::interrupt::Signal,
        /// The trace as kept.
        kept: RunSummary,
    },
    /// A follower's conversation with the process driving it broke: an
    /// unknown command, another protocol version, a closed socket.
    #[error("follower: {0}")]
    Follow(String),
    /// Writing the trace failed.
    #[error("cannot write the trace: {0}")]
    Trace(#[from] hopscope_probe::TraceError),
    /// File-system error around the run directory.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A lane failed mid-run; the run stopped cleanly.
#[derive(Debug)]
pub struct Stopped {
    /// The trace lane that failed.
    pub lane: String,
    /// Where in the run.
    pub at: At,
    /// What went wrong.
    pub failure: Failure,
    /// The trace as kept: every block measured before the failure.
    pub kept: RunSummary,
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lane `{}`, {}: {}", self.lane, self.at, self.failure)
    }
}

/// Where a lane failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// Before its block, resetting or building inputs.
    BeforeBlock(BlockId),
    /// In the block's measured region.
    Block(BlockId),
    /// Handing in its threads' marks around the block.
    HandIn(BlockId),
    /// Counting its store after the block.
    Count(BlockId),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::BeforeBlock(id) => write!(f, "{id} (before it)"),
            At::Block(id) => write!(f, "{id}"),
            At::HandIn(id) => write!(f, "{id} (hand-in)"),
            At::Count(id) => write!(f, "{id} (count)"),
        }
    }
}

/// What a lane's code did wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// It returned an error.
    #[error("returned an error: {0}")]
    Error(BoxError),
    /// It panicked.
    #[error("panicked: {message}")]
    Panicked {
        /// The panic message and where it was raised.
        message: String,
    },
    /// It did not return within the plan's deadline (it is left running;
    /// the run does not wait for it).
    #[error("did not finish within the {}-second deadline (`--deadline`)", .limit.as_secs_f64())]
    Deadline {
        /// The deadline.
        limit: Duration,
    },
    /// Its operations reported something other than the lane declared
    /// ([`crate::Lane::per_op`]).
    #[error("its {ops} operations reported {reported} done, where they do {expected}")]
    Reported {
        /// Operations in the block.
        ops: u64,
        /// What they should have reported.
        expected: u64,
        /// What they reported.
        reported: u64,
    },
    /// Its count disagrees with what its operations reported.
    #[error("its operations reported {reported} done, but its count says {counted}")]
    Count {
        /// What the operations reported.
        reported: u64,
        /// What the count says.
        counted: u64,
    },
    /// Its threads' hand-in missed a declared role or named an undeclared one.
    #[error("hand-in {0}")]
    HandIn(String),
}
