//! What goes wrong in a lockstep run, one floor below the coordinator
//! (`mod.rs`) and the pieces it drives (a follower, a pass's copies), which
//! all return it.

use std::path::PathBuf;

/// Why a lockstep run could not start or went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockstepError {
    /// A follower could not start, refused the handshake, or failed.
    #[error("{build}: {what}")]
    Follower {
        /// The build, as lines name it.
        build: String,
        /// What happened, in one line.
        what: String,
    },
    /// The builds declare different things: nothing was measured.
    #[error("the builds cannot be compared: {0}")]
    Mismatch(String),
    /// The combined trace could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Trace {
        /// The trace.
        path: PathBuf,
        /// Why.
        source: hopscope_probe::TraceError,
    },
}
