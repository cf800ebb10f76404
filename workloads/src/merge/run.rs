//! Measuring merges on the harness: every arm (naive, tuned, each step
//! tuned alone, and a second naive arm as control) imports the same
//! changeset into a fresh replica file, cold and then again (every change
//! already known) on a freshly opened connection, round after round. Each
//! arm in each phase is a lane (`arm/cold`, `arm/again`); each import is one
//! transaction run in parts, one block per part, the arms' parts interleaved
//! in an order drawn per part (the harness's phased order: every arm's cold
//! import, then every arm's re-import). Every `sample_every`-th change
//! carries marks inside execute.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hopscope_analyze::merge::{Arm, Phase};
use hopscope_harness::{
    BlockId, BlockInfo, BoxError, Lane, Ops, Order, Placement, Plan, Role, Setup, Workload, runner,
};
use hopscope_probe::{Recording, RunFact, RunFacts};

use crate::error::RunError;
use crate::merge::changeset::site;
use crate::merge::{Change, ChangesetSpec, MergeKnobs, Merger, Replica, generate, hops};

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
    pub arms: Vec<(Arm, MergeKnobs)>,
}

impl MergePlan {
    /// `naive`, `tuned`, one arm per step tuned alone (named after it), and
    /// `naive-control`, a second naive arm: the A/B control of every step.
    pub fn new(spec: ChangesetSpec, rounds: u32) -> MergePlan {
        let mut arms = vec![(Arm::Naive, MergeKnobs::NAIVE), (Arm::Tuned, MergeKnobs::TUNED)];
        arms.extend(MergeKnobs::one_step_each().map(|(name, knobs)| (Arm::Step(name.to_owned()), knobs)));
        arms.push((Arm::Control, MergeKnobs::NAIVE));
        MergePlan { spec, rounds, sample_every: 16, parts: PARTS, arms }
    }
}

/// Parts per import by default. One import is one transaction, but it runs
/// and is recorded in this many consecutive parts (the commit in the last),
/// the arms' parts interleaved, so every arm meets the same host conditions
/// and a round gives the statistics many paired samples, not one. On this
/// VM one part of identical arms differed by ±25% (host noise), so a pass
/// needs ~100 pairs before its control stays within 5%: 32 parts × 8
/// rounds give 128 per pass; 8 parts gave 32 and flagged drift by chance.
pub const PARTS: u32 = 32;

/// One arm's replica and its open import, shared by the arm's two lanes
/// (`arm/cold` and `arm/again` import into the same file).
struct ArmState {
    path: PathBuf,
    knobs: MergeKnobs,
    /// The import in progress: open from its first part to its commit.
    merger: Option<Merger<Replica, Recording>>,
    /// The part the coming block runs, and the changes that won so far.
    part: usize,
    wins: u64,
}

/// One arm in one phase: each block is one part of an import.
#[derive(Clone)]
struct MergeLane {
    arm: Arc<Mutex<ArmState>>,
    /// 0: cold (a fresh replica, every change wins); 1: again (the same
    /// file reopened, every change already known).
    phase: usize,
    changes: Arc<Vec<Change>>,
    parts: usize,
    sample_every: u64,
}

impl MergeLane {
    fn arm(&self) -> std::sync::MutexGuard<'_, ArmState> {
        self.arm.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn chunk(&self) -> usize {
        self.changes.len() / self.parts
    }
}

impl Workload for MergeLane {
    fn before_block(&self, block: &BlockInfo) -> Result<(), BoxError> {
        let BlockId::Measured { sample, .. } = block.id else {
            return Err("a merge run has no warm-up blocks".into());
        };
        // The phased order runs `parts` rounds of one phase, then of the
        // other: the part is the round's place within its phase.
        let part = sample as usize % self.parts;
        let mut arm = self.arm();
        if part == 0 {
            // Every phase opens its replica's connection afresh (the cold
            // phase on a new file, the re-import on the file it left): a
            // connection that has just committed a large import re-imports
            // slower, and by how much depended on the order the arms
            // committed in. Dirty pages of the last phase are flushed first,
            // outside any block, so writeback does not land in one.
            arm.merger = None;
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
            if self.phase == 0 {
                crate::db::remove(&arm.path)?;
            }
            let replica = Replica::open(&arm.path, site(200))?;
            let mut merger = Merger::probed(replica, arm.knobs, Recording, self.sample_every);
            merger.begin()?;
            arm.merger = Some(merger);
            arm.wins = 0;
        }
        arm.part = part;
        Ok(())
    }

    fn run(&self, _caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let mut arm = self.arm();
        let part = arm.part;
        let range = part * self.chunk()..(part + 1) * self.chunk();
        let ArmState { merger, wins, .. } = &mut *arm;
        let merger = merger.as_mut().ok_or("no import open")?;
        for (index, _op) in range.clone().zip(ops) {
            *wins += u64::from(merger.merge(index, &self.changes[index])?);
        }
        if part + 1 == self.parts {
            merger.commit()?;
            let expected = if self.phase == 0 { self.changes.len() as u64 } else { 0 };
            if arm.wins != expected {
                return Err(format!("{} changes won, expected {expected}", arm.wins).into());
            }
            // Closed outside the next phase's blocks.
            arm.merger = None;
        }
        Ok(range.len() as u64)
    }
}

/// The harness lanes of `plan`: every arm in both phases, arm by arm.
fn lanes(plan: &MergePlan, db_dir: &Path, changes: &Arc<Vec<Change>>) -> Vec<Lane> {
    let mut lanes = Vec::new();
    for (name, knobs) in &plan.arms {
        let arm = Arc::new(Mutex::new(ArmState {
            path: db_dir.join(format!("{name}.db")),
            knobs: *knobs,
            merger: None,
            part: 0,
            wins: 0,
        }));
        for (phase, phase_kind) in Phase::ALL.into_iter().enumerate() {
            let lane = MergeLane {
                arm: arm.clone(),
                phase,
                changes: changes.clone(),
                parts: plan.parts as usize,
                sample_every: plan.sample_every,
            };
            let open = move |_: &Setup| Ok::<_, BoxError>(lane.clone());
            lanes.push(
                Lane::new(Role::Peer, &name.lane(phase_kind), open)
                    .describe(format!("{knobs:?}"))
                    .placement(Placement::Unpinned),
            );
        }
    }
    lanes
}

/// The most parts, at most `at_most`, that split `changes` changes evenly
/// (every block of a run has the same number of operations).
pub fn even_parts(changes: u64, at_most: u32) -> u32 {
    (1..=at_most.max(1)).rev().find(|p| changes.is_multiple_of(u64::from(*p))).unwrap_or(1)
}

/// Run `plan` in `dir` (replica files under `dir/db`) on the harness, with
/// a progress bar on stderr when `progress`; returns the trace's path.
pub fn run(plan: &MergePlan, dir: &Path, meta: BTreeMap<String, String>, progress: bool) -> Result<PathBuf, RunError> {
    if plan.arms.is_empty() || plan.rounds == 0 || plan.parts == 0 {
        return Err(RunError::Plan("a merge run needs at least one arm, one round and one part".to_owned()));
    }
    let changes = Arc::new(generate(plan.spec));
    let parts = plan.parts as usize;
    if !changes.len().is_multiple_of(parts) {
        return Err(RunError::Plan(format!(
            "{} changes do not split into {parts} equal parts: choose --parts dividing {}",
            changes.len(),
            changes.len()
        )));
    }
    let db_dir = crate::db::run_dir(dir)?;
    let lanes = lanes(plan, &db_dir, &changes);
    let arms = plan.arms.len();
    let group = |phase: usize| (0..arms).map(|arm| arm * Phase::ALL.len() + phase).collect::<Vec<_>>();
    let rounds = plan.rounds.checked_mul(Phase::ALL.len() as u32).and_then(|r| r.checked_mul(plan.parts));
    let samples = rounds.ok_or_else(|| RunError::Plan("too many rounds × parts".to_owned()))?;
    let harness_plan = Plan {
        ops_per_block: (changes.len() / parts) as u64,
        samples,
        passes: 1,
        warmup_blocks: 0,
        order: Order::Phases { groups: (0..Phase::ALL.len()).map(group).collect(), rounds: plan.parts },
        placement: Placement::Unpinned,
        hops: hops::table(),
        ..Plan::careful()
    };
    let mut meta = meta;
    let facts = [
        (RunFact::Shape, "merge".to_owned()),
        (RunFact::Changes, changes.len().to_string()),
        (RunFact::Rows, plan.spec.rows.to_string()),
        (RunFact::Columns, plan.spec.columns.to_string()),
        (RunFact::Sites, plan.spec.sites.to_string()),
        (RunFact::Rounds, plan.rounds.to_string()),
        (RunFact::SampleEvery, plan.sample_every.to_string()),
        (RunFact::PartsPerImport, plan.parts.to_string()),
        (RunFact::SqliteVersion, rusqlite::version().to_owned()),
    ];
    for (fact, value) in facts {
        meta.record(fact, value);
    }
    let summary = runner::run(&harness_plan, &lanes, dir, meta, progress)?;
    Ok(summary.trace)
}
