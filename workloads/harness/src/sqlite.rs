//! Lanes probed through SQLite's own trace hook (feature `sqlite`): a
//! writer the user cannot edit (a published crate, a library's pool) is
//! sliced by the statements it runs.
//!
//! [`Lane::probed_by_sqlite`] gives a lane of one build a probed build.
//! Its setup finds the probe in [`Setup::sqlite_probe`] and attaches it to
//! the connection the writer uses (through whatever the crate offers to
//! reach it: a closure on its thread, a raw handle). The harness marks each
//! operation on the caller, `enter` when it is handed out and `done` when
//! the next is asked for, and announces it to the probe, which gives it to
//! the next statement started on a thread with no operation of its own
//! ([`SqliteProbe::in_order`]): one statement per operation, calls
//! serialised (one caller, or a lock the crate takes in call order). After
//! each block the statements' marks, from whatever threads ran them, go in
//! as the lane's thread role [`SQLITE_ROLE`].

use hopscope_probe::sqlite::{SqliteProbe, StatementCounts};

use crate::hand_in::HandIn;
use crate::lane::{Lane, Opener};
use crate::workload::{BlockInfo, BoxError, Ops, Setup, Workload};

/// The thread role a lane probed by SQLite's trace hook hands its
/// statements' marks in as.
pub const SQLITE_ROLE: &str = hopscope_probe::STATEMENT_ROLE;

impl Lane {
    /// Run this lane clean and probed through SQLite's own trace hook:
    /// the probed build's setup attaches `probe` (made with
    /// [`SqliteProbe::in_order`], marking statements' starts and ends as
    /// the lane's hops, e.g. `woke` and `executed`) to the writer's
    /// connection, found in [`Setup::sqlite_probe`]; the harness marks
    /// and announces each operation. For a lane of one build.
    pub fn probed_by_sqlite(mut self, probe: SqliteProbe) -> Lane {
        match self.builds.as_mut_slice() {
            [clean] => {
                clean.variant = Some(hopscope_probe::Variant::Clean);
                let mut probed = clean.clone();
                clean.opener = statements(clean.opener.clone(), None);
                probed.variant = Some(hopscope_probe::Variant::Probed);
                probed.opener = statements(probed.opener.clone(), Some(probe));
                self.builds.push(probed);
                self.hooks_statements = true;
                if !self.threads.iter().any(|t| t == SQLITE_ROLE) {
                    self.threads.push(SQLITE_ROLE.to_owned());
                }
            }
            _ => self.problems.push("`probed_by_sqlite` is given to a lane with one build".into()),
        }
        self
    }
}

/// `opener`, its workload wrapped: the probe (in the probed build) handed
/// to the setup, its operations marked, its statements' marks handed in.
fn statements(opener: Opener, probe: Option<SqliteProbe>) -> Opener {
    std::sync::Arc::new(move |setup: &Setup| {
        let setup = Setup { sqlite: probe.clone(), ..setup.clone() };
        let inner = opener(&setup)?;
        Ok(Box::new(Statements { inner, probe: probe.clone(), before: Default::default() }) as Box<dyn Workload>)
    })
}

/// A lane's workload with its statements marked by SQLite's trace hook.
struct Statements {
    inner: Box<dyn Workload>,
    /// `None` in the clean build, which still hands its (empty) role in.
    probe: Option<SqliteProbe>,
    /// The probe's counts when the block started.
    before: std::sync::Mutex<StatementCounts>,
}

impl Workload for Statements {
    fn before_block(&self, block: &BlockInfo) -> Result<(), BoxError> {
        self.inner.before_block(block)?;
        if let Some(probe) = &self.probe {
            // Statements outside blocks (the setup's, the workload's own
            // before the block) are no block's, nor is anything left
            // announced.
            let _ = probe.collector().drain();
            let _ = probe.unmatched(probe.counts());
            *self.before.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = probe.counts();
        }
        Ok(())
    }

    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError> {
        match &self.probe {
            Some(probe) => self.inner.run(caller, ops.marked_by(probe.clone())),
            None => self.inner.run(caller, ops),
        }
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        self.inner.hand_in(hand_in)?;
        if let Some(probe) = &self.probe {
            let before = *self.before.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            probe.unmatched(before)?;
        }
        let (marks, dropped) = match &self.probe {
            Some(probe) => {
                let drained = probe.collector().drain();
                let dropped = drained.dropped();
                (drained.threads.into_iter().flat_map(|t| t.marks).collect(), dropped)
            }
            None => (Vec::new(), 0),
        };
        hand_in.give(SQLITE_ROLE, marks, dropped);
        Ok(())
    }

    fn count(&self) -> Result<Option<u64>, BoxError> {
        self.inner.count()
    }
}

/// Rounds and statements per chunk the hook's cost is measured over before
/// a run (~80 k statements, tens of ms).
const HOOK_COST: (u32, u32) = (80, 500);

/// The SQLite hook's cost per statement on this host, or `None` (said on
/// stderr) when it cannot be measured.
pub(crate) fn measure_hook_cost() -> Option<hopscope_probe::HookCost> {
    hopscope_probe::sqlite::cost::measure(HOOK_COST.0, HOOK_COST.1)
        .map_err(|e| eprintln!("hopscope: {e}: the receipt states no cost for the SQLite probe"))
        .ok()
}
