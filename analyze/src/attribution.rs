//! Checks on what a program declared its slices to be.
//!
//! A slice's owner is what the program declared on the hop that ends it
//! (see [`hopscope_probe::Owner`]); nothing here changes it. But one
//! declaration can be refuted by the run itself: a slice counted as the
//! subject's own work that is as long as the baseline lane's whole
//! operation (the same statement on the calling thread), or longer, is as
//! a rule the database call (run on another thread after a switch, it is
//! often slower than inline), labelled by a span declared with `writer`
//! where it wanted `database`. Such a slice gets a warning that names the
//! fix.

use hopscope_probe::{Edge, TraceHeader};

use crate::join::{LaneOps, SliceSide};
use crate::slices::{Owner, SliceFigures};
use crate::stats::Summary;

/// A library slice no shorter than the baseline's operation less this
/// share of it is "as long as" it, even where the two CIs do not overlap:
/// a slice lacks the baseline's per-operation loop and argument handling,
/// and a statement run by a writer whose thread does nothing else is often
/// quicker than the same statement inline (kv-writer's `execute` span
/// measured 11.1 µs against an inline operation of 12.3 µs on a noisy
/// 2-vCPU host, 10% short). A writer's own bookkeeping three quarters as
/// long as a whole database write is rare enough to be worth the question.
pub const MATCH_SHARE: f64 = 0.25;

/// Warnings for the library-owned slices of `ops` whose median matches the
/// baseline lane's whole operation (`baseline`: its name and µs per op).
pub fn check(header: &TraceHeader, ops: &LaneOps, slices: &[SliceFigures], baseline: (&str, &Summary)) -> Vec<String> {
    let (name, op) = baseline;
    slices
        .iter()
        .filter(|s| s.owner == Owner::Library && s.on_path && s.side != SliceSide::Cross)
        .filter(|s| {
            let overlap = s.ci95[0] <= op.ci95[1] && op.ci95[0] <= s.ci95[1];
            overlap || s.median_us >= (1.0 - MATCH_SHARE) * op.median
        })
        .map(|s| {
            format!(
                "slice `{}` ({:.3} µs, 95% CI {:.3}…{:.3}) is as long as the baseline `{name}`'s whole operation \
                 or longer ({:.3} µs, 95% CI {:.3}…{:.3}), yet is counted as the writer's own work: if it is the \
                 database call, declare it so ({})",
                s.name,
                s.median_us,
                s.ci95[0],
                s.ci95[1],
                op.median,
                op.ci95[0],
                op.ci95[1],
                fix(header, ops, &s.name)
            )
        })
        .collect()
}

/// How to declare the slice called `slice` SQLite's: by the span whose
/// exit ends it, or by its closing hop.
fn fix(header: &TraceHeader, ops: &LaneOps, slice: &str) -> String {
    let Some(def) = ops.slices.iter().find(|d| d.name == slice) else {
        return "HopTable::set_owner(hop, Owner::Sqlite) on the hop that ends it".to_owned();
    };
    let to = header.hops.get(def.to);
    match to.and_then(|d| d.span.as_ref()) {
        Some(edge) if edge.edge == Edge::Exit && to.is_some_and(|d| d.name == format!("{}.exit", edge.span)) => {
            format!("HopLayer::database(\"{}\") in place of writer(\"{}\")", edge.span, edge.span)
        }
        Some(edge) if edge.edge == Edge::Exit => format!(".owned_by(\"{}\", Owner::Sqlite) on the layer", edge.span),
        _ => format!(
            "HopTable::set_owner on hop `{}` with Owner::Sqlite",
            to.map_or_else(|| format!("hop{}", def.to.0), |d| d.name.clone())
        ),
    }
}

#[cfg(test)]
mod tests {
    use hopscope_probe::{Block, HopTable, Mark, OpId, Side, SpanEdge, Stream, Ticks};

    use super::*;
    use crate::join::{HopScan, Join};

    /// A lane whose writer marks `execute.enter` and `execute.exit` 15 µs
    /// apart, declared `library` (a `writer` span) unless `database`.
    fn lane(database: bool) -> (TraceHeader, LaneOps) {
        let mut header = TraceHeader::for_this_host(&["w-probed"], &["caller"]);
        header.clock.ns_per_tick = 1.0;
        let mut hops = HopTable::standard();
        let enter = hops.add("execute.enter", Side::Writer);
        let exit = hops.add("execute.exit", Side::Writer);
        hops.mark_by(enter, SpanEdge { span: "execute".into(), edge: Edge::Enter });
        hops.mark_by(exit, SpanEdge { span: "execute".into(), edge: Edge::Exit });
        if database {
            hops.set_owner(exit, Owner::Sqlite).expect("declarable");
        }
        header.hops = hops;
        let marks = (0..5u64)
            .flat_map(|op| {
                let t = op * 100_000;
                [Mark::new(OpId(op + 1), enter, Ticks(t)), Mark::new(OpId(op + 1), exit, Ticks(t + 15_000))]
            })
            .collect();
        let block = Block {
            op_count: 5,
            end: Ticks(500_000),
            streams: vec![Stream { thread: 0, dropped: 0, marks }],
            ..Block::default()
        };
        let mut scan = HopScan::new(&header);
        scan.add(&block);
        let mut join = Join::new(&header, &scan);
        join.add(0, &block);
        let ops = join.finish().remove(0);
        (header, ops)
    }

    fn baseline(median: f64) -> Summary {
        let values: Vec<f64> = (0..21).map(|i| median - 0.1 + 0.01 * f64::from(i)).collect();
        crate::stats::Samples::new(values).expect("finite").summary(3)
    }

    #[test]
    fn a_library_slice_as_long_as_the_baseline_names_the_span_to_declare() {
        let (header, ops) = lane(false);
        let slices = crate::slices::slice_figures(&ops, 1);
        assert_eq!(slices[0].owner, Owner::Library);
        let warnings = check(&header, &ops, &slices, ("inline", &baseline(15.4)));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("`execute.enter→execute.exit`"), "{}", warnings[0]);
        assert!(warnings[0].contains("HopLayer::database(\"execute\")"), "{}", warnings[0]);
        // Longer than the baseline's operation is as suspect; far shorter
        // is left alone.
        assert_eq!(check(&header, &ops, &slices, ("inline", &baseline(11.0))).len(), 1);
        assert_eq!(check(&header, &ops, &slices, ("inline", &baseline(19.5))).len(), 1);
        assert!(check(&header, &ops, &slices, ("inline", &baseline(21.0))).is_empty());
        assert!(check(&header, &ops, &slices, ("inline", &baseline(40.0))).is_empty());
    }

    #[test]
    fn a_slice_declared_the_databases_is_not_questioned() {
        let (header, ops) = lane(true);
        let slices = crate::slices::slice_figures(&ops, 1);
        assert_eq!(slices[0].owner, Owner::Sqlite);
        assert!(check(&header, &ops, &slices, ("inline", &baseline(15.0))).is_empty());
    }
}
