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

use hopscope_probe::Trace;
use serde::{Deserialize, Serialize};

use crate::ab::{self, Rule, Verdict};
use crate::join::{self, LaneOps};
use crate::slice_verdict::{self, SliceVerdicts};
use crate::stats::Samples;

/// Schema name and version of `resolution.json`.
pub const RESOLUTION_SCHEMA: &str = "hopscope.resolution/2";

/// The rule a resolution repeat is judged by: any effect whose CI excludes
/// zero, of the same sign in both orders, counts as detected.
pub fn detection_rule() -> Rule {
    Rule {
        min_effect_pct: 0.0,
        min_effect_us: 0.0,
        both_orders: true,
        max_control_drift_pct: f64::MAX,
        max_spread_ratio: 4.0,
        min_slice_effect_ns: None,
        min_slice_effect_pct: None,
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
pub fn judge_repeat(trace: &Trace, delayed_hop: &str) -> Repeat {
    let outcome = ab::verdict(&ab::pass_blocks(trace), &detection_rule());
    let deltas: Vec<f64> = outcome.passes.iter().map(|p| p.delta_us.median * 1_000.0).collect();
    let estimated_ns = if deltas.is_empty() { 0.0 } else { deltas.iter().sum::<f64>() / deltas.len() as f64 };
    let detected = outcome.verdict == Verdict::Reproduced && estimated_ns > 0.0;
    let joined = join::join(trace);
    let Some((a, b)) = arm_ops(trace, &joined) else {
        return Repeat { detected, estimated_ns, attributed_slice: None, slice: None, flagged: Vec::new() };
    };
    let min_effect = detection_rule().slice_min_effect(trace.header.clock.grain_ns());
    let Some(verdicts) = slice_verdict::judge(a, b, min_effect) else {
        return Repeat { detected, estimated_ns, attributed_slice: None, slice: None, flagged: Vec::new() };
    };
    Repeat {
        detected,
        estimated_ns,
        attributed_slice: attribute(&verdicts),
        slice: injected(&verdicts, a, delayed_hop),
        flagged: verdicts.changed().map(|s| s.name.clone()).collect(),
    }
}

/// The slice-level verdict on the injected slice: the slice that ends at
/// `delayed_hop` (on the path when there are two).
fn injected(verdicts: &SliceVerdicts, a: &LaneOps, delayed_hop: &str) -> Option<SliceRepeat> {
    let ends_at = |name: &str| name.rsplit('→').next() == Some(delayed_hop);
    let on_path = |name: &str| a.slices.iter().any(|d| d.name == name && d.on_path);
    verdicts.slices.iter().filter(|s| ends_at(&s.name)).max_by_key(|s| on_path(&s.name)).map(|s| SliceRepeat {
        name: s.name.clone(),
        detected: s.changed && s.delta_ns > 0.0,
        estimated_ns: s.delta_ns,
    })
}

/// The joined operations of arms `a` and `b`, if both were probed.
pub(crate) fn arm_ops<'a>(trace: &Trace, joined: &'a [LaneOps]) -> Option<(&'a LaneOps, &'a LaneOps)> {
    let arms = ab::Arms::of(trace)?;
    let ops = |lane: u16| joined.iter().find(|o| o.lane == lane && o.complete > 0);
    Some((ops(arms.a)?, ops(arms.b)?))
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
    /// Share of repeats that detected a slowdown (at 0 ns: the
    /// false-positive rate).
    pub detection_rate: f64,
    /// Median over repeats of the estimated effect, ns.
    pub estimated_ns: f64,
    /// `(estimated − injected) / injected`, percent; absent at 0 ns.
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
    /// `(slice estimate − injected) / injected`, percent; absent at 0 ns.
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
pub fn summarize(
    injected_ns: u64,
    delay_measured_ns: f64,
    slice: &str,
    repeats: &[Repeat],
    seconds: f64,
) -> ResolutionRow {
    let n = repeats.len().max(1) as f64;
    let estimated_ns = Samples::new(repeats.iter().map(|r| r.estimated_ns).collect()).map_or(0.0, |s| s.median());
    let mut blamed: BTreeMap<&str, usize> = BTreeMap::new();
    for r in repeats {
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
    let error = |estimate: f64| (injected_ns > 0).then(|| (estimate - injected_ns as f64) / injected_ns as f64 * 100.0);
    let injected = |r: &Repeat, name: &str| r.slice.as_ref().is_some_and(|s| s.name == name);
    ResolutionRow {
        injected_ns,
        delay_measured_ns,
        repeats: repeats.len(),
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

/// Render `r` as Markdown: lane level and slice level side by side.
pub fn markdown(r: &Resolution) -> String {
    let pct = |x: Option<f64>| x.map_or("–".to_owned(), |e| format!("{e:+.0}%"));
    let mut out = format!("# hopscope resolution: delay injected into `{}`\n\n", r.slice);
    out.push_str(
        "| injected ns | measured ns | repeats | lane: detected | lane: estimate ns | lane: error | lane: blamed slice | \
         slice: detected | slice: estimate ns | slice: error | other slices flagged | any slice flagged | \
         s per decision |\n",
    );
    out.push_str("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for d in &r.deltas {
        out.push_str(&format!(
            "| {} | {:.1} | {} | {:.0}% | {:.0} | {} | {} ({:.0}%) | {:.0}% | {} | {} | {:.0}% | {:.0}% | {:.2} |\n",
            d.injected_ns,
            d.delay_measured_ns,
            d.repeats,
            d.detection_rate * 100.0,
            d.estimated_ns,
            pct(d.error_pct),
            d.attributed_slice.as_deref().unwrap_or("–"),
            d.attribution_rate * 100.0,
            d.slice_detection_rate * 100.0,
            d.slice_estimated_ns.map_or("–".to_owned(), |e| format!("{e:.1}")),
            pct(d.slice_error_pct),
            d.elsewhere_rate * 100.0,
            d.any_flag_rate * 100.0,
            d.seconds / d.repeats.max(1) as f64,
        ));
    }
    out.push_str(
        "\n*Measured ns* is what the injected busy-wait cost per call on this host, timed before the \
         repeats: the truth the estimates are held to. At 0 ns a detection is a false positive. **Lane level**: a repeat detects when its A/B passes \
         show a slowdown whose CI excludes zero in both orders; its estimate is the mean of the pass \
         effects; its blamed slice is the one whose median grew most. **Slice level**: every slice's \
         per-block interquartile means are paired by round, each slice gets a Wilcoxon signed-rank \
         p-value, Holm's procedure holds the chance of flagging any unchanged slice at 5%, and a flagged \
         slice must move the same way in both orders; a repeat detects when the injected slice is flagged \
         slower, and its estimate is that slice's median change. *Any slice flagged* at 0 ns is the slice \
         verdicts' family-wise false-positive rate. A decision is one repeat: both arms, both orders, \
         both verdicts.\n",
    );
    let meta = |k: &str| r.meta.get(k).map_or("unknown", String::as_str);
    out.push_str(&format!(
        "\n- command: `{}`\n- commit: {}\n- sizes: {} ops per block · {} samples × 2 passes per arm\n- host: {} · {} cores\n",
        meta("command"),
        meta("commit"),
        meta("ops_per_block"),
        meta("samples"),
        r.host.cpu_model,
        r.host.cores
    ));
    out
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
        assert!((row.error_pct.expect("error") - (-1.25)).abs() < 1e-9);
        assert_eq!(row.attributed_slice.as_deref(), Some("locked→built"));
        assert_eq!(row.attribution_rate, 0.75);
        assert_eq!(row.slice_detection_rate, 0.75);
        assert_eq!(row.slice_estimated_ns, Some(98.75));
        assert!((row.slice_error_pct.expect("error") - (-50.625)).abs() < 1e-9);
        assert_eq!((row.elsewhere_rate, row.any_flag_rate), (0.25, 1.0));
        assert!(summarize(0, 0.0, "x", &repeats, 1.0).error_pct.is_none());
        assert!(
            markdown(&Resolution {
                schema: RESOLUTION_SCHEMA.to_owned(),
                slice: "locked→built".to_owned(),
                deltas: vec![row],
                host: hopscope_probe::HostInfo::detect(),
                meta: BTreeMap::new(),
            })
            .contains(
                "| 200 | 201.0 | 4 | 75% | 198 | -1% | locked→built (75%) | 75% | 98.8 | -51% | 25% | 100% | 3.00 |"
            )
        );
    }
}
