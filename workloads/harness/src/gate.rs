//! Baselines and CI gating: what changed from one run to another, under
//! the fixed rule of `hopscope_analyze::change`, and the exit status a CI
//! job gates on — for `hopscope decompose --baseline`, `hopscope compare`,
//! `--ab` verdicts and every harness program's `--baseline` alike.
//!
//! Exit statuses: 0 nothing the gate fails on; 3 a regression; 4 an
//! improvement (`--fail-on any`); 5 no verdict, rerun: the machine
//! drifted between the runs, or another process held a run's CPUs (a
//! contended run, [`hopscope_analyze::contention`]: compared, A/B-judged
//! or saved as a baseline, with or without `--fail-on`); 1 an error and 2
//! a usage error, as everywhere.

use std::path::Path;

use hopscope_analyze::Decomposition;
use hopscope_analyze::ab;
use hopscope_analyze::change::{self, Change, RunSamples, Verdict};
use hopscope_analyze::experiment::Experiment;

/// The exit status of a run no verdict may be drawn from (module docs).
pub const NO_VERDICT: u8 = 5;

/// Which verdicts fail the command (exit status 3, 4 or 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A regression exits 3; a drift that refuses the verdict exits 5.
    Regression,
    /// A regression exits 3, an improvement 4, a refused verdict 5.
    Any,
}

/// The exit status of a gated verdict (see the [module docs](self)).
pub fn exit_status(verdict: Verdict, fail_on: Option<FailOn>) -> u8 {
    match (fail_on, verdict) {
        (None, _) | (Some(_), Verdict::NoChange) | (Some(FailOn::Regression), Verdict::Improvement) => 0,
        (Some(_), Verdict::Regression) => 3,
        (Some(FailOn::Any), Verdict::Improvement) => 4,
        (Some(_), Verdict::DriftSuspected) => 5,
    }
}

/// The exit status of a comparison: [`exit_status`] of its verdict, and
/// [`NO_VERDICT`] whatever `fail_on` when a run was contended.
pub fn change_status(change: &Change, fail_on: Option<FailOn>) -> u8 {
    if change.contended.is_empty() { exit_status(change.verdict, fail_on) } else { NO_VERDICT }
}

/// An A/B verdict as a gate reads it: `b` against `a` (reproduced and
/// slower is a regression, reproduced and faster an improvement,
/// inconclusive no change).
pub fn ab_verdict(experiment: &Experiment) -> Verdict {
    let outcome = &experiment.outcome;
    let slower = outcome.slower();
    match outcome.verdict {
        ab::Verdict::Reproduced if slower => Verdict::Regression,
        ab::Verdict::Reproduced => Verdict::Improvement,
        ab::Verdict::Inconclusive => Verdict::NoChange,
        ab::Verdict::DriftSuspected => Verdict::DriftSuspected,
    }
}

/// The exit status of an A/B run: [`exit_status`] of [`ab_verdict`], and
/// [`NO_VERDICT`] whatever `fail_on` when the run was contended.
pub fn ab_status(experiment: &Experiment, fail_on: Option<FailOn>) -> u8 {
    if experiment.contention.as_ref().is_some_and(|c| c.contended) {
        NO_VERDICT
    } else {
        exit_status(ab_verdict(experiment), fail_on)
    }
}

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {reason}", path.display())]
pub struct CompareError {
    /// The file that could not be read.
    pub path: std::path::PathBuf,
    /// Why.
    pub reason: String,
}

/// A run directory's decomposition and samples (its slices from its trace
/// when it kept one), or a trace's, analysed on the way (a capture of a
/// running program is a `.hop` file of its own).
fn samples(dir: &Path) -> Result<RunSamples, CompareError> {
    let fail = |path: &Path, reason: String| CompareError { path: path.to_owned(), reason };
    if dir.is_file() {
        let mut file = hopscope_analyze::source::TraceFile::open(dir).map_err(|e| fail(dir, e.to_string()))?;
        let (_, samples) =
            hopscope_analyze::decompose_source_with_samples(&mut file, None).map_err(|e| fail(dir, e.to_string()))?;
        return Ok(samples);
    }
    let file = dir.join("result.json");
    let text = std::fs::read_to_string(&file).map_err(|e| fail(&file, e.to_string()))?;
    let d = Decomposition::from_json(&text).map_err(|e| fail(&file, e.to_string()))?;
    let trace = dir.join("trace.hop");
    if !trace.is_file() {
        return Ok(RunSamples::new(&d, None));
    }
    let (header, joined) = hopscope_analyze::join_file(&trace).map_err(|e| fail(&trace, e.to_string()))?;
    Ok(RunSamples::new(&d, Some((&header, &joined))))
}

/// The change from the run in `a` to the run in `b`, each given with the
/// label the change names it by.
pub fn between(a: (&Path, &str), b: (&Path, &str)) -> Result<Change, CompareError> {
    Ok(change::compare(&samples(a.0)?, &samples(b.0)?, a.1, b.1))
}

/// The change from the run in directory `a` to the run whose samples `b`
/// this process holds, each with its label.
pub fn against(a: (&Path, &str), b: (&RunSamples, &str)) -> Result<Change, CompareError> {
    Ok(change::compare(&samples(a.0)?, b.0, a.1, b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_exits_as_documented() {
        use FailOn::{Any, Regression};
        let all = [Verdict::NoChange, Verdict::Regression, Verdict::Improvement, Verdict::DriftSuspected];
        assert_eq!(all.map(|v| exit_status(v, None)), [0, 0, 0, 0]);
        assert_eq!(all.map(|v| exit_status(v, Some(Regression))), [0, 3, 0, 5]);
        assert_eq!(all.map(|v| exit_status(v, Some(Any))), [0, 3, 4, 5]);
    }
}
