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

use std::path::{Path, PathBuf};

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

/// The file a run directory whose trace is elsewhere keeps its samples in
/// (`hopscope analyze` writes it).
pub const SAMPLES_FILE: &str = "samples.json";

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {reason}", path.display())]
pub struct CompareError {
    /// The file that could not be read.
    pub path: std::path::PathBuf,
    /// Why.
    pub reason: String,
}

/// Where one side of a comparison is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunSource {
    /// A run directory (its `result.json`, and its `trace.hop` when it kept
    /// one).
    Dir(PathBuf),
    /// A trace, analysed on the way (a capture of a running program is a
    /// `.hop` file of its own): whole, or windows `from` to `to` of it
    /// (numbered from 1, as its receipt numbers them).
    Trace {
        /// The trace.
        path: PathBuf,
        /// The windows compared, when not all.
        windows: Option<(u32, u32)>,
    },
}

impl RunSource {
    /// `key` as a trace: `PATH.hop`, or `PATH.hop@N` / `PATH.hop@N-M` for
    /// windows N to M of it; `None` when it names no `.hop` file (a run
    /// key), an error for a window selector that cannot be.
    pub fn trace(key: &str) -> Option<Result<RunSource, String>> {
        let is_trace = |p: &Path| p.is_file() && p.extension().is_some_and(|e| e == "hop");
        if is_trace(Path::new(key)) {
            return Some(Ok(RunSource::Trace { path: PathBuf::from(key), windows: None }));
        }
        let (path, windows) = key.rsplit_once('@')?;
        if !is_trace(Path::new(path)) {
            return None;
        }
        Some(window_range(windows).map(|w| RunSource::Trace { path: PathBuf::from(path), windows: Some(w) }))
    }

    /// The file or directory it reads.
    pub fn path(&self) -> &Path {
        match self {
            RunSource::Dir(dir) => dir,
            RunSource::Trace { path, .. } => path,
        }
    }
}

/// Windows `N` or `N-M` of a trace key: numbered from 1, in order.
fn window_range(text: &str) -> Result<(u32, u32), String> {
    let number =
        |n: &str| n.trim().parse::<u32>().map_err(|_| format!("window {n:?} is not a number (TRACE@N or TRACE@N-M)"));
    let (from, to) = match text.split_once('-') {
        Some((from, to)) => (number(from)?, number(to)?),
        None => (number(text)?, number(text)?),
    };
    if from == 0 {
        return Err("windows are numbered from 1".to_owned());
    }
    if to < from {
        return Err(format!("windows {from}-{to}: the first comes after the last"));
    }
    Ok((from, to))
}

/// A run directory's decomposition and samples (its slices from its trace
/// when it kept one), or a trace's (some windows of it), analysed on the
/// way.
fn samples(source: &RunSource) -> Result<RunSamples, CompareError> {
    let fail = |path: &Path, reason: String| CompareError { path: path.to_owned(), reason };
    let dir = match source {
        RunSource::Trace { path, windows } => {
            let file = hopscope_analyze::source::TraceFile::open(path).map_err(|e| fail(path, e.to_string()))?;
            let analysed = match windows {
                None => hopscope_analyze::decompose_source_with_samples(&mut { file }, None),
                Some((from, to)) => {
                    let mut some = hopscope_analyze::source::Windows::new(file, *from, *to);
                    hopscope_analyze::decompose_source_with_samples(&mut some, None)
                }
            };
            return analysed.map(|(_, samples)| samples).map_err(|e| fail(path, e.to_string()));
        }
        RunSource::Dir(dir) => dir,
    };
    let file = dir.join("result.json");
    let text = std::fs::read_to_string(&file).map_err(|e| fail(&file, e.to_string()))?;
    let d = Decomposition::from_json(&text).map_err(|e| fail(&file, e.to_string()))?;
    let trace = dir.join("trace.hop");
    if !trace.is_file() {
        // A trace analysed into a directory of its own left its samples
        // there, the trace staying where it was.
        let kept = dir.join(SAMPLES_FILE);
        if kept.is_file() {
            let text = std::fs::read_to_string(&kept).map_err(|e| fail(&kept, e.to_string()))?;
            return RunSamples::from_json(&text).map_err(|why| fail(&kept, why));
        }
        return Ok(RunSamples::new(&d, None));
    }
    let (header, joined) = hopscope_analyze::join_file(&trace).map_err(|e| fail(&trace, e.to_string()))?;
    Ok(RunSamples::new(&d, Some((&header, &joined))))
}

/// The change from run `a` to run `b`, each given with the label the
/// change names it by.
pub fn between(a: (&RunSource, &str), b: (&RunSource, &str)) -> Result<Change, CompareError> {
    Ok(change::compare(&samples(a.0)?, &samples(b.0)?, a.1, b.1))
}

/// The change from the run in directory `a` to the run whose samples `b`
/// this process holds, each with its label.
pub fn against(a: (&Path, &str), b: (&RunSamples, &str)) -> Result<Change, CompareError> {
    Ok(change::compare(&samples(&RunSource::Dir(a.0.to_owned()))?, b.0, a.1, b.1))
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

    #[test]
    fn window_selectors_are_numbered_from_one_and_in_order() {
        assert_eq!(window_range("3"), Ok((3, 3)));
        assert_eq!(window_range("2-5"), Ok((2, 5)));
        assert!(window_range("0").is_err_and(|e| e.contains("from 1")));
        assert!(window_range("5-2").is_err_and(|e| e.contains("after the last")));
        assert!(window_range("x").is_err_and(|e| e.contains("not a number")));
        assert!(window_range("99999999999").is_err());
        assert_eq!(RunSource::trace("no-such-file.hop@2"), None, "not a trace: a run key");
    }
}
