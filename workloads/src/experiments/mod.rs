//! Experiments on the reference writer, each a series of harness runs:
//! the keep-warm sweep ([`keep_warm`]) and the instrument's resolution
//! ([`resolve`]); and the specs of `hopscope ab`'s pre-registered A/B
//! experiments ([`ab_spec`]).

pub mod ab_spec;
pub mod keep_warm;
pub mod resolve;

use std::collections::BTreeMap;
use std::path::Path;

use hopscope_harness::{HarnessError, Lane, Plan, RunSummary, runner};
use hopscope_probe::Trace;

/// Run `lanes` under `plan` into `dir` and read the trace back; a lane
/// that stops the run is an error here (an experiment needs every block).
fn measure(
    plan: &Plan,
    lanes: &[Lane],
    dir: &Path,
    meta: BTreeMap<String, String>,
    progress: bool,
) -> Result<(RunSummary, Trace), HarnessError> {
    let summary = runner::run(plan, lanes, dir, meta, progress)?;
    let trace =
        Trace::read(&summary.trace).map_err(|source| HarnessError::Trace { path: summary.trace.clone(), source })?;
    Ok((summary, trace))
}
