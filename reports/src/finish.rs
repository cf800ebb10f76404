//! The one writer a run ends with: whatever it produced (a decomposition,
//! an A/B verdict, a causal profile), the change against a baseline, and
//! the trace they came from, written into the run directory and listed in
//! the order a reader wants them.

use std::path::Path;

use hopscope_analyze::Decomposition;
use hopscope_analyze::causal::CausalProfile;
use hopscope_analyze::change::Change;
use hopscope_analyze::experiment::Experiment;

use crate::text_file::write;
use crate::{ChartOptions, ReportError, Written};

/// What a run produced, as [`finish`] writes it.
#[derive(Debug, Clone, Copy)]
pub enum RunResult<'a> {
    /// A decomposition, and how its charts are drawn: `result.json`,
    /// `receipt.md`, charts, `report.html`.
    Decomposition(&'a Decomposition, ChartOptions),
    /// An A/B verdict: `ab.json`, `receipt.md`, its chart and page.
    Experiment(&'a Experiment),
    /// A what-if run's causal profile: `causal.json`, `receipt.md`, its
    /// chart and page.
    Causal(&'a CausalProfile),
}

/// A finished run, everything [`finish`] writes about it.
#[derive(Debug, Clone, Copy)]
pub struct Finished<'a> {
    /// What the run produced.
    pub result: RunResult<'a>,
    /// The trace it was analysed from, listed with the files (after the
    /// JSON result, where `decompose` has always listed it).
    pub trace: Option<&'a Path>,
    /// The change against a baseline (`--baseline`): `change.md` and
    /// `change.json`.
    pub change: Option<&'a Change>,
}

/// Write every file of the finished `run` into `dir` and list them.
pub fn finish(dir: &Path, run: &Finished<'_>) -> Result<Written, ReportError> {
    let mut written = match run.result {
        RunResult::Decomposition(d, options) => crate::write_decomposition(dir, d, options)?,
        RunResult::Experiment(e) => crate::write_experiment(dir, e)?,
        RunResult::Causal(p) => crate::write_causal(dir, p)?,
    };
    if let Some(trace) = run.trace {
        // After the receipt and the JSON result, before the drawn files.
        let at = 2.min(written.files.len());
        written.files.insert(at, ("trace".to_owned(), trace.to_owned()));
    }
    if let Some(change) = run.change {
        let md = dir.join("change.md");
        write(&md, &crate::change_markdown(change))?;
        written.push("change", md);
        let json = dir.join("change.json");
        let text =
            serde_json::to_string_pretty(change).map_err(|source| ReportError::Json { what: "change.json", source })?;
        write(&json, &text)?;
        written.push("change", json);
    }
    Ok(written)
}
