//! The decomposition: every figure of a run, as `result.json` holds it
//! (schema `hopscope.decomposition/1`, documented in
//! `docs/decomposition-schema.md`).

use std::collections::BTreeMap;

use hopscope_probe::counters::{CounterSupport, Support};
use hopscope_probe::{ClockInfo, HostInfo, Trace};
use serde::{Deserialize, Serialize};

use crate::join::{self, LaneOps};
use crate::lanes::{self, Difference, LaneBlocks, LaneFigures};
use crate::slices::{self, CrossCheck, SliceFigures};
use crate::stats::BOOTSTRAP_RESAMPLES;

/// Schema name and version written into every result.
pub const SCHEMA: &str = "hopscope.decomposition/1";

/// Seed of every bootstrap in a decomposition; recorded in the result so a
/// reader can reproduce each interval exactly.
pub const BOOTSTRAP_SEED: u64 = 0x0b5e_55ed_5eed_2840;

/// Why a trace cannot be decomposed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyzeError {
    /// The trace holds no measured block at all.
    #[error("the trace holds no measured blocks")]
    NoBlocks,
}

/// Everything measured in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decomposition {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// How the run was made.
    pub run: RunInfo,
    /// The machine.
    pub host: HostInfo,
    /// The clock and its calibration.
    pub clock: ClockInfo,
    /// perf-event counter support on the host.
    pub counters: Vec<CounterSupport>,
    /// Per lane, keyed by lane name.
    pub lanes: BTreeMap<String, LaneResult>,
    /// `hop`, `boundary`, `library`, when the trace has the lanes for them.
    pub derived: Option<Derived>,
    /// Lane whose in-situ marks give the slices.
    pub insitu_lane: Option<String>,
    /// Slices of the in-situ lane, in hop order.
    pub slices: Vec<SliceFigures>,
    /// Slices of the probed floor, in hop order (empty without one).
    pub floor_slices: Vec<SliceFigures>,
    /// In-situ library slices against the lane arithmetic.
    pub crosscheck: Option<CrossCheck>,
    /// Cost of the probe itself: probed vs clean writer.
    pub observer_effect: Option<ObserverEffect>,
    /// Median CPU µs per operation, per lane, per thread role.
    pub cpu_us_per_op: BTreeMap<String, BTreeMap<String, f64>>,
    /// Median context switches per operation (from `getrusage`, recorded
    /// whether or not perf counters were), per lane, per thread role
    /// (`caller`, `writer`, `process`: every thread of the process).
    #[serde(default)]
    pub ctx_switches_per_op: BTreeMap<String, BTreeMap<String, f64>>,
    /// The reference writer beside every non-reference lane (peers), when
    /// the run has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<crate::comparison::Comparison>,
    /// Marks dropped and operations excluded.
    pub drops: Drops,
    /// What a reader must know before trusting the figures.
    pub warnings: Vec<String>,
}

/// How the run was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Trace creation time, ms since the Unix epoch.
    pub created_unix_ms: u64,
    /// Run metadata from the trace header (command, commit, shape, ...).
    pub meta: BTreeMap<String, String>,
    /// Bootstrap seed used for every CI.
    pub bootstrap_seed: u64,
    /// Bootstrap draws per CI.
    pub bootstrap_resamples: usize,
}

/// One lane's result; `us_per_op` is absent when the lane has no measured
/// operations (never NaN).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneResult {
    /// Operations measured.
    pub ops: u64,
    /// Blocks measured.
    pub blocks: usize,
    /// Whether the lane carried probe marks.
    pub probed: bool,
    /// µs per operation, if the lane ran.
    pub us_per_op: Option<crate::stats::Summary>,
    /// CV of block figures per pass.
    pub cv_by_pass: Vec<f64>,
    /// Every measured block's µs per op, in run order.
    pub blocks_us: Vec<BlockFigure>,
    /// perf-event counts per operation, keyed `<counter>_per_op`
    /// (`context_switches_per_op`, ...): per thread role plus `total`, or
    /// `"unsupported: <reason>"` for a counter the host cannot count.
    #[serde(default)]
    pub counters: BTreeMap<String, CounterFigure>,
    /// Mean number of consecutive marks of one write taken on different
    /// CPUs (probed lanes whose marks carry a CPU; absent otherwise).
    #[serde(default)]
    pub cross_core_hops_per_op: Option<f64>,
    /// Share of writes whose marks span more than one CPU.
    #[serde(default)]
    pub ops_crossing_cores: Option<f64>,
    /// Per-operation first-to-last-mark latency of a probed lane: 101
    /// quantiles (0%, 1%, …, 100%) of the pooled operations, µs. Empty for
    /// clean lanes.
    pub op_latency_quantiles_us: Vec<f64>,
}

/// One counter of one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CounterFigure {
    /// Median count per operation by thread role, and their `total`.
    PerOp(BTreeMap<String, f64>),
    /// The host cannot count it, and why.
    Unsupported(String),
}

/// One block's figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlockFigure {
    /// Pass.
    pub pass: u32,
    /// Sample within the pass.
    pub sample: u32,
    /// Block wall time ÷ operations, µs.
    pub us_per_op: f64,
}

/// The lane arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// `writer − inline`: what the architecture costs.
    pub hop_us: Difference,
    /// `floor − inline`: what any writer thread costs.
    pub boundary_us: Difference,
    /// `writer − floor`: the only part a library change can collect.
    pub library_us: Difference,
    /// The lanes used, by role.
    pub lanes: BTreeMap<String, String>,
}

/// Probed writer against clean writer, alternated in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserverEffect {
    /// Clean writer, µs per op (median).
    pub clean_us: f64,
    /// Probed writer, µs per op (median).
    pub probed_us: f64,
    /// Paired difference `probed − clean`, µs per op.
    pub delta_us: f64,
    /// Bootstrap 95% CI of the difference.
    pub delta_ci95: [f64; 2],
    /// `delta / clean`, percent.
    pub delta_pct: f64,
}

/// Losses in the instrument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drops {
    /// Marks dropped because a buffer was full.
    pub marks_dropped: u64,
    /// Operations excluded for a missing or repeated hop, per lane.
    pub incomplete_ops: BTreeMap<String, u64>,
    /// Operations fully joined, per lane.
    pub complete_ops: BTreeMap<String, u64>,
}

/// Decompose `trace`. Pure: reads nothing but the trace, writes nothing.
pub fn decompose(trace: &Trace) -> Result<Decomposition, AnalyzeError> {
    if trace.blocks.is_empty() {
        return Err(AnalyzeError::NoBlocks);
    }
    let seed = BOOTSTRAP_SEED;
    let blocks = lanes::lane_blocks(trace);
    let joined = join::join(trace);
    let mut warnings = Vec::new();

    let mut lane_results = BTreeMap::new();
    let mut cpu = BTreeMap::new();
    let mut ctx_switches = BTreeMap::new();
    for (lane, ops) in blocks.iter().zip(&joined) {
        let figures = lanes::figures(lane, seed);
        if figures.is_none() {
            warnings.push(format!("lane `{}` has no measured operations", lane.name));
        }
        if let Some(f) = &figures {
            cpu.insert(lane.name.clone(), f.cpu_us_per_op.clone());
            if let Some(switches) = f.counters_per_op.get("ctx_switches") {
                ctx_switches.insert(lane.name.clone(), switches.clone());
            }
            let spread = f.us_per_op.mad / f.us_per_op.median;
            if spread > NOISY_SPREAD {
                warnings.push(format!(
                    "lane `{}`: blocks spread by {:.0}% (MAD / median); the host was noisy",
                    lane.name,
                    spread * 100.0
                ));
            }
        }
        let mut result = lane_result(lane, ops, figures.as_ref());
        for support in &trace.header.counters {
            let key = format!("{}_per_op", support.counter.name().replace('-', "_"));
            let figure = match &support.support {
                Support::Unsupported { .. } => Some(CounterFigure::Unsupported(support.support.to_string())),
                Support::Supported => {
                    figures.as_ref().and_then(|f| f.counters_per_op.get(support.counter.name())).map(|roles| {
                        let mut per_op = roles.clone();
                        per_op.insert("total".to_owned(), roles.values().sum());
                        CounterFigure::PerOp(per_op)
                    })
                }
            };
            if let Some(figure) = figure {
                result.counters.insert(key, figure);
            }
        }
        lane_results.insert(lane.name.clone(), result);
    }

    let find = |name: &str| blocks.iter().find(|l| l.name == name && l.ops > 0);
    let inline = find("inline").or(find("inline-probed"));
    let floor = find("floor").or(find("floor-probed"));
    let clean = find("writer");
    let probed = find("writer-probed");
    let writer = clean.or(probed);

    // A user's own capture has none of the reference lanes: say so once
    // rather than warn about each figure it cannot have.
    let has_reference = [inline, floor, writer].iter().any(Option::is_some);
    if !has_reference {
        warnings.push(
            "no reference lanes (inline, floor, writer): slices only; lane arithmetic and the observer effect \
             come from `hopscope decompose`"
                .to_owned(),
        );
    }
    let derived = match (writer, floor, inline) {
        (Some(w), Some(f), Some(i)) => derive(w, f, i, seed),
        _ => {
            if has_reference {
                warnings
                    .push("the trace lacks one of the inline, floor and writer lanes: no lane arithmetic".to_owned());
            }
            None
        }
    };

    // hopscope's own runs slice the probed reference writer; a user's trace
    // (one lane, marks from their own code) is sliced as it is.
    let insitu = joined
        .iter()
        .find(|o| o.complete > 0 && is_named(trace, o, "writer-probed"))
        .or_else(|| joined.iter().find(|o| o.complete > 0 && !is_reference_lane(trace, o)));
    let slices = insitu.map(|o| slices::slice_figures(o, seed)).unwrap_or_default();
    let insitu_lane = insitu.map(|o| trace.header.lanes[usize::from(o.lane)].clone());
    let floor_slices = joined
        .iter()
        .find(|o| o.complete > 0 && is_named(trace, o, "floor-probed"))
        .map(|o| slices::slice_figures(o, seed));
    if insitu.is_some_and(|o| is_named(trace, o, "writer-probed")) && floor_slices.is_none() {
        warnings.push(
            "no probed floor lane: the in-situ library figure includes the channel sends any writer pays".to_owned(),
        );
    }
    let crosscheck = match (&derived, slices.is_empty()) {
        (Some(d), false) => Some(slices::cross_check(&slices, floor_slices.as_deref(), &d.library_us)),
        _ => None,
    };
    if crosscheck.as_ref().is_some_and(|c| !c.agree) {
        warnings.push("the two instruments disagree about the library's cost beyond the stated tolerance".to_owned());
    }

    let observer_effect = match (clean, probed) {
        (Some(c), Some(p)) => observer(c, p, seed),
        _ => {
            if has_reference {
                warnings.push("no clean and probed writer pair: the observer effect is not measured".to_owned());
            }
            None
        }
    };

    let drops = Drops {
        marks_dropped: trace.dropped(),
        incomplete_ops: joined
            .iter()
            .map(|o| (trace.header.lanes[usize::from(o.lane)].clone(), o.incomplete))
            .collect(),
        complete_ops: joined.iter().map(|o| (trace.header.lanes[usize::from(o.lane)].clone(), o.complete)).collect(),
    };
    if drops.marks_dropped > 0 {
        warnings
            .push(format!("{} marks were dropped (buffers full); their operations are excluded", drops.marks_dropped));
    }
    let unsupported: Vec<&str> =
        trace.header.counters.iter().filter(|c| !c.support.is_supported()).map(|c| c.counter.name()).collect();
    if !unsupported.is_empty() {
        warnings.push(format!("counters unsupported on this host: {}", unsupported.join(", ")));
    }

    let comparison = {
        let summaries = lane_results.iter().filter_map(|(k, v)| Some((k.clone(), v.us_per_op?))).collect();
        let process = |map: &BTreeMap<String, BTreeMap<String, f64>>| {
            map.iter().filter_map(|(k, v)| Some((k.clone(), *v.get("process")?))).collect::<BTreeMap<_, _>>()
        };
        let (process_cpu_us, ctx) = (process(&cpu), process(&ctx_switches));
        let facts = crate::comparison::LaneFacts {
            summaries: &summaries,
            process_cpu_us: &process_cpu_us,
            ctx_switches: &ctx,
            meta: &trace.header.run,
        };
        let shape = trace.header.run.get("shape").map_or("this shape", String::as_str);
        crate::comparison::compare(&blocks, &facts, shape, seed)
    };

    Ok(Decomposition {
        schema: SCHEMA.to_owned(),
        run: RunInfo {
            created_unix_ms: trace.header.created_unix_ms,
            meta: trace.header.run.clone(),
            bootstrap_seed: seed,
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        },
        host: trace.header.host.clone(),
        clock: trace.header.clock.clone(),
        counters: trace.header.counters.clone(),
        lanes: lane_results,
        derived,
        insitu_lane,
        slices,
        floor_slices: floor_slices.unwrap_or_default(),
        crosscheck,
        observer_effect,
        cpu_us_per_op: cpu,
        ctx_switches_per_op: ctx_switches,
        comparison,
        drops,
        warnings,
    })
}

/// Robust block-to-block spread (MAD / median) above which a lane is
/// flagged as noisy. Robust on purpose: one block that caught a WAL
/// checkpoint moves the CV a lot and the MAD not at all.
const NOISY_SPREAD: f64 = 0.05;

/// Whether `ops` is one of hopscope's reference lanes (inline, floor,
/// writer, clean or probed), which are never the sliced lane by default.
fn is_reference_lane(trace: &Trace, ops: &LaneOps) -> bool {
    crate::comparison::REFERENCE_LANES.iter().any(|name| is_named(trace, ops, name))
}

fn is_named(trace: &Trace, ops: &LaneOps, name: &str) -> bool {
    trace.header.lanes.get(usize::from(ops.lane)).is_some_and(|l| l == name)
}

fn lane_result(lane: &LaneBlocks, ops: &LaneOps, figures: Option<&LaneFigures>) -> LaneResult {
    let pooled: Vec<f64> = ops.blocks.iter().flat_map(|b| b.total_ns.iter().map(|ns| ns / 1_000.0)).collect();
    let op_latency_quantiles_us = crate::stats::Samples::new(pooled)
        .map(|s| (0..=100).map(|q| s.quantile(f64::from(q) / 100.0)).collect())
        .unwrap_or_default();
    LaneResult {
        ops: lane.ops,
        blocks: lane.us_per_op.len(),
        probed: !ops.hops.is_empty(),
        us_per_op: figures.map(|f| f.us_per_op),
        cv_by_pass: figures.map(|f| f.cv_by_pass.clone()).unwrap_or_default(),
        counters: BTreeMap::new(),
        blocks_us: lane
            .us_per_op
            .iter()
            .map(|(&(pass, sample), &us_per_op)| BlockFigure { pass, sample, us_per_op })
            .collect(),
        op_latency_quantiles_us,
        cross_core_hops_per_op: cross_core(ops).map(|(hops, _)| hops),
        ops_crossing_cores: cross_core(ops).map(|(_, share)| share),
    }
}

/// Mean CPU changes per op and the share of ops with any, over `ops`.
fn cross_core(ops: &LaneOps) -> Option<(f64, f64)> {
    let changes: Vec<u8> = ops.blocks.iter().flat_map(|b| b.cpu_changes.iter().copied()).collect();
    if changes.is_empty() {
        return None;
    }
    let n = changes.len() as f64;
    let hops = changes.iter().map(|c| f64::from(*c)).sum::<f64>() / n;
    Some((hops, changes.iter().filter(|c| **c > 0).count() as f64 / n))
}

/// Why a `result.json` cannot be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// Not JSON, or not the shape of a decomposition.
    #[error("not a valid decomposition: {0}")]
    Json(#[from] serde_json::Error),
    /// Another schema or version.
    #[error("schema is `{found}`, this build reads `{SCHEMA}`")]
    Schema {
        /// The schema the file declares.
        found: String,
    },
}

impl Decomposition {
    /// Read a decomposition back from `result.json` text, refusing any other
    /// schema.
    pub fn from_json(text: &str) -> Result<Decomposition, ResultError> {
        // Check the schema first so a future version is named as such rather
        // than reported as a missing field.
        #[derive(Deserialize)]
        struct Head {
            schema: String,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.schema != SCHEMA {
            return Err(ResultError::Schema { found: head.schema });
        }
        Ok(serde_json::from_str(text)?)
    }
}

fn derive(writer: &LaneBlocks, floor: &LaneBlocks, inline: &LaneBlocks, seed: u64) -> Option<Derived> {
    Some(Derived {
        hop_us: lanes::difference(writer, inline, seed)?,
        boundary_us: lanes::difference(floor, inline, seed.wrapping_add(1))?,
        library_us: lanes::difference(writer, floor, seed.wrapping_add(2))?,
        lanes: [("writer", &writer.name), ("floor", &floor.name), ("inline", &inline.name)]
            .into_iter()
            .map(|(role, name)| (role.to_owned(), name.clone()))
            .collect(),
    })
}

fn observer(clean: &LaneBlocks, probed: &LaneBlocks, seed: u64) -> Option<ObserverEffect> {
    let delta = lanes::difference(probed, clean, seed.wrapping_add(3))?;
    let median = |l: &LaneBlocks| {
        let mut v: Vec<f64> = l.us_per_op.values().copied().collect();
        crate::stats::median_of_unsorted(&mut v)
    };
    let clean_us = median(clean);
    Some(ObserverEffect {
        clean_us,
        probed_us: median(probed),
        delta_us: delta.median,
        delta_ci95: delta.ci95,
        delta_pct: if clean_us > 0.0 { delta.median / clean_us * 100.0 } else { 0.0 },
    })
}
