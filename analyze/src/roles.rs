//! Lanes by role: which trace lane is the baseline, the floor, the subject
//! clean and probed, the peers and the A/B arms, read from the roles the
//! trace header records (or, for traces written before roles, from
//! hopscope's fixed lane names).

use hopscope_probe::{LaneFact, LaneInfo, Role, RunFact, RunFacts, TraceHeader, Variant};

use crate::join::LaneOps;

/// The role and build of every lane of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    lanes: Vec<LaneInfo>,
    /// Whether each lane's operations carry marks (from the join).
    marked: Vec<bool>,
    /// Whether each lane is a placement twin (`LaneFact::TwinOf`): read
    /// beside the lane it repeats, never for its role.
    twins: Vec<bool>,
}

impl Roles {
    /// The roles of the lanes `header` declares; `joined` (from [`crate::join::join`])
    /// says which lanes carry marks, which decides the build of a lane that
    /// declares none.
    pub fn of(header: &TraceHeader, joined: &[LaneOps]) -> Roles {
        let lanes: Vec<LaneInfo> = (0..header.lanes.len()).filter_map(|i| header.lane_info(i as u16)).collect();
        let marked =
            (0..lanes.len()).map(|i| joined.iter().any(|o| usize::from(o.lane) == i && !o.hops.is_empty())).collect();
        let twins = header
            .lanes
            .iter()
            .map(|name| header.run.fact(&RunFact::Lane(name.clone(), LaneFact::TwinOf)).is_some())
            .collect();
        Roles { lanes, marked, twins }
    }

    /// Whether lane `lane` is a placement twin: another placement's run of
    /// a program lane, which no role lookup returns.
    pub fn is_twin(&self, lane: usize) -> bool {
        self.twins.get(lane).copied().unwrap_or(false)
    }

    /// The declaration of lane `lane`.
    pub fn info(&self, lane: usize) -> Option<&LaneInfo> {
        self.lanes.get(lane)
    }

    /// The build lane `lane` ran: as declared, or, for a lane with one build,
    /// probed when its operations carry marks.
    pub fn variant(&self, lane: usize) -> Option<Variant> {
        let info = self.lanes.get(lane)?;
        Some(info.variant.unwrap_or(if self.marked.get(lane).copied().unwrap_or(false) {
            Variant::Probed
        } else {
            Variant::Clean
        }))
    }

    /// Lanes of `role` in trace order.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = usize> + '_ {
        self.lanes.iter().enumerate().filter(move |(i, l)| l.role == role && !self.is_twin(*i)).map(|(i, _)| i)
    }

    /// The first lane of `role` in build `variant`.
    pub fn find(&self, role: Role, variant: Variant) -> Option<usize> {
        self.with_role(role).find(|&i| self.variant(i) == Some(variant))
    }

    /// The first lane of `role` built `prefer`, else in the other build.
    pub fn prefer(&self, role: Role, prefer: Variant) -> Option<usize> {
        self.find(role, prefer).or_else(|| self.with_role(role).next())
    }

    /// Whether any lane stands for the lane arithmetic's references.
    pub fn has_references(&self) -> bool {
        self.lanes.iter().any(|l| matches!(l.role, Role::Baseline | Role::Floor))
    }
}
