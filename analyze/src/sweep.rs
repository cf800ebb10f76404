//! The keep-warm sweep: for each waiting strategy of the writer (park, spin
//! or yield for a window, both sides spinning) and each thread placement,
//! what a sequential write costs in wall time, in CPU and in context
//! switches, next to a parking baseline and the inline lane run alternately
//! in the same process.

use hopscope_probe::ThreadRole;
use serde::{Deserialize, Serialize};

use crate::decomposition::{CounterFigure, Decomposition};
use crate::lanes::{self, Difference};

/// Lane name of the parking baseline in a sweep trace.
pub const BASELINE: &str = "park";
/// Lane name of the inline lane in a sweep trace.
pub const INLINE: &str = "inline";

/// What a row of the sweep is, read from its lane's role in the trace:
/// the inline baseline, the parking writer every setting is judged
/// against (the run's subject), or a waiting setting (a peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingKind {
    /// The write on the calling thread.
    Inline,
    /// The writer parking both threads.
    Parking,
    /// A waiting setting (spin, yield, both, tick, adaptive, budget).
    #[default]
    Waiting,
}

impl SettingKind {
    /// The kind of a lane in the role `role`.
    pub fn of(role: hopscope_probe::Role) -> SettingKind {
        match role {
            hopscope_probe::Role::Baseline => SettingKind::Inline,
            hopscope_probe::Role::Subject => SettingKind::Parking,
            _ => SettingKind::Waiting,
        }
    }
}

/// One setting of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Thread placement.
    pub placement: String,
    /// Lane name: `park`, `inline`, or `<mode>-<window>us`.
    pub setting: String,
    /// What the setting is.
    #[serde(default)]
    pub kind: SettingKind,
    /// Wall µs per write (median of blocks) and its CI.
    pub wall_us: f64,
    /// Bootstrap 95% CI of `wall_us`.
    pub wall_ci95: [f64; 2],
    /// CPU µs per write of the caller thread.
    pub caller_cpu_us: Option<f64>,
    /// CPU µs per write of the writer thread.
    pub writer_cpu_us: Option<f64>,
    /// Process CPU µs per write.
    pub process_cpu_us: Option<f64>,
    /// Context switches per write, both threads.
    pub context_switches: Option<f64>,
    /// CPU migrations per write, both threads.
    pub cpu_migrations: Option<f64>,
    /// Consecutive marks of one write on different CPUs, per write.
    #[serde(default)]
    pub cross_core_hops: Option<f64>,
    /// `lane − inline`, paired by round.
    pub boundary_us: Option<Difference>,
}

/// The rows of one placement's sweep trace, already decomposed as `d`.
pub fn rows(placement: &str, trace: &hopscope_probe::Trace, d: &Decomposition) -> Vec<SweepRow> {
    let blocks = lanes::lane_blocks(trace);
    let baseline = (0..trace.header.lanes.len() as u16)
        .find(|&i| trace.header.lane_info(i).is_some_and(|l| l.role == hopscope_probe::Role::Baseline));
    let inline = baseline.and_then(|i| blocks.get(usize::from(i))).filter(|l| l.ops > 0);
    let total = |lane: &str, counter: &str| match d.lanes.get(lane)?.counters.get(counter)? {
        CounterFigure::PerOp(roles) => roles.total(),
        CounterFigure::Unsupported(_) => None,
    };
    let (caller, writer) = (ThreadRole::Caller.to_string(), ThreadRole::writer().to_string());
    // `lane_blocks` keeps the header's order: a lane's index is its place.
    blocks
        .iter()
        .enumerate()
        .filter_map(|(index, lane)| {
            let summary = d.lanes.get(&lane.name)?.us_per_op?;
            let info = u16::try_from(index).ok().and_then(|i| trace.header.lane_info(i));
            let cpu = d.cpu_us_per_op.get(&lane.name);
            let boundary = match inline {
                Some(i) if lane.name != i.name => lanes::difference(lane, i),
                _ => None,
            };
            Some(SweepRow {
                placement: placement.to_owned(),
                setting: lane.name.clone(),
                kind: info.map(|l| SettingKind::of(l.role)).unwrap_or_default(),
                wall_us: summary.median,
                wall_ci95: summary.ci95,
                caller_cpu_us: cpu.and_then(|c| c.get(&caller).copied()),
                writer_cpu_us: cpu.and_then(|c| c.get(&writer).copied()),
                process_cpu_us: cpu.and_then(|c| c.get(&ThreadRole::Process.to_string()).copied()),
                // perf's count when recorded, else getrusage's (always there).
                context_switches: total(&lane.name, "context_switches_per_op").or_else(|| {
                    let switches = d.ctx_switches_per_op.get(&lane.name)?;
                    Some(switches.get(&caller).copied().unwrap_or(0.0) + switches.get(&writer).copied().unwrap_or(0.0))
                }),
                cpu_migrations: total(&lane.name, "cpu_migrations_per_op"),
                cross_core_hops: d.lanes.get(&lane.name).and_then(|l| l.cross_core_hops_per_op),
                boundary_us: boundary,
            })
        })
        .collect()
}

/// A setting of the sweep on one placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedSetting {
    /// The setting (a lane name of the sweep trace).
    pub setting: String,
    /// The placement (and caller gap) it ran on.
    pub placement: String,
}

/// What the sweep says, as data: the receipt renders each as a sentence,
/// and `keep-warm.json` carries the same figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
pub enum SweepFinding {
    /// The threaded setting with the lowest wall time per write.
    Fastest {
        /// Which setting, where.
        at: PlacedSetting,
        /// Its median wall time per write, µs.
        wall_us: f64,
        /// That median's 95% CI, µs.
        wall_ci95: [f64; 2],
    },
    /// What the fastest setting pays in CPU against parking on its
    /// placement (absent when parking itself is the fastest).
    Price {
        /// The fastest setting.
        setting: String,
        /// The placement of both.
        placement: String,
        /// The fastest setting's process CPU per write, µs.
        cpu_us: f64,
        /// Parking's, µs.
        parking_cpu_us: f64,
        /// The fastest setting's wall time minus parking's, µs.
        wall_delta_us: f64,
    },
    /// The settings that beat parking on their placement on both wall time
    /// (below parking's CI) and CPU; none is a finding too.
    BeatParking {
        /// The settings that do.
        settings: Vec<PlacedSetting>,
        /// Threaded settings other than parking, over all placements.
        of: usize,
    },
}

/// What the sweep says: the fastest threaded setting, its CPU price
/// against the parking baseline of the same placement, and whether any
/// setting beats that baseline on both wall time and CPU.
pub fn findings(rows: &[SweepRow]) -> Vec<SweepFinding> {
    let threaded = || rows.iter().filter(|r| r.kind != SettingKind::Inline);
    let Some(best) = threaded().min_by(|a, b| a.wall_us.total_cmp(&b.wall_us)) else { return Vec::new() };
    let baseline = |placement: &str| rows.iter().find(|r| r.placement == placement && r.kind == SettingKind::Parking);
    let placed = |r: &SweepRow| PlacedSetting { setting: r.setting.clone(), placement: r.placement.clone() };
    let mut out = vec![SweepFinding::Fastest { at: placed(best), wall_us: best.wall_us, wall_ci95: best.wall_ci95 }];
    // Parking priced against itself says nothing.
    if let (Some(base), Some(cpu_us)) = (baseline(&best.placement), best.process_cpu_us)
        && let Some(parking_cpu_us) = base.process_cpu_us
        && best.kind != SettingKind::Parking
    {
        out.push(SweepFinding::Price {
            setting: best.setting.clone(),
            placement: best.placement.clone(),
            cpu_us,
            parking_cpu_us,
            wall_delta_us: best.wall_us - base.wall_us,
        });
    }
    let settings: Vec<PlacedSetting> = threaded()
        .filter(|r| r.kind == SettingKind::Waiting)
        .filter(|r| {
            baseline(&r.placement).is_some_and(|b| {
                r.wall_us < b.wall_ci95[0]
                    && matches!((r.process_cpu_us, b.process_cpu_us), (Some(c), Some(bc)) if c < bc)
            })
        })
        .map(placed)
        .collect();
    let of = rows.iter().filter(|r| r.kind == SettingKind::Waiting).count();
    out.push(SweepFinding::BeatParking { settings, of });
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A sweep row with these figures (and a ±1 µs wall CI), for tests.
    pub(crate) fn row(placement: &str, setting: &str, wall: f64, cpu: f64) -> SweepRow {
        let kind = match setting {
            INLINE => SettingKind::Inline,
            BASELINE => SettingKind::Parking,
            _ => SettingKind::Waiting,
        };
        SweepRow {
            placement: placement.into(),
            setting: setting.into(),
            kind,
            wall_us: wall,
            wall_ci95: [wall - 1.0, wall + 1.0],
            caller_cpu_us: None,
            writer_cpu_us: None,
            process_cpu_us: Some(cpu),
            context_switches: Some(2.0),
            cpu_migrations: Some(0.0),
            cross_core_hops: Some(2.0),
            boundary_us: None,
        }
    }

    #[test]
    fn findings_name_the_fastest_its_price_and_what_dominates_parking() {
        let rows = [
            row("different-cores", INLINE, 10.0, 10.0),
            row("different-cores", BASELINE, 100.0, 90.0),
            row("different-cores", "both-40us", 13.0, 27.0),
            row("different-cores", "spin-5us", 99.5, 95.0),
        ];
        let f = findings(&rows);
        let placed = |setting: &str| PlacedSetting { setting: setting.into(), placement: "different-cores".into() };
        assert_eq!(f[0], SweepFinding::Fastest { at: placed("both-40us"), wall_us: 13.0, wall_ci95: [12.0, 14.0] });
        assert_eq!(
            f[1],
            SweepFinding::Price {
                setting: "both-40us".into(),
                placement: "different-cores".into(),
                cpu_us: 27.0,
                parking_cpu_us: 90.0,
                wall_delta_us: -87.0
            }
        );
        assert_eq!(f[2], SweepFinding::BeatParking { settings: vec![placed("both-40us")], of: 2 });
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn parking_fastest_is_not_priced_against_itself() {
        let rows = [
            row("same-core", INLINE, 10.0, 10.0),
            row("same-core", BASELINE, 17.0, 17.0),
            row("same-core", "spin-5us", 18.0, 30.0),
        ];
        let f = findings(&rows);
        assert!(matches!(&f[0], SweepFinding::Fastest { at, .. } if at.setting == BASELINE), "{f:?}");
        assert!(!f.iter().any(|f| matches!(f, SweepFinding::Price { .. })), "{f:?}");
    }
}
