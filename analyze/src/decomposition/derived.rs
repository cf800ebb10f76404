//! The lane arithmetic of a decomposition: hop, boundary (switches and
//! machinery), library, and the observer effect, each paired by round.

use std::collections::BTreeMap;

use hopscope_probe::Role;

use super::{Derived, ObserverEffect};
use crate::lanes::{self, LaneBlocks};

/// The lane arithmetic from the lanes that stand for each role.
pub(super) struct References<'a> {
    pub(super) subject: &'a LaneBlocks,
    pub(super) baseline: &'a LaneBlocks,
    pub(super) floor: Option<&'a LaneBlocks>,
    pub(super) handoff: Option<&'a LaneBlocks>,
}

pub(super) fn derive(r: References<'_>) -> Option<Derived> {
    let References { subject, baseline, floor, handoff } = r;
    let mut lanes = BTreeMap::from([
        (Role::Subject.name().to_owned(), subject.name.clone()),
        (Role::Baseline.name().to_owned(), baseline.name.clone()),
    ]);
    for (role, lane) in [(Role::Floor, floor), (Role::Handoff, handoff)] {
        if let Some(lane) = lane {
            lanes.insert(role.name().to_owned(), lane.name.clone());
        }
    }
    Some(Derived {
        hop_us: lanes::difference(subject, baseline)?,
        boundary_us: floor.and_then(|f| lanes::difference(f, baseline)),
        library_us: floor.and_then(|f| lanes::difference(subject, f)),
        // The handoff's turn in the same rounds as the others, so its
        // figure and the machinery pair with the boundary's.
        switches_us: handoff.and_then(|h| lanes::combination(h, &[])),
        machinery_us: floor.zip(handoff).and_then(|(f, h)| lanes::combination(f, &[baseline, h])),
        lanes,
    })
}

pub(super) fn observer(clean: &LaneBlocks, probed: &LaneBlocks) -> Option<ObserverEffect> {
    let delta = lanes::difference(probed, clean)?;
    let median = |l: &LaneBlocks| {
        let mut v: Vec<f64> = l.us_per_op.values().copied().collect();
        crate::stats::median_of_unsorted(&mut v)
    };
    let clean_us = median(clean);
    Some(ObserverEffect {
        clean_us,
        probed_us: median(probed),
        delta_us: delta.median,
        delta_ci95: delta.ci95,
        delta_pct: if clean_us > 0.0 { delta.median / clean_us * 100.0 } else { 0.0 },
    })
}
