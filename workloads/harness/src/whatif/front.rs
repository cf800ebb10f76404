//! `--what-if` on a harness program: choose the lane, run it, judge the
//! samples, write the profile's files and say where they are.

use std::collections::BTreeMap;

use hopscope_analyze::causal;
use hopscope_probe::{Role, RunFact, RunFacts, Variant};
use hopscope_reports::{Finished, RunResult, Written};

use super::{WhatIf, run};
use crate::args::RunArgs;
use crate::lane::Lane;
use crate::outcome::{HarnessError, Outcome};
use crate::plan::Plan;
use crate::rundir;

/// What the front door needs of the harness to run `--what-if`.
pub(crate) struct Front<'a> {
    /// The program's name (the run directory's prefix).
    pub(crate) name: &'a str,
    pub(crate) args: &'a RunArgs,
    pub(crate) lanes: &'a [Lane],
    pub(crate) plan: &'a Plan,
    pub(crate) meta: BTreeMap<String, String>,
    pub(crate) progress: bool,
    pub(crate) quiet: bool,
}

/// Run the what-if `front.args` asks for and write its files.
pub(crate) fn what_if(front: Front<'_>) -> Result<Outcome, HarnessError> {
    let wanted = front.args.what_if.what_if.as_deref().unwrap_or_default();
    let what_if =
        WhatIf::from_flags(&front.args.what_if, front.args.quick).map_err(|e| HarnessError::Flag(e.to_string()))?;
    let lane = choose(front.lanes, wanted)?;
    // Before a directory is made or a line printed.
    super::measurable(lane)?;
    let mut meta = rundir::metadata();
    meta.extend(front.meta);
    meta.record(RunFact::Harness, front.name);
    // Not `latest`: that names the newest decomposition, which `compare`
    // and `history` read (a what-if run has none).
    // Linked once its files are written: a run refused on its way (an
    // unknown slice is found by the short decomposition) leaves the link
    // on the last run that answered.
    let dir = rundir::create_unlinked(front.args.out.as_deref(), front.name)?;
    let say = |text: &str| {
        if !front.quiet {
            println!("{}", text.trim_end());
        }
    };
    say(&format!("what if `{}` were faster: measuring into {}", lane.name, dir.display()));
    let samples = run(front.plan, lane, &what_if, &dir, meta, front.progress)?;
    let samples_path = dir.join("samples.json");
    let text = serde_json::to_string(&samples).map_err(|e| HarnessError::Usage(e.to_string()))?;
    std::fs::write(&samples_path, text).map_err(|source| HarnessError::Write { path: samples_path.clone(), source })?;
    let trace = dir.join("decomposition").join("trace.hop");
    let profile = causal::profile(&samples, seed(&samples))
        .map_err(|e| HarnessError::Usage(format!("cannot judge {}: {e}", samples_path.display())))?;
    let finished = Finished { result: RunResult::Causal(&profile), trace: None, change: None };
    let mut written = hopscope_reports::finish(&dir, &finished)
        .map_err(|source| HarnessError::Report { dir: dir.clone(), source })?;
    written.push("samples", samples_path);
    rundir::link_to(&dir, super::LATEST_WHAT_IF);
    say(&format!("\n{}", hopscope_reports::receipt::causal::sentence(&profile)));
    say(&format!("\n{}", written.to_string().trim_end()));
    if front.args.json {
        let out = serde_json::json!({ "schema": "hopscope.what-if/1", "dir": dir, "profile": profile });
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| HarnessError::Usage(e.to_string()))?);
    }
    Ok(Outcome::what_if(dir, trace, written, profile))
}

/// The bootstrap's seed, from the samples themselves: the same samples are
/// always judged alike.
fn seed(samples: &causal::CausalSamples) -> u64 {
    samples.blocks.iter().fold(samples.blocks.len() as u64, |h, b| h.rotate_left(5) ^ b.wall_ns.to_bits())
}

/// The lane `wanted` names (by its name or its probed trace lane's), or
/// with no name the subject with a probed build, else the only lane with
/// one.
fn choose<'a>(lanes: &'a [Lane], wanted: &str) -> Result<&'a Lane, HarnessError> {
    let probed = |l: &&Lane| l.builds.iter().any(|b| b.variant == Some(Variant::Probed));
    let with_probes: Vec<&Lane> = lanes.iter().filter(probed).collect();
    let names = || with_probes.iter().map(|l| format!("`{}`", l.name)).collect::<Vec<_>>().join(", ");
    if !wanted.is_empty() {
        let base = wanted.strip_suffix(hopscope_probe::LaneInfo::PROBED_SUFFIX).unwrap_or(wanted);
        return match lanes.iter().find(|l| l.name == base) {
            Some(l) if probed(&l) => Ok(l),
            Some(_) => Err(HarnessError::Flag(format!(
                "--what-if: lane `{base}` has no probed build (lanes with one: {})",
                if with_probes.is_empty() { "none".to_owned() } else { names() }
            ))),
            None => Err(HarnessError::Flag(format!(
                "--what-if: no lane `{wanted}` (lanes with a probed build: {})",
                names()
            ))),
        };
    }
    if let Some(subject) = with_probes.iter().find(|l| l.role == Role::Subject) {
        return Ok(subject);
    }
    match with_probes.as_slice() {
        [one] => Ok(one),
        [] => Err(HarnessError::Usage("--what-if needs a lane with a probed build: none is declared".to_owned())),
        _ => Err(HarnessError::Flag(format!("--what-if: name the lane to change, one of {}", names()))),
    }
}

impl Outcome {
    /// The outcome of a what-if run.
    fn what_if(
        dir: std::path::PathBuf,
        trace: std::path::PathBuf,
        written: Written,
        profile: causal::CausalProfile,
    ) -> Outcome {
        Outcome {
            dir,
            trace,
            decomposition: None,
            experiment: None,
            causal: Some(profile),
            written,
            stopped: None,
            signal: None,
            pin_failures: 0,
            run_id: None,
            change: None,
            gate: 0,
        }
    }
}
