//! A harness program as a follower (`--follow SOCKET`): its lanes run the
//! blocks another process asks for ([`crate::runner::follow`]), and nothing
//! is analyzed or written here: the coordinator judges the blocks.

use std::collections::BTreeMap;
use std::path::Path;

use hopscope_reports::Written;

use crate::error::RunError;
use crate::harness::{HarnessError, Outcome};
use crate::lane::Lane;
use crate::plan::Plan;
use crate::{rundir, runner};

/// Follow the coordinator on `socket` with `lanes` under `plan`, their
/// scratch space in `out` (or a new run directory of the program `name`).
/// A lane's failure is the run's error: its line goes to stderr, where
/// the coordinator reads it.
pub(crate) fn serve(
    name: &str,
    socket: &Path,
    plan: &Plan,
    lanes: &[Lane],
    out: Option<&Path>,
    meta: BTreeMap<String, String>,
) -> Result<Outcome, HarnessError> {
    let dir = rundir::create(out, &format!("{name}-follow"), "latest-follow")?;
    let summary = match runner::follow(socket, plan, lanes, &dir, meta) {
        Ok(summary) => summary,
        Err(RunError::Interrupted { kept, .. }) => kept,
        Err(err) => return Err(err.into()),
    };
    Ok(Outcome {
        dir,
        trace: summary.trace,
        decomposition: None,
        experiment: None,
        causal: None,
        written: Written::default(),
        stopped: None,
        signal: None,
        pin_failures: summary.pin_failures,
        run_id: None,
        change: None,
        gate: 0,
    })
}
