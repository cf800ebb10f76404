//! The result of a pre-registered A/B experiment (`ab.json`, schema
//! `hopscope.ab/1`); `hopscope-reports` renders its receipt.

use std::collections::BTreeMap;
use std::path::Path;

use hopscope_probe::{ClockInfo, HostInfo, RunFact, RunFacts, Trace};
use serde::{Deserialize, Serialize};

use crate::ab::{self, AbOutcome, Rule};
use crate::ab_reason::AbReason;
use crate::ab_trace::AbTrace;
use crate::decomposition::AnalyzeError;
use crate::recorded::Recorded;
use crate::slice_verdict::{self, SliceVerdicts};
use crate::warning::Warning;

/// Schema name and version of `ab.json`.
pub const AB_SCHEMA: &str = "hopscope.ab/1";

/// Everything an A/B run concluded, and what it was held to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// Always [`AB_SCHEMA`].
    pub schema: String,
    /// The spec's name.
    pub name: String,
    /// The hypothesis, as written before the run.
    pub hypothesis: String,
    /// SHA-256 of the spec file as it was when the run started.
    pub spec_sha256: String,
    /// The decision rule recorded before measuring.
    pub rule: Rule,
    /// What each arm runs (`a`, `b`, `control`).
    pub arms: BTreeMap<String, String>,
    /// Effects per pass and the verdict.
    pub outcome: AbOutcome,
    /// Verdicts per slice, when both arms were probed: which slices
    /// changed, with the family-wise false-positive rate held at 5%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slices: Option<SliceVerdicts>,
    /// The machine.
    pub host: HostInfo,
    /// The clock.
    pub clock: ClockInfo,
    /// Run metadata from the trace (command, commit, shape, ...).
    pub meta: BTreeMap<String, String>,
    /// What a reader must know (e.g. a spec edited after the run), as
    /// data; an older file's are sentences.
    pub warnings: Vec<Recorded<Warning>>,
    /// How long the arms' threads waited for a CPU, and whether another
    /// process held the run's CPUs: then the verdict is withheld
    /// (`drift-suspected`, the line first among its reasons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<crate::contention::Contention>,
    /// Each arm's WAL checkpoints: the blocks that held one, their cost,
    /// the arm's figures with and without them (absent when the run
    /// recorded none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<crate::checkpoints::Checkpoints>,
}

/// Judge the A/B `trace`, held in memory, under `rule`
/// ([`judge_trace`]).
pub fn judge(trace: &Trace, rule: &Rule) -> Experiment {
    judge_trace(&AbTrace::of(trace), rule)
}

/// Judge the A/B trace file at `path` under `rule`, streamed
/// ([`AbTrace::read_file`]).
pub fn judge_file(path: &Path, rule: &Rule) -> Result<Experiment, AnalyzeError> {
    Ok(judge_trace(&AbTrace::read_file(path)?, rule))
}

/// Judge an A/B run read from its trace under `rule`; `spec` fields come
/// from the header.
pub fn judge_trace(trace: &AbTrace, rule: &Rule) -> Experiment {
    let meta = &trace.header.run;
    let get = |fact: RunFact| meta.fact(&fact).unwrap_or_default().to_owned();
    let passes = trace.pass_blocks();
    // Every pass by fresh processes: the passes are the replicates.
    let across = crate::generations::applies(meta);
    let mut outcome = if across {
        crate::generations::verdict(&passes, rule, crate::generations::layouts(meta))
    } else {
        ab::verdict(&passes, rule)
    };
    outcome.figure = trace.figure();
    // Every block counts here: a contended A/B round is not left out, the
    // verdict needs its pairs; the record and a warning say so.
    let mut contention = trace.contention.clone();
    let kept = contention.as_mut().filter(|c| c.dropped_rounds).map(|c| {
        c.dropped_rounds = false;
        Warning::ContendedKept { waited: c.contended_rounds, rounds: c.rounds }
    });
    if let Some(waited) = contention.as_ref().and_then(|c| c.verdict()) {
        outcome.verdict = ab::Verdict::DriftSuspected;
        outcome.reasons.insert(0, Recorded::Typed(AbReason::Contended(waited)));
    }
    // Each arm described by its lane: `a: <lane> — <description>`.
    let arms = trace
        .arms()
        .map(|arms| arms.keyed())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(key, lane)| {
            let name = trace.header.lanes.get(usize::from(lane))?;
            let description = meta.fact(&RunFact::LaneDescription(name.clone())).unwrap_or_default().to_owned();
            let text = if name == key { description } else { format!("lane `{name}`: {description}") };
            Some((key.to_owned(), text))
        })
        .collect();
    let min_effect = rule.slice_min_effect(trace.header.clock.grain_ns());
    let b_first = passes.iter().map(|p| (p.pass, p.b_first)).collect();
    let slices = trace.arm_ops().and_then(|(a, b)| {
        if across {
            crate::generations::slices(a, b, &b_first, min_effect)
        } else {
            slice_verdict::judge(a, b, min_effect)
        }
    });
    outcome.resolution_us = crate::slice_account::resolution_us(&outcome);
    crate::slice_account::hold_to_slices(&mut outcome, slices.as_ref());
    if let Some(account) = slices.as_ref().and_then(crate::slice_account::account) {
        let level = outcome.passes.iter().map(|p| p.a_us).sum::<f64>() / outcome.passes.len().max(1) as f64;
        crate::slice_account::judge(&mut outcome, account, rule, level);
    }
    outcome.estimate = crate::slice_account::estimate(&outcome);
    let mut warnings: Vec<Recorded<Warning>> = kept.into_iter().map(Recorded::Typed).collect();
    if trace.marks_dropped > 0 {
        warnings.push(Recorded::Typed(Warning::MarksLost { count: trace.marks_dropped }));
    }
    // A spec's block size stands (it was registered), but a block that
    // gives each of several callers few operations weighs its queue's
    // filling and draining in: said, as a decomposition says it.
    let few = trace.lanes.iter().filter_map(|lane| crate::decomposition::lane::few_per_caller(&trace.header, lane));
    warnings.extend(few.map(Recorded::Typed));
    Experiment {
        schema: AB_SCHEMA.to_owned(),
        name: get(RunFact::SpecName),
        hypothesis: get(RunFact::SpecHypothesis),
        spec_sha256: get(RunFact::SpecSha256),
        rule: rule.clone(),
        arms,
        outcome,
        slices,
        host: trace.header.host.clone(),
        clock: trace.header.clock.clone(),
        meta: meta.clone(),
        warnings,
        contention,
        checkpoints: crate::checkpoints::of(&trace.lanes),
    }
}
