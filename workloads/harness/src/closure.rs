//! Closure lanes: a lane made of closures over a state `S` (a connection,
//! the user's writer handle), the [`Workload`] behind it, and the
//! constructors of [`Lane`] that make one, one per role.

use std::sync::{Arc, Mutex, PoisonError};

use hopscope_probe::Role;

use crate::hand_in::HandIn;
use crate::lane::{Build, Lane, Opener};
use crate::placement::Placement;
use crate::workload::{BoxError, Op, Ops, Reported, Setup, Workload};

type SetupFn<S> = Arc<dyn Fn(&Setup) -> Result<S, BoxError> + Send + Sync>;
type StateFn<S, T> = Arc<dyn Fn(&mut S) -> Result<T, BoxError> + Send + Sync>;
type OpFn<S> = Arc<dyn Fn(&mut S, Op) -> Result<u64, BoxError> + Send + Sync>;
type HandInFn<S> = Arc<dyn Fn(&mut S, &HandIn) -> Result<(), BoxError> + Send + Sync>;
/// A job for one of the state's own threads.
pub type ThreadJob = Box<dyn FnOnce() + Send + 'static>;
type OnThreadFn<S> = Arc<dyn Fn(&mut S, ThreadJob) -> Result<(), BoxError> + Send + Sync>;

/// The closure constructors of [`Lane`], one per role.
macro_rules! role_constructors {
    ($($(#[$doc:meta])* $name:ident => $role:expr;)+) => {
        impl Lane {
            $(
                $(#[$doc])*
                pub fn $name<S, R, E1, E2>(
                    name: &str,
                    setup: impl Fn(&Setup) -> Result<S, E1> + Send + Sync + 'static,
                    op: impl Fn(&mut S, Op) -> Result<R, E2> + Send + Sync + 'static,
                ) -> ClosureLane<S>
                where
                    S: Send + 'static,
                    R: Reported,
                    E1: Into<BoxError>,
                    E2: Into<BoxError>,
                {
                    ClosureLane::new($role, name, setup, op)
                }
            )+
        }
    };
}

role_constructors! {
    /// The same work without the thread boundary (the insert on the calling
    /// thread): `setup` opens the lane's state once per build, `op` runs one
    /// operation on it. See [`ClosureLane`] for resets and counts.
    baseline => Role::Baseline;
    /// A bare writer thread with none of the subject's machinery (what any
    /// thread boundary costs); like [`Lane::baseline`] otherwise.
    floor => Role::Floor;
    /// A bare turn passed to a thread and back with no work on either side
    /// (what the boundary's context switches cost alone): `boundary −
    /// handoff` is the floor's machinery. Like [`Lane::baseline`] otherwise.
    handoff => Role::Handoff;
    /// The code under study (your writer); like [`Lane::baseline`]
    /// otherwise. Give it a probed build ([`ClosureLane::probed`] or
    /// `probed_by`) for slices and the observer effect.
    subject => Role::Subject;
    /// Another implementation of the subject's job, compared with it.
    peer => Role::Peer;
}

/// A lane made of closures over a state `S` (a connection, the user's
/// writer handle): a set-up, one operation, and optionally a reset before
/// each block, a count to check after it, and a hand-in for the state's
/// own threads. Converts into a [`Lane`] (every [`Lane`] method is here too).
pub struct ClosureLane<S> {
    lane: Lane,
    setup: SetupFn<S>,
    op: OpFn<S>,
    reset: Option<StateFn<S, ()>>,
    count: Option<StateFn<S, u64>>,
    hand_in: Option<HandInFn<S>>,
    /// The state's own threads: role, and how to run a job on it.
    on_threads: Vec<(String, OnThreadFn<S>)>,
}

impl<S: Send + 'static> ClosureLane<S> {
    pub(crate) fn new<R, E1, E2>(
        role: Role,
        name: &str,
        setup: impl Fn(&Setup) -> Result<S, E1> + Send + Sync + 'static,
        op: impl Fn(&mut S, Op) -> Result<R, E2> + Send + Sync + 'static,
    ) -> ClosureLane<S>
    where
        R: Reported,
        E1: Into<BoxError>,
        E2: Into<BoxError>,
    {
        ClosureLane {
            lane: Lane::declared(role, name, Vec::new()),
            setup: Arc::new(move |s| setup(s).map_err(Into::into)),
            op: Arc::new(move |state, o| match op(state, o) {
                Ok(r) => Ok(r.reported()),
                Err(e) => Err(e.into()),
            }),
            reset: None,
            count: None,
            hand_in: None,
            on_threads: Vec::new(),
        }
    }

    /// The state has a thread of its own, role `role` (its writer), and
    /// `run` runs a job on it (e.g. `|w, job| w.on_writer_thread(job)`).
    /// The harness then does the rest: after set-up it prepares the thread
    /// ([`ThreadInit::enter`](crate::ThreadInit::enter): a mark buffer, its
    /// core, the build's dispatcher), and around every block it has the
    /// thread hand its marks in. Declares the role ([`Lane::threads`]).
    pub fn on_thread<E: Into<BoxError>>(
        mut self,
        role: &str,
        run: impl Fn(&mut S, ThreadJob) -> Result<(), E> + Send + Sync + 'static,
    ) -> Self {
        self.on_threads.push((role.to_owned(), Arc::new(move |s, job| run(s, job).map_err(Into::into))));
        let mut roles = self.lane.threads.clone();
        if !roles.iter().any(|r| r == role) {
            roles.push(role.to_owned());
        }
        self.lane.threads = roles;
        self
    }

    /// Before every block, outside its measured region (empty the table).
    pub fn reset<E: Into<BoxError>>(mut self, reset: impl Fn(&mut S) -> Result<(), E> + Send + Sync + 'static) -> Self {
        self.reset = Some(Arc::new(move |s| reset(s).map_err(Into::into)));
        self
    }

    /// After every block: what the state holds since the last reset (rows
    /// in the table), checked against what the operations reported.
    pub fn count<E: Into<BoxError>>(
        mut self,
        count: impl Fn(&mut S) -> Result<u64, E> + Send + Sync + 'static,
    ) -> Self {
        self.count = Some(Arc::new(move |s| count(s).map_err(Into::into)));
        self
    }

    /// Have the state's own threads call [`HandIn::collect`] (e.g. send a
    /// closure to the writer thread that calls it).
    pub fn hand_in<E: Into<BoxError>>(
        mut self,
        hand_in: impl Fn(&mut S, &HandIn) -> Result<(), E> + Send + Sync + 'static,
    ) -> Self {
        self.hand_in = Some(Arc::new(move |s, h| hand_in(s, h).map_err(Into::into)));
        self
    }

    /// See [`Lane::threads`].
    pub fn threads(mut self, roles: &[&str]) -> Self {
        self.lane = self.lane.threads(roles);
        self
    }

    /// See [`Lane::placement`].
    pub fn placement(mut self, placement: Placement) -> Self {
        self.lane = self.lane.placement(placement);
        self
    }

    /// See [`Lane::describe`].
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.lane = self.lane.describe(description);
        self
    }

    /// See [`Lane::per_op`].
    pub fn per_op(mut self, reported: u64) -> Self {
        self.lane = self.lane.per_op(reported);
        self
    }

    /// See [`Lane::probed`].
    pub fn probed(self, probed: impl Into<Lane>) -> Lane {
        Lane::from(self).probed(probed)
    }

    /// See [`Lane::probed_by`].
    #[cfg(feature = "tracing")]
    pub fn probed_by(self, dispatch: tracing::Dispatch) -> Lane {
        Lane::from(self).probed_by(dispatch)
    }

    /// See [`Lane::probed_by_spans`].
    #[cfg(feature = "tracing")]
    pub fn probed_by_spans(self, spans: impl Into<crate::span_probe::SpanProbe>) -> Lane {
        Lane::from(self).probed_by_spans(spans)
    }

    /// See [`Lane::probed_by_sqlite`].
    #[cfg(feature = "sqlite")]
    pub fn probed_by_sqlite(self, probe: hopscope_probe::sqlite::SqliteProbe) -> Lane {
        Lane::from(self).probed_by_sqlite(probe)
    }
}

impl<S: Send + 'static> From<ClosureLane<S>> for Lane {
    fn from(c: ClosureLane<S>) -> Lane {
        let ClosureLane { mut lane, setup, op, reset, count, hand_in, on_threads } = c;
        let opener: Opener = Arc::new(move |s| {
            let mut state = setup(s)?;
            for (_, run) in &on_threads {
                let init = s.thread_init();
                run(&mut state, Box::new(move || init.enter()))?;
            }
            Ok(Box::new(ClosureWorkload {
                state: Mutex::new(state),
                op: op.clone(),
                reset: reset.clone(),
                count: count.clone(),
                hand_in: hand_in.clone(),
                on_threads: on_threads.clone(),
            }) as Box<dyn Workload>)
        });
        lane.builds = vec![Build::new(opener, None)];
        lane.one_state = true;
        lane
    }
}

/// The [`Workload`] of a [`ClosureLane`]: its state behind a lock taken
/// once per block (never per operation).
struct ClosureWorkload<S> {
    state: Mutex<S>,
    op: OpFn<S>,
    reset: Option<StateFn<S, ()>>,
    count: Option<StateFn<S, u64>>,
    hand_in: Option<HandInFn<S>>,
    on_threads: Vec<(String, OnThreadFn<S>)>,
}

impl<S> ClosureWorkload<S> {
    fn state(&self) -> std::sync::MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S: Send + 'static> Workload for ClosureWorkload<S> {
    fn before_block(&self, _block: &crate::BlockInfo) -> Result<(), BoxError> {
        match &self.reset {
            Some(reset) => reset(&mut self.state()),
            None => Ok(()),
        }
    }

    fn run(&self, _caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let mut state = self.state();
        let op = &*self.op;
        let mut reported = 0u64;
        for o in ops {
            reported = reported.saturating_add(op(&mut state, o)?);
        }
        Ok(reported)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        let mut state = self.state();
        for (role, run) in &self.on_threads {
            let (hand_in, role) = (hand_in.clone(), role.clone());
            run(&mut state, Box::new(move || hand_in.collect(&role)))?;
        }
        match &self.hand_in {
            Some(f) => f(&mut state, hand_in),
            None => Ok(()),
        }
    }

    fn count(&self) -> Result<Option<u64>, BoxError> {
        match &self.count {
            Some(count) => count(&mut self.state()).map(Some),
            None => Ok(None),
        }
    }
}
