//! A decomposition's warnings in words
//! ([`hopscope_analyze::warning::Warning`]): one sentence each, as the
//! receipt, the page, the terminal and the tables say them.

use hopscope_analyze::floor::FloorRefusal;
use hopscope_analyze::recorded::Recorded;
use hopscope_analyze::warning::Warning;
use hopscope_analyze::{Decomposition, Partial, PartialCause};

use super::declaration;

/// Every warning of `d`, in words, in its order.
pub fn warnings(d: &Decomposition) -> Vec<String> {
    d.warnings.iter().map(warning).collect()
}

/// A recorded warning in words (an older result's sentence as it was).
pub fn warning(recorded: &Recorded<Warning>) -> String {
    match recorded {
        Recorded::Typed(w) => typed(w),
        Recorded::Sentence(said) => said.clone(),
    }
}

/// A list of thread names as code spans.
fn threads(names: &[String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// What a partial result's figures cover, in one sentence.
pub fn partial_sentence(p: &Partial) -> String {
    let blocks = match p.blocks_kept {
        1 => "the one block".to_owned(),
        n => format!("the {n} blocks"),
    };
    let why = partial_cause(&p.reason);
    if p.damaged {
        return format!(
            "these figures cover {blocks} the trace holds intact, {} bytes of it unused: {why}",
            p.bytes_dropped
        );
    }
    let bytes =
        if p.bytes_dropped > 0 { format!(", {} trailing bytes unused", p.bytes_dropped) } else { String::new() };
    format!("these figures cover {blocks} measured before {why}{bytes}")
}

/// Why a run's figures cover less than it planned, as a clause.
fn partial_cause(cause: &Recorded<PartialCause>) -> String {
    match cause {
        Recorded::Typed(PartialCause::Stopped { line }) => format!("the run stopped ({line})"),
        Recorded::Typed(PartialCause::EndedEarly { held, planned }) => {
            format!("the run ended after {held} of its {planned} planned blocks")
        }
        Recorded::Typed(PartialCause::TraceCut { detail }) => format!("the trace ended early ({detail})"),
        Recorded::Typed(PartialCause::TraceDamaged { detail }) => format!("the trace is damaged ({detail})"),
        Recorded::Sentence(clause) => clause.clone(),
    }
}

/// Why a floor cannot stand for the boundary, and what makes it one.
pub fn floor_refusal(r: &FloorRefusal) -> String {
    match r {
        FloorRefusal::SlowerThanSubject { floor, subject, library: l, subject_batches } => {
            let fix = match subject_batches {
                Some(m) => format!(
                    "The subject batches ({m:.1} operations a shared interval) and the floor does not: give the floor \
                     the subject's batching (one transaction for what one drain holds) over a bare channel and reply, \
                     and nothing else"
                ),
                None => "Give the floor the subject's statement, thread and wait, and nothing else".to_owned(),
            };
            format!(
                "the floor `{floor}` is slower than the subject `{subject}` ({subject} − {floor} {:+.3} µs per op, \
                 95% CI {:+.3}…{:+.3}): a floor is the subject's path without its own machinery and cannot cost \
                 more, so there is no library figure and no cross-check. {fix}",
                l.median, l.ci95[0], l.ci95[1]
            )
        }
        FloorRefusal::FasterThanBaseline { floor, baseline, boundary: b } => format!(
            "the floor `{floor}` is faster than the baseline `{baseline}` ({floor} − {baseline} {:+.3} µs per op, \
             95% CI {:+.3}…{:+.3}): a floor runs the baseline's statement across a thread boundary and cannot cost \
             less, so it skips work the baseline does, and there is no boundary or library figure and no \
             cross-check. Give the floor the subject's statement, thread and wait, and nothing else",
            b.median, b.ci95[0], b.ci95[1]
        ),
        FloorRefusal::Unprobed { floor } => format!(
            "the floor `{floor}` has no probed build with complete operations beside the probed subject: nothing \
             shows it runs the subject's database work and boundary, so there is no library figure and no \
             cross-check. Probe the floor as the subject is probed (the same spans or hops)"
        ),
        FloorRefusal::FloorMarksMore { floor, subject, hop } => format!(
            "the floor `{floor}` marks `{hop}`, which the subject `{subject}` does not: their marks cannot be \
             compared, so there is no library figure and no cross-check. Mark the floor with the subject's spans or \
             hops"
        ),
        FloorRefusal::SubjectMarksOutside { floor, subject, hop } => format!(
            "the subject `{subject}` marks `{hop}`, which the floor `{floor}` does not, and not inside its own code: \
             their marks cannot be compared, so there is no library figure and no cross-check. Mark the floor with \
             the subject's spans or hops (a subject may mark more only between slices of its own)"
        ),
    }
}

/// A slice whose end came before its start, in words.
fn backwards(slice: &str, median_us: f64, ci95: [f64; 2], across_threads: bool) -> String {
    let why = if across_threads {
        "its two marks are on different threads, and the second thread ran its mark first: a thread woken by \
         the first (a reply) ran before the waker's own mark (a span's exit after the send); mark the end \
         before the hand-off, or read the pair the other way"
    } else {
        "its end mark comes before its start on this thread: the hop table orders the two the other way round"
    };
    format!(
        "slice `{slice}` reads {median_us:+.3} µs (95% CI {:+.3}…{:+.3}), below zero: {why}; its figure is the \
         marks' order, not a duration, and the path and shares that sum it are off by as much",
        ci95[0], ci95[1]
    )
}

/// A typed warning in words: each group of warnings said by a function
/// of its own, every variant named here so a new one must be placed.
fn typed(w: &Warning) -> String {
    let said = match w {
        Warning::Partial(_)
        | Warning::NoOperations { .. }
        | Warning::Noisy { .. }
        | Warning::PlacementMissed { .. }
        | Warning::PinsRefused { .. }
        | Warning::MarksLost { .. }
        | Warning::MarksDropped { .. }
        | Warning::CountersUnsupported { .. } => measured(w),
        Warning::NoReference { .. }
        | Warning::NoArithmetic
        | Warning::NoFloor
        | Warning::FloorRefused(_)
        | Warning::SwitchesPastBoundary { .. }
        | Warning::NoProbedFloor
        | Warning::NoObserverEffect => arithmetic(w),
        Warning::InstrumentsDisagree { .. }
        | Warning::FloorLacksSpans { .. }
        | Warning::PeerOutsideMarks { .. }
        | Warning::SliceBackwards { .. } => instruments(w),
        Warning::SlowRounds { .. } | Warning::Carryover { .. } => rounds(w),
        Warning::ContendedKept { .. } | Warning::SpecEdited { .. } => verdict(w),
        Warning::SeveralCallers { .. } | Warning::CallersApart { .. } | Warning::FewOpsPerCaller { .. } => callers(w),
        Warning::SliceLikeBaseline { .. } | Warning::WrongSide { .. } | Warning::IncompleteOps { .. } => declared(w),
    };
    said.unwrap_or_default()
}

/// A warning about what the run measured and what it lost, in words: a
/// partial trace, a lane with no operations or a noisy one, a placement
/// not kept, marks lost, counters unsupported; `None` for any other
/// warning.
fn measured(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::Partial(partial) => format!("partial: {}", partial_sentence(partial)),
        Warning::NoOperations { lane } => format!("lane `{lane}` has no measured operations"),
        Warning::Noisy { lane, spread, .. } => {
            format!("lane `{lane}`: blocks spread by {:.0}% (MAD / median); the host was noisy", spread * 100.0)
        }
        Warning::PlacementMissed { lane, placement, crossing } => format!(
            "lane `{lane}` asked for {placement}, but {:.0}% of its writes were marked on more than one CPU: its \
             threads did not run where the placement says",
            crossing * 100.0
        ),
        Warning::PinsRefused { count } => format!(
            "the kernel refused {count} of the run's thread pins: some threads may not have run where the placement \
             says (see each lane's cross-core figures)"
        ),
        Warning::MarksLost { count } => format!("{count} marks were dropped"),
        Warning::MarksDropped { count } => {
            format!("{count} marks were dropped (buffers full); their operations are excluded")
        }
        Warning::CountersUnsupported { counters } => {
            format!("counters unsupported on this host: {}", counters.join(", "))
        }
        _ => return None,
    })
}

/// A warning about the lanes the arithmetic needs, in words: no baseline
/// or floor, a floor refused, switches past the boundary, no observer
/// effect; `None` for any other warning.
fn arithmetic(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::NoReference { probed, observer, subject } => {
            let has = match (probed, observer) {
                (true, true) => "this run has the slices and the observer effect only",
                (true, false) => "this run has the slices only",
                (false, _) => "no probed build ran either, so this run has no slices",
            };
            let subject = if *subject { "beside the subject" } else { "and a subject lane (none ran)" };
            format!(
                "no baseline or floor lane: {has}; lane arithmetic (hop, boundary, library) needs a baseline lane \
                 (the same write on the calling thread, hopscope_harness::Lane::baseline) {subject}"
            )
        }
        Warning::NoArithmetic => "the trace lacks a baseline or a subject lane: no lane arithmetic".to_owned(),
        Warning::NoFloor => {
            "no floor lane: the hop is not split into boundary and library, and nothing is cross-checked".to_owned()
        }
        Warning::FloorRefused(refusal) => floor_refusal(refusal),
        Warning::SwitchesPastBoundary { switches_us, boundary_us, machinery: m } => format!(
            "the bare switches (handoff lane, {switches_us:.2} µs) measured more than the whole thread boundary \
             ({boundary_us:.2} µs): the machinery around them came to {:+.2} µs (95% CI {:+.2}…{:+.2}), so the \
             boundary is not split this run (too few rounds, or a host that moved between the lanes)",
            m.median, m.ci95[0], m.ci95[1]
        ),
        Warning::NoProbedFloor => {
            "no probed floor lane: the in-situ library figure includes the channel sends any writer pays".to_owned()
        }
        Warning::NoObserverEffect => {
            "no clean and probed build of the subject: the observer effect is not measured".to_owned()
        }
        _ => return None,
    })
}

/// A warning that the marks and the lanes tell different stories, in
/// words: the two instruments apart, a floor without the subject's spans,
/// a peer's operation outside its marks, a slice below zero; `None` for
/// any other warning.
fn instruments(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::InstrumentsDisagree { tolerance_us } => {
            format!("the two instruments disagree about the library's cost by more than the fixed {tolerance_us:.1} µs")
        }
        Warning::FloorLacksSpans { floor, spans } => format!(
            "the subject marks spans the floor `{floor}` does not ({}): the marks' figure prices their edges as bare \
             marks, which a span's edges outcost; give the floor empty spans of the same names and the two \
             instruments compare like with like",
            spans.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        ),
        Warning::PeerOutsideMarks { lane, slices_hop_us, lanes_hop_us, tolerance_us } => format!(
            "`{lane}`'s slices add up to a hop of {slices_hop_us:+.3} µs, its clean lanes' is {lanes_hop_us:+.3} µs: \
             more than {tolerance_us:.1} µs apart, so part of its operation lies outside its marks"
        ),
        Warning::SliceBackwards { slice, median_us, ci95, across_threads } => {
            backwards(slice, *median_us, *ci95, *across_threads)
        }
        _ => return None,
    })
}

/// A warning about what the rounds carried besides a lane's own cost, in
/// words: slow rounds every lane shared, a neighbour's cost carried over;
/// `None` for any other warning.
fn rounds(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::SlowRounds { lanes, rounds, of, every, factor, with_checkpoint } => {
            let every = every.map_or(String::new(), |n| format!(", {n} rounds apart"));
            let cause = match with_checkpoint {
                None => "A WAL checkpoint (SQLite's, every ~1,000 pages written) fits that pattern; this run does not \
                         record checkpoints, so it cannot tell"
                    .to_owned(),
                Some(0) => "No lane's block in them held a WAL checkpoint (recorded): the machine's, or work \
                            outside SQLite's log"
                    .to_owned(),
                Some(n) => format!(
                    "In {n} of them a lane's block held a WAL checkpoint (recorded; see the checkpoints section)"
                ),
            };
            format!(
                "all {lanes} lanes ran over {factor}× their median together in {rounds} of {of} rounds{every}: a \
                 cost they share, not any lane's own. {cause}"
            )
        }
        Warning::Carryover { lane, slower_us, slow_after, fast_after } => format!(
            "the lanes did not follow each other equally often, and `{lane}` ran {slower_us:.3} µs per op slower \
             after `{slow_after}` than after `{fast_after}` (CIs apart): lane differences carry that neighbour's \
             cost; run them in a balanced order (the harness's default)"
        ),
        _ => return None,
    })
}

/// A warning about what an A/B verdict stands on, in words: rounds that
/// waited for another process kept, a spec edited since; `None` for any
/// other warning.
fn verdict(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::ContendedKept { waited, rounds } => format!(
            "{waited} of {rounds} rounds waited for another process; an A/B verdict keeps them (it pairs each \
             round's arms, run side by side), so its CI carries those waits"
        ),
        Warning::SpecEdited { recorded, path, now } => format!(
            "the spec was edited after the run: recorded sha256 {recorded}, {path} now has {now}; the verdict uses \
             the recorded rule"
        ),
        _ => return None,
    })
}

/// A warning about a lane of several callers at once, in words; `None` for
/// any other warning.
fn callers(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::SeveralCallers { lane, callers } => format!(
            "lane `{lane}` ran {callers} callers at once: its slices time each write from its first mark to its last, \
             the wait behind the other callers included, while its µs per write is wall time ÷ writes; the two need \
             not add up, so this receipt gives no time between marks, cross-check or indirect cost for it, and its \
             slices' shares are of their own sum (one caller gives those)"
        ),
        Warning::CallersApart { subject, subject_callers, baseline, baseline_callers } => format!(
            "`{subject}` ran {subject_callers} caller(s) at once and the baseline `{baseline}` {baseline_callers}: \
             wall time per operation is a throughput with several callers and near a latency with one, so no hop, \
             boundary or library is taken between them (give both lanes the same callers)"
        ),
        Warning::FewOpsPerCaller { lane, callers, per_caller } => format!(
            "lane `{lane}` ran {callers} callers at once in blocks of {per_caller:.1} operations each: a block's \
             start, when the callers fill the writer's queue, and its end, when they drain it, weigh on its figure \
             (a batching writer ran 19.3 µs per write at 2.5 each, 12.7 at 200); give each caller at least {} \
             (`--ops` or a spec's `ops`: leave it out and the harness sizes blocks so)",
            hopscope_analyze::warning::LEAST_OPS_PER_CALLER
        ),
        _ => return None,
    })
}

/// A warning that a declaration does not fit the marks, in words; `None`
/// for any other warning.
fn declared(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::IncompleteOps { lane, incomplete, complete } => format!(
            "lane `{lane}`: {incomplete} operations had marks but not one at every hop of their path, {complete} \
             did; its slices stand on those alone. An operation is whole only with every hop it declares marked \
             once: a shared span (a batch's BEGIN or COMMIT) must be linked to each operation it serves, by its \
             `serves` field or `follows_from` a span carrying the operation's `op`"
        ),
        Warning::SliceLikeBaseline { slice, slice_us, slice_ci95: s, baseline, baseline_us, baseline_ci95: b, fix } => {
            format!(
                "slice `{slice}` ({slice_us:.3} µs, 95% CI {:.3}…{:.3}) is as long as the baseline `{baseline}`'s \
                 whole operation or longer ({baseline_us:.3} µs, 95% CI {:.3}…{:.3}), yet is counted as the writer's \
                 own work: if it is the database call, declare it so ({})",
                s[0],
                s[1],
                b[0],
                b[1],
                declaration::sqlite_fix(fix)
            )
        }
        Warning::WrongSide { declared, threads: by, caller_side, legacy_fix } => {
            let (declared, fix) = match declared {
                Recorded::Typed(d) => (declaration::declared(d), declaration::side_fix(d)),
                Recorded::Sentence(phrase) => (phrase.clone(), legacy_fix.clone().unwrap_or_default()),
            };
            format!(
                "{declared} but its marks come from thread {} ({}): its slices are attributed to the wrong side; {fix}",
                threads(by),
                if *caller_side { "not a thread that starts an operation" } else { "the caller's own thread" }
            )
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopscope_analyze::attribution::{Declared, SpanMethod};

    #[test]
    fn every_warning_is_one_line_and_names_what_it_rests_on() {
        let cases = [
            (
                Warning::Noisy { lane: "floor".into(), spread: 0.19, limit: 0.05 },
                "lane `floor`: blocks spread by 19% (MAD / median); the host was noisy",
            ),
            (Warning::NoOperations { lane: "w".into() }, "lane `w` has no measured operations"),
            (
                Warning::MarksDropped { count: 12 },
                "12 marks were dropped (buffers full); their operations are excluded",
            ),
            (
                Warning::CountersUnsupported { counters: vec!["cycles".into(), "instructions".into()] },
                "counters unsupported on this host: cycles, instructions",
            ),
            (
                Warning::InstrumentsDisagree { tolerance_us: 0.2 },
                "the two instruments disagree about the library's cost by more than the fixed 0.2 µs",
            ),
        ];
        for (w, said) in cases {
            assert_eq!(warning(&Recorded::Typed(w)), said);
        }
        let backwards = warning(&Recorded::Typed(Warning::SliceBackwards {
            slice: "reply.exit→submit.exit".into(),
            median_us: -2.414,
            ci95: [-2.434, -2.406],
            across_threads: true,
        }));
        assert!(
            backwards.starts_with(
                "slice `reply.exit→submit.exit` reads -2.414 µs (95% CI -2.434…-2.406), below zero: its two marks are \
                 on different threads"
            ),
            "{backwards}"
        );
        assert!(!backwards.contains('\n'));
        let slow = warning(&Recorded::Typed(Warning::SlowRounds {
            lanes: 3,
            rounds: 4,
            of: 40,
            every: Some(10),
            factor: 2.0,
            with_checkpoint: None,
        }));
        assert!(
            slow.starts_with("all 3 lanes ran over 2× their median together in 4 of 40 rounds, 10 rounds apart:"),
            "{slow}"
        );
        let side = warning(&Recorded::Typed(Warning::WrongSide {
            declared: Recorded::Typed(Declared::Span {
                span: "execute".into(),
                method: SpanMethod::Writer,
                side: hopscope_probe::Side::Writer,
            }),
            threads: vec!["caller".into()],
            caller_side: false,
            legacy_fix: None,
        }));
        assert!(side.starts_with("span `execute` is declared writer(\"execute\") but its marks"), "{side}");
        assert!(
            side.ends_with(
                "declare it HopLayer::caller(\"execute\") or, if the caller waits inside it, wait(\"execute\")"
            ),
            "{side}"
        );
        assert!(side.contains("from thread `caller` (the caller's own thread)"), "{side}");
        for w in [Warning::NoReference { probed: false, observer: false, subject: false }, Warning::NoFloor] {
            assert_eq!(warning(&Recorded::Typed(w)).lines().count(), 1);
        }
    }

    #[test]
    fn an_older_results_sentence_is_said_as_it_was() {
        assert_eq!(
            warning(&Recorded::Sentence("lane `x` has no measured operations".into())),
            "lane `x` has no measured operations"
        );
    }
}
