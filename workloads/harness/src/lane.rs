//! Lanes: what a user declares. A lane has a name, a [`Role`] in the lane
//! arithmetic, the code it runs (closures, or a [`Workload`]), the thread
//! roles of its own that mark, and one or two builds: a lane probed and
//! clean runs twice in one process (`name` and `name-probed`), which is how
//! the observer effect is measured.
//!
//! ```no_run
//! use hopscope_harness::{Lane, Op};
//! # fn insert(db: &mut rusqlite::Connection, op: Op) -> rusqlite::Result<usize> { todo!() }
//! # fn open(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> { todo!() }
//! let inline = Lane::baseline("inline", |s| open(&s.path("inline.db")), insert);
//! ```

use std::fmt;
use std::sync::Arc;

use hopscope_probe::{LaneInfo, Role, ThreadRole, Variant};

#[cfg(feature = "sqlite")]
use crate::lane_names::SQLITE_ROLE;
use crate::lane_names::check_name;
use crate::placement::Placement;
use crate::workload::{BoxError, Setup, Workload};

/// Most caller threads one lane may use.
pub const MAX_CALLERS: usize = 256;

/// Opens one build of a lane.
pub(crate) type Opener = Arc<dyn Fn(&Setup) -> Result<Box<dyn Workload>, BoxError> + Send + Sync>;

/// One build of a lane: how it opens and which variant it is.
#[derive(Clone)]
pub(crate) struct Build {
    pub(crate) opener: Opener,
    pub(crate) variant: Option<Variant>,
    /// The dispatcher its caller and own threads mark under (lanes probed by
    /// a `tracing` layer), or `None` for no dispatcher at all.
    #[cfg(feature = "tracing")]
    pub(crate) dispatch: Option<tracing::Dispatch>,
    /// The span layer it runs under (lanes probed by
    /// [`Lane::probed_by_spans`]).
    #[cfg(feature = "tracing")]
    pub(crate) spans: Option<crate::span_probe::SpanBuild>,
}

/// A lane to run: see the [crate docs](crate).
#[derive(Clone)]
pub struct Lane {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) builds: Vec<Build>,
    pub(crate) threads: Vec<String>,
    pub(crate) callers: usize,
    pub(crate) placement: Option<Placement>,
    pub(crate) description: Option<String>,
    pub(crate) per_op: Option<u64>,
    /// The peers' reference ([`Lane::peers_reference`]).
    pub(crate) peers_reference: bool,
    /// Whether it is the peers' baseline (the inline statement marked as they are).
    pub(crate) peers_baseline: bool,
    /// Whether its probed build marks statements through SQLite's trace
    /// hook ([`Lane::hooks_statements`]).
    pub(crate) hooks_statements: bool,
    /// Mistakes in the declaration, reported when the run is checked.
    pub(crate) problems: Vec<String>,
    /// Made from closures over one state (`Lane::subject` and kin): its
    /// callers would take turns with that state, a block at a time.
    pub(crate) one_state: bool,
    /// The lane this one repeats under another placement (see
    /// [`crate::twins`]).
    pub(crate) twin_of: Option<String>,
}

impl fmt::Debug for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lane")
            .field("name", &self.name)
            .field("role", &self.role)
            .field("builds", &self.builds.iter().map(|b| b.variant).collect::<Vec<_>>())
            .field("threads", &self.threads)
            .field("callers", &self.callers)
            .finish_non_exhaustive()
    }
}

impl Lane {
    /// A lane whose code is a [`Workload`], opened by `open` (once per
    /// build, on a caller thread of the harness).
    pub fn new<W, E>(role: Role, name: &str, open: impl Fn(&Setup) -> Result<W, E> + Send + Sync + 'static) -> Lane
    where
        W: Workload,
        E: Into<BoxError>,
    {
        let opener: Opener = Arc::new(move |setup| match open(setup) {
            Ok(w) => Ok(Box::new(w) as Box<dyn Workload>),
            Err(e) => Err(e.into()),
        });
        Lane::declared(role, name, vec![Build::new(opener, None)])
    }

    pub(crate) fn declared(role: Role, name: &str, builds: Vec<Build>) -> Lane {
        Lane {
            name: name.to_owned(),
            role,
            builds,
            threads: Vec::new(),
            callers: 1,
            placement: None,
            description: None,
            per_op: None,
            peers_reference: false,
            peers_baseline: false,
            hooks_statements: false,
            problems: Vec::new(),
            one_state: false,
            twin_of: None,
        }
    }

    /// The declared name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The same lane in another role (an A/B arm, say).
    pub fn with_role(mut self, role: Role) -> Lane {
        self.role = role;
        self
    }

    /// The same lane under another name.
    pub fn renamed(mut self, name: &str) -> Lane {
        name.clone_into(&mut self.name);
        self
    }

    /// Thread roles of the lane's own threads that mark (e.g. `["writer"]`);
    /// each must hand its marks in ([`Workload::hand_in`]).
    pub fn threads(mut self, roles: &[&str]) -> Lane {
        // The role `probed_by_sqlite` declared for the statements' marks
        // stays, whichever of the two is called first.
        #[cfg(feature = "sqlite")]
        let statements = self.threads.iter().any(|t| t == SQLITE_ROLE);
        self.threads = roles.iter().map(|r| (*r).to_owned()).collect();
        #[cfg(feature = "sqlite")]
        if statements && !self.threads.iter().any(|t| t == SQLITE_ROLE) {
            self.threads.push(SQLITE_ROLE.to_owned());
        }
        self
    }

    /// Caller threads that run each block together (1 by default). Only a
    /// [`Workload`] shared between threads can use more than one.
    pub fn callers(mut self, callers: usize) -> Lane {
        self.callers = callers;
        if self.one_state && callers > 1 {
            // Each caller would hold the one state for its whole share of a
            // block: the callers would run one after another, and a writer
            // that waits for several requests would wait forever.
            self.problems.push(format!(
                "{callers} callers on a lane made of closures over one state: they would take turns with it, \
                 one caller's whole block at a time; implement `Workload` (its `run` is given each caller) for \
                 callers that run at once"
            ));
        }
        self
    }

    /// Where this lane's threads run (default: the run's placement).
    pub fn placement(mut self, placement: Placement) -> Lane {
        self.placement = Some(placement);
        self
    }

    /// Declare this lane lane `lane` run again under this lane's placement
    /// (what `--placement same-core,unpinned` makes of each program lane
    /// by itself): a peer in the lane arithmetic, read beside `lane` in
    /// the receipt's placement section. For a lane whose opener pins its
    /// own threads, so the harness cannot make its twin.
    pub fn placement_twin_of(mut self, lane: &str) -> Lane {
        self.role = Role::Peer;
        self.twin_of = Some(lane.to_owned());
        self.peers_reference = false;
        self.peers_baseline = false;
        self
    }

    /// One line for the receipt saying what the lane is.
    pub fn describe(mut self, description: impl Into<String>) -> Lane {
        self.description = Some(description.into());
        self
    }

    /// Make this peer lane the peers' reference: the subject's own code
    /// marked the way the peers are (the same hops, by the same
    /// instrument), so each peer's slices are paired against it slice by
    /// slice, round by round, where the subject's finer marks would not
    /// line up with theirs.
    pub fn peers_reference(mut self) -> Lane {
        if self.role != Role::Peer {
            self.problems.push(format!("`peers_reference` is given to a {} lane, not a peer", self.role));
        }
        self.peers_reference = true;
        self
    }

    /// Say that this lane's probed build marks statements through SQLite's
    /// trace hook (a [`hopscope_probe::sqlite::SqliteProbe`] its own code
    /// attaches; [`Lane::probed_by_sqlite`] says it itself): the run then
    /// measures the hook's cost per statement before it starts and states
    /// it beside the lane's slices.
    pub fn hooks_statements(mut self) -> Lane {
        self.hooks_statements = true;
        self
    }

    /// Make this peer lane the peers' baseline: the statement run inline
    /// on the caller, marked the way the peers are, so each peer's slices,
    /// less the baseline's, give its hop from the marks, checked against
    /// the hop its clean lane pays (`peer − inline`).
    pub fn peers_baseline(mut self) -> Lane {
        if self.role != Role::Peer {
            self.problems.push(format!("`peers_baseline` is given to a {} lane, not a peer", self.role));
        }
        self.peers_baseline = true;
        self
    }

    /// What every operation must report (rows it changes); a block whose
    /// operations report anything else stops the run.
    pub fn per_op(mut self, reported: u64) -> Lane {
        self.per_op = Some(reported);
        self
    }

    /// This lane is the clean build; `probed` (the same code built with
    /// marks on, e.g. generic over `hopscope_probe::Probe` and given
    /// `Recording`) is its probed build. Both run, as `name` and
    /// `name-probed`.
    pub fn probed(mut self, probed: impl Into<Lane>) -> Lane {
        let probed = probed.into();
        match (self.builds.as_mut_slice(), probed.builds.as_slice()) {
            ([clean], [marked]) => {
                clean.variant = Some(Variant::Clean);
                let mut marked = marked.clone();
                marked.variant = Some(Variant::Probed);
                self.builds.push(marked);
            }
            _ => self.problems.push("`probed` takes one lane with one build, given to a lane with one build".into()),
        }
        self
    }

    /// This lane's one build marks every hop: it runs once, as
    /// `name-probed`.
    pub fn probed_only(mut self) -> Lane {
        match self.builds.as_mut_slice() {
            [build] => build.variant = Some(Variant::Probed),
            _ => self.problems.push("`probed_only` is given to a lane with one build".into()),
        }
        self
    }

    /// Run the lane twice: clean (under a dispatcher that enables nothing,
    /// or the one given to [`Lane::clean_under`]) and probed under
    /// `dispatch` (a subscriber with `HopLayer`). The harness makes the variant's dispatcher the
    /// default of its caller threads; the lane's own threads take it from
    /// [`ThreadInit::enter`](crate::ThreadInit::enter).
    #[cfg(feature = "tracing")]
    pub fn probed_by(mut self, dispatch: tracing::Dispatch) -> Lane {
        match self.builds.as_mut_slice() {
            [clean] => {
                clean.variant = Some(Variant::Clean);
                // A registered dispatcher that enables nothing, not
                // `Dispatch::none()`: while a process has registered only one
                // dispatcher, tracing caches each callsite's interest from the
                // thread's default when the callsite is first hit, so a span
                // first hit by the clean build would stay disabled for the
                // probed one too. With two registered, interest covers both.
                clean
                    .dispatch
                    .get_or_insert_with(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
                let mut probed = clean.clone();
                probed.variant = Some(Variant::Probed);
                probed.dispatch = Some(dispatch);
                self.builds.push(probed);
            }
            _ => self.problems.push("`probed_by` is given to a lane with one build".into()),
        }
        self
    }

    /// Run the lane twice: clean (no span is even created) and probed by
    /// `spans`, on every thread the lane's code uses, its own writer and a
    /// runtime's workers included, with no code of yours on them: the
    /// harness switches the probe on for the probed build's blocks and
    /// drains its marks after each. Give a [`HopLayer`](hopscope_probe::HopLayer)
    /// for the Registry path or its [`HopLayer::subscriber`](hopscope_probe::HopLayer::subscriber)
    /// for the profiling path ([`SpanProbe`](crate::span_probe::SpanProbe)); the spans
    /// of one process take one path (the first span lane's: a global
    /// subscriber is installed once). The layer's hops (its span names, its
    /// table) become the trace's, and the span machinery is measured before
    /// the run and after every probed block so the receipt can state its
    /// share of each slice.
    #[cfg(feature = "tracing")]
    pub fn probed_by_spans(mut self, spans: impl Into<crate::span_probe::SpanProbe>) -> Lane {
        let (layer, path) = spans.into().into_parts();
        if let Some(problem) = layer.problem() {
            self.problems.push(format!("span layer: {problem}"));
            return self;
        }
        match self.builds.as_mut_slice() {
            [clean] => {
                clean.variant = Some(Variant::Clean);
                clean.spans = Some(crate::span_probe::SpanBuild { layer: layer.clone(), probed: false, path });
                let mut probed = clean.clone();
                probed.variant = Some(Variant::Probed);
                probed.spans = Some(crate::span_probe::SpanBuild { layer, probed: true, path });
                self.builds.push(probed);
            }
            _ => self.problems.push("`probed_by_spans` is given to a lane with one build".into()),
        }
        self
    }

    /// The span layer of this lane's probed build, if it has one.
    #[cfg(feature = "tracing")]
    pub(crate) fn span_layer(&self) -> Option<&hopscope_probe::HopLayer> {
        self.builds.iter().find_map(|b| b.spans.as_ref().map(|s| &s.layer))
    }

    /// Make this lane's spans (if any) take `path` (`--span-path`).
    #[cfg(feature = "tracing")]
    pub(crate) fn take_span_path(&mut self, path: hopscope_probe::SpanPath) {
        for spans in self.builds.iter_mut().filter_map(|b| b.spans.as_mut()) {
            spans.path = path;
        }
    }

    /// The path this lane's spans take, if it is a span lane.
    #[cfg(feature = "tracing")]
    pub(crate) fn span_path(&self) -> Option<hopscope_probe::SpanPath> {
        self.builds.iter().find_map(|b| b.spans.as_ref().map(|s| s.path))
    }

    /// The dispatcher the clean build runs under (default: one that enables
    /// no span): e.g. the subscriber the program runs with in production.
    #[cfg(feature = "tracing")]
    pub fn clean_under(mut self, dispatch: tracing::Dispatch) -> Lane {
        match self.builds.first_mut() {
            Some(clean) if clean.variant != Some(Variant::Probed) => clean.dispatch = Some(dispatch),
            _ => self.problems.push("`clean_under` needs a clean build".into()),
        }
        self
    }

    /// The trace lanes this lane runs as: `(name, build)`, the clean build
    /// first; a probed build is `name-probed`.
    pub(crate) fn trace_lanes(&self) -> impl Iterator<Item = (String, &Build)> {
        self.builds.iter().map(|build| {
            let name = match build.variant {
                Some(Variant::Probed) => format!("{}{}", self.name, LaneInfo::PROBED_SUFFIX),
                _ => self.name.clone(),
            };
            (name, build)
        })
    }

    /// Refuse a declaration the run cannot carry out, naming the lane.
    pub(crate) fn check(&self) -> Result<(), String> {
        let at = |what: String| format!("lane `{}`: {what}", self.name);
        check_name(&self.name).map_err(|e| format!("lane name {e}"))?;
        if let Some(problem) = self.problems.first() {
            return Err(at(problem.clone()));
        }
        if !(1..=MAX_CALLERS).contains(&self.callers) {
            return Err(at(format!("{} callers (1 to {MAX_CALLERS})", self.callers)));
        }
        for (i, role) in self.threads.iter().enumerate() {
            check_name(role).map_err(|e| at(format!("thread role {e}")))?;
            if !ThreadRole::is_lane_role(role) {
                return Err(at(format!("thread role `{role}` is reserved for the harness's own threads")));
            }
            if self.threads[..i].contains(role) {
                return Err(at(format!("thread role `{role}` is declared twice")));
            }
        }
        Ok(())
    }
}

impl Build {
    pub(crate) fn new(opener: Opener, variant: Option<Variant>) -> Build {
        Build {
            opener,
            variant,
            #[cfg(feature = "tracing")]
            dispatch: None,
            #[cfg(feature = "tracing")]
            spans: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::closure::ClosureLane;

    fn counter() -> ClosureLane<u64> {
        Lane::subject(
            "counter",
            |_s| Ok::<_, BoxError>(0u64),
            |n: &mut u64, _op| {
                *n += 1;
                Ok::<_, BoxError>(())
            },
        )
    }

    #[test]
    fn a_lane_probed_by_a_second_build_runs_as_two_trace_lanes() {
        let lane = counter().probed(counter());
        let names: Vec<(String, Option<Variant>)> = lane.trace_lanes().map(|(n, b)| (n, b.variant)).collect();
        assert_eq!(
            names,
            [("counter".to_owned(), Some(Variant::Clean)), ("counter-probed".to_owned(), Some(Variant::Probed))]
        );
        let single = Lane::from(counter());
        assert_eq!(single.trace_lanes().map(|(n, b)| (n, b.variant)).collect::<Vec<_>>(), [("counter".into(), None)]);
    }

    #[test]
    fn bad_names_and_reserved_roles_are_refused_naming_the_lane() {
        assert!(check_name("my-writer_2").is_ok());
        assert!(check_name("naive/cold").is_ok());
        for bad in ["", "a b", "<img>", "a.b", "/abs", "a//b", "x/", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        let err = Lane::from(counter()).threads(&["caller"]).check().unwrap_err();
        assert!(err.contains("lane `counter`") && err.contains("reserved"), "{err}");
        let err = Lane::from(counter()).threads(&["w", "w"]).check().unwrap_err();
        assert!(err.contains("twice"), "{err}");
        let err = Lane::from(counter()).probed(counter().probed(counter())).check().unwrap_err();
        assert!(err.contains("probed"), "{err}");
    }
}
