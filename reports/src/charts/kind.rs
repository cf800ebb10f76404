//! Which charts a decomposition report holds: each one's file name, title,
//! and whether a run gives it anything to draw. The charts name their own
//! titles from here, and the drawing in [`super`] dispatches on it.

use hopscope_analyze::Decomposition;
use hopscope_probe::ThreadRole;

/// The charts of a decomposition report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// Slices of the probed lane stacked to the total, with lane totals.
    Waterfall,
    /// Hop, boundary, library and the observer effect: each paired
    /// difference on its own scale with its CI.
    Differences,
    /// µs per operation per lane, with CI whiskers.
    Lanes,
    /// ECDF of each lane's block figures.
    Distributions,
    /// CPU µs per operation against wall µs per operation.
    CpuVsWall,
    /// Block figures in run order, by pass.
    Stability,
    /// Each probed peer's slices minus the reference writer's, paired.
    Peers,
    /// Batching lanes: one write's latency against the throughput reached.
    Batching,
}

impl ChartKind {
    /// Every chart, in report order.
    pub const ALL: [ChartKind; 8] = [
        ChartKind::Waterfall,
        ChartKind::Differences,
        ChartKind::Lanes,
        ChartKind::Distributions,
        ChartKind::CpuVsWall,
        ChartKind::Stability,
        ChartKind::Peers,
        ChartKind::Batching,
    ];

    /// File name without extension.
    pub fn file_stem(self) -> &'static str {
        match self {
            ChartKind::Waterfall => "waterfall",
            ChartKind::Differences => "differences",
            ChartKind::Lanes => "lanes",
            ChartKind::Distributions => "distributions",
            ChartKind::CpuVsWall => "cpu-vs-wall",
            ChartKind::Stability => "stability",
            ChartKind::Peers => "peers",
            ChartKind::Batching => "batching",
        }
    }

    /// Chart title.
    pub fn title(self) -> &'static str {
        match self {
            ChartKind::Waterfall => "Where one write goes, slice by slice",
            ChartKind::Differences => "The hop, split: paired differences in µs per write, each on its own scale",
            ChartKind::Lanes => "µs per write by lane (median, 95% CI)",
            ChartKind::Distributions => "Distribution of block figures (ECDF)",
            ChartKind::CpuVsWall => "CPU against wall time per write",
            ChartKind::Stability => "Block figures in run order, by pass",
            ChartKind::Peers => "Where each peer loses: its slices minus the reference writer's",
            ChartKind::Batching => "Batch size: one write's latency against the throughput reached",
        }
    }

    /// Why this chart would be empty for `d` (the sentence its placeholder
    /// shows), or `None` when it has something to draw. Reports leave such
    /// charts out rather than show an empty frame.
    pub fn nothing_to_draw(self, d: &Decomposition) -> Option<&'static str> {
        let lanes = || d.lanes.values();
        let empty = match self {
            ChartKind::Waterfall => d.slices.is_empty(),
            ChartKind::Differences => d.derived.is_none() && d.observer_effect.is_none(),
            ChartKind::Lanes => lanes().all(|l| l.us_per_op.is_none()),
            ChartKind::Distributions | ChartKind::Stability => {
                lanes().all(|l| l.blocks_us.iter().all(|b| !b.us_per_op.is_finite()))
            }
            ChartKind::CpuVsWall => !d.lanes.iter().any(|(name, l)| {
                l.us_per_op.is_some()
                    && d.cpu_us_per_op
                        .get(name)
                        .is_some_and(|roles| roles.contains_key(&ThreadRole::Process.to_string()))
            }),
            ChartKind::Peers => !has_pairs(d),
            ChartKind::Batching => d.batch_sweep.is_none(),
        };
        empty.then_some(match self {
            ChartKind::Waterfall => "No probed lane in this run: no slices to draw.",
            ChartKind::Differences => "This run has no lane arithmetic and no observer effect: nothing was paired.",
            ChartKind::Lanes => "No lane ran any operation.",
            ChartKind::Distributions | ChartKind::Stability => "No lane ran any block.",
            ChartKind::CpuVsWall => "The run recorded no CPU readings.",
            ChartKind::Peers => "No probed peer was paired with a reference in this run.",
            ChartKind::Batching => "Fewer than two lanes batched in this run: no sweep to draw.",
        })
    }

    /// Whether the chart is about something `d` ran: the peers' chart only
    /// for a run with peer lanes (a program without any has nothing of the
    /// kind to leave out).
    pub fn applies_to(self, d: &Decomposition) -> bool {
        match self {
            ChartKind::Peers => d.comparison.is_some() || !d.peer_slices.is_empty(),
            ChartKind::Batching => d.batch_sweep.is_some(),
            _ => true,
        }
    }

    /// The charts with something to draw for `d`, in report order.
    pub fn drawn_for(d: &Decomposition) -> Vec<ChartKind> {
        ChartKind::ALL.into_iter().filter(|kind| kind.nothing_to_draw(d).is_none()).collect()
    }
}

/// Whether the run has peers paired against a reference to draw.
fn has_pairs(d: &Decomposition) -> bool {
    d.peer_slices.iter().any(|p| !p.versus_reference.is_empty())
}
