//! The machine's wake floor beside a keep-warm sweep, and what it bounds.
//!
//! A waiting thread either stays on its CPU (spinning, which costs CPU for
//! the whole wait) or gives it up (a sleep or a park, which costs a wake).
//! The wake's price is a property of the machine, not of any setting: on a
//! VM it is the halted vCPU's exit and re-entry. Measured next to the sweep,
//! it says why no setting gets a hop below it without spinning, so the
//! sweep's best rows come with the reason they cannot go lower
//! ([`bound`]).

use serde::{Deserialize, Serialize};

use crate::stats::Samples;
use crate::sweep::{SettingKind, SweepRow};

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

/// What the wake floor bounds, as data (the receipt renders it in two
/// sentences: the floor, then the bound).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeBound {
    /// The placement the floor was measured on.
    pub placement: String,
    /// The least any wait that gives its CPU up adds to a hop, µs
    /// ([`WakeFloor::least_us`]).
    pub least_us: f64,
    /// The fastest threaded setting on that placement with a measured
    /// boundary, and what it pays for staying on its CPU.
    pub fastest: Option<KeptWarm>,
}

/// The fastest setting of a placement against inline: the hop it adds
/// and its CPU per write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptWarm {
    /// The setting.
    pub setting: String,
    /// Its boundary (`lane − inline`), median µs.
    pub hop_us: f64,
    /// Its process CPU per write, µs.
    pub cpu_us: f64,
    /// Inline's process CPU per write, µs.
    pub inline_cpu_us: f64,
}

/// What the floor means for the sweep's rows of the same placement: the
/// hop a wait that leaves the CPU cannot beat, and the CPU the fastest
/// setting pays for staying on it.
pub fn bound(floor: &WakeFloor, rows: &[SweepRow]) -> WakeBound {
    let here = |kind: SettingKind| rows.iter().find(|r| r.placement == floor.placement && r.kind == kind);
    let fastest = rows
        .iter()
        .filter(|r| r.placement == floor.placement && r.kind != SettingKind::Inline)
        .filter(|r| r.boundary_us.is_some())
        .min_by(|a, b| a.wall_us.total_cmp(&b.wall_us));
    let kept = match (here(SettingKind::Inline).and_then(|r| r.process_cpu_us), fastest) {
        (Some(inline_cpu_us), Some(best)) if inline_cpu_us > 0.0 => best
            .process_cpu_us
            .zip(best.boundary_us.as_ref())
            .map(|(cpu_us, hop)| KeptWarm { setting: best.setting.clone(), hop_us: hop.median, cpu_us, inline_cpu_us }),
        _ => None,
    };
    WakeBound { placement: floor.placement.clone(), least_us: floor.least_us(), fastest: kept }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::Difference;
    use crate::sweep::INLINE;

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
        let b = bound(&floor, &rows);
        assert!((b.least_us - 15.99).abs() < 1e-9, "the lower p10 of the two: {b:?}");
        let kept = b.fastest.expect("the fastest setting with a boundary");
        assert_eq!(
            (kept.setting.as_str(), kept.hop_us, kept.cpu_us, kept.inline_cpu_us),
            ("both-200us", 1.0, 28.0, 12.5)
        );
    }

    #[test]
    fn a_failed_measurement_has_no_spread() {
        assert_eq!(Spread::of(Vec::new()), None);
        assert_eq!(Spread::of(vec![1.0, f64::NAN]), None);
    }
}
