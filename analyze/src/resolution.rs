//! The instrument's resolution: how small a per-operation change it detects,
//! how often it cries wolf, how well it sizes a change and whether it puts
//! the change in the right slice.
//!
//! A resolution run injects a known busy-wait of `injected_ns` into one slice
//! of arm `b` (arm `a` is the same writer without it), runs the A/B passes
//! several times, and judges each repeat: detected (the A/B verdict is
//! `reproduced`), estimated size (mean of the pass effects), and attributed
//! slice (the slice whose median grew most from `a` to `b` relative to its
//! own uncertainty, so a big noisy slice does not win by noise alone).

use std::collections::BTreeMap;

use hopscope_probe::Trace;
use serde::{Deserialize, Serialize};

use crate::ab::{self, Rule, Verdict};
use crate::decomposition::BOOTSTRAP_SEED;
use crate::join;
use crate::slices::slice_figures;
use crate::stats::Samples;

/// Schema name and version of `resolution.json`.
pub const RESOLUTION_SCHEMA: &str = "hopscope.resolution/1";

/// The rule a resolution repeat is judged by: any effect whose CI excludes
/// zero, of the same sign in both orders, counts as detected.
pub fn detection_rule() -> Rule {
    Rule {
        min_effect_pct: 0.0,
        min_effect_us: 0.0,
        both_orders: true,
        max_control_drift_pct: f64::MAX,
        max_spread_ratio: 4.0,
    }
}

/// What one repeat showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    /// The A/B verdict was `reproduced` with `b` slower.
    pub detected: bool,
    /// Mean of the per-pass `b − a` effects, ns per operation.
    pub estimated_ns: f64,
    /// The slice whose median grew most from `a` to `b`, in units of its
    /// standard error, if both arms were probed.
    pub attributed_slice: Option<String>,
}

/// Judge one repeat's trace (lanes `a` and `b`).
pub fn judge_repeat(trace: &Trace) -> Repeat {
    let outcome = ab::verdict(&ab::pass_blocks(trace), &detection_rule(), BOOTSTRAP_SEED);
    let deltas: Vec<f64> = outcome.passes.iter().map(|p| p.delta_us.median * 1_000.0).collect();
    let estimated_ns = if deltas.is_empty() { 0.0 } else { deltas.iter().sum::<f64>() / deltas.len() as f64 };
    let detected = outcome.verdict == Verdict::Reproduced && estimated_ns > 0.0;
    Repeat { detected, estimated_ns, attributed_slice: attribute(trace) }
}

/// Standard errors per 95% CI width, for a normal approximation.
const CI95_WIDTH_IN_SE: f64 = 3.92;

/// The slice that grew most from arm `a` to arm `b`, in standard errors.
fn attribute(trace: &Trace) -> Option<String> {
    let joined = join::join(trace);
    let arms = ab::Arms::of(trace)?;
    let figures = |lane: u16| {
        let ops = joined.iter().find(|o| o.lane == lane && o.complete > 0)?;
        Some(slice_figures(ops, BOOTSTRAP_SEED))
    };
    let (a, b) = (figures(arms.a)?, figures(arms.b)?);
    let se = |ci: [f64; 2]| (ci[1] - ci[0]) / CI95_WIDTH_IN_SE;
    let a: BTreeMap<&str, (f64, f64)> = a.iter().map(|s| (s.name.as_str(), (s.median_us, se(s.ci95)))).collect();
    b.iter()
        .filter_map(|s| {
            let (median, se_a) = a.get(s.name.as_str())?;
            // A floor of 1 ns keeps a zero-width CI from dividing by zero.
            let se = (se_a * se_a + se(s.ci95).powi(2)).sqrt().max(0.001);
            Some((s.name.clone(), (s.median_us - median) / se))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(name, _)| name)
}

/// One injected size, over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolutionRow {
    /// Busy-wait injected per operation, ns.
    pub injected_ns: u64,
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
    /// Wall-clock seconds the repeats took.
    pub seconds: f64,
}

/// Summarise the repeats of one injected size.
pub fn summarize(injected_ns: u64, slice: &str, repeats: &[Repeat], seconds: f64) -> ResolutionRow {
    let n = repeats.len().max(1) as f64;
    let estimated_ns = Samples::new(repeats.iter().map(|r| r.estimated_ns).collect()).map_or(0.0, |s| s.median());
    let mut blamed: BTreeMap<&str, usize> = BTreeMap::new();
    for r in repeats {
        if let Some(s) = &r.attributed_slice {
            *blamed.entry(s.as_str()).or_default() += 1;
        }
    }
    let attributed_slice = blamed.iter().max_by_key(|(_, n)| **n).map(|(s, _)| (*s).to_owned());
    ResolutionRow {
        injected_ns,
        repeats: repeats.len(),
        detection_rate: repeats.iter().filter(|r| r.detected).count() as f64 / n,
        estimated_ns,
        error_pct: (injected_ns > 0).then(|| (estimated_ns - injected_ns as f64) / injected_ns as f64 * 100.0),
        attributed_slice,
        attribution_rate: blamed.get(slice).copied().unwrap_or(0) as f64 / n,
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

/// Render `r` as Markdown.
pub fn markdown(r: &Resolution) -> String {
    let mut out = format!("# hopscope resolution: delay injected into `{}`\n\n", r.slice);
    out.push_str("| injected ns | repeats | detection rate | estimated ns | error | blamed slice | attribution rate | seconds |\n");
    out.push_str("|---:|---:|---:|---:|---:|---|---:|---:|\n");
    for d in &r.deltas {
        out.push_str(&format!(
            "| {} | {} | {:.0}% | {:.0} | {} | {} | {:.0}% | {:.1} |\n",
            d.injected_ns,
            d.repeats,
            d.detection_rate * 100.0,
            d.estimated_ns,
            d.error_pct.map_or("–".to_owned(), |e| format!("{e:+.0}%")),
            d.attributed_slice.as_deref().unwrap_or("–"),
            d.attribution_rate * 100.0,
            d.seconds
        ));
    }
    out.push_str(
        "\nAt 0 ns the detection rate is the false-positive rate. A repeat detects when its A/B passes \
         show a slowdown whose CI excludes zero in both orders; its estimate is the mean of the pass \
         effects; its blamed slice is the one whose median grew most.\n",
    );
    let meta = |k: &str| r.meta.get(k).map_or("unknown", String::as_str);
    out.push_str(&format!(
        "\n- command: `{}`\n- commit: {}\n- host: {} · {} cores\n",
        meta("command"),
        meta("commit"),
        r.host.cpu_model,
        r.host.cores
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(detected: bool, ns: f64, slice: &str) -> Repeat {
        Repeat { detected, estimated_ns: ns, attributed_slice: Some(slice.to_owned()) }
    }

    #[test]
    fn a_row_counts_detections_sizes_and_blame() {
        let repeats = [
            repeat(true, 210.0, "locked→built"),
            repeat(true, 190.0, "locked→built"),
            repeat(false, 20.0, "sent→woke"),
            repeat(true, 205.0, "locked→built"),
        ];
        let row = summarize(200, "locked→built", &repeats, 12.0);
        assert_eq!(row.detection_rate, 0.75);
        assert_eq!(row.estimated_ns, 197.5);
        assert!((row.error_pct.expect("error") - (-1.25)).abs() < 1e-9);
        assert_eq!(row.attributed_slice.as_deref(), Some("locked→built"));
        assert_eq!(row.attribution_rate, 0.75);
        assert!(summarize(0, "x", &repeats, 1.0).error_pct.is_none());
    }
}
