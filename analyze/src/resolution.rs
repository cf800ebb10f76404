//! The instrument's resolution: how small a per-operation change it detects,
//! how often it cries wolf, how well it sizes a change and whether it puts
//! the change in the right slice.
//!
//! A resolution run injects a known busy-wait of `injected_ns` into one slice
//! of arm `b` (arm `a` is the same writer without it), runs the A/B passes
//! several times, and judges each repeat twice, side by side:
//!
//! - at lane level: detected (the A/B verdict is `reproduced`), estimated
//!   size (mean of the pass effects), and attributed slice (the slice whose
//!   paired growth from `a` to `b` is the most significant, so a big noisy
//!   slice does not win by noise alone);
//! - at slice level ([`crate::slice_verdict`]): detected when the injected
//!   slice is flagged slower, its estimate, and whether any other slice was
//!   flagged (at 0 ns, any flag at all is a false positive).

use std::collections::BTreeMap;

use hopscope_probe::{RunFact, RunFacts};
use serde::{Deserialize, Serialize};

use crate::ab::{self, Rule, Verdict};
use crate::ab_trace::AbTrace;
use crate::join::LaneOps;
use crate::slice_verdict::{self, PairedSlice, SliceVerdicts};
use crate::stats::Samples;

/// Schema name and version of `resolution.json` (3: every repeat is a
/// crossover of four passes, and errors are held to the measured delay).
pub const RESOLUTION_SCHEMA: &str = "hopscope.resolution/3";

/// The value of [`RunFact::ResolveCrossover`] (how the delay was carried)
/// for a crossover by pass pairs: arm `b` carried it in pass pairs 0, 2, …
/// and arm `a` in pairs 1, 3, ….
pub const CROSSOVER_PASS_PAIRS: &str = "pass-pairs";

/// In a crossover by pass pairs, whether arm `a` carries the delay in pass
/// `pass` (pairs 1, 3, …; `b` carries it in pairs 0, 2, …). The writer's
/// delay schedule and this analysis read the same rule.
pub fn carried_by_a(pass: u32) -> bool {
    (pass / 2) % 2 == 1
}

/// The rule a resolution repeat is judged by: any effect whose CI excludes
/// zero, of the same sign in both orders, counts as detected.
pub fn detection_rule() -> Rule {
    Rule {
        min_effect_pct: 0.0,
        min_effect_us: 0.0,
        both_orders: true,
        max_control_drift_pct: f64::MAX,
        max_spread_ratio: 4.0,
        drift_dwarfed_by: 3.0,
        min_slice_effect_ns: None,
        min_slice_effect_pct: None,
        confidence_pct: None,
    }
}

/// What one repeat showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    /// The A/B verdict was `reproduced` with `b` slower.
    pub detected: bool,
    /// Mean of the per-pass `b − a` effects, ns per operation.
    pub estimated_ns: f64,
    /// The slice whose paired growth from `a` to `b` is the most
    /// significant, if both arms were probed.
    pub attributed_slice: Option<String>,
    /// The slice-level verdict on the injected slice, if both arms mark it.
    pub slice: Option<SliceRepeat>,
    /// Every slice the slice-level verdicts flagged (either direction).
    pub flagged: Vec<String>,
    /// Another process held the repeat's CPUs ([`crate::contention`]): it
    /// is left out of every rate.
    #[serde(default)]
    pub contended: bool,
}

/// What the slice-level verdicts said of the injected slice in one repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceRepeat {
    /// The injected slice's name as the join found it.
    pub name: String,
    /// Flagged, and slower in `b`.
    pub detected: bool,
    /// Its median `b − a` over rounds, ns.
    pub estimated_ns: f64,
}

/// Judge one repeat's trace (lanes `a` and `b`); `delayed_hop` names the
/// hop the delay was injected before, which closes the injected slice.
pub fn judge_repeat(trace: &AbTrace, delayed_hop: &str) -> Repeat {
    let passes = trace.pass_blocks();
    let crossover = (trace.header.run.fact(&RunFact::ResolveCrossover) == Some(CROSSOVER_PASS_PAIRS))
        .then(|| Crossover::of(&passes));
    let passes = match &crossover {
        Some(c) => c.pool(passes),
        None => passes,
    };
    let outcome = ab::verdict(&passes, &detection_rule());
    let deltas: Vec<f64> = outcome.passes.iter().map(|p| p.delta_us.median * 1_000.0).collect();
    let estimated_ns = if deltas.is_empty() { 0.0 } else { deltas.iter().sum::<f64>() / deltas.len() as f64 };
    let detected = outcome.verdict == Verdict::Reproduced && estimated_ns > 0.0;
    let min_effect = detection_rule().slice_min_effect(trace.header.clock.grain_ns());
    let judged = trace.arm_ops().and_then(|(a, b)| {
        let verdicts = match &crossover {
            Some(c) => slice_verdict::judge_paired(&c.pool_slices(slice_verdict::paired(a, b)), min_effect),
            None => slice_verdict::judge(a, b, min_effect),
        };
        Some((a, verdicts?))
    });
    let contended = trace.contended();
    let Some((a, verdicts)) = judged else {
        return Repeat { detected, estimated_ns, attributed_slice: None, slice: None, flagged: Vec::new(), contended };
    };
    Repeat {
        detected,
        estimated_ns,
        attributed_slice: attribute(&verdicts),
        slice: injected(&verdicts, a, delayed_hop),
        flagged: verdicts.changed().map(|s| s.name.clone()).collect(),
        contended,
    }
}

/// A crossover's passes matched for pooling. Within each order (`a→b`, or
/// `b→a`), a pass where `b` carried the delay is matched with one where `a`
/// did, and their rounds are averaged in pairs (the k-th with the k-th) as
/// `delayed − undelayed`. Whatever makes one instance faster than its twin,
/// and whatever the order does to `b − a` (measured here: ~+50 ns per op in
/// `b→a` passes), enters the two matched passes with opposite signs and
/// cancels in every pooled round, so the rounds spread by the noise alone.
/// Keeping the orders apart keeps the rule's "both orders" check; a control
/// lane is not pooled (resolution runs none).
struct Crossover {
    /// (order: 1 when `b` ran first, pass carried by `b`, pass carried by
    /// `a`).
    matched: Vec<(u32, u32, u32)>,
}

impl Crossover {
    /// Match the passes: carrier by pass pair parity, order by which lane
    /// ran first.
    fn of(passes: &[ab::PassBlocks]) -> Crossover {
        let mut groups: BTreeMap<u32, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
        for p in passes {
            let by_a = carried_by_a(p.pass);
            let (by_b_passes, by_a_passes) = groups.entry(u32::from(p.b_first)).or_default();
            if by_a { by_a_passes.push(p.pass) } else { by_b_passes.push(p.pass) }
        }
        let matched = groups
            .into_iter()
            .flat_map(|(group, (by_b, by_a))| by_b.into_iter().zip(by_a).map(move |(b, a)| (group, b, a)))
            .collect();
        Crossover { matched }
    }

    /// One pass per order (`b_first` as the lanes ran), `a` the undelayed
    /// arm and `b` the delayed one, each round the mean of two matched
    /// rounds.
    fn pool(&self, passes: Vec<ab::PassBlocks>) -> Vec<ab::PassBlocks> {
        let by_pass: BTreeMap<u32, ab::PassBlocks> = passes.into_iter().map(|p| (p.pass, p)).collect();
        // A pass's rounds as (undelayed, delayed), in sample order.
        let rounds = |pass: u32, by_a: bool| -> Vec<(f64, f64)> {
            let Some(p) = by_pass.get(&pass) else { return Vec::new() };
            p.a.iter().filter_map(|(s, &a)| p.b.get(s).map(|&b| if by_a { (b, a) } else { (a, b) })).collect()
        };
        let mut pooled: BTreeMap<u32, ab::PassBlocks> = BTreeMap::new();
        for &(group, by_b, by_a) in &self.matched {
            let into = pooled.entry(group).or_insert_with(|| ab::PassBlocks {
                pass: group,
                b_first: group == 1,
                ..ab::PassBlocks::default()
            });
            for (x, y) in rounds(by_b, false).into_iter().zip(rounds(by_a, true)) {
                let Ok(key) = u32::try_from(into.a.len()) else { break };
                into.a.insert(key, (x.0 + y.0) / 2.0);
                into.b.insert(key, (x.1 + y.1) / 2.0);
            }
        }
        pooled.into_values().collect()
    }

    /// Paired slices pooled the same way: per order, the mean of matched
    /// rounds of `delayed − undelayed`.
    fn pool_slices(&self, pairs: Vec<PairedSlice>) -> Vec<PairedSlice> {
        pairs
            .into_iter()
            .map(|s| {
                let of_pass = |pass: u32| s.diffs.iter().filter(move |(p, _)| *p == pass).map(|(_, d)| *d);
                let mut diffs: Vec<(u32, f64)> = self
                    .matched
                    .iter()
                    .flat_map(|&(group, by_b, by_a)| {
                        of_pass(by_b).zip(of_pass(by_a)).map(move |(db, da)| (group, (db - da) / 2.0))
                    })
                    .collect();
                // The rule reads each group's rounds as one run of the list.
                diffs.sort_by_key(|(group, _)| *group);
                PairedSlice { diffs, ..s }
            })
            .collect()
    }
}

/// The slice-level verdict on the injected slice: the slice that ends at
/// `delayed_hop` (on the path when there are two).
fn injected(verdicts: &SliceVerdicts, a: &LaneOps, delayed_hop: &str) -> Option<SliceRepeat> {
    let ends_at = |name: &str| hopscope_probe::SliceName::ends_at(name, delayed_hop);
    let on_path = |name: &str| a.slices.iter().any(|d| d.name == name && d.on_path);
    verdicts.slices.iter().filter(|s| ends_at(&s.name)).max_by_key(|s| on_path(&s.name)).map(|s| SliceRepeat {
        name: s.name.clone(),
        detected: s.changed && s.delta_ns > 0.0,
        estimated_ns: s.delta_ns,
    })
}

/// The slice that grew most surely from arm `a` to arm `b`: the smallest
/// paired-test p-value among the slices that got slower, the larger growth
/// breaking ties (a big noisy slice cannot win by noise alone, and whether
/// it was flagged does not matter: attribution names the likeliest place
/// even below the rule).
fn attribute(verdicts: &SliceVerdicts) -> Option<String> {
    verdicts
        .slices
        .iter()
        .filter(|s| s.delta_ns > 0.0)
        .min_by(|x, y| x.p_value.total_cmp(&y.p_value).then(y.delta_ns.total_cmp(&x.delta_ns)))
        .map(|s| s.name.clone())
}

/// One injected size, over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolutionRow {
    /// Busy-wait injected per operation, ns.
    pub injected_ns: u64,
    /// What that busy-wait measured on the host before the repeats, ns
    /// per call (0 at 0 ns).
    pub delay_measured_ns: f64,
    /// Repeats run.
    pub repeats: usize,
    /// Of those, repeats another process held the CPUs of: left out of
    /// every rate and estimate below.
    #[serde(default)]
    pub contended_repeats: usize,
    /// Share of repeats that detected a slowdown (at 0 ns: the
    /// false-positive rate).
    pub detection_rate: f64,
    /// Median over repeats of the estimated effect, ns.
    pub estimated_ns: f64,
    /// `(estimated − measured) / measured` (the measured delay, or the
    /// injected one when it was not measured), percent; absent at 0 ns.
    pub error_pct: Option<f64>,
    /// The slice most repeats blamed.
    pub attributed_slice: Option<String>,
    /// Share of repeats that blamed the injected slice.
    pub attribution_rate: f64,
    /// Slice level: share of repeats whose verdicts flagged the injected
    /// slice as slower (at 0 ns: that slice's false-positive rate).
    pub slice_detection_rate: f64,
    /// Slice level: median over repeats of the injected slice's estimated
    /// change, ns; absent when no repeat marked the slice in both arms.
    pub slice_estimated_ns: Option<f64>,
    /// `(slice estimate − measured) / measured`, percent; absent at 0 ns.
    pub slice_error_pct: Option<f64>,
    /// Share of repeats in which a slice other than the injected one was
    /// flagged.
    pub elsewhere_rate: f64,
    /// Share of repeats with any slice flagged, either way (at 0 ns: the
    /// slice verdicts' family-wise false-positive rate).
    pub any_flag_rate: f64,
    /// Wall-clock seconds the repeats took.
    pub seconds: f64,
}

/// Summarise the repeats of one injected size.
pub fn summarize(injected_ns: u64, delay_measured_ns: f64, slice: &str, all: &[Repeat], seconds: f64) -> ResolutionRow {
    let repeats: Vec<&Repeat> = all.iter().filter(|r| !r.contended).collect();
    let n = repeats.len().max(1) as f64;
    let estimated_ns = Samples::new(repeats.iter().map(|r| r.estimated_ns).collect()).map_or(0.0, |s| s.median());
    let mut blamed: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &repeats {
        if let Some(s) = &r.attributed_slice {
            *blamed.entry(s.as_str()).or_default() += 1;
        }
    }
    let attributed_slice = blamed.iter().max_by_key(|(_, n)| **n).map(|(s, _)| (*s).to_owned());
    let rate = |hit: &dyn Fn(&Repeat) -> bool| repeats.iter().filter(|r| hit(r)).count() as f64 / n;
    let slice_estimated_ns =
        Samples::new(repeats.iter().filter_map(|r| r.slice.as_ref().map(|s| s.estimated_ns)).collect())
            .ok()
            .map(|s| s.median());
    // The estimates are held to what the busy-wait measured on the host,
    // not to the figure asked for: the loop's calibration is off by a few
    // ns from one process to the next.
    let truth = if delay_measured_ns > 0.0 { delay_measured_ns } else { injected_ns as f64 };
    let error = |estimate: f64| (injected_ns > 0).then(|| (estimate - truth) / truth * 100.0);
    let injected = |r: &Repeat, name: &str| r.slice.as_ref().is_some_and(|s| s.name == name);
    ResolutionRow {
        injected_ns,
        delay_measured_ns,
        repeats: all.len(),
        contended_repeats: all.len() - repeats.len(),
        detection_rate: repeats.iter().filter(|r| r.detected).count() as f64 / n,
        estimated_ns,
        error_pct: error(estimated_ns),
        attributed_slice,
        attribution_rate: blamed.get(slice).copied().unwrap_or(0) as f64 / n,
        slice_detection_rate: rate(&|r| r.slice.as_ref().is_some_and(|s| s.detected)),
        slice_estimated_ns,
        slice_error_pct: slice_estimated_ns.and_then(error),
        elsewhere_rate: rate(&|r| r.flagged.iter().any(|f| !injected(r, f))),
        any_flag_rate: rate(&|r| !r.flagged.is_empty()),
        seconds,
    }
}

/// A whole resolution run, as `resolution.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// Always [`RESOLUTION_SCHEMA`].
    pub schema: String,
    /// The slice the delay was injected into (`from→to`).
    pub slice: String,
    /// One row per injected size.
    pub deltas: Vec<ResolutionRow>,
    /// The machine.
    pub host: hopscope_probe::HostInfo,
    /// Run metadata (command, commit, sizes).
    pub meta: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(detected: bool, ns: f64, slice: &str) -> Repeat {
        let injected = "locked→built";
        Repeat {
            detected,
            estimated_ns: ns,
            attributed_slice: Some(slice.to_owned()),
            slice: Some(SliceRepeat { name: injected.to_owned(), detected: slice == injected, estimated_ns: ns / 2.0 }),
            flagged: vec![slice.to_owned()],
            contended: false,
        }
    }

    #[test]
    fn a_row_counts_detections_sizes_and_blame() {
        let repeats = [
            repeat(true, 210.0, "locked→built"),
            repeat(true, 190.0, "locked→built"),
            repeat(false, 20.0, "sent→woke"),
            repeat(true, 205.0, "locked→built"),
        ];
        let row = summarize(200, 201.0, "locked→built", &repeats, 12.0);
        assert_eq!(row.detection_rate, 0.75);
        assert_eq!(row.estimated_ns, 197.5);
        assert!((row.error_pct.expect("error") - (197.5 - 201.0) / 201.0 * 100.0).abs() < 1e-9);
        assert_eq!(row.attributed_slice.as_deref(), Some("locked→built"));
        assert_eq!(row.attribution_rate, 0.75);
        assert_eq!(row.slice_detection_rate, 0.75);
        assert_eq!(row.slice_estimated_ns, Some(98.75));
        assert!((row.slice_error_pct.expect("error") - (98.75 - 201.0) / 201.0 * 100.0).abs() < 1e-9);
        assert_eq!((row.elsewhere_rate, row.any_flag_rate), (0.25, 1.0));
        assert!(summarize(0, 0.0, "x", &repeats, 1.0).error_pct.is_none());
        // A repeat another process held the CPUs of counts in no rate.
        let mut with_hog = repeats.to_vec();
        with_hog.push(Repeat { contended: true, ..repeat(false, 5_000.0, "sent→woke") });
        let row = summarize(200, 201.0, "locked→built", &with_hog, 12.0);
        assert_eq!((row.repeats, row.contended_repeats, row.detection_rate), (5, 1, 0.75));
        assert_eq!(row.estimated_ns, 197.5);
    }

    /// Four flipped-order passes of a crossover in which instance `b` is
    /// always `bias` µs slower than `a`, slower by `order` µs more when it
    /// runs first, and the carrier of each pass is `delay` µs slower still,
    /// with a little round-to-round jitter.
    fn crossover_passes(bias: f64, order: f64, delay: f64) -> Vec<ab::PassBlocks> {
        (0..4u32)
            .map(|pass| {
                let by_a = carried_by_a(pass);
                let jitter = |s: u32| f64::from(s % 7) * 0.001;
                let a = (0..50).map(|s| (s, 10.0 + jitter(s) + if by_a { delay } else { 0.0 })).collect();
                let b_first = pass % 2 == 1;
                let first = if b_first { order } else { 0.0 };
                let b =
                    (0..50).map(|s| (s, 10.0 + bias + first + jitter(s) + if by_a { 0.0 } else { delay })).collect();
                ab::PassBlocks { pass, b_first, a, b, control: BTreeMap::new() }
            })
            .collect()
    }

    #[test]
    fn a_crossover_cancels_the_instances_own_difference_and_keeps_the_delay() {
        // No delay: b's own 0.03 µs, and 0.05 µs more when it runs first,
        // are not read as an effect.
        let passes = crossover_passes(0.03, 0.05, 0.0);
        let c = Crossover::of(&passes);
        let pooled = c.pool(passes);
        assert_eq!(pooled.len(), 2, "two orders");
        assert_eq!(pooled.iter().map(|p| p.a.len()).sum::<usize>(), 100, "two passes' rounds pooled per round");
        let outcome = ab::verdict(&pooled, &detection_rule());
        assert_ne!(outcome.verdict, Verdict::Reproduced, "{outcome:?}");
        // Without pooling, the same data reads as a clear slowdown.
        let plain = ab::verdict(&crossover_passes(0.03, 0.05, 0.0), &detection_rule());
        assert_eq!(plain.verdict, Verdict::Reproduced);
        // A 0.05 µs delay is found at its size in both orders, whichever
        // instance carried it.
        let passes = crossover_passes(0.03, 0.05, 0.05);
        let outcome = ab::verdict(&Crossover::of(&passes).pool(passes), &detection_rule());
        assert_eq!(outcome.verdict, Verdict::Reproduced);
        for p in &outcome.passes {
            assert!((p.delta_us.median - 0.05).abs() < 0.035, "{p:?}");
        }
    }

    #[test]
    fn a_crossovers_slice_differences_read_delayed_minus_undelayed_by_order() {
        let passes = crossover_passes(0.0, 0.0, 0.0);
        let c = Crossover::of(&passes);
        // b − a per round: +5 where b carried, −5 where a carried.
        let diffs = (0..4u32).flat_map(|pass| (0..3).map(move |_| (pass, if pass < 2 { 5.0 } else { -5.0 }))).collect();
        let pooled = c.pool_slices(vec![PairedSlice { name: "x→y".to_owned(), level_ns: 30.0, diffs }]);
        let groups: Vec<u32> = pooled[0].diffs.iter().map(|(g, _)| *g).collect();
        assert_eq!(groups, [0, 0, 0, 1, 1, 1], "matched rounds pooled, sorted by order group");
        assert!(pooled[0].diffs.iter().all(|(_, d)| *d == 5.0));
    }
}
