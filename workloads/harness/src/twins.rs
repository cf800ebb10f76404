//! Placement twins: each program lane again under every further placement
//! the run asks for (`--placement same-core,unpinned`), side by side in
//! the same rounds.
//!
//! Where a program's threads run changes what it does, not only how fast:
//! a batching writer pinned with its eight producers to one core gathered
//! batches of ~8, unpinned ~2.2, and one producer's write ran 3.2× faster
//! pinned. A twin lets the receipt show both behaviours from one run,
//! block beside block, instead of two runs an hour apart.
//!
//! Only the program's lanes (the subject and its peers) get twins: the
//! references (inline, floor, the bare hand-off) price the boundary under
//! the run's first placement, and every twin is declared a peer, so the
//! lane arithmetic keeps one lane of each role.

use hopscope_probe::Role;

use crate::lane::Lane;
use crate::placement::Placement;

/// The name of `lane`'s twin under `placement`: `unpinned/writer`.
pub fn name(lane: &str, placement: Placement) -> String {
    format!("{placement}/{lane}")
}

/// Append to `lanes` a twin of every program lane under each of
/// `placements`, in that order. A lane that declared a placement of its
/// own keeps it and gets none.
pub(crate) fn add(lanes: &mut Vec<Lane>, placements: &[Placement]) {
    let originals: Vec<Lane> = lanes
        .iter()
        .filter(|l| matches!(l.role, Role::Subject | Role::Peer) && l.placement.is_none())
        .cloned()
        .collect();
    for &placement in placements {
        for lane in &originals {
            let twin = lane.clone().renamed(&name(&lane.name, placement)).placement(placement);
            lanes.push(twin.placement_twin_of(&lane.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Workload;

    struct Nothing;
    impl Workload for Nothing {
        fn run(&self, _: usize, ops: crate::Ops) -> Result<u64, crate::BoxError> {
            Ok(ops.map(|_| 1).sum())
        }
    }

    fn lane(role: Role, name: &str) -> Lane {
        Lane::new(role, name, |_| Ok::<_, crate::BoxError>(Nothing))
    }

    #[test]
    fn program_lanes_get_a_twin_per_further_placement_references_none() {
        let mut lanes = vec![
            lane(Role::Baseline, "inline"),
            lane(Role::Floor, "floor"),
            lane(Role::Subject, "writer"),
            lane(Role::Peer, "pool"),
            lane(Role::Peer, "pinned").placement(Placement::DifferentCores),
        ];
        add(&mut lanes, &[Placement::Unpinned]);
        let names: Vec<&str> = lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["inline", "floor", "writer", "pool", "pinned", "unpinned/writer", "unpinned/pool"]);
        let twin = &lanes[5];
        assert_eq!(twin.role, Role::Peer, "one subject stays");
        assert_eq!(twin.placement, Some(Placement::Unpinned));
        assert_eq!(twin.twin_of.as_deref(), Some("writer"));
        assert!(twin.check().is_ok(), "its name is a lane name: {:?}", twin.check());
    }
}
