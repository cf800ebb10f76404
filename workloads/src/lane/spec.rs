//! The lane vocabulary: which code a lane runs ([`LaneKind`]), in which
//! builds ([`Builds`]), a lane to run with its name, placement and waits
//! ([`LaneSpec`]), and the names of the hooked reference lanes. A leaf below
//! the lanes' opening, naming and hooks, so each of them reads a spec
//! without the code that runs it.

use std::fmt;

use hopscope_harness::{Placement, Role};

use crate::knobs::{BlobHandover, Knobs, Wait};
use crate::peers::Peer;
use crate::shape::Shape;

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
    pub(super) fn add(self, probed: bool) -> Builds {
        match (self, probed) {
            (Builds::Clean, false) => Builds::Clean,
            (Builds::Probed, true) => Builds::Probed,
            _ => Builds::Both,
        }
    }

    pub(super) fn from_probed(probed: bool) -> Builds {
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

    /// Whether this lane's writer runs requests in shared transactions
    /// (its probed build marks [`crate::GroupHops`]).
    pub fn groups_commits(&self) -> bool {
        matches!(self.kind, LaneKind::Writer(knobs) | LaneKind::WriterHook(knobs) if knobs.group_commit.is_on())
    }

    /// The shape this lane runs when the run's shape is `shape`.
    pub fn shape_for(&self, shape: Shape) -> Shape {
        match (shape, self.handover) {
            (Shape::BlobInsert { bytes, .. }, Some(handover)) => Shape::BlobInsert { bytes, handover },
            _ => shape,
        }
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
