//! Measuring merges: every arm (naive, tuned, each step tuned alone, and a
//! second naive arm as control) imports the same changeset into a fresh
//! replica file, cold and then again (every change already known) on a
//! freshly opened connection, round after round, into a `.hop` trace. Each
//! import is one transaction run in parts, the arms' parts interleaved in an
//! order drawn per part; each part is one block and one paired sample.
//! Every `sample_every`-th change carries marks inside execute.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hopscope_probe::{Block, Recording, Session, TraceHeader, TraceWriter, clock, local};

use crate::error::RunError;
use crate::merge::changeset::site;
use crate::merge::{ChangesetSpec, MergeKnobs, Merger, Replica, generate, hops};

/// What a merge measurement runs.
#[derive(Debug, Clone, PartialEq)]
pub struct MergePlan {
    /// The changeset every import merges.
    pub spec: ChangesetSpec,
    /// Rounds; each imports once per arm, cold and again.
    pub rounds: u32,
    /// Mark the steps of every n-th change.
    pub sample_every: u64,
    /// Parts per import (see [`PARTS`]).
    pub parts: u32,
    /// Arms by name.
    pub arms: Vec<(String, MergeKnobs)>,
}

impl MergePlan {
    /// `naive`, `tuned`, one arm per step tuned alone (named after it), and
    /// `naive-control`, a second naive arm: the A/B control of every step.
    pub fn new(spec: ChangesetSpec, rounds: u32) -> MergePlan {
        let mut arms = vec![("naive".to_owned(), MergeKnobs::NAIVE), ("tuned".to_owned(), MergeKnobs::TUNED)];
        arms.extend(MergeKnobs::one_step_each().map(|(name, knobs)| (name.to_owned(), knobs)));
        arms.push((CONTROL.to_owned(), MergeKnobs::NAIVE));
        MergePlan { spec, rounds, sample_every: 16, parts: PARTS, arms }
    }

    /// The trace lane of `arm` in `phase` (`cold` or `again`).
    pub fn lane(arm: &str, phase: &str) -> String {
        format!("{arm}/{phase}")
    }
}

/// The two imports of each arm and round.
pub const PHASES: [&str; 2] = ["cold", "again"];

/// The second naive arm, run as every step's A/B control.
pub const CONTROL: &str = "naive-control";

/// Parts per import by default. One import is one transaction, but it runs
/// and is recorded in this many consecutive parts (the commit in the last),
/// the arms' parts interleaved, so every arm meets the same host conditions
/// and a round gives the statistics many paired samples, not one. On this
/// VM one part of identical arms differed by ±25% (host noise), so a pass
/// needs ~100 pairs before its control stays within 5%: 32 parts × 8
/// rounds give 128 per pass; 8 parts gave 32 and flagged drift by chance.
pub const PARTS: u32 = 32;

/// The arm order of part-round `round`: a permutation drawn from its
/// number, so no arm always follows the same one (a fixed rotation gave
/// every arm the same predecessor, and a naive arm read 40% slower than its
/// identical control for it).
fn order(arms: usize, round: u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..arms).collect();
    // SplitMix64 from the round: reproducible, and different every round.
    let mut state = u64::from(round).wrapping_add(0x9e37_79b9_7f4a_7c15);
    for i in (1..arms).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        order.swap(i, (z % (i as u64 + 1)) as usize);
    }
    order
}

/// Every arm's replica under `db_dir`, on new files when `fresh`.
fn open_replicas(plan: &MergePlan, db_dir: &Path, fresh: bool) -> Result<Vec<Replica>, RunError> {
    plan.arms
        .iter()
        .map(|(name, _)| {
            let path = db_dir.join(format!("{name}.db"));
            if fresh {
                crate::db::remove(&path)?;
            }
            Replica::open(&path, site(200)).map_err(|source| RunError::Database { path, source })
        })
        .collect()
}

/// Run `plan` in `dir` (replica files under `dir/db`), with a progress bar
/// on stderr when `progress`; returns the trace's path.
pub fn run(plan: &MergePlan, dir: &Path, meta: BTreeMap<String, String>, progress: bool) -> Result<PathBuf, RunError> {
    if plan.arms.is_empty() || plan.rounds == 0 || plan.parts == 0 {
        return Err(RunError::Plan("a merge run needs at least one arm, one round and one part".to_owned()));
    }
    let db_dir = crate::db::run_dir(dir)?;
    let changes = generate(plan.spec);
    let lanes: Vec<String> =
        plan.arms.iter().flat_map(|(arm, _)| PHASES.map(|phase| MergePlan::lane(arm, phase))).collect();
    let lane_refs: Vec<&str> = lanes.iter().map(String::as_str).collect();
    let mut header = TraceHeader::for_this_host(&lane_refs, &["merger"]);
    header.hops = hops::table();
    header.run = meta;
    let facts = [
        ("shape", "merge".to_owned()),
        ("changes", changes.len().to_string()),
        ("rows", plan.spec.rows.to_string()),
        ("columns", plan.spec.columns.to_string()),
        ("sites", plan.spec.sites.to_string()),
        ("rounds", plan.rounds.to_string()),
        ("sample_every", plan.sample_every.to_string()),
        ("parts_per_import", plan.parts.to_string()),
        ("sqlite_version", rusqlite::version().to_owned()),
    ];
    for (key, value) in facts {
        header.run.insert(key.to_owned(), value);
    }
    for (arm, knobs) in &plan.arms {
        header.run.insert(format!("lane.{arm}"), format!("{knobs:?}"));
    }
    let trace_path = dir.join("trace.hop");
    let mut trace = TraceWriter::create(&trace_path, header)?;
    let marks_per_import = changes.len() / plan.sample_every as usize * hops::NAMES.len() + hops::NAMES.len();
    local::attach(marks_per_import + 64);
    let session = Session::new();
    let n = plan.arms.len();
    let chunk = changes.len().div_ceil(plan.parts as usize).max(1);
    let parts = changes.len().div_ceil(chunk);
    let bar =
        hopscope_harness::progress::bar(progress, u64::from(plan.rounds) * PHASES.len() as u64 * (parts * n) as u64);
    for round in 0..plan.rounds {
        for (phase, lane) in PHASES.iter().enumerate() {
            // Every phase opens its replicas' connections afresh (the cold
            // phase on new files, the re-import on the files it left): a
            // connection that has just committed a large import re-imports
            // slower, and by how much depended on the order the arms
            // committed in (an identical naive arm read ~1.5× slower than
            // its control for it). Reopening gives every arm the same start.
            let replicas = open_replicas(plan, &db_dir, phase == 0)?;
            let mut mergers: Vec<Merger<'_, Recording>> = replicas
                .iter()
                .zip(&plan.arms)
                .map(|(replica, (_, knobs))| Merger::probed(replica.conn(), *knobs, Recording, plan.sample_every))
                .collect();
            let failed = |arm: usize, e: &dyn std::fmt::Display| {
                RunError::Plan(format!("arm `{}` {lane}: {e}", plan.arms[arm].0))
            };
            for (arm, merger) in mergers.iter_mut().enumerate() {
                merger.begin().map_err(|e| failed(arm, &e))?;
            }
            let mut wins = vec![0u64; n];
            // Every arm's import is one transaction, run part by part with
            // the arms interleaved (in an order drawn per part), so all arms
            // see the same host conditions, as lanes do in the runner.
            for k in 0..parts {
                let range = k * chunk..((k + 1) * chunk).min(changes.len());
                let sample = round * parts as u32 + k as u32;
                for arm in order(n, sample) {
                    let merger = &mut mergers[arm];
                    let _ = local::drain_into(&mut Vec::new());
                    let start = clock::now();
                    for index in range.clone() {
                        wins[arm] += u64::from(merger.merge(index, &changes[index]).map_err(|e| failed(arm, &e))?);
                    }
                    if k + 1 == parts {
                        merger.commit().map_err(|e| failed(arm, &e))?;
                    }
                    let end = clock::now();
                    session.collect(0);
                    trace.write_block(&Block {
                        lane: (arm * PHASES.len() + phase) as u16,
                        pass: 0,
                        sample,
                        op_count: range.len() as u64,
                        start,
                        end,
                        streams: session.take(),
                        readings: Vec::new(),
                    })?;
                    bar.inc(1);
                }
            }
            let expected = if phase == 0 { changes.len() as u64 } else { 0 };
            if let Some(arm) = wins.iter().position(|w| *w != expected) {
                return Err(failed(arm, &format!("{} changes won, expected {expected}", wins[arm])));
            }
            drop(mergers);
            drop(replicas);
            // Flush dirty pages between phases, outside any block, so the
            // kernel's writeback does not run during the next imports.
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
        }
    }
    trace.finish()?;
    bar.finish_and_clear();
    Ok(trace_path)
}
