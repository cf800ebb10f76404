//! A slice whose end comes before its start: the trace refutes the order
//! the hop table gives its two marks.
//!
//! A span road's slice across threads can read negative: the writer's
//! `reply` span sends, the woken caller runs on the same core and closes
//! its span before the writer's span exits, so `reply.exit→submit.exit`
//! reads −2.4 µs on every operation (a user's service, spans road, one
//! core). A negative figure summed into a path, a share or a cost is
//! wrong without a word; it is said, with which mark came first.

use crate::join::SliceSide;
use crate::slices::SliceFigures;
use crate::warning::Warning;

/// A slice whose median and whole 95 % CI lie below zero by more than
/// this, µs, is backwards (a clock's grain or two either way is noise).
const BACKWARDS_US: f64 = 0.05;

/// One warning per slice of `slices` that runs backwards.
pub fn check(slices: &[SliceFigures]) -> Vec<Warning> {
    slices
        .iter()
        .filter(|s| s.ci95[1] < -BACKWARDS_US)
        .map(|s| Warning::SliceBackwards {
            slice: s.name.clone(),
            median_us: s.median_us,
            ci95: s.ci95,
            across_threads: s.side == SliceSide::Cross,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_slice_clearly_below_zero_is_backwards() {
        let slice = |name: &str, median_us: f64, ci95: [f64; 2]| {
            let mut s: SliceFigures = serde_json::from_value(serde_json::json!({
                "name": name, "side": "cross", "median_us": median_us, "ci95": ci95, "mad_us": 0.0,
                "p10_us": 0.0, "p90_us": 0.0, "p99_us": 0.0, "outliers": 0, "share": 0.0, "owner": "boundary",
                "library": false,
            }))
            .expect("slice figures");
            s.median_us = median_us;
            s
        };
        let warnings = check(&[
            slice("reply.exit→submit.exit", -2.414, [-2.434, -2.406]),
            slice("sent→woke", 3.1, [3.0, 3.2]),
            // Two grains under zero: a clock's noise, not an order.
            slice("built→sent", -0.01, [-0.02, 0.0]),
        ]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let Warning::SliceBackwards { slice, across_threads, .. } = &warnings[0] else { panic!("{warnings:?}") };
        assert_eq!((slice.as_str(), *across_threads), ("reply.exit→submit.exit", true));
    }
}
