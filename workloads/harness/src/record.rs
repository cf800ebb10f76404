//! What a finished decomposition leaves behind beyond its directory: its
//! row in the run index, a baseline saved under a name, and the change
//! from a baseline with the exit status a CI gate reads (`--save-baseline`,
//! `--baseline`, `--fail-on`, `--json`) — the same road for hopscope's own
//! `decompose` and for every harness program.

use std::path::Path;

use hopscope_analyze::Decomposition;
use hopscope_analyze::change::{Change, RunSamples};

use crate::gate::{self, FailOn};
use crate::harness::HarnessError;
use crate::index::{RunIndex, RunRow};

/// What a run is asked to be recorded as and judged against: the
/// `--save-baseline`, `--baseline` and `--fail-on` of a harness program,
/// of `hopscope decompose` and of `hopscope analyze`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gating<'a> {
    /// Save the run as this baseline.
    pub save_baseline: Option<&'a str>,
    /// Judge the run against this baseline (or any run key).
    pub baseline: Option<&'a str>,
    /// Which verdicts fail the command.
    pub fail_on: Option<FailOn>,
}

/// The index and the baseline a run will be recorded and judged against,
/// found before it measures anything (a typo in a baseline's name costs
/// nothing).
#[derive(Debug)]
pub struct Recorder {
    /// `None` when the index could not be read and the run does not need
    /// it: the run is then not indexed, and says so.
    index: Option<RunIndex>,
    baseline: Option<(String, RunRow)>,
}

/// What recording a run produced.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The run's id in the index.
    pub run_id: Option<i64>,
    /// The change from the baseline.
    pub change: Option<Change>,
    /// The exit status the gate asks for (0: nothing it fails on).
    pub gate: u8,
    /// Lines for the person at the terminal.
    pub lines: Vec<String>,
}

impl Recorder {
    /// Find the index and the baseline `args` name. Without `--baseline`
    /// or `--save-baseline` a damaged index is a warning, not an error.
    pub fn prepare(args: Gating<'_>) -> Result<Recorder, HarnessError> {
        let index = RunIndex::located();
        let needed = args.baseline.is_some() || args.save_baseline.is_some();
        let baseline = match args.baseline {
            Some(key) => Some((key.to_owned(), index.find(key)?)),
            None => None,
        };
        let index = match index.history(1) {
            Ok(_) => Some(index),
            Err(err) if !needed => {
                eprintln!("hopscope: warning: {err}; this run is not indexed");
                None
            }
            Err(err) => return Err(err.into()),
        };
        Ok(Recorder { index, baseline })
    }

    /// The change from the baseline `--baseline` names to the run in
    /// `dir`, whose samples this process holds (from the decomposition's
    /// own join), for the run's files; `None` without a baseline.
    pub fn change(&self, dir: &Path, samples: &RunSamples) -> Result<Option<Change>, HarnessError> {
        let Some((key, row)) = &self.baseline else { return Ok(None) };
        let this = dir.display().to_string();
        Ok(Some(gate::against((&row.dir, &format!("{key} (run #{})", row.id)), (samples, &this))?))
    }

    /// Index the run in `dir`, save it as a baseline if asked, and record
    /// its `change` (written with the run's files) against the baseline.
    pub fn record(
        &self,
        args: Gating<'_>,
        dir: &Path,
        d: &Decomposition,
        change: Option<Change>,
    ) -> Result<Recorded, HarnessError> {
        let mut out = Recorded::default();
        let Some(index) = &self.index else { return Ok(out) };
        let id = index.record(dir, d)?;
        out.run_id = Some(id);
        out.lines.push(format!("index:   run #{id} in {}", index.path().display()));
        let contended = d.contention.as_ref().filter(|c| c.contended);
        if let (Some(name), Some(c)) = (args.save_baseline, contended) {
            // A baseline every later run is judged against must measure the
            // write path, not the scheduler: the old one stays.
            out.lines.push(format!(
                "baseline: {name} not saved: another process held this run's CPUs ({} of {} rounds waited for it); \
                 run again on a quieter machine",
                c.contended_rounds, c.rounds
            ));
            out.gate = gate::NO_VERDICT;
        } else if let Some(name) = args.save_baseline {
            match index.save_baseline(name, id)? {
                Some(before) => out.lines.push(format!("baseline: {name} = run #{id} (it was run #{before})")),
                None => out.lines.push(format!("baseline: {name} = run #{id}")),
            }
        }
        let (Some((key, _)), Some(change)) = (&self.baseline, change) else { return Ok(out) };
        index.record_change(id, key, &change.verdict.to_string())?;
        // A contended run's verdict is refused for that reason, said here
        // rather than left to read as the machine's drift.
        let verdict = if change.contended.is_empty() {
            change.verdict.to_string()
        } else {
            format!("{} (no verdict: another process held a run's CPUs)", change.verdict)
        };
        let decided = hopscope_reports::change_decided(&change).map_or(String::new(), |d| format!(" ({d})"));
        out.lines.push(format!("change:  {verdict} against {key}{decided} → {}", dir.join("change.md").display()));
        out.lines.push(format!("         {}", hopscope_reports::change_judged(&change)));
        out.lines.extend(
            change.findings.iter().skip(1).map(|f| format!("         {}", hopscope_reports::change_sentence(f))),
        );
        out.gate = out.gate.max(gate::change_status(&change, args.fail_on));
        out.change = Some(change);
        Ok(out)
    }
}
