//! What a run leaves: its summary, the value a finished run returns and a
//! stopped one keeps inside its error. One floor below the runner that
//! makes it and the errors that carry it.

use std::path::PathBuf;

/// Where a run went and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The trace file.
    pub trace: PathBuf,
    /// Measured blocks written.
    pub blocks: u64,
    /// Operations measured per trace lane, in declaration order.
    pub ops: Vec<(String, u64)>,
    /// Marks dropped across the trace.
    pub dropped: u64,
    /// Pins the kernel refused during the run: threads that may not have
    /// run where the placement said (a report warns about it).
    pub pin_failures: u64,
}
