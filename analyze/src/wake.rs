//! The machine's wake floor beside a keep-warm sweep, and what it bounds.
//!
//! A waiting thread either stays on its CPU (spinning, which costs CPU for
//! the whole wait) or gives it up (a sleep or a park, which costs a wake).
//! The wake's price is a property of the machine, not of any setting: on a
//! VM it is the halted vCPU's exit and re-entry. Measured next to the sweep,
//! it says why no setting gets a hop below it without spinning, so the
//! sweep's best rows come with the reason they cannot go lower.

use serde::{Deserialize, Serialize};

use crate::stats::Samples;
use crate::sweep::{INLINE, SweepRow};

/// Three quantiles of a measured wait, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Samples behind the quantiles.
    pub count: usize,
}

impl Spread {
    /// The spread of `values`; `None` when there are none or one is not a
    /// finite number (a measurement that failed says nothing).
    pub fn of(values: Vec<f64>) -> Option<Spread> {
        let s = Samples::new(values).ok()?;
        Some(Spread { p10: s.quantile(0.1), median: s.median(), p90: s.quantile(0.9), count: s.len() })
    }
}

/// How late a thread that gave its CPU up runs again on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeFloor {
    /// Placement of the two threads (the parked one as the writer).
    pub placement: String,
    /// The sleep each sample asked for, µs.
    pub sleep_request_us: f64,
    /// How late those sleeps returned, µs (timer slack 1 µs).
    pub sleep_late_us: Spread,
    /// From `unpark` on one thread to the parked thread running, µs.
    pub park_wake_us: Spread,
}

impl WakeFloor {
    /// The least a wait that leaves the CPU adds, µs: the lower of the two
    /// kinds' 10th percentiles.
    pub fn least_us(&self) -> f64 {
        self.sleep_late_us.p10.min(self.park_wake_us.p10)
    }
}

/// The wake floor in two sentences, then what it means for the sweep's
/// rows of the same placement: the hop a wait that leaves the CPU cannot
/// beat, and the CPU the fastest setting pays for staying on it.
pub fn findings(floor: &WakeFloor, rows: &[SweepRow]) -> Vec<String> {
    let (s, p) = (&floor.sleep_late_us, &floor.park_wake_us);
    let mut out = vec![format!(
        "Wake floor ({}): a {:.0} µs sleep returns {:.2} µs late (median; p10 {:.2}, p90 {:.2}); a parked thread runs {:.2} µs after its unpark (median; p10 {:.2}, p90 {:.2}).",
        floor.placement, floor.sleep_request_us, s.median, s.p10, s.p90, p.median, p.p10, p.p90
    )];
    let mut bound = format!(
        "So any wait that gives its CPU up adds at least {:.2} µs to the hop: a hop under that needs both threads on their CPUs for the whole wait, the caller spinning through the writer's whole turn.",
        floor.least_us()
    );
    let here = |setting: &str| rows.iter().find(|r| r.placement == floor.placement && r.setting == setting);
    let fastest = rows
        .iter()
        .filter(|r| r.placement == floor.placement && r.setting != INLINE)
        .filter(|r| r.boundary_us.is_some())
        .min_by(|a, b| a.wall_us.total_cmp(&b.wall_us));
    if let (Some(inline_cpu), Some(best)) = (here(INLINE).and_then(|r| r.process_cpu_us), fastest)
        && let (Some(cpu), Some(hop)) = (best.process_cpu_us, best.boundary_us.as_ref())
        && inline_cpu > 0.0
    {
        bound.push_str(&format!(
            " Here the fastest, {}, adds {:+.2} µs at {:.2} µs of CPU per write, {:.2}× inline's {:.2}.",
            best.setting,
            hop.median,
            cpu,
            cpu / inline_cpu,
            inline_cpu
        ));
    }
    out.push(bound);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::Difference;

    fn row(setting: &str, wall: f64, cpu: f64, boundary: Option<f64>) -> SweepRow {
        SweepRow {
            boundary_us: boundary.map(|b| Difference { median: b, ci95: [b - 0.1, b + 0.1], rounds: 40 }),
            ..crate::sweep::tests::row("different-cores", setting, wall, cpu)
        }
    }

    #[test]
    fn the_floor_bounds_the_hop_and_prices_the_fastest_setting() {
        let floor = WakeFloor {
            placement: "different-cores".into(),
            sleep_request_us: 2.0,
            sleep_late_us: Spread::of((0..100).map(|i| 15.0 + f64::from(i) / 10.0).collect()).expect("spread"),
            park_wake_us: Spread::of(vec![60.0; 10]).expect("spread"),
        };
        assert!((floor.sleep_late_us.p10 - 15.99).abs() < 1e-9, "{:?}", floor.sleep_late_us);
        let rows = [
            row(INLINE, 12.0, 12.5, None),
            row("park", 86.0, 70.0, Some(74.0)),
            row("both-200us", 13.0, 28.0, Some(1.0)),
            row("inline", 12.0, 12.5, None),
        ];
        let f = findings(&floor, &rows);
        assert!(f[0].contains("a 2 µs sleep returns 19.95 µs late (median; p10 15.99"), "{f:?}");
        assert!(f[0].contains("runs 60.00 µs after its unpark"), "{f:?}");
        assert!(f[1].contains("at least 15.99 µs"), "the lower p10 of the two: {f:?}");
        assert!(f[1].contains("both-200us, adds +1.00 µs at 28.00 µs of CPU per write, 2.24× inline's 12.50"), "{f:?}");
    }

    #[test]
    fn a_failed_measurement_has_no_spread() {
        assert_eq!(Spread::of(Vec::new()), None);
        assert_eq!(Spread::of(vec![1.0, f64::NAN]), None);
    }
}
