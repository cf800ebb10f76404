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
//! fix. A second declaration the trace can refute is a hop's side: a span
//! declared on the caller's side whose marks come from a thread that never
//! starts an operation (the writer's), or one declared on the writer's side
//! marked only by the harness's callers ([`sides`]).

use hopscope_probe::{Edge, HopDef, Side, SpanEdge, ThreadRole, TraceHeader};

use crate::join::{LaneOps, SliceSide};
use crate::recorded::Recorded;
use crate::slices::{Owner, SliceFigures};
use crate::stats::Summary;
use crate::warning::Warning;

pub mod backwards;
mod declared;

pub use declared::{Declared, SpanMethod, SqliteFix};

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
pub fn check(header: &TraceHeader, ops: &LaneOps, slices: &[SliceFigures], baseline: (&str, &Summary)) -> Vec<Warning> {
    let (name, op) = baseline;
    slices
        .iter()
        .filter(|s| s.owner == Owner::Library && s.on_path && s.side != SliceSide::Cross)
        .filter(|s| {
            let overlap = s.ci95[0] <= op.ci95[1] && op.ci95[0] <= s.ci95[1];
            overlap || s.median_us >= (1.0 - MATCH_SHARE) * op.median
        })
        .map(|s| Warning::SliceLikeBaseline {
            slice: s.name.clone(),
            slice_us: s.median_us,
            slice_ci95: s.ci95,
            baseline: name.to_owned(),
            baseline_us: op.median,
            baseline_ci95: op.ci95,
            fix: Recorded::Typed(fix(header, ops, &s.name)),
        })
        .collect()
}

/// Warnings for hops of `ops` marked on the other side from the one
/// declared: one per span (or unmapped hop), naming the thread that marked
/// it and the declaration that fixes it. The caller's threads are those
/// that mark the operation's first hop. A writer-side hop is questioned
/// only when those are all the harness's own caller threads (`caller`,
/// `caller-N`): on an async runtime the workers that poll the caller's
/// future may run writer code too.
pub fn sides(header: &TraceHeader, ops: &LaneOps) -> Vec<Warning> {
    let Some(&callers) = ops.hop_threads.first().filter(|m| **m != 0) else { return Vec::new() };
    let harness_callers = threads_of(callers)
        .all(|t| header.threads.get(t).and_then(|name| name.parse::<ThreadRole>().ok()).is_some_and(|r| r.is_caller()));
    let mut warned: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    for (hop, &marked) in ops.hops.iter().zip(&ops.hop_threads) {
        let Some(def) = header.hops.get(*hop) else { continue };
        let wrong = match def.side {
            Side::Caller => marked != 0 && marked & callers == 0,
            Side::Writer => harness_callers && marked != 0 && marked & !callers == 0,
        };
        let what = def.span.as_ref().map_or_else(|| def.name.clone(), |e| e.span.clone());
        if !wrong || warned.contains(&what) {
            continue;
        }
        let by: Vec<&str> = threads_of(marked).map(|t| header.threads.get(t).map_or("?", String::as_str)).collect();
        warnings.push(Warning::WrongSide {
            declared: Recorded::Typed(declared(header, def)),
            threads: by.into_iter().map(str::to_owned).collect(),
            caller_side: def.side == Side::Caller,
            legacy_fix: None,
        });
        warned.push(what);
    }
    warnings
}

/// The thread indices set in `mask`.
fn threads_of(mask: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |t| mask & (1u64 << t) != 0)
}

/// What the program declared for the hop `def` describes.
fn declared(header: &TraceHeader, def: &HopDef) -> Declared {
    match &def.span {
        Some(edge) if declared_by_name(header, &edge.span) => {
            Declared::Span { span: edge.span.clone(), method: declaration(header, &edge.span), side: def.side }
        }
        Some(edge) => Declared::Mapped { span: edge.span.clone(), hop: def.name.clone(), side: def.side },
        None => Declared::Hop { hop: def.name.clone(), side: def.side },
    }
}

/// Whether `span` was declared by name (`caller`, `writer`, `database`,
/// `wait`), which adds hops `span.enter` and `span.exit`.
fn declared_by_name(header: &TraceHeader, span: &str) -> bool {
    let exit = SpanEdge::of(span, Edge::Exit).hop_name();
    header.hops.iter().any(|(_, d)| d.name == exit && d.span.as_ref().is_some_and(|e| e.span == span))
}

/// The `HopLayer` method that declared `span` by name, read back from its
/// exit hop's side and owner.
fn declaration(header: &TraceHeader, span: &str) -> SpanMethod {
    let exit = SpanEdge::of(span, Edge::Exit).hop_name();
    let Some((_, def)) = header.hops.iter().find(|(_, d)| d.name == exit) else { return SpanMethod::Span };
    match (def.side, def.owns) {
        (Side::Caller, Some(Owner::Wait)) => SpanMethod::Wait,
        (Side::Caller, _) => SpanMethod::Caller,
        (Side::Writer, Some(Owner::Sqlite)) => SpanMethod::Database,
        (Side::Writer, _) => SpanMethod::Writer,
    }
}

/// How to declare the slice called `slice` SQLite's: by the span whose
/// exit ends it, or by its closing hop.
fn fix(header: &TraceHeader, ops: &LaneOps, slice: &str) -> SqliteFix {
    let Some(def) = ops.slices.iter().find(|d| d.name == slice) else {
        return SqliteFix::SetOwner { hop: None };
    };
    let to = header.hops.get(def.to);
    match to.and_then(|d| d.span.as_ref()) {
        Some(edge) if edge.edge == Edge::Exit && to.is_some_and(|d| d.name == edge.hop_name()) => {
            SqliteFix::Database { span: edge.span.clone(), method: declaration(header, &edge.span) }
        }
        Some(edge) if edge.edge == Edge::Exit => SqliteFix::OwnedBy { span: edge.span.clone() },
        _ => SqliteFix::SetOwner { hop: Some(to.map_or_else(|| format!("hop{}", def.to.0), |d| d.name.clone())) },
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
        let Warning::SliceLikeBaseline { slice, fix, baseline: base, .. } = &warnings[0] else {
            panic!("{warnings:?}")
        };
        assert_eq!((slice.as_str(), base.as_str()), ("execute.enter→execute.exit", "inline"));
        let want = SqliteFix::Database { span: "execute".into(), method: SpanMethod::Writer };
        assert_eq!(fix, &Recorded::Typed(want));
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

    /// A lane whose caller thread (`caller`, thread 0) marks `write.enter`
    /// and `write.exit` around a span `sql` marked on thread 1 (`log-writer`),
    /// with `write` declared on `write_side` and `sql` on `side` (`database`
    /// when `sqlite`).
    fn lane_of(write_side: Side, side: Side, sqlite: bool) -> (TraceHeader, LaneOps) {
        let mut header = TraceHeader::for_this_host(&["w-probed"], &["caller", "log-writer"]);
        header.clock.ns_per_tick = 1.0;
        let mut hops = HopTable::standard();
        let span = |hops: &mut HopTable, name: &str, side: Side| {
            let [enter, exit] = [Edge::Enter, Edge::Exit].map(|edge| {
                let hop = hops.add(&SpanEdge::of(name, edge).hop_name(), side);
                hops.mark_by(hop, SpanEdge::of(name, edge));
                hop
            });
            (enter, exit)
        };
        let (w_in, w_out) = span(&mut hops, "write", write_side);
        let (s_in, s_out) = span(&mut hops, "sql", side);
        if sqlite {
            hops.set_owner(s_out, Owner::Sqlite).expect("declarable");
        }
        header.hops = hops;
        let mark = |op: u64, hop, t: u64| Mark::new(OpId(op + 1), hop, Ticks(op * 100_000 + t));
        let caller = (0..5u64).flat_map(|op| [mark(op, w_in, 0), mark(op, w_out, 20_000)]).collect();
        let writer = (0..5u64).flat_map(|op| [mark(op, s_in, 3_000), mark(op, s_out, 15_000)]).collect();
        let block = Block {
            op_count: 5,
            end: Ticks(500_000),
            streams: vec![
                Stream { thread: 0, dropped: 0, marks: caller },
                Stream { thread: 1, dropped: 0, marks: writer },
            ],
            ..Block::default()
        };
        let mut scan = HopScan::new(&header);
        scan.add(&block);
        let mut join = Join::new(&header, &scan);
        join.add(0, &block);
        (header.clone(), join.finish().remove(0))
    }

    fn two_threads(side: Side, sqlite: bool) -> (TraceHeader, LaneOps) {
        lane_of(Side::Caller, side, sqlite)
    }

    #[test]
    fn a_writer_thread_span_declared_on_the_caller_s_side_is_named_with_its_fix() {
        let (header, ops) = two_threads(Side::Caller, false);
        let warnings = sides(&header, &ops);
        assert_eq!(warnings.len(), 1, "one warning per span, not per edge: {warnings:?}");
        let Warning::WrongSide { declared, threads, caller_side, .. } = &warnings[0] else { panic!("{warnings:?}") };
        let want = Declared::Span { span: "sql".into(), method: SpanMethod::Caller, side: Side::Caller };
        assert_eq!(declared, &Recorded::Typed(want));
        assert_eq!((threads.as_slice(), *caller_side), (&["log-writer".to_owned()][..], true));
    }

    #[test]
    fn spans_on_their_declared_sides_are_not_questioned() {
        for sqlite in [false, true] {
            let (header, ops) = two_threads(Side::Writer, sqlite);
            assert!(sides(&header, &ops).is_empty(), "{:?}", sides(&header, &ops));
        }
    }

    #[test]
    fn a_caller_thread_span_declared_the_writer_s_is_named_too() {
        // `write` on the caller thread declared on the writer's side: the
        // first hop is then the writer-side `write.enter`, marked by the
        // harness's caller, and `sql` (writer side, on log-writer) is fine.
        let (header, ops) = lane_of(Side::Writer, Side::Writer, true);
        let warnings = sides(&header, &ops);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let Warning::WrongSide { declared, caller_side, .. } = &warnings[0] else { panic!("{warnings:?}") };
        let want = Declared::Span { span: "write".into(), method: SpanMethod::Writer, side: Side::Writer };
        assert_eq!(declared, &Recorded::Typed(want));
        assert!(!caller_side, "marked by the caller's own thread, declared the writer's");
    }

    #[test]
    fn the_fix_for_a_long_library_slice_names_what_was_written() {
        let (header, ops) = two_threads(Side::Caller, false);
        let slices = crate::slices::slice_figures(&ops, 1);
        let warnings = check(&header, &ops, &slices, ("inline", &baseline(12.0)));
        let fixes: Vec<&SqliteFix> = warnings
            .iter()
            .filter_map(|w| match w {
                Warning::SliceLikeBaseline { fix, .. } => fix.typed(),
                _ => None,
            })
            .collect();
        let sql = SqliteFix::Database { span: "sql".into(), method: SpanMethod::Caller };
        assert!(fixes.contains(&&sql), "{fixes:?}");
        assert!(
            fixes.iter().all(|f| !matches!(f, SqliteFix::Database { method: SpanMethod::Writer, .. })),
            "{fixes:?}"
        );
    }
}
