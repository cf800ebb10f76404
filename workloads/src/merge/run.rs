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
    /// `naive`, `tuned`, and one arm per step tuned alone (named after it).
    pub fn new(spec: ChangesetSpec, rounds: u32) -> MergePlan {
        let mut arms = vec![("naive".to_owned(), MergeKnobs::NAIVE), ("tuned".to_owned(), MergeKnobs::TUNED)];
        arms.extend(MergeKnobs::one_step_each().map(|(name, knobs)| (name.to_owned(), knobs)));
        MergePlan { spec, rounds, sample_every: 16, arms }
    }

    /// The trace lane of `arm` in `phase` (`cold` or `again`).
    pub fn lane(arm: &str, phase: &str) -> String {
        format!("{arm}/{phase}")
    }
}

/// The two imports of each arm and round.
pub const PHASES: [&str; 2] = ["cold", "again"];

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
        let n = plan.arms.len();
        for offset in 0..n {
            let arm = (round as usize + offset) % n;
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
                let _ = local::drain_into(&mut Vec::new());
                let start = clock::now();
                let stats = merger.import(&changes).map_err(|e| RunError::Plan(format!("arm `{name}`: {e}")))?;
                let end = clock::now();
                let expected_wins = if phase == 0 { changes.len() as u64 } else { 0 };
                if stats.changes != changes.len() as u64 || stats.won != expected_wins {
                    return Err(RunError::Plan(format!(
                        "arm `{name}` {lane}: merged {} changes, {} won; expected {}, {expected_wins}",
                        stats.changes,
                        stats.won,
                        changes.len()
                    )));
                }
                session.collect(0);
                trace.write_block(&Block {
                    lane: (arm * PHASES.len() + phase) as u16,
                    pass: 0,
                    sample: round,
                    op_count: changes.len() as u64,
                    start,
                    end,
                    streams: session.take(),
                    readings: Vec::new(),
                })?;
            }
        }
    }
    trace.finish()?;
    Ok(trace_path)
}
