//! What weakens a causal profile, found in its samples and its points:
//! a lane that responds out of proportion, a saving beyond its change, a
//! reference that ran at two paces.

use serde::{Deserialize, Serialize};

use super::point::{Point, SliceProfile};

/// What weakens a causal profile, as data (the receipt says each in
/// words).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "warning", rename_all = "snake_case")]
pub enum CausalWarning {
    /// Several callers share the writer: the cross-thread slices were left
    /// out (their time is mostly waiting: for the other threads' turns on
    /// a shared core, or in the queue behind a busy writer).
    CrossSlicesLeftOut,
    /// Cross-thread slices named anyway with several callers: their
    /// speedups overstate what a faster hand-off buys.
    CrossSlicesCrowded {
        /// The slices.
        slices: Vec<String>,
    },
    /// A slice's real slowdown reaches the lane far more or less than its
    /// virtual speedup of the nearest size: read its speedups as a bound.
    Nonlinear {
        /// The slice.
        slice: String,
        /// The reach of the real slowdown.
        slower_reach: f64,
        /// The slowdown, percent.
        slower_pct: f64,
        /// The reach of the virtual speedup.
        faster_reach: f64,
        /// The speedup, percent.
        faster_pct: f64,
        /// Whether every thread ran on one core (which explains it
        /// differently).
        serial: bool,
    },
    /// The reference arm ran at two paces: some of its rounds took far
    /// longer per operation than the others (a lock convoy, the lane's own
    /// periodic work, or the core held by another process), whatever the
    /// arm of their round. Pairs that straddle the two are noise to every
    /// arm, and a change may move how often the slow pace comes as well as
    /// the time it saves.
    TwoPaces {
        /// Reference rounds at the slow pace.
        slow_rounds: usize,
        /// Reference rounds in all.
        rounds: usize,
        /// The slow rounds' median, ns per operation.
        slow_ns_per_op: f64,
        /// The other rounds' median, ns per operation.
        fast_ns_per_op: f64,
        /// The lane's callers (with one, no convoy among them explains it).
        #[serde(default)]
        callers: usize,
    },
    /// The short decomposition that measured the slices' medians ran at
    /// another pace than the arms' reference: each change's share is of a
    /// median the slice may no longer have had (its ns and its reach
    /// stand).
    MediansElsewhere {
        /// The decomposition's time per operation, ns.
        decomposition_ns_per_op: f64,
        /// The reference arm's, ns (median over rounds).
        reference_ns_per_op: f64,
    },
    /// A virtual speedup saved more than it took off the slice.
    MoreThanTaken {
        /// The slice.
        slice: String,
        /// The speedup, percent.
        change_pct: f64,
        /// What it saved per operation, ns (median).
        saved_ns: f64,
        /// What it took off the slice, ns.
        change_ns: f64,
    },
}

/// Smallest change whose reach is judged (against a slowdown's, or against
/// its own change), ns: a profile's savings carry CIs of tens of ns.
pub const MIN_COMPARED_NS: f64 = 100.0;

/// How far a slice's speedup and slowdown reaches may differ before the
/// profile says so.
pub const REACH_GAP: f64 = 0.3;

/// A slice whose real slowdown reaches the lane much more or less than its
/// virtual speedup of the nearest size: the prediction is not to be read
/// as a slope there. Seen on a toy writer: four callers sharing one core
/// (a pause there idles the core instead of freeing it, so a caller's
/// speedup was predicted at a third of what it really bought), and callers
/// on another core than their writer (the real lane responded up to 1.6×
/// in proportion to a shorter or longer statement, the callers' context
/// switches per operation growing with it, in some runs of the same toy
/// and not in others; a virtual speedup keeps the real time between
/// hand-offs, so whatever depends on it stays as it was).
pub(super) fn nonlinear(s: &SliceProfile, serial: bool) -> Option<CausalWarning> {
    // A change the lane cannot resolve has no reach worth comparing.
    let told = |p: &&Point| p.saved_ns.excludes_zero() && p.change_ns >= MIN_COMPARED_NS;
    let slower = s.points.iter().filter(|p| !p.virtual_speedup).filter(told);
    let faster: Vec<&Point> = s.points.iter().filter(|p| p.virtual_speedup).filter(told).collect();
    slower
        .filter_map(|slow| {
            let fast = faster.iter().min_by(|a, b| {
                (a.change_pct + slow.change_pct).abs().total_cmp(&(b.change_pct + slow.change_pct).abs())
            })?;
            ((fast.reach - slow.reach).abs() > REACH_GAP).then(|| CausalWarning::Nonlinear {
                slice: s.name.clone(),
                slower_reach: slow.reach,
                slower_pct: slow.change_pct.abs(),
                faster_reach: fast.reach,
                faster_pct: fast.change_pct,
                serial,
            })
        })
        .next()
}

/// A reference round this many times its median or more is at the slow
/// pace.
pub const SLOW_PACE: f64 = 1.6;

/// Share of the reference rounds at the slow pace from which a profile
/// says so: a round in twenty is a host's hiccup, a tenth is a pace.
pub const TWO_PACES_SHARE: f64 = 0.1;

/// A gap this wide between two neighbouring reference rounds (sorted, a
/// share of the median), with a tenth of the rounds or more on each side,
/// splits them into two paces: host noise spreads rounds evenly, a second
/// pace leaves an empty band between them.
pub const PACE_GAP: f64 = 0.1;

/// Whether the reference's time per operation, one value per round, ran
/// at two paces: [`SLOW_PACE`] × its median or more in at least
/// [`TWO_PACES_SHARE`] of its rounds (seen on the reference writer with
/// four callers on one core: 43 of 100 rounds at about twice the others'
/// time), or two clusters a [`PACE_GAP`] apart with that share on each
/// side (a new user's four callers on one core: rounds at 44 and at 54 µs
/// per operation, which the first rule missed).
pub(super) fn two_paces(reference: &[f64], callers: usize) -> Option<CausalWarning> {
    let mut sorted = reference.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = crate::stats::median_of_unsorted(&mut sorted.clone());
    if median.is_nan() || median <= 0.0 || n < 2 {
        return None;
    }
    let least = ((n as f64 * TWO_PACES_SHARE).ceil() as usize).max(1);
    // The first slow round: past the tail threshold, or past the widest
    // gap that leaves enough rounds on each side.
    let tail = sorted.iter().position(|&v| v >= SLOW_PACE * median).filter(|&i| n - i >= least && i > 0);
    // `least` ≥ 1, so every `i` here has a round before it.
    let gap = (least..=n - least)
        .max_by(|&a, &b| (sorted[a] - sorted[a - 1]).total_cmp(&(sorted[b] - sorted[b - 1])))
        .filter(|&i| sorted[i] - sorted[i - 1] > PACE_GAP * median);
    let split = tail.or(gap)?;
    let (fast, slow) = sorted.split_at_mut(split);
    Some(CausalWarning::TwoPaces {
        slow_rounds: slow.len(),
        rounds: n,
        slow_ns_per_op: crate::stats::median_of_unsorted(slow),
        fast_ns_per_op: crate::stats::median_of_unsorted(fast),
        callers,
    })
}

/// How far apart the short decomposition's and the reference's time per
/// operation may be before the profile says so.
pub const MEDIANS_APART: f64 = 1.3;

/// Whether the slices' medians were measured at another pace than the
/// arms ran: [`MEDIANS_APART`] times faster or slower. Seen on a new
/// user's writer in WAL mode: its short decomposition, the database's
/// first seconds, ran 38.6 µs per operation and the reference 13.6, so
/// "25 % of `woke→executed`" was about 40 % of the statement as the arms
/// ran it.
pub(super) fn medians_elsewhere(decomposition_ns_per_op: f64, reference_ns_per_op: f64) -> Option<CausalWarning> {
    let apart = decomposition_ns_per_op / reference_ns_per_op;
    (apart.is_finite() && apart > 0.0 && !(1.0 / MEDIANS_APART..=MEDIANS_APART).contains(&apart))
        .then_some(CausalWarning::MediansElsewhere { decomposition_ns_per_op, reference_ns_per_op })
}
