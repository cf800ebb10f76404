//! Whether a run's floor can stand for the thread boundary.
//!
//! `library = subject − floor` means something only when the floor is the
//! subject's path without the subject's own machinery: the same statement
//! through a bare thread boundary. Two things refute that from the trace
//! itself, and either withholds the library figure, the cross-check and the
//! figures built on them (the peers' `beyond floor`, the library's cold
//! start), with a warning that says why:
//!
//! - the floor is **slower than the subject** beyond the CI (`library`'s
//!   interval lies below zero) and by more than [`SLOWER_BY`]: it does more
//!   than the subject, not less (a floor a hair slower is a library cost of
//!   zero within what the two instruments can agree on, and stands);
//! - the floor is **faster than the baseline** beyond the CI (`boundary`'s
//!   interval lies below zero) and by more than [`SLOWER_BY`]: it skips
//!   work the baseline does (a floor that never ran the statement made a
//!   new user's SQLite time read as the writer's own work, 8.8 µs, beside
//!   a boundary of −3.8 µs);
//! - the subject is probed but the floor's marks **cannot be compared** with
//!   its: the floor has no probed build, or it marks a hop the subject does
//!   not, or the subject marks one beyond the floor's that is not inside its
//!   own code (both slices around it the library's). Then nothing shows
//!   that the floor runs the subject's database work and boundary, and the
//!   marks cannot say where the lanes' difference goes.

use hopscope_probe::{Hop, TraceHeader};
use serde::{Deserialize, Serialize};

use crate::join::LaneOps;
use crate::lanes::Difference;
use crate::slices::Owner;

/// How much slower than the subject a floor must be, beyond its CI, to be
/// refused: the larger of the cross-check's fixed tolerance (µs) and this
/// share of the subject's time per operation.
pub const SLOWER_BY: (f64, f64) = (crate::accounting::ACCOUNTING_TOLERANCE_US, 0.02);

/// What the floor check needs of a run.
#[derive(Debug, Clone, Copy)]
pub struct FloorFacts<'a> {
    /// The floor lane (clean, or its only build), by name.
    pub floor: &'a str,
    /// The subject lane (clean, or its only build), by name.
    pub subject: &'a str,
    /// `subject − floor` from the lanes, paired by round.
    pub library: Option<&'a Difference>,
    /// The baseline lane, by name, and `floor − baseline` from the lanes,
    /// paired by round.
    pub boundary: Option<(&'a str, &'a Difference)>,
    /// The subject's time per operation, µs (median).
    pub subject_us: f64,
    /// The probed subject's joined operations, when it has complete ones.
    pub subject_marks: Option<&'a LaneOps>,
    /// The probed floor's joined operations, when it has complete ones.
    pub floor_marks: Option<&'a LaneOps>,
    /// The trace's header: hop names, for the warning.
    pub header: &'a TraceHeader,
}

impl FloorFacts<'_> {
    fn hop_name(&self, hop: Hop) -> String {
        self.header.hops.get(hop).map_or_else(|| format!("hop{}", hop.0), |d| d.name.clone())
    }
}

/// Why a floor cannot stand for the subject's boundary, with the figures
/// or the hop that show it (the reports say it in words, with the fix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "refusal", rename_all = "snake_case")]
pub enum FloorRefusal {
    /// The floor costs more than the subject beyond the CI and the bar.
    SlowerThanSubject {
        /// The floor lane.
        floor: String,
        /// The subject lane.
        subject: String,
        /// `subject − floor`, paired by round, µs.
        library: Difference,
        /// Operations per shared interval of the subject's marks, when it
        /// batched (more than one) and the floor did not: a batching
        /// subject's floor batches the same way.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subject_batches: Option<f64>,
    },
    /// The floor costs less than the baseline beyond the CI and the bar.
    FasterThanBaseline {
        /// The floor lane.
        floor: String,
        /// The baseline lane.
        baseline: String,
        /// `floor − baseline`, paired by round, µs.
        boundary: Difference,
    },
    /// No probed build of the floor with complete operations beside the
    /// probed subject.
    Unprobed {
        /// The floor lane.
        floor: String,
    },
    /// The floor marks a hop the subject does not.
    FloorMarksMore {
        /// The floor lane.
        floor: String,
        /// The subject lane.
        subject: String,
        /// The hop.
        hop: String,
    },
    /// The subject marks a hop the floor does not, outside its own code.
    SubjectMarksOutside {
        /// The floor lane.
        floor: String,
        /// The subject lane.
        subject: String,
        /// The hop.
        hop: String,
    },
}

/// Why the floor cannot stand for the boundary, or `None` when it can.
pub fn refusal(facts: &FloorFacts<'_>) -> Option<FloorRefusal> {
    let (floor, subject) = (facts.floor.to_owned(), facts.subject.to_owned());
    let bar = SLOWER_BY.0.max(SLOWER_BY.1 * facts.subject_us);
    if let Some(library) = facts.library.filter(|l| l.ci95[1] < 0.0 && l.median < -bar) {
        let batches = |ops: Option<&LaneOps>| ops.and_then(|o| o.batches.mean()).filter(|m| *m > 1.0);
        let subject_batches = batches(facts.subject_marks).filter(|_| batches(facts.floor_marks).is_none());
        return Some(FloorRefusal::SlowerThanSubject { floor, subject, library: *library, subject_batches });
    }
    if let Some((baseline, boundary)) = facts.boundary.filter(|(_, b)| b.ci95[1] < 0.0 && b.median < -bar) {
        return Some(FloorRefusal::FasterThanBaseline { floor, baseline: baseline.to_owned(), boundary: *boundary });
    }
    let subject_marks = facts.subject_marks?;
    let Some(floor_marks) = facts.floor_marks else {
        return Some(FloorRefusal::Unprobed { floor });
    };
    // Every hop either lane marks, its path and its tails beside it.
    let (hops, floor_hops) = (&subject_marks.hops, &floor_marks.hops);
    if let Some(extra) = floor_hops.iter().find(|h| !hops.contains(h)) {
        return Some(FloorRefusal::FloorMarksMore { floor, subject, hop: facts.hop_name(*extra) });
    }
    // A hop only the subject marks must lie inside its own code: every
    // slice into or out of it the library's.
    let outside_own_code = hops.iter().find(|hop| {
        !floor_hops.contains(hop)
            && subject_marks
                .slices
                .iter()
                .filter(|s| s.from == **hop || s.to == **hop)
                .any(|s| s.owner != Owner::Library)
    });
    outside_own_code.map(|hop| FloorRefusal::SubjectMarksOutside { floor, subject, hop: facts.hop_name(*hop) })
}

#[cfg(test)]
mod tests {
    use hopscope_probe::{Block, HopTable, Mark, OpId, Side, Stream, Ticks};

    use super::*;
    use crate::join::{HopScan, Join};

    /// Join one block of lane 0 (`subject-probed`) and lane 1
    /// (`floor-probed`), each operation marking `subject` and `floor` in
    /// that order on the caller, 100 ticks apart.
    fn joined(header: &TraceHeader, subject: &[Hop], floor: &[Hop]) -> Vec<LaneOps> {
        let block = |lane: u16, hops: &[Hop]| {
            let marks = (0..4u64)
                .flat_map(|op| {
                    hops.iter()
                        .enumerate()
                        .map(move |(i, h)| Mark::new(OpId(op + 1), *h, Ticks(op * 10_000 + i as u64 * 100)))
                })
                .collect();
            Block {
                lane,
                op_count: 4,
                end: Ticks(40_000),
                streams: vec![Stream { thread: 0, dropped: 0, marks }],
                ..Block::default()
            }
        };
        let blocks = [block(0, subject), block(1, floor)];
        let mut scan = HopScan::new(header);
        blocks.iter().for_each(|b| scan.add(b));
        let mut join = Join::new(header, &scan);
        blocks.iter().enumerate().for_each(|(i, b)| join.add(i, b));
        join.finish()
    }

    /// The standard hops: `locked` and `built` on the caller, `executed`
    /// on the writer (so `sent→executed→done` crosses threads).
    fn header() -> TraceHeader {
        let mut header = TraceHeader::for_this_host(&["subject-probed", "floor-probed"], &["caller"]);
        header.hops = HopTable::standard();
        assert_eq!(header.hops.get(Hop::EXECUTED).map(|d| d.side), Some(Side::Writer));
        header
    }

    fn check(subject: &[Hop], floor: Option<&[Hop]>, library: Option<Difference>) -> Option<FloorRefusal> {
        check_with_boundary(subject, floor, library, None)
    }

    fn check_with_boundary(
        subject: &[Hop],
        floor: Option<&[Hop]>,
        library: Option<Difference>,
        boundary: Option<Difference>,
    ) -> Option<FloorRefusal> {
        let header = header();
        let ops = joined(&header, subject, floor.unwrap_or(&[]));
        refusal(&FloorFacts {
            floor: "floor",
            subject: "subject",
            library: library.as_ref(),
            boundary: boundary.as_ref().map(|b| ("inline", b)),
            subject_us: 20.0,
            subject_marks: Some(&ops[0]),
            floor_marks: floor.map(|_| &ops[1]),
            header: &header,
        })
    }

    #[test]
    fn a_floor_that_marks_a_subset_inside_the_subjects_own_code_stands() {
        let subject = [Hop::ENTER, Hop::LOCKED, Hop::BUILT, Hop::SENT, Hop::DONE];
        assert_eq!(check(&subject, Some(&[Hop::ENTER, Hop::SENT, Hop::DONE]), None), None);
        assert_eq!(check(&subject, Some(&subject), None), None, "the same hops");
    }

    #[test]
    fn a_floor_without_marks_or_with_other_marks_is_refused_naming_the_hop() {
        let subject = [Hop::ENTER, Hop::SENT, Hop::EXECUTED, Hop::DONE];
        let none = check(&subject, None, None).expect("no probed floor");
        assert_eq!(none, FloorRefusal::Unprobed { floor: "floor".into() });
        let other = check(&subject, Some(&[Hop::ENTER, Hop::LOCKED, Hop::DONE]), None).expect("floor marks more");
        assert!(matches!(&other, FloorRefusal::FloorMarksMore { hop, .. } if hop == "locked"), "{other:?}");
        // `executed` ends SQLite's slice: a subject marking it where the
        // floor does not is not refining its own code.
        let fewer = check(&subject, Some(&[Hop::ENTER, Hop::SENT, Hop::DONE]), None).expect("floor lacks the db");
        assert!(matches!(&fewer, FloorRefusal::SubjectMarksOutside { hop, .. } if hop == "executed"), "{fewer:?}");
    }

    #[test]
    fn a_floor_slower_than_the_subject_beyond_the_ci_is_refused_and_a_tie_is_not() {
        let hops = [Hop::ENTER, Hop::DONE];
        let slower = Difference { median: -2.27, ci95: [-2.5, -2.0], rounds: 100 };
        let why = check(&hops, Some(&hops), Some(slower)).expect("refused");
        assert_eq!(
            why,
            FloorRefusal::SlowerThanSubject {
                floor: "floor".into(),
                subject: "subject".into(),
                library: slower,
                subject_batches: None
            }
        );
        let tie = Difference { median: -0.06, ci95: [-0.25, 0.13], rounds: 100 };
        assert_eq!(check(&hops, Some(&hops), Some(tie)), None);
        // Beyond the CI but within the bar (0.4 µs of a 20 µs subject).
        let hair = Difference { median: -0.3, ci95: [-0.35, -0.25], rounds: 100 };
        assert_eq!(check(&hops, Some(&hops), Some(hair)), None);
    }

    #[test]
    fn a_floor_faster_than_the_baseline_beyond_the_ci_is_refused_and_a_tie_is_not() {
        let hops = [Hop::ENTER, Hop::DONE];
        let library = Some(Difference { median: 8.8, ci95: [8.5, 9.1], rounds: 40 });
        let skipped = Difference { median: -3.78, ci95: [-4.1, -3.5], rounds: 40 };
        let why = check_with_boundary(&hops, Some(&hops), library, Some(skipped)).expect("refused");
        assert_eq!(
            why,
            FloorRefusal::FasterThanBaseline { floor: "floor".into(), baseline: "inline".into(), boundary: skipped }
        );
        let tie = Difference { median: -0.1, ci95: [-0.3, 0.1], rounds: 40 };
        assert_eq!(check_with_boundary(&hops, Some(&hops), library, Some(tie)), None);
    }
}
