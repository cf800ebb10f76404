//! One lane's figures in a decomposition: its wall time per operation,
//! its blocks, counters, latency quantiles and batch sizes. The analyses
//! that read lanes (slow rounds, placements, the batch sweep) read these;
//! the whole result holds both.

use std::collections::BTreeMap;

use hopscope_probe::ThreadRole;
use serde::{Deserialize, Serialize};

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
    /// The 99.9th percentile of the same latency, µs (results written
    /// before it had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_latency_p999_us: Option<f64>,
    /// How many operations each shared interval served (a group commit's
    /// transaction), when the lane's operations shared any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<crate::batches::BatchFigures>,
}

impl LaneResult {
    /// Wall time per operation, µs, the mean over its blocks: a block that
    /// held a WAL checkpoint counted as it ran, as a throughput and a
    /// mean cost count it (the median over blocks leaves it out).
    pub fn mean_us_per_op(&self) -> Option<f64> {
        let n = self.blocks_us.len();
        let mean = self.blocks_us.iter().map(|b| b.us_per_op).sum::<f64>() / n as f64;
        (n > 0 && mean > 0.0 && mean.is_finite()).then_some(mean)
    }
}

/// One counter of one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CounterFigure {
    /// Median count per operation by thread role, and their total.
    PerOp(PerRole),
    /// The host cannot count it, and why.
    Unsupported(String),
}

/// A counter's median per operation by thread role, with their sum. In
/// JSON one object: each role's name, and `total` among them (the name no
/// role may take, kept here alone).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PerRole(BTreeMap<String, f64>);

impl PerRole {
    /// The key the sum is stored under beside the roles.
    const TOTAL: &'static str = "total";

    /// Each role's figure, and their sum.
    pub fn from_roles(roles: &BTreeMap<String, f64>) -> PerRole {
        let mut all = roles.clone();
        all.insert(PerRole::TOTAL.to_owned(), roles.values().sum());
        PerRole(all)
    }

    /// The sum over the roles (`None` in a result that lacks it).
    pub fn total(&self) -> Option<f64> {
        self.0.get(PerRole::TOTAL).copied()
    }

    /// One role's figure.
    pub fn role(&self, role: &ThreadRole) -> Option<f64> {
        self.0.get(&role.to_string()).copied()
    }

    /// Each role's name and figure, in name order, without the total.
    pub fn roles(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().filter(|(r, _)| *r != PerRole::TOTAL).map(|(r, v)| (r.as_str(), *v))
    }
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
    /// The block's median latency, first mark to last, µs, when it joined
    /// a complete operation (results written before it had none): what a
    /// capture's blocks are compared by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_median_us: Option<f64>,
}
