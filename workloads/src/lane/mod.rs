//! hopscope's own lanes on the public harness: the inline statement, the
//! floor writer, the reference writer and the peers, each a
//! [`hopscope_harness::Workload`] that runs a [`Shape`] on its own database.
//!
//! [`LaneSpec`] says which code a lane runs and in which builds;
//! [`LaneSpec::lane`] turns it into the harness [`Lane`] every command runs.
//! Nothing here is private to hopscope: a user's program can declare these
//! lanes next to its own.

use std::fmt;

use hopscope_harness::{Lane, Placement, Role, Setup};

use crate::db::DbConfig;
use crate::error::{ParseError, RunError};
use crate::handoff::{Handoff, HandoffOptions, HandoffWorkload};
use crate::knobs::{BlobHandover, Knobs, Wait};
use crate::peers::Peer;
use crate::shape::Shape;
use crate::worker::WRITER_ROLE;

mod hook;
mod name;
mod open;

pub use name::{LaneName, StandardLane};

#[cfg(feature = "peers")]
pub(crate) use hook::unpaired;
#[cfg(feature = "peers")]
pub(crate) use open::Target;

/// The reference writer marked the way the peers are ([`LaneKind::WriterHook`]).
pub const WRITER_HOOK: &str = "writer-hook";

/// The inline statement marked the way the peers are ([`LaneKind::InlineHook`]).
pub const INLINE_HOOK: &str = "inline-hook";

/// Which code a lane runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    /// The statement on the calling thread.
    Inline,
    /// A bare turn passed to a thread and back, no statement (the
    /// boundary's switches alone).
    Handoff,
    /// The bare floor writer thread.
    Floor,
    /// The reference writer with these knobs.
    Writer(Knobs),
    /// A published crate's writer thread (needs the `peers` feature).
    Peer(Peer),
    /// The reference writer with these knobs, its probed build marked the
    /// way the peers are (the caller around the call, SQLite's trace hook
    /// around the statement): the peers' reference.
    WriterHook(Knobs),
    /// The statement on the calling thread, its probed build marked the way
    /// the peers are: the peers' baseline, against which their slices add
    /// up to their hops.
    InlineHook,
}

impl LaneKind {
    /// The role this code plays in the lane arithmetic.
    pub fn role(self) -> Role {
        match self {
            LaneKind::Inline => Role::Baseline,
            LaneKind::Handoff => Role::Handoff,
            LaneKind::Floor => Role::Floor,
            LaneKind::Writer(_) => Role::Subject,
            LaneKind::Peer(_) | LaneKind::WriterHook(_) | LaneKind::InlineHook => Role::Peer,
        }
    }
}

/// Which builds of a lane run: clean (marks compiled out), probed (every
/// hop marked), or both side by side (slices and the observer effect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builds {
    /// Only the clean build.
    Clean,
    /// Only the probed build.
    Probed,
    /// Both, as `name` and `name-probed`.
    Both,
}

impl Builds {
    fn add(self, probed: bool) -> Builds {
        match (self, probed) {
            (Builds::Clean, false) => Builds::Clean,
            (Builds::Probed, true) => Builds::Probed,
            _ => Builds::Both,
        }
    }

    fn from_probed(probed: bool) -> Builds {
        if probed { Builds::Probed } else { Builds::Clean }
    }
}

/// A lane to run: its name, its code, its builds and where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneSpec {
    /// Declared name (`inline`, `floor`, `writer`, a peer's, an arm's).
    pub name: String,
    /// What runs.
    pub kind: LaneKind,
    /// Which builds run.
    pub builds: Builds,
    /// Where the caller and the lane's own thread run.
    pub placement: Placement,
    /// How the lane's own thread and its callers wait (the floor's; the
    /// writer takes its own from its knobs).
    pub waits: (Wait, Wait),
    /// Blob hand-over this lane uses on blob shapes, overriding the shape's
    /// (so two arms of an experiment can differ in it).
    pub handover: Option<BlobHandover>,
}

impl LaneSpec {
    /// A lane named `name` running `kind` in `builds`.
    pub fn new(name: &str, kind: LaneKind, builds: Builds) -> LaneSpec {
        let (placement, waits) = match kind {
            LaneKind::Writer(knobs) | LaneKind::WriterHook(knobs) => {
                (knobs.placement, (knobs.writer_wait, knobs.caller_wait))
            }
            _ => (Placement::Unpinned, (Wait::Park, Wait::Park)),
        };
        LaneSpec { name: name.to_owned(), kind, builds, placement, waits, handover: None }
    }

    /// The standard lanes named in `names` (`inline`, `floor`, `writer`,
    /// each optionally `-probed`, `handoff`, or a peer), as
    /// [`LaneSpec::of`] makes them; a name that is none of these is refused.
    pub fn standard(names: &[&str], knobs: Knobs) -> Result<Vec<LaneSpec>, ParseError> {
        let names = names.iter().map(|n| n.parse::<LaneName>()).collect::<Result<Vec<_>, _>>()?;
        Ok(LaneSpec::of(&names, knobs))
    }

    /// The standard lanes `names`, a lane and its probed build merged into
    /// one lane with both builds; the writer lanes get `knobs`, and every
    /// lane the writer's placement and waits, so lanes differ only in the
    /// code they run.
    pub fn of(names: &[LaneName], knobs: Knobs) -> Vec<LaneSpec> {
        let mut lanes: Vec<LaneSpec> = Vec::new();
        for name in names {
            let base = name.lane.name();
            match lanes.iter_mut().find(|l| l.name == base) {
                Some(lane) => lane.builds = lane.builds.add(name.probed),
                None => lanes.push(LaneSpec {
                    placement: knobs.placement,
                    waits: (knobs.writer_wait, knobs.caller_wait),
                    ..LaneSpec::new(base, name.lane.kind(knobs), Builds::from_probed(name.probed))
                }),
            }
        }
        lanes
    }

    /// Whether this lane's writer runs requests in shared transactions
    /// (its probed build marks [`crate::GroupHops`]).
    pub fn groups_commits(&self) -> bool {
        matches!(self.kind, LaneKind::Writer(knobs) | LaneKind::WriterHook(knobs) if knobs.group_commit.is_on())
    }

    /// The hop table a run of `lanes` declares: the reference writer's,
    /// group commit's hops included, when one of them groups commits; the
    /// harness's standard table otherwise (`None`).
    pub fn hops_for(lanes: &[LaneSpec]) -> Option<hopscope_probe::HopTable> {
        lanes.iter().any(LaneSpec::groups_commits).then(crate::writer::writer_hops)
    }

    /// The shape this lane runs when the run's shape is `shape`.
    pub fn shape_for(&self, shape: Shape) -> Shape {
        match (shape, self.handover) {
            (Shape::BlobInsert { bytes, .. }, Some(handover)) => Shape::BlobInsert { bytes, handover },
            _ => shape,
        }
    }

    /// The harness lane: this code on `shape`, each build on its own
    /// database with `db`'s pragmas, its table emptied before every block
    /// and its rows checked after it.
    pub fn lane(&self, shape: Shape, db: DbConfig) -> Result<Lane, RunError> {
        let shape = self.shape_for(shape);
        if !shape.single_statement() && matches!(self.kind, LaneKind::Floor | LaneKind::Peer(_) | LaneKind::InlineHook)
        {
            return Err(RunError::Plan(format!("lane `{}`: runs single statements, not {shape}", self.name)));
        }
        if self.groups_commits() && !shape.single_statement() {
            return Err(RunError::Plan(format!(
                "lane `{}`: group commit shares transactions between single statements, not {shape}",
                self.name
            )));
        }
        if matches!(self.kind, LaneKind::Peer(_)) && !crate::peers::BUILT {
            return Err(crate::peers::not_built(&self.name));
        }
        if self.kind == LaneKind::Handoff {
            return self.handoff_lane(shape);
        }
        let spec = self.clone();
        let open = move |probed: bool| {
            let spec = spec.clone();
            move |setup: &Setup| open::open(&spec, setup, shape, db, probed)
        };
        let role = self.kind.role();
        let mut lane = match self.builds {
            Builds::Clean => Lane::new(role, &self.name, open(false)),
            Builds::Probed => Lane::new(role, &self.name, open(true)).probed_only(),
            Builds::Both => Lane::new(role, &self.name, open(false)).probed(Lane::new(role, &self.name, open(true))),
        };
        lane = lane.describe(self.to_string()).placement(self.placement).per_op(shape.rows_per_op());
        let probed_peer = matches!(self.kind, LaneKind::Peer(_)) && self.builds != Builds::Clean;
        if matches!(self.kind, LaneKind::Floor | LaneKind::Writer(_) | LaneKind::WriterHook(_)) || probed_peer {
            lane = lane.threads(&[WRITER_ROLE]);
        }
        if matches!(self.kind, LaneKind::WriterHook(_)) {
            lane = lane.peers_reference();
        }
        let hooked = matches!(self.kind, LaneKind::Peer(_) | LaneKind::WriterHook(_) | LaneKind::InlineHook);
        if hooked && self.builds != Builds::Clean {
            lane = lane.hooks_statements();
        }
        if self.kind == LaneKind::InlineHook {
            lane = lane.peers_baseline();
            if self.builds != Builds::Clean {
                lane = lane.threads(&[hopscope_harness::SQLITE_ROLE]);
            }
        }
        if shape.callers() > 1 {
            lane = lane.callers(shape.callers());
        }
        Ok(lane)
    }
}

impl LaneSpec {
    /// The handoff lane: a clean build, one caller, one turn per operation
    /// of a single-statement shape (so its µs per op sits beside theirs).
    fn handoff_lane(&self, shape: Shape) -> Result<Lane, RunError> {
        if !shape.single_statement() || shape.callers() > 1 || shape.rows_per_op() != 1 {
            return Err(RunError::Plan(format!(
                "lane `{}`: a handoff stands beside one caller's single statements, not {shape}",
                self.name
            )));
        }
        if self.builds != Builds::Clean {
            return Err(RunError::Plan(format!("lane `{}`: the handoff lane has no probed build", self.name)));
        }
        let options = HandoffOptions {
            pin: self.placement.worker_core(),
            worker_wait: self.waits.0.on(self.placement),
            caller_wait: self.waits.1.on(self.placement),
        };
        let open = move |_: &Setup| Handoff::spawn(options).map(HandoffWorkload);
        Ok(Lane::new(Role::Handoff, &self.name, open)
            .describe(self.to_string())
            .placement(self.placement)
            .threads(&[WRITER_ROLE]))
    }
}

impl fmt::Display for LaneSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LaneKind::Inline => write!(f, "inline (placement={})", self.placement),
            LaneKind::Handoff => write!(
                f,
                "handoff: a bare turn, park/unpark (thread-wait={} caller-wait={} placement={})",
                self.waits.0, self.waits.1, self.placement
            ),
            LaneKind::Floor => write!(
                f,
                "floor writer (floor-wait={} client-wait={} placement={})",
                self.waits.0, self.waits.1, self.placement
            ),
            LaneKind::Writer(knobs) => {
                write!(f, "reference writer ({})", Knobs { placement: self.placement, ..*knobs })
            }
            LaneKind::Peer(peer) => {
                write!(f, "peer {} (placement={}; {})", peer.version(), self.placement, peer.waits())
            }
            LaneKind::WriterHook(knobs) => write!(
                f,
                "reference writer marked as the peers are: the caller around the call, SQLite's trace hook around \
                 the statement ({})",
                Knobs { placement: self.placement, ..*knobs }
            ),
            LaneKind::InlineHook => write!(
                f,
                "inline statement marked as the peers are: enter and done around it, SQLite's trace hook around \
                 the statement, all on the caller (placement={})",
                self.placement
            ),
        }
    }
}
