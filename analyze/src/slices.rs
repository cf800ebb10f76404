//! Slice figures of a probed lane, and the cross-check of its library-owned
//! slices against the lane arithmetic.

use hopscope_probe::{Edge, Hop, SliceKind, SpanEvents, SpanMachinery, TraceHeader};
use serde::{Deserialize, Serialize};

use crate::accounting::Accounting;
pub use crate::join::declared_owner;
use crate::join::{LaneOps, Sharing, SliceDef, SliceSide};
use crate::lanes::SpanSequences;
use crate::stats::Samples;

/// Nanoseconds per microsecond.
const NS_PER_US: f64 = 1_000.0;

/// One slice's figures, in µs per operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceFigures {
    /// `from→to`.
    pub name: String,
    /// Caller, writer, or cross-thread.
    pub side: SliceSide,
    /// Median of block medians.
    pub median_us: f64,
    /// Bootstrap 95% CI of that median (over blocks).
    pub ci95: [f64; 2],
    /// MAD of the block medians.
    pub mad_us: f64,
    /// 10th percentile of every operation's duration, pooled over blocks
    /// (within [`crate::distribution::RELATIVE_ACCURACY`]).
    pub p10_us: f64,
    /// 90th percentile, pooled.
    pub p90_us: f64,
    /// 99th percentile, pooled.
    pub p99_us: f64,
    /// 99.9th percentile, pooled (results written before it had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    /// Tukey outliers among pooled operations (counted, not removed; from
    /// the pooled distribution, so an operation within its accuracy of a
    /// fence may count either way).
    pub outliers: u64,
    /// This slice's share of the operation's whole time: its mean over the
    /// lane's mean wall time per operation when the run has it (so the path
    /// slices' shares and the time between marks add up to one), else its
    /// median over the sum of the path slices' medians.
    pub share: f64,
    /// Who the slice's cost belongs to.
    pub owner: Owner,
    /// Shorthand for `owner == Owner::Library`.
    pub library: bool,
    /// What the `tracing` span machinery holds inside this slice, µs (from
    /// the run's own measurement on empty spans), when both its ends are
    /// span edges on one thread; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machinery_us: Option<f64>,
    /// How the slice's two span edges relate, when [`Self::machinery_us`]
    /// is stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_kind: Option<SliceKind>,
    /// The span events the run saw between the slice's two edges, when it
    /// recorded them (the machinery stated is theirs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_events: Option<SpanEvents>,
    /// Why no machinery is stated for a same-thread slice between two span
    /// edges: such a slice is flagged, never shown bare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machinery_unknown: Option<String>,
    /// Mean duration of every operation, pooled, µs: the only figure of a
    /// slice finer than the clock's grain (a mean over many quantised
    /// durations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    /// Whether the slice is a step of the operation's path (path slices add
    /// up to its time); a tail beside the path is not.
    #[serde(default = "on_path_by_default")]
    pub on_path: bool,
    /// The median lies within two grains of the clock
    /// ([`hopscope_probe::ClockInfo::grain_ns`]): shown as `≤ 2 grains`,
    /// never as a figure the clock cannot resolve.
    #[serde(default)]
    pub within_two_grains: bool,
    /// Whether its marks are the operation's own or a shared interval's
    /// (a batch's COMMIT): its figures above are the latency view, what
    /// each operation waits.
    #[serde(default, skip_serializing_if = "is_own")]
    pub sharing: Sharing,
    /// The cost view, µs per operation, when the lane's operations shared
    /// intervals: a shared interval divided among the operations it
    /// served, and of the writer serving the others only each one's own
    /// step: the mean over the lane's operations, so the writer's slices'
    /// costs add up to its time per operation. `None` for a slice across
    /// threads: a wait, no thread's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_us: Option<f64>,
}

fn is_own(sharing: &Sharing) -> bool {
    *sharing == Sharing::Own
}

/// Who pays for a slice: declared by the program on the hop that ends it
/// (see [`hopscope_probe::Owner`]), read with [`owner`].
pub use hopscope_probe::Owner;

fn on_path_by_default() -> bool {
    true
}

/// Figures of every slice of `ops`; empty if it has no complete operation.
pub fn slice_figures(ops: &LaneOps, seed: u64) -> Vec<SliceFigures> {
    let mut out: Vec<SliceFigures> = ops
        .slices
        .iter()
        .enumerate()
        .filter_map(|(s, def)| {
            let block_medians: Vec<f64> = ops
                .blocks
                .iter()
                .filter_map(|b| b.slice_median_ns.get(s).copied().flatten())
                .map(|ns| ns / NS_PER_US)
                .collect();
            let blocks = Samples::new(block_medians).ok()?;
            let pooled = ops.slice_ns.get(s).filter(|d| d.usable())?;
            let pooled_us = |q: f64| pooled.quantile(q).map_or(f64::NAN, |ns| ns / NS_PER_US);
            let summary = blocks.summary(seed.wrapping_add(s as u64));
            Some(SliceFigures {
                name: def.name.clone(),
                side: def.side,
                median_us: summary.median,
                ci95: summary.ci95,
                mad_us: summary.mad,
                p10_us: pooled_us(0.10),
                p90_us: pooled_us(0.90),
                p99_us: pooled_us(0.99),
                p999_us: pooled.quantile(0.999).map(|ns| ns / NS_PER_US),
                outliers: pooled.tukey_outliers().unwrap_or(0),
                share: 0.0,
                owner: batch_owner(ops, def),
                library: batch_owner(ops, def) == Owner::Library,
                machinery_us: None,
                span_kind: None,
                span_events: None,
                machinery_unknown: None,
                mean_us: pooled.mean().map(|ns| ns / NS_PER_US),
                on_path: def.on_path,
                within_two_grains: false,
                sharing: def.sharing,
                cost_us: cost_us(ops, def, s),
            })
        })
        .collect();
    let total: f64 = out.iter().filter(|s| s.on_path).map(|s| s.median_us).sum();
    if total > 0.0 {
        for s in &mut out {
            s.share = s.median_us / total;
        }
    }
    out
}

/// Slice `s`'s cost view, µs per operation, when `ops` shared intervals:
/// the mean over every operation of the lane (each block's mean weighted
/// by its operations), so a cost that lands in some blocks only (a WAL
/// checkpoint in one COMMIT of many) counts as it does in the writer's
/// time; a median over blocks would drop it. A slice across threads is a
/// wait (the queue, a wake), no work of either thread: it has no cost.
fn cost_us(ops: &LaneOps, def: &SliceDef, s: usize) -> Option<f64> {
    if !ops.shares_work() || def.side == SliceSide::Cross {
        return None;
    }
    let (sum, count) = ops
        .blocks
        .iter()
        .filter_map(|b| Some((b.slice_cost_mean_ns.get(s).copied().flatten()?, b.complete as f64)))
        .fold((0.0, 0.0), |(sum, count), (mean, n)| (sum + mean * n, count + n));
    (count > 0.0).then(|| sum / count / NS_PER_US)
}

/// Make every slice's share its mean's share of `whole_us`, the
/// operation's mean time (its lane's mean wall time per operation).
pub fn share_of(figures: &mut [SliceFigures], whole_us: f64) {
    if whole_us > 0.0 {
        for s in figures {
            s.share = s.mean_us.unwrap_or(s.median_us) / whole_us;
        }
    }
}

/// Flag every slice whose median lies within two grains of a clock whose
/// grain is `grain_ns` (nothing when the grain is unknown).
pub fn mark_grain(figures: &mut [SliceFigures], grain_ns: Option<f64>) {
    let Some(grain_ns) = grain_ns else { return };
    for figure in figures {
        figure.within_two_grains = figure.median_us.abs() * NS_PER_US <= 2.0 * grain_ns + 1e-9;
    }
}

/// State, for every same-thread slice of `ops` whose both ends are span
/// edges, the span machinery inside it, from `machinery`: the cost of the
/// span events the run saw between its two edges (`sequences`, recorded
/// per pair of consecutive marks on a thread), or, in a trace that did not
/// record them, of the shape its edges' order implies. A slice whose
/// machinery cannot be known is flagged with the reason.
pub fn state_machinery(
    figures: &mut [SliceFigures],
    ops: &LaneOps,
    header: &TraceHeader,
    machinery: &SpanMachinery,
    sequences: &SpanSequences,
) {
    let order = &ops.hops[..ops.path_len];
    for figure in figures {
        let Some(def) = ops.slices.iter().find(|d| d.name == figure.name) else { continue };
        if def.side == SliceSide::Cross {
            continue;
        }
        let edge = |hop: Hop| header.hops.get(hop).and_then(|d| d.span.as_ref()).map(|s| s.edge);
        let (Some(from), Some(to)) = (edge(def.from), edge(def.to)) else { continue };
        let stated = if sequences.is_empty() {
            kind_in_order(header, order, def.from, def.to)
                .map(|kind| Stated { ns: machinery.share_ns(kind), kind: Some(kind), events: None })
                .ok_or_else(|| {
                    "its two edges are none of the four shapes measured, and the run recorded no span events".to_owned()
                })
        } else {
            stated_from_events(machinery, sequences, (def.from, from), (def.to, to))
        };
        match stated {
            Ok(Stated { ns, kind, events }) => {
                figure.machinery_us = Some(ns / NS_PER_US);
                figure.span_kind = kind;
                figure.span_events = events;
            }
            Err(why) => figure.machinery_unknown = Some(why),
        }
    }
}

/// The machinery stated for one slice: ns, the shape when it is one of the
/// four, and the span events it was priced from.
struct Stated {
    ns: f64,
    kind: Option<SliceKind>,
    events: Option<SpanEvents>,
}

/// The machinery of the slice from hop `from` to hop `to` (each with its
/// edge) from the span events recorded between them, or why it cannot be
/// stated.
fn stated_from_events(
    machinery: &SpanMachinery,
    sequences: &SpanSequences,
    (from, from_edge): (Hop, Edge),
    (to, to_edge): (Hop, Edge),
) -> Result<Stated, String> {
    // A span entered again closes its first exit's pass with its next exit:
    // the slice ending at its last exit held more than one pass.
    if sequences.get(&(to.0, to.0)).is_some_and(|(e, _)| e.reentered) {
        return Err("its span was entered again: the slice holds more than one pass".to_owned());
    }
    let Some(&(events, varied)) = sequences.get(&(from.0, to.0)) else {
        return Err("the run recorded no span events between its two edges".to_owned());
    };
    if varied {
        return Err("the span events between its edges differed from one operation to the next".to_owned());
    }
    if let Some(why) = events.unknown() {
        return Err(why.to_owned());
    }
    let ns = machinery
        .share_of(from_edge, to_edge, events)
        .ok_or_else(|| "the machinery of its span events was not measured".to_owned())?;
    Ok(Stated { ns, kind: SliceKind::of_events(from_edge, to_edge, events), events: Some(events) })
}

/// The kind of the slice `from → to`, checked against the lane's hop order
/// `order`: an enter to another span's enter is `into` only if the first
/// span's exit is marked after it (the second span lives inside the first),
/// an exit to another span's exit is `out_of` only if the second span's
/// enter is marked before the first's. Where the edges that would show the
/// nesting are not hops (an exit-only span), no kind is stated: the slice
/// may hold a whole span's life the four kinds do not describe.
fn kind_in_order(header: &TraceHeader, order: &[Hop], from: Hop, to: Hop) -> Option<SliceKind> {
    let (from_def, to_def) = (header.hops.get(from)?, header.hops.get(to)?);
    let kind = SliceKind::of(from_def, to_def)?;
    let position = |span: &str, edge: Edge| {
        order.iter().position(|h| {
            header.hops.get(*h).and_then(|d| d.span.as_ref()).is_some_and(|e| e.span == span && e.edge == edge)
        })
    };
    let at = |hop: Hop| order.iter().position(|h| *h == hop);
    let (from_span, to_span) = (&from_def.span.as_ref()?.span, &to_def.span.as_ref()?.span);
    let nested = match kind {
        SliceKind::Into => position(from_span, Edge::Exit).zip(at(to)).is_some_and(|(exit, child)| exit > child),
        SliceKind::OutOf => position(to_span, Edge::Enter)
            .zip(position(from_span, Edge::Enter))
            .is_some_and(|(outer, inner)| outer < inner),
        SliceKind::Inside | SliceKind::Between => true,
    };
    nested.then_some(kind)
}

/// The owner of a slice of `ops` as figures show it: a slice in which an
/// operation waits while the writer serves its batch's others
/// ([`Sharing::Siblings`]) is a wait when a batch served more than one
/// (its time is mostly the others' statements and replies, whatever the
/// hop that ends it declares); else [`owner`].
fn batch_owner(ops: &LaneOps, def: &crate::join::SliceDef) -> Owner {
    if def.sharing == Sharing::Siblings && ops.batches.largest > 1 { Owner::Wait } else { owner(def) }
}

/// The owner of a slice: the boundary's when it crosses threads, else what
/// the hop that ends it declares (see [`crate::join::SliceDef::owner`]).
pub fn owner(def: &crate::join::SliceDef) -> Owner {
    def.owner
}

/// Two instruments on one question: how much does the library itself cost?
///
/// The lanes instrument is `writer − floor` from block wall times. The
/// in-situ instrument is the full [`Accounting`]: writer − floor over every
/// slice of both probed builds' closed cycles, by owner, net of the extra
/// marks. Without a probed floor only the writer's library-owned slices can
/// be summed. Either way the two agree when they lie within a fixed
/// [`CROSSCHECK_TOLERANCE_US`] of each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossCheck {
    /// Sum of the writer's library-owned slice medians, µs.
    pub insitu_writer_us: f64,
    /// Sum of the floor's same-thread, non-execute slice medians, µs (0
    /// when the run has no probed floor).
    pub insitu_floor_us: f64,
    /// `insitu_writer − insitu_floor`, µs: the library's direct cost.
    pub insitu_library_us: f64,
    /// `writer − floor` from the lanes, µs.
    pub lanes_library_us: f64,
    /// The lanes figure's 95% CI (sign test over paired rounds), µs.
    pub lanes_library_ci95: [f64; 2],
    /// The in-situ figure compared (the accounting's net total, or without
    /// it the library slices) minus the lanes', µs.
    pub difference_us: f64,
    /// The fixed bar: the instruments agree within this many µs.
    pub tolerance_us: f64,
    /// Whether `|difference| ≤ tolerance`.
    pub agree: bool,
    /// The full accounting (absent without a probed floor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<Accounting>,
    /// The writer slices summed.
    pub slices: Vec<String>,
    /// The floor slices subtracted.
    pub floor_slices: Vec<String>,
}

/// The instruments agree when they lie within this many µs of each other
/// (exp284's two instruments landed 0.23 µs apart; this run's accounting
/// closes its cycles, so it is held to less).
pub const CROSSCHECK_TOLERANCE_US: f64 = crate::accounting::ACCOUNTING_TOLERANCE_US;

/// Compare the in-situ instrument with the lanes' `writer − floor`: the
/// full `accounting` when there is one, else the writer's library slices
/// (less the probed floor's, when it has some).
pub fn cross_check(
    writer: &[SliceFigures],
    floor: Option<&[SliceFigures]>,
    lanes_library: &crate::lanes::Difference,
    accounting: Option<Accounting>,
) -> CrossCheck {
    let writer_slices: Vec<&SliceFigures> = writer.iter().filter(|s| s.library && s.on_path).collect();
    let floor_slices: Vec<&SliceFigures> =
        floor.unwrap_or_default().iter().filter(|s| s.library && s.on_path).collect();
    let insitu_writer: f64 = writer_slices.iter().map(|s| s.median_us).sum();
    let insitu_floor: f64 = floor_slices.iter().map(|s| s.median_us).sum();
    let insitu = insitu_writer - insitu_floor;
    let difference = accounting.as_ref().map_or(insitu - lanes_library.median, |a| a.difference_us);
    CrossCheck {
        insitu_writer_us: insitu_writer,
        insitu_floor_us: insitu_floor,
        insitu_library_us: insitu,
        lanes_library_us: lanes_library.median,
        lanes_library_ci95: lanes_library.ci95,
        difference_us: difference,
        tolerance_us: CROSSCHECK_TOLERANCE_US,
        agree: difference.abs() <= CROSSCHECK_TOLERANCE_US,
        accounting,
        slices: writer_slices.iter().map(|s| s.name.clone()).collect(),
        floor_slices: floor_slices.iter().map(|s| s.name.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use hopscope_probe::{HopTable, Side, SpanEdge};

    use super::*;

    /// A header whose hops are `write` (enter, exit), `step` (enter, exit)
    /// and `after` (exit only), all on the caller.
    fn header() -> (TraceHeader, [Hop; 5]) {
        let mut hops = HopTable::standard();
        let mut hop = |span: &str, edge: Edge| {
            let h = hops.add(&format!("{span}.{edge:?}"), Side::Caller);
            hops.mark_by(h, SpanEdge { span: span.into(), edge });
            h
        };
        let ids = [
            hop("write", Edge::Enter),
            hop("step", Edge::Enter),
            hop("step", Edge::Exit),
            hop("after", Edge::Exit),
            hop("write", Edge::Exit),
        ];
        let mut header = TraceHeader::for_this_host(&["lane"], &["caller"]);
        header.hops = hops;
        (header, ids)
    }

    #[test]
    fn span_slice_kinds_need_the_nesting_to_show_in_the_hop_order() {
        let (header, [write_in, step_in, step_out, after_out, write_out]) = header();
        let order = [write_in, step_in, step_out, after_out, write_out];
        let kind = |from, to| kind_in_order(&header, &order, from, to);
        assert_eq!(kind(write_in, step_in), Some(SliceKind::Into), "write exits after step enters");
        assert_eq!(kind(step_in, step_out), Some(SliceKind::Inside));
        assert_eq!(kind(step_out, after_out), None, "after's enter is not a hop: its whole life may lie between");
        assert_eq!(kind(after_out, write_out), None, "after's enter is not a hop: nesting unknown");
        // write's exit before step's enter: step is not inside write.
        let flat = [write_in, write_out, step_in, step_out];
        assert_eq!(kind_in_order(&header, &flat, write_in, step_in), None);
        assert_eq!(kind_in_order(&header, &flat, write_out, step_in), Some(SliceKind::Between));
    }
}
