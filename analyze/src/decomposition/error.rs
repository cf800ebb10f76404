//! Why a trace cannot be decomposed: kept apart so the readers of traces
//! (the block sources) and the decomposition both name it.

/// Why a trace cannot be decomposed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyzeError {
    /// The trace holds no measured block at all.
    #[error("the trace holds no measured blocks")]
    NoBlocks,
    /// A damaged or cut trace file has no complete block before the damage.
    #[error("no complete block before the trace's damage or cut: {detail}")]
    NothingSalvaged {
        /// What the reader found where reading stopped.
        detail: String,
    },
    /// The trace file cannot be opened, or its preamble or header is
    /// unusable.
    #[error(transparent)]
    Trace(#[from] hopscope_probe::TraceError),
    /// The windows asked of a capture hold no block.
    #[error("no block in window{} {from}{} of the capture: it has {windows} (numbered from 1)", if from == to { "" } else { "s" }, if from == to { String::new() } else { format!("–{to}") })]
    NoWindow {
        /// The first window asked, from 1.
        from: u32,
        /// The last window asked.
        to: u32,
        /// Windows the capture has.
        windows: u32,
    },
    /// A trace file read once per pass changed between passes.
    #[error("the trace {path} changed while it was analyzed: {why}")]
    Changed {
        /// The file.
        path: std::path::PathBuf,
        /// What differed.
        why: String,
    },
}
