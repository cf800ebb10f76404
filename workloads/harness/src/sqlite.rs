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

use std::sync::{Mutex, PoisonError};

use hopscope_probe::sqlite::{SqliteProbe, StatementCounts, Unpaired};

use crate::hand_in::HandIn;
use crate::lane::{Lane, Opener};
use crate::lane_names::SQLITE_ROLE;
use crate::workload::{BlockInfo, BoxError, Ops, Setup, Workload};

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
        let statements = probe.clone().map(HookedStatements::new);
        Ok(Box::new(Statements { inner, statements }) as Box<dyn Workload>)
    })
}

/// A lane's workload with its statements marked by SQLite's trace hook.
struct Statements {
    inner: Box<dyn Workload>,
    /// `None` in the clean build, which still hands its (empty) role in.
    statements: Option<HookedStatements>,
}

impl Workload for Statements {
    fn before_block(&self, block: &BlockInfo) -> Result<(), BoxError> {
        self.inner.before_block(block)?;
        if let Some(statements) = &self.statements {
            statements.begin();
        }
        Ok(())
    }

    fn run(&self, caller: usize, ops: Ops) -> Result<u64, BoxError> {
        match &self.statements {
            Some(statements) => self.inner.run(caller, ops.marked_by(statements.probe().clone())),
            None => self.inner.run(caller, ops),
        }
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        self.inner.hand_in(hand_in)?;
        match &self.statements {
            Some(statements) => statements.end(hand_in, SQLITE_ROLE)?,
            None => hand_in.give(SQLITE_ROLE, Vec::new(), 0),
        }
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

/// A hook-probed lane's statements, a block at a time: what came before a
/// block (set-up, pragmas, the workload's own preparation) is dropped, and
/// after it the statements are checked to have paired with the block's
/// operations ([`SqliteProbe::unmatched`]), then handed in. For a workload
/// of your own that marks its statements through a probe of its own.
#[derive(Debug)]
pub struct HookedStatements {
    probe: SqliteProbe,
    /// The probe's counts when the block started.
    before: Mutex<StatementCounts>,
}

impl HookedStatements {
    /// Blocks of `probe`'s statements.
    pub fn new(probe: SqliteProbe) -> HookedStatements {
        let before = Mutex::new(probe.counts());
        HookedStatements { probe, before }
    }

    /// The probe.
    pub fn probe(&self) -> &SqliteProbe {
        &self.probe
    }

    /// Before a block: nothing marked or announced so far is its.
    pub fn begin(&self) {
        let _ = self.probe.collector().drain();
        let _ = self.probe.unmatched(self.probe.counts());
        *self.before.lock().unwrap_or_else(PoisonError::into_inner) = self.probe.counts();
    }

    /// After a block: refuse it when its statements did not pair with its
    /// operations, else hand their marks in as thread role `role`.
    pub fn end(&self, hand_in: &HandIn, role: &str) -> Result<(), Unpaired> {
        let before = *self.before.lock().unwrap_or_else(PoisonError::into_inner);
        self.probe.unmatched(before)?;
        let drained = self.probe.collector().drain();
        let dropped = drained.dropped();
        hand_in.give(role, drained.threads.into_iter().flat_map(|t| t.marks).collect(), dropped);
        Ok(())
    }
}
