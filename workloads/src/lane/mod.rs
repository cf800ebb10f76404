//! hopscope's own lanes on the public harness: the inline statement, the
//! floor writer, the reference writer and the peers, each a
//! [`hopscope_harness::Workload`] that runs a [`Shape`] on its own database.
//!
//! [`LaneSpec`] says which code a lane runs and in which builds;
//! [`LaneSpec::lane`] turns it into the harness [`Lane`] every command runs.
//! Nothing here is private to hopscope: a user's program can declare these
//! lanes next to its own.

use hopscope_harness::{Lane, Role, Setup};

use crate::db::DbConfig;
use crate::error::{ParseError, RunError};
use crate::handoff::{Handoff, HandoffOptions, HandoffWorkload};
use crate::knobs::Knobs;
use crate::shape::Shape;
use crate::worker::WRITER_ROLE;

mod hook;
mod name;
mod open;
mod reference;
mod spec;
mod target;

pub use name::{LaneName, StandardLane};
pub use spec::{Builds, INLINE_HOOK, LaneKind, LaneSpec, WRITER_HOOK};

#[cfg(feature = "peers")]
pub(crate) use hook::unpaired;
#[cfg(feature = "peers")]
pub(crate) use target::Target;

impl LaneSpec {
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

    /// The hop table a run of `lanes` declares: the reference writer's,
    /// group commit's hops included, when one of them groups commits; the
    /// harness's standard table otherwise (`None`).
    pub fn hops_for(lanes: &[LaneSpec]) -> Option<hopscope_probe::HopTable> {
        lanes.iter().any(LaneSpec::groups_commits).then(crate::writer::writer_hops)
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
