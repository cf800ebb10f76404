//! The lane arithmetic of a decomposition: hop, boundary (switches and
//! machinery), library, and the observer effect, each paired by round.

use std::collections::BTreeMap;

use hopscope_probe::{Role, Variant};

use hopscope_probe::{SpanMachinery, TraceHeader};

use super::{Derived, InstrumentCost, ObserverEffect};
use crate::join::LaneOps;
use crate::lanes::{self, LaneBlocks};
use crate::roles::Roles;

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
        floor_refused: None,
    })
}

/// Why the `floor` cannot stand for the boundary beside `subject` (see
/// [`crate::floor`]), or `None` when it can.
pub(super) fn floor_refusal(
    header: &TraceHeader,
    joined: &[LaneOps],
    roles: &Roles,
    (floor, subject): (&LaneBlocks, &LaneBlocks),
    derived: Option<&Derived>,
) -> Option<crate::floor::FloorRefusal> {
    let complete = |role: Role| {
        let lane = roles.find(role, Variant::Probed)?;
        joined.iter().find(|o| usize::from(o.lane) == lane && o.complete > 0)
    };
    let mut subject_us: Vec<f64> = subject.us_per_op.values().copied().collect();
    crate::floor::refusal(&crate::floor::FloorFacts {
        floor: &floor.name,
        subject: &subject.name,
        library: derived.and_then(|d| d.library_us.as_ref()),
        boundary: derived.and_then(|d| Some((d.lanes.get(Role::Baseline.name())?.as_str(), d.boundary_us.as_ref()?))),
        subject_us: crate::stats::median_of_unsorted(&mut subject_us),
        subject_marks: complete(Role::Subject),
        floor_marks: complete(Role::Floor),
        header,
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
        instrument: None,
    })
}

/// What the probed build's instrument costs per operation at the costs
/// this run measured (`machinery`: the span machinery; the header's mark
/// cost and SQLite hook cost), and what of `delta_us` that leaves unexplained; `None` when the
/// run measured neither cost its marks need.
pub(super) fn instrument(
    header: &TraceHeader,
    ops: &LaneOps,
    machinery: Option<&SpanMachinery>,
    delta_us: f64,
) -> Option<InstrumentCost> {
    let path = &ops.hops;
    let edges: Vec<Option<&str>> =
        path.iter().map(|h| header.hops.get(*h).and_then(|d| d.span.as_ref()).map(|e| e.span.as_str())).collect();
    let mut spans: Vec<&str> = edges.iter().flatten().copied().collect();
    spans.sort_unstable();
    spans.dedup();
    // Hops marked by SQLite's hook: those the statements' own thread role
    // marked (a start and an end per statement), priced per statement.
    let hooked = |k: usize| {
        let sqlite = header.threads.iter().position(|t| t == hopscope_probe::STATEMENT_ROLE).map(|t| 1u64 << t.min(63));
        sqlite.is_some_and(|bit| ops.hop_threads.get(k).is_some_and(|threads| threads & bit != 0))
    };
    let hook_marks = (0..path.len()).filter(|&k| edges[k].is_none() && hooked(k)).count() as u64;
    let marks = edges.iter().filter(|e| e.is_none()).count() as u64 - hook_marks;
    let statements = hook_marks / 2;
    let span_life_ns = machinery.map(|m| m.span_life_ns);
    let mark_ns = header.mark_ns;
    let statement_ns = header.statement_hook.as_ref().map(|h| h.ns_per_statement);
    if (!spans.is_empty() && span_life_ns.is_none())
        || (marks > 0 && mark_ns.is_none())
        || (statements > 0 && statement_ns.is_none())
    {
        return None;
    }
    let (span_life_ns, mark_ns, statement_ns) =
        (span_life_ns.unwrap_or(0.0), mark_ns.unwrap_or(0.0), statement_ns.unwrap_or(0.0));
    let explained_us =
        (spans.len() as f64 * span_life_ns + marks as f64 * mark_ns + statements as f64 * statement_ns) / 1_000.0;
    Some(InstrumentCost {
        spans_per_op: spans.len() as u64,
        span_life_ns,
        marks_per_op: marks,
        mark_ns,
        statements_per_op: statements,
        statement_ns,
        explained_us,
        unexplained_us: delta_us - explained_us,
    })
}
