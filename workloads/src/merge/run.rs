//! Measuring merges: every arm (naive, tuned, and each step tuned alone)
//! imports the same changeset into a fresh replica file, cold and then
//! again (every change already known), round after round with the arm
//! order rotated, into a `.hop` trace. Each import is one block (its wall
//! time over its changes); every `sample_every`-th change carries marks
//! inside execute.

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
        MergePlan { spec, rounds, sample_every: 16, arms }
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

/// Blocks per import. One import is one transaction, but its wall time is
/// recorded in this many consecutive blocks (the commit in the last), so a
/// round gives the statistics several paired samples, not one.
pub const CHUNKS: u32 = 8;

/// The arm order of `round`: a permutation drawn from the round number, so
/// no arm always follows the same one (a fixed rotation gave every arm the
/// same predecessor, and a naive arm read 40% slower than its identical
/// control for it).
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

/// Import `changes` in one transaction, calling `block(k, changes in it,
/// start, end)` after each of [`CHUNKS`] consecutive parts; returns the
/// changes that won. On any error the transaction is rolled back.
fn import_in_blocks<P: hopscope_probe::Probe>(
    merger: &mut Merger<'_, P>,
    changes: &[crate::merge::Change],
    mut block: impl FnMut(
        u32,
        usize,
        hopscope_probe::Ticks,
        hopscope_probe::Ticks,
    ) -> Result<(), hopscope_probe::TraceError>,
) -> Result<u64, String> {
    let _ = local::drain_into(&mut Vec::new());
    let chunk = changes.len().div_ceil(CHUNKS as usize).max(1);
    let parts = changes.len().div_ceil(chunk);
    merger.begin().map_err(|e| e.to_string())?;
    let mut wins = 0;
    for (k, part) in changes.chunks(chunk).enumerate() {
        let start = clock::now();
        for (i, change) in part.iter().enumerate() {
            match merger.merge(k * chunk + i, change) {
                Ok(won) => wins += u64::from(won),
                Err(err) => {
                    let _ = merger.rollback();
                    return Err(err.to_string());
                }
            }
        }
        if k + 1 == parts {
            merger.commit().map_err(|e| e.to_string())?;
        }
        let end = clock::now();
        block(k as u32, part.len(), start, end).map_err(|e| e.to_string())?;
    }
    Ok(wins)
}

/// Run `plan` in `dir` (replica files under `dir/db`); returns the trace's path.
pub fn run(plan: &MergePlan, dir: &Path, meta: BTreeMap<String, String>) -> Result<PathBuf, RunError> {
    if plan.arms.is_empty() || plan.rounds == 0 {
        return Err(RunError::Plan("a merge run needs at least one arm and one round".to_owned()));
    }
    let db_dir = dir.join("db");
    std::fs::create_dir_all(&db_dir).map_err(|source| RunError::Io {
        what: "cannot create",
        path: db_dir.clone(),
        source,
    })?;
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
        ("chunks_per_import", CHUNKS.to_string()),
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
    for round in 0..plan.rounds {
        for arm in order(plan.arms.len(), round) {
            let (name, knobs) = &plan.arms[arm];
            let path = db_dir.join(format!("{name}.db"));
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
            let fail = |source| RunError::Database { path: path.clone(), source };
            let replica = Replica::open(&path, site(200)).map_err(fail)?;
            let mut merger = Merger::probed(replica.conn(), *knobs, Recording, plan.sample_every);
            for (phase, lane) in PHASES.iter().enumerate() {
                let wins = import_in_blocks(&mut merger, &changes, |k, part, start, end| {
                    session.collect(0);
                    trace.write_block(&Block {
                        lane: (arm * PHASES.len() + phase) as u16,
                        pass: 0,
                        sample: round * CHUNKS + k,
                        op_count: part as u64,
                        start,
                        end,
                        streams: session.take(),
                        readings: Vec::new(),
                    })
                })
                .map_err(|e| RunError::Plan(format!("arm `{name}` {lane}: {e}")))?;
                let expected = if phase == 0 { changes.len() as u64 } else { 0 };
                if wins != expected {
                    return Err(RunError::Plan(format!(
                        "arm `{name}` {lane}: {wins} changes won, expected {expected}"
                    )));
                }
            }
            drop(merger);
            drop(replica);
            // Flush this arm's dirty pages now, outside any block, so the
            // kernel's writeback does not run during the next arm's import.
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
        }
    }
    trace.finish()?;
    Ok(trace_path)
}
