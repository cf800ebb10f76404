//! The full accounting: where the lanes' `writer − floor` goes, according
//! to the marks.
//!
//! When both probed builds close each thread's cycle (`idle`, `returned`),
//! an operation's path slices add up to all of its time on the caller's
//! path; when they do not (a program's own spans), the time between marks
//! is its own row, writer − floor like the others, and is not in the
//! slices' total. Per round, the writer's and the floor's blocks are reduced to per-slice
//! *means* (means add up, as a lane's wall time per operation does), summed
//! by owner, and subtracted; medians over rounds with bootstrap CIs follow,
//! as for the lanes. The marks the writer takes beyond the floor's are
//! priced with the run's own mark cost and taken off, so the total compares
//! with the clean lanes' `library` within a fixed tolerance.

use std::collections::BTreeMap;

use hopscope_probe::Owner;
use serde::{Deserialize, Serialize};

use crate::join::LaneOps;
use crate::lanes::Difference;
use crate::stats::{BOOTSTRAP_RESAMPLES, bootstrap_ci95, median_of_unsorted};

/// The full accounting agrees with the lanes when the two lie within this
/// many µs of each other: a fixed bar, stated in the receipt, that does not
/// widen with the lanes' noise.
pub const ACCOUNTING_TOLERANCE_US: f64 = 0.2;

/// A figure over rounds: median and bootstrap 95% CI, µs per operation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Median over rounds.
    pub median_us: f64,
    /// Bootstrap 95% CI of that median.
    pub ci95: [f64; 2],
}

impl Figure {
    /// Whether the CI covers zero: the figure is not distinguishable from
    /// no cost at all.
    pub fn covers_zero(&self) -> bool {
        self.ci95[0] <= 0.0 && self.ci95[1] >= 0.0
    }
}

/// Writer minus floor for one owner's slices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnerFigure {
    /// Whose slices.
    pub owner: Owner,
    /// The writer's slices of this owner (on the path).
    pub slices: Vec<String>,
    /// `Σ writer − Σ floor`, per round.
    pub delta: Figure,
}

/// Where the lanes' `writer − floor` goes according to the marks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    /// Per owner that either lane has a path slice of, in display order
    /// (library, tail, caller, SQLite, wait, boundary).
    pub by_owner: Vec<OwnerFigure>,
    /// The whole path: writer's mean path time minus the floor's, per round.
    pub total: Figure,
    /// Marks on the writer's path minus marks on the floor's.
    pub extra_marks: i64,
    /// What those marks cost, µs (`extra_marks × mark cost`; 0 when the
    /// trace did not record a mark cost).
    pub marks_us: f64,
    /// `total − marks_us`: the accounting's figure for the library.
    pub net_us: f64,
    /// The lanes' `writer − floor` (clean builds), µs.
    pub lanes_library_us: f64,
    /// Its bootstrap 95% CI.
    pub lanes_library_ci95: [f64; 2],
    /// `net − lanes_library`, µs.
    pub difference_us: f64,
    /// [`ACCOUNTING_TOLERANCE_US`].
    pub tolerance_us: f64,
    /// Whether `|difference| ≤ tolerance`: the accounting closes.
    pub closes: bool,
    /// The library's *indirect* cost: writer − floor in slices it does not
    /// own (SQLite's execute and the wakes), per round; a cost there comes
    /// from the writer's larger footprint (caches, branch predictors)
    /// rather than its own code.
    pub indirect: Figure,
    /// The same blocks' wall clock: the probed writer's lane time minus the
    /// probed floor's, paired by round. The marks cover these very
    /// operations, so `total` should match it closely when each thread's
    /// cycle is closed; a gap to the clean lanes' figure is then the two
    /// builds' observer effects differing, not the marks missing work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probed_lanes: Option<Difference>,
    /// Slices off the path (a tail the writer runs beside the caller):
    /// writer − floor, not part of `total`. Absent when every tail is on
    /// the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_path: Option<Figure>,
    /// Whether both probed builds close each thread's cycle (mark `idle`
    /// and `returned`): only then are their path slices meant to hold each
    /// operation's whole time.
    #[serde(default = "closed_by_default")]
    pub closed: bool,
    /// The time between marks (a block's wall time per operation beyond
    /// its mean path time), writer − floor per round: what the slices do
    /// not see of the lanes' difference. Not part of `total`. Absent
    /// without the blocks' wall times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<Figure>,
    /// Rounds paired.
    pub rounds: usize,
}

/// Results written before [`Accounting::closed`] came from hopscope's own
/// lanes, which always close their cycles.
fn closed_by_default() -> bool {
    true
}

/// One block's sums, µs.
#[derive(Debug, Clone, Default)]
struct BlockSums {
    by_owner: BTreeMap<u8, f64>,
    total: f64,
    off_path: f64,
    /// Wall time per operation beyond the mean path time, when known.
    between: Option<f64>,
}

/// A probed lane as the accounting reads it: its joined operations and,
/// when known, its blocks' wall times.
#[derive(Debug, Clone, Copy)]
pub struct Probed<'a> {
    /// The lane's joined operations.
    pub ops: &'a LaneOps,
    /// Its blocks' wall time per operation.
    pub walls: Option<&'a crate::lanes::LaneBlocks>,
}

/// Owners in display order: every owner a path slice can have.
const OWNERS: [Owner; 6] = [Owner::Library, Owner::Tail, Owner::Caller, Owner::Sqlite, Owner::Wait, Owner::Boundary];

fn owner_key(owner: Owner) -> u8 {
    OWNERS.iter().position(|o| *o == owner).unwrap_or(0) as u8
}

/// The full accounting of the probed `writer` against the probed `floor`,
/// compared with the lanes' `library` (clean builds) and with the probed
/// builds' own lane difference, `probed_lanes`. `mark_ns` is the
/// run's mark cost; `None` when a lane has no complete round or either
/// lacks a mean path time.
pub fn account(
    writer: Probed<'_>,
    floor: Probed<'_>,
    lanes_library: &Difference,
    probed_lanes: Option<Difference>,
    mark_ns: Option<f64>,
    seed: u64,
) -> Option<Accounting> {
    let (w, f) = (block_sums(writer), block_sums(floor));
    let closed = writer.ops.closes_cycles() && floor.ops.closes_cycles();
    let (writer, floor) = (writer.ops, floor.ops);
    let pairs: Vec<(&BlockSums, &BlockSums)> = w.iter().filter_map(|(round, a)| f.get(round).map(|b| (a, b))).collect();
    if pairs.is_empty() {
        return None;
    }
    let figure = |value: &dyn Fn(&BlockSums) -> f64, salt: u64| {
        let diffs: Vec<f64> = pairs.iter().map(|(a, b)| value(a) - value(b)).collect();
        summarize(diffs, seed.wrapping_add(salt))
    };
    // Owners neither lane has a path slice of are left out, not shown as 0.
    let has = |owner: Owner| writer.slices.iter().chain(&floor.slices).any(|d| d.on_path && d.owner == owner);
    let by_owner: Vec<OwnerFigure> = OWNERS
        .iter()
        .enumerate()
        .filter(|(_, owner)| has(**owner))
        .map(|(i, owner)| {
            let key = owner_key(*owner);
            OwnerFigure {
                owner: *owner,
                slices: writer
                    .slices
                    .iter()
                    .filter(|d| d.on_path && d.owner == *owner)
                    .map(|d| d.name.clone())
                    .collect(),
                delta: figure(&|s: &BlockSums| s.by_owner.get(&key).copied().unwrap_or(0.0), i as u64),
            }
        })
        .collect();
    let total = figure(&|s: &BlockSums| s.total, 10);
    let (sqlite, boundary) = (owner_key(Owner::Sqlite), owner_key(Owner::Boundary));
    let indirect = figure(
        &|s: &BlockSums| {
            s.by_owner.get(&sqlite).copied().unwrap_or(0.0) + s.by_owner.get(&boundary).copied().unwrap_or(0.0)
        },
        11,
    );
    let has_off_path = writer.slices.iter().chain(&floor.slices).any(|d| !d.on_path);
    let off_path = has_off_path.then(|| figure(&|s: &BlockSums| s.off_path, 12));
    let between = pairs
        .iter()
        .all(|(a, b)| a.between.is_some() && b.between.is_some())
        .then(|| figure(&|s: &BlockSums| s.between.unwrap_or(0.0), 13));
    let extra_marks = writer.path_len as i64 - floor.path_len as i64;
    let marks_us = mark_ns.map_or(0.0, |ns| extra_marks as f64 * ns / 1_000.0);
    let net_us = total.median_us - marks_us;
    let difference_us = net_us - lanes_library.median;
    Some(Accounting {
        by_owner,
        total,
        extra_marks,
        marks_us,
        net_us,
        lanes_library_us: lanes_library.median,
        lanes_library_ci95: lanes_library.ci95,
        difference_us,
        tolerance_us: ACCOUNTING_TOLERANCE_US,
        closes: difference_us.abs() <= ACCOUNTING_TOLERANCE_US,
        indirect,
        probed_lanes,
        off_path,
        closed,
        between,
        rounds: pairs.len(),
    })
}

/// Per round (pass, sample), one block's path sums by owner, µs; blocks
/// missing a finite mean are left out.
fn block_sums(lane: Probed<'_>) -> BTreeMap<(u32, u32), BlockSums> {
    let ops = lane.ops;
    let owners: Vec<Owner> = ops.slices.iter().map(|d| d.owner).collect();
    let mut out = BTreeMap::new();
    for block in &ops.blocks {
        let Some(total) = block.total_mean_ns else { continue };
        let wall = lane.walls.and_then(|w| w.us_per_op.get(&(block.pass, block.sample)));
        let total = total / 1_000.0;
        let mut sums = BlockSums { total, between: wall.map(|w| w - total), ..BlockSums::default() };
        let mut usable = true;
        for ((def, owner), mean) in ops.slices.iter().zip(&owners).zip(&block.slice_mean_ns) {
            let Some(mean) = mean else {
                usable = false;
                break;
            };
            if def.on_path {
                *sums.by_owner.entry(owner_key(*owner)).or_insert(0.0) += mean / 1_000.0;
            } else {
                sums.off_path += mean / 1_000.0;
            }
        }
        if usable {
            out.insert((block.pass, block.sample), sums);
        }
    }
    out
}

fn summarize(mut diffs: Vec<f64>, seed: u64) -> Figure {
    let (lo, hi) = bootstrap_ci95(&diffs, BOOTSTRAP_RESAMPLES, seed, median_of_unsorted);
    Figure { median_us: median_of_unsorted(&mut diffs), ci95: [lo, hi] }
}
