//! WAL checkpoints, recorded in every run: a program whose file database
//! (WAL mode, automatic checkpoints off) checkpoints in blocks it chooses,
//! after a write in the middle of the block. Every checkpoint is found,
//! in the blocks that ran it and no other, and the lane's figures are
//! given with and without those blocks.

#![cfg(feature = "sqlite")]

use std::sync::Mutex;

use hopscope_harness::{BlockId, BlockInfo, BoxError, Harness, Lane, Ops, Plan, Role, Setup, Workload};
use rusqlite::Connection;

/// A writer on the calling thread that checkpoints, mid-block, in every
/// measured block whose sample is a multiple of three.
struct Checkpointing {
    conn: Mutex<Connection>,
    /// The block under way: (pass, sample), and whether it checkpoints.
    block: Mutex<Option<((u32, u32), bool)>>,
    /// Every block that ran a checkpoint.
    ran: std::sync::Arc<Mutex<Vec<(u32, u32)>>>,
}

impl Workload for Checkpointing {
    fn before_block(&self, block: &BlockInfo) -> Result<(), BoxError> {
        let chosen = match block.id {
            BlockId::Measured { pass, sample } => Some(((pass, sample), sample % 3 == 0)),
            BlockId::Warmup { .. } => None,
        };
        *self.block.lock().map_err(|_| "poisoned")? = chosen;
        Ok(())
    }

    fn run(&self, _caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let conn = self.conn.lock().map_err(|_| "poisoned")?;
        let block = *self.block.lock().map_err(|_| "poisoned")?;
        let mut done = 0u64;
        for op in ops {
            conn.execute("INSERT INTO t (v) VALUES (?1)", [op.index() as i64])?;
            done += 1;
            if done == 10
                && let Some((round, true)) = block
            {
                conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
                self.ran.lock().map_err(|_| "poisoned")?.push(round);
            }
        }
        Ok(done)
    }
}

fn open(setup: &Setup, ran: std::sync::Arc<Mutex<Vec<(u32, u32)>>>) -> Result<Checkpointing, BoxError> {
    let conn = Connection::open(setup.path("db.sqlite"))?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v INTEGER)",
    )?;
    Ok(Checkpointing { conn: Mutex::new(conn), block: Mutex::new(None), ran })
}

#[test]
fn every_checkpoint_is_found_in_the_blocks_that_ran_it_and_the_figures_are_given_without_them() {
    let _turn = crate::common::serial();
    // Rounds another process crowded are left out of every figure, and the
    // checkpoints their blocks held with them: such a run starts again.
    let done = hopscope_testkit::until_uncrowded(3, checkpoints_found);
    assert!(done, "another process held the CPUs in each of 3 attempts");
}

/// One run of the checkpointing lane and what it found; false when
/// another process crowded a round (nothing asserted past that).
fn checkpoints_found(attempt: u32) -> bool {
    let dir = std::env::temp_dir().join(format!("hopscope-checkpoints-{}-{attempt}", std::process::id()));
    let ran = std::sync::Arc::new(Mutex::new(Vec::new()));
    let opened = ran.clone();
    let lane = Lane::new(Role::Subject, "wal", move |s: &Setup| open(s, opened.clone()));
    let plan = Plan { ops_per_block: 40, samples: 12, passes: 2, warmup_blocks: 1, ..Plan::quick() };
    let outcome = Harness::new("checkpoints").plan(plan).out(&dir).quiet().lane(lane).run().expect("run");
    let d = outcome.decomposition.as_ref().expect("decomposition");
    if d.contention.as_ref().is_some_and(|c| c.contended_rounds > 0) {
        let _ = std::fs::remove_dir_all(&dir);
        return false;
    }
    let mut ran: Vec<(u32, u32)> = ran.lock().expect("ran").clone();
    ran.sort_unstable();
    assert_eq!(ran.len(), 8, "samples 0, 3, 6, 9 of two passes: {ran:?}");
    let c = d.checkpoints.as_ref().expect("checkpoints recorded in every run");
    let lane = c.lanes.iter().find(|l| l.lane == "wal").expect("the lane");
    let mut found: Vec<(u32, u32)> = lane.held.iter().map(|h| (h.pass, h.sample)).collect();
    found.sort_unstable();
    assert_eq!(found, ran, "each checkpoint in the block that ran it, and in no other");
    assert_eq!(lane.checkpoints, 8);
    assert!(lane.held.iter().all(|h| h.checkpoints == 1 && h.checkpoint_us > 0.0), "{:?}", lane.held);
    assert_eq!(lane.blocks, 24);
    let without = lane.without.expect("figures without the held blocks");
    assert_eq!((lane.all.blocks, without.blocks), (24, 16));
    assert!(lane.cost_us_per_op > 0.0 && lane.mean_us.is_some_and(|m| m > 0.0), "{lane:?}");
    let receipt = std::fs::read_to_string(dir.join("receipt.md")).expect("receipt");
    assert!(receipt.contains("## WAL checkpoints"), "{receipt}");
    assert!(receipt.contains("| `wal` | 8 of 24 | 8 |"), "{receipt}");
    let _ = std::fs::remove_dir_all(&dir);
    true
}
