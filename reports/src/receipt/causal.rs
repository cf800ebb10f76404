//! `receipt.md` of a what-if run: the sentence naming where optimisation
//! pays and where it does not, the causal profile as a table (throughput
//! change per slice and change tried), and what each slice's ranking
//! speedup saves per operation and per caller.

use std::fmt::Write as _;

use hopscope_analyze::causal::{CausalProfile, CausalWarning, Estimate, MAX_CREDIBLE_REACH, Point, SliceProfile};
use hopscope_analyze::join::SliceSide;
use hopscope_analyze::recorded::Recorded;
use hopscope_probe::{RunFact, RunFacts};

/// Render `p` as Markdown.
pub fn markdown(p: &CausalProfile) -> String {
    let mut out = format!("# hopscope what-if: `{}`\n\n", p.lane);
    let _ = writeln!(out, "{}\n", sentence(p));
    let _ = writeln!(
        out,
        "Reference (the experiment switched on, changing nothing): {:.2} µs per operation (CI {:.2}…{:.2}), \
         {:.0} operations per second, {} caller(s); {} rounds in {:.1} s.\n",
        p.reference_ns_per_op.median / 1e3,
        p.reference_ns_per_op.ci95[0] / 1e3,
        p.reference_ns_per_op.ci95[1] / 1e3,
        p.reference_ops_per_s,
        p.callers,
        p.rounds,
        p.seconds
    );
    for w in &p.warnings {
        let _ = writeln!(out, "> **Warning:** {}\n", warning(w));
    }
    out.push_str(&table(p));
    out.push_str(&costs(p));
    out.push_str(
        "\n**How to read it.** Each block of the run ran one arm: one slice *virtually* faster by a share of \
         it, *really* slower by a share (the thread passing the slice's end waited), or the reference (the \
         experiment switched on, changing nothing). A share is of the slice's median, or for a cross-thread \
         slice of its fastest tenth: the hand-off itself, not the queueing in it. Arms took turns in an \
         order shuffled each round, and each is judged against the reference of its own round: the median \
         over rounds with a bootstrap 95 % CI. *Reach* is the time per operation saved over the time taken \
         off the slice per operation (for a slowdown: lost over added; a shared interval, such as a batch's \
         COMMIT, passes once for every operation it serves, so its change is counted once for all of them): 1 \
         when the lane waits for every nanosecond of it, \
         0 when the slice runs beside what sets the pace. Speedups are predictions; the real slowdowns \
         beside them show whether the lane responds in proportion. The callers' latency follows from the \
         throughput in a closed loop (latency = callers ÷ throughput). A block runs at least 100 operations \
         per caller, so the lane may run at another pace here than in a decomposition of shorter blocks.\n",
    );
    out.push_str(if p.serial {
        "\n**The rule used here (one core).** Every thread of the lane ran on one core (`--placement \
         same-core`), so each time a thread passed the slice's end the change was taken off the core's time: \
         nobody paused (a paused thread would idle the core rather than leave it to the others), and every \
         thread's time was charged what the passes owed.\n"
    } else {
        "\n**The rule used here (coz's).** The lane's threads ran on more than one core: each time a thread \
         passed the slice's end, every other thread of the lane owed that long and slept it off at a later \
         mark (in lumps); a thread woken across a hand-off took on its waker's charge; each caller's time less \
         what it was charged is the time the block would have taken. A cross-thread slice's change was \
         capped at the time its thread really waited for the hand-off.\n\n**What this rule cannot see.** A \
         virtual speedup keeps every wait as long as it was, so a cost paid per hand-off that changes with the \
         time between hand-offs stays as it was: a receiver that spins before it parks catches a sooner reply \
         without being woken, and an idle core wakes slower after a longer wait. Across cores, a real lane \
         can therefore respond more than in proportion to a slice its callers wait for (hopscope's truth \
         bench on a 2-vCPU VM: a writer's statement really cut by 25–50 % bought 1.2–1.5 times the cut, where \
         the virtual speedup read 0.9–1.0). Read such a slice's speedup as the part in proportion, at least \
         what the change buys there, and a caller-side slice's effect of a few hundred ns as within the \
         noise of waking across cores.\n"
    });
    let meta = |fact: RunFact| p.meta.fact(&fact).unwrap_or("unknown");
    let _ = write!(
        out,
        "\n- command: {}\n- commit: {}\n- sizes: {} rounds · {} ops per block\n- the slices' medians: {}\n- host: \
         {} · {} cores\n",
        super::wording::code_span(meta(RunFact::Command)),
        super::wording::code_span(meta(RunFact::Commit)),
        p.rounds,
        meta(RunFact::OpsPerBlock),
        super::wording::code_span(meta(RunFact::Decomposition)),
        p.host.cpu_model,
        p.host.cores
    );
    out
}

/// One sentence: the slice whose speedup buys most, and the largest slice
/// whose speedup buys nothing measurable, at 25 % if it was tried; when
/// the lane ran at two paces, a second sentence says so (its CIs are the
/// pairs straddling the paces as much as the change).
pub fn sentence(p: &CausalProfile) -> String {
    let paces = p.warnings.iter().find_map(|w| match w {
        Recorded::Typed(CausalWarning::TwoPaces { slow_rounds, rounds, .. }) => Some(format!(
            " Read it with care: the lane ran at two paces ({slow_rounds} of {rounds} reference rounds slow)."
        )),
        _ => None,
    });
    let elsewhere = p.warnings.iter().find_map(|w| match w {
        Recorded::Typed(CausalWarning::MediansElsewhere { decomposition_ns_per_op, reference_ns_per_op }) => {
            Some(format!(
                " Each percent is of a median measured at {:.2} µs per operation, where the arms ran at {:.2}: \
                 read the ns taken off, below.",
                decomposition_ns_per_op / 1e3,
                reference_ns_per_op / 1e3
            ))
        }
        _ => None,
    });
    // Across cores a virtual speedup keeps every wait as it was (the
    // receipt's "What this rule cannot see").
    let across = if p.serial {
        ""
    } else {
        " Across cores these are the part in proportion: a real change may buy more, where a hand-off's cost \
         moves with the time between hand-offs."
    };
    format!("{}{}{}{across}", findings(p), paces.unwrap_or_default(), elsewhere.unwrap_or_default())
}

/// [`sentence`]'s findings.
fn findings(p: &CausalProfile) -> String {
    let callers = if p.callers == 1 { "one caller".to_owned() } else { format!("{} callers", p.callers) };
    let level = if p.slices.iter().any(|s| at(s, 25.0).is_some()) {
        25.0
    } else {
        match p.slices.iter().filter_map(SliceProfile::ranking_point).next() {
            Some(q) => q.change_pct,
            None => return format!("With {callers}, no slice was sped up."),
        }
    };
    let tried: Vec<(&SliceProfile, &Point)> = p.slices.iter().filter_map(|s| at(s, level).map(|q| (s, q))).collect();
    let buys = |q: &Point| q.tells_an_effect() && q.throughput_pct.median > 0.0;
    let best = tried
        .iter()
        .filter(|(_, q)| buys(q))
        .max_by(|a, b| a.1.throughput_pct.median.total_cmp(&b.1.throughput_pct.median));
    // Where optimisation does not pay: the largest such slice, on another
    // side than the one that pays if there is one (the callers' when the
    // writer's statement pays), which is what a reader would try next.
    // With one caller every slice is on the path: one too small to measure
    // is no finding about where optimisation pays.
    let best_side = best.map(|(s, _)| s.side);
    let several = p.callers > 1;
    let idle = tried.iter().filter(|(_, q)| several && nothing(p, q)).max_by(|a, b| {
        let key = |s: &SliceProfile| (Some(s.side) != best_side, s.median_ns);
        let (ka, kb) = (key(a.0), key(b.0));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    // What the share was of: a cross-thread slice's fastest tenth, not
    // its median.
    let faster = |s: &SliceProfile, q: &Point| match s.side {
        SliceSide::Cross if s.base_ns > 0.0 => {
            format!("a {level:.0} % faster `{}` (of its fastest tenth, {:.2} µs)", s.name, s.base_ns / 1e3)
        }
        _ => format!("a {level:.0} % faster `{}` ({:.2} µs{})", s.name, s.median_ns / 1e3, shared(q)),
    };
    let mut parts = Vec::new();
    if let Some((s, q)) = best {
        parts.push(format!("{} buys {} throughput", faster(s, q), pct(&q.throughput_pct)));
    }
    if let Some((s, q)) = idle {
        parts.push(format!("{} buys nothing measurable: {}", faster(s, q), pct(&q.throughput_pct)));
    }
    if parts.is_empty() {
        return format!(
            "With {callers}, no {level:.0} % speedup changed the lane's throughput in a way its CI could tell."
        );
    }
    format!("With {callers}, {}.", parts.join("; "))
}

/// Whether `q`'s slice passed its end fewer times than its operations (a
/// shared interval: a batch's COMMIT serves several).
fn is_shared(q: &Point) -> bool {
    q.taken_ns > 0.0 && q.taken_ns < 0.95 * q.change_ns
}

/// `, shared: its change taken once per interval, N ns per operation` for a
/// shared interval (empty otherwise): what the figures are judged against.
fn shared(q: &Point) -> String {
    if !is_shared(q) {
        return String::new();
    }
    format!(", shared by {:.1} operations on average: {:.0} ns taken off each", q.change_ns / q.taken_ns, q.taken_ns)
}

/// Whether `q` shows its change buys nothing: its CI includes zero and is
/// narrow enough to have seen the change reach the lane whole (its half
/// width below the throughput the whole change would buy). A CI of ±12 %
/// around a change worth 2 % is no evidence of nothing.
fn nothing(p: &CausalProfile, q: &Point) -> bool {
    let per_op = p.reference_ns_per_op.median;
    let taken = q.taken();
    let whole = if per_op > taken { taken / (per_op - taken) * 100.0 } else { f64::INFINITY };
    let half_width = (q.throughput_pct.ci95[1] - q.throughput_pct.ci95[0]) / 2.0;
    !q.throughput_pct.excludes_zero() && half_width < whole
}

/// `s`'s virtual speedup of `pct` percent, if it was tried.
fn at(s: &SliceProfile, pct: f64) -> Option<&Point> {
    s.points.iter().find(|q| q.virtual_speedup && (q.change_pct - pct).abs() < 1e-9)
}

/// A point's reach, or `–` when the time it saved is not told from zero
/// (a ratio of noise to a change of a few ns says nothing).
/// Changes below [`MIN_REACH_NS`] show none either: a real slowdown of a
/// few ns costs at least a clock read or two.
/// With its CI (the saving's over the time taken off), so a reach past 1
/// reads as what it is: a lane that responded more than in proportion
/// when the CI lies past 1, noise when it spans it.
fn reach(q: &Point) -> String {
    if !(q.saved_ns.excludes_zero() && q.taken() >= MIN_REACH_NS) {
        return "–".to_owned();
    }
    // A slowdown's reach is what it lost over what it added: its saving
    // (negative) over its change's sign, as the point's own reach is.
    let per = q.taken() * q.change_pct.signum();
    let [a, b] = q.saved_ns.ci95.map(|ns| ns / per);
    let (low, high) = (a.min(b), a.max(b));
    format!("{:.2} ({low:.2}…{high:.2})", q.reach)
}

/// Smallest change whose reach is shown, ns.
const MIN_REACH_NS: f64 = 20.0;

/// `+18.0 % (CI +17.1…+18.9)`.
fn pct(e: &Estimate) -> String {
    format!("{:+.1} % (CI {:+.1}…{:+.1})", e.median, e.ci95[0], e.ci95[1])
}

/// The profile: one row per slice, one column per change tried.
fn table(p: &CausalProfile) -> String {
    let mut changes: Vec<f64> = p.slices.iter().flat_map(|s| s.points.iter().map(|q| q.change_pct)).collect();
    changes.sort_by(f64::total_cmp);
    changes.dedup();
    let mut out = String::from("## Throughput change by slice and change\n\n| slice | side | median µs |");
    for c in &changes {
        let _ = write!(out, " {} {:.0} % |", if *c > 0.0 { "faster" } else { "slower" }, c.abs());
    }
    out.push_str("\n|---|---|---:|");
    out.push_str(&"---:|".repeat(changes.len()));
    out.push('\n');
    for s in &p.slices {
        let _ = write!(out, "| {} | {:?} | {:.3} |", super::wording::code_span(&s.name), s.side, s.median_ns / 1e3);
        for c in &changes {
            let cell = s.points.iter().find(|q| q.change_pct == *c).map_or("–".to_owned(), |q| pct(&q.throughput_pct));
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

/// Each slice's ranking speedup and the headline's (25 % when tried): time
/// saved, the callers' latency, reach. A saving whose CI excludes zero
/// but lies past what the change could explain is marked as noise.
fn costs(p: &CausalProfile) -> String {
    let mut out = String::from(
        "\n## What each slice's speedup saves\n\n| slice | speedup | taken off the slice per operation, ns | saved per operation, ns | \
         callers' latency, µs | reach | reach slower |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for s in &p.slices {
        // Every speedup the run tried, smallest first.
        let mut shown: Vec<&Point> = s.points.iter().filter(|q| q.virtual_speedup).collect();
        shown.sort_by(|a, b| a.change_pct.total_cmp(&b.change_pct));
        for q in shown {
            // The real slowdown closest in size, for linearity.
            let slower = s
                .points
                .iter()
                .filter(|r| !r.virtual_speedup)
                .min_by(|a, b| (a.change_pct + q.change_pct).abs().total_cmp(&(b.change_pct + q.change_pct).abs()));
            let noise = if q.saved_ns.excludes_zero() && !q.tells_an_effect() {
                format!(" (noise: past {MAX_CREDIBLE_REACH}× the change)")
            } else {
                String::new()
            };
            // A shared interval's change is taken once for the operations
            // it served: per operation, a share of it.
            let taken = if is_shared(q) {
                format!("{:.0} ({:.0} per pass)", q.taken_ns, q.change_ns)
            } else {
                format!("{:.0}", q.taken())
            };
            let _ = writeln!(
                out,
                "| {} | {:.0} % | {taken} | {:+.0} (CI {:+.0}…{:+.0}){noise} | {:+.3} (CI {:+.3}…{:+.3}) | {} | {} |",
                super::wording::code_span(&s.name),
                q.change_pct,
                q.saved_ns.median,
                q.saved_ns.ci95[0],
                q.saved_ns.ci95[1],
                q.latency_us.median,
                q.latency_us.ci95[0],
                q.latency_us.ci95[1],
                reach(q),
                slower.map_or("–".to_owned(), |r| format!("{} (at {:.0} %)", reach(r), r.change_pct.abs()))
            );
        }
    }
    if !p.slices.iter().flat_map(|s| &s.points).any(|q| !q.virtual_speedup) {
        out.push_str(
            "\nNo real slowdown ran beside the speedups (`--quick` runs none): nothing here checked that the \
             lane responds to a slice in proportion.\n",
        );
    }
    out
}

/// What weakens a profile, in words (an older profile's sentence as it
/// was).
pub fn warning(recorded: &Recorded<CausalWarning>) -> String {
    let w = match recorded {
        Recorded::Typed(w) => w,
        Recorded::Sentence(said) => return said.clone(),
    };
    match w {
        CausalWarning::CrossSlicesLeftOut => "the cross-thread slices were left out: with several callers a \
            hand-off's time is mostly waiting (for the other threads' turns when they share one core, in the \
            queue behind a busy writer when they do not), which a faster hand-off does not remove (name one \
            with --what-if-slices to try it anyway)"
            .to_owned(),
        CausalWarning::CrossSlicesCrowded { slices } => format!(
            "{} crosses threads with several callers: its time is mostly waiting (for the other threads' turns \
             on a shared core, or in the queue behind a busy writer), and its speedups overstate what a faster \
             hand-off buys",
            slices.join(", ")
        ),
        CausalWarning::Nonlinear { slice, slower_reach, slower_pct, faster_reach, faster_pct, serial } => {
            let why = if *serial {
                "on one core a cross-thread slice's time can be other threads' work, a hand-off waiting for the \
                 core; any slice's pairs are noisier when the lane's pace moved between blocks"
            } else {
                "a cost paid per hand-off may change with the time between hand-offs, such as waking a thread or \
                 core that has gone idle, which a virtual speedup keeps as it was; or a runnable thread waited for \
                 a CPU, or the lane's pace moved between blocks"
            };
            // Which way the speedup is likely off: the real slowdown shows
            // the lane's response on the side measured for real.
            let bound = if slower_reach > faster_reach {
                "the lane really responded more than the speedup shows: read the speedup as a lower bound"
            } else {
                "the lane really responded less than the speedup shows: read the speedup as an upper bound"
            };
            format!(
                "`{slice}` reaches the lane {slower_reach:.2} when really {slower_pct:.0} % slower but \
                 {faster_reach:.2} when virtually {faster_pct:.0} % faster, so its response is not linear here \
                 ({why}); {bound}, not a slope"
            )
        }
        CausalWarning::TwoPaces { slow_rounds, rounds, slow_ns_per_op, fast_ns_per_op, callers } => format!(
            "the lane ran at two paces: {slow_rounds} of {rounds} reference rounds took {:.2} µs per operation, \
             the others {:.2} ({}the lane's own periodic work such as a WAL checkpoint, or the core held by \
             another process); \
             a round whose two blocks ran at different paces is noise to its pair, so the CIs are wider than \
             the lane's usual spread, and a change may also move how often the slow pace comes. More rounds \
             narrow them",
            slow_ns_per_op / 1e3,
            fast_ns_per_op / 1e3,
            if *callers == 1 { "" } else { "a lock convoy among callers sharing a core, " }
        ),
        CausalWarning::MediansElsewhere { decomposition_ns_per_op, reference_ns_per_op } => format!(
            "the slices' medians, of which each change is a share, were measured by the run's short \
             decomposition at {:.2} µs per operation, and the arms' reference ran at {:.2}: a slice may have \
             taken another time while the arms ran, so read each change by its ns (taken off the slice) and its \
             reach, not by its percent (a program's first seconds, such as a database's growing WAL, can run \
             at another pace; more warm-up blocks, `--warmup N`, start the decomposition later)",
            decomposition_ns_per_op / 1e3,
            reference_ns_per_op / 1e3
        ),
        CausalWarning::MoreThanTaken { slice, change_pct, saved_ns, change_ns } => format!(
            "a {change_pct:.0} % faster `{slice}` saves {saved_ns:.0} ns per operation, more than the {change_ns:.0} \
             ns taken off it: the lane responds more than in proportion (another slice waits on it, or the host's \
             load changed with it)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(change_pct: f64, saved: [f64; 3], taken_ns: f64) -> Point {
        let e = |median: f64, ci95: [f64; 2]| Estimate { median, ci95 };
        Point {
            change_pct,
            change_ns: taken_ns,
            virtual_speedup: change_pct > 0.0,
            throughput_pct: e(1.0, [0.5, 1.5]),
            saved_ns: e(saved[1], [saved[0], saved[2]]),
            latency_us: e(0.0, [0.0, 0.0]),
            reach: saved[1] / (taken_ns * change_pct.signum()),
            taken_ns,
            rounds: 40,
        }
    }

    #[test]
    fn a_slowdowns_reach_carries_its_interval_the_right_way_round() {
        // 1605 ns added, 1397 lost (CI 1090…1873): reach 0.87 (0.68…1.17).
        let slower = point(-25.0, [-1873.0, -1397.0, -1090.0], 1605.0);
        assert_eq!(reach(&slower), "0.87 (0.68…1.17)");
        let faster = point(25.0, [1090.0, 1397.0, 1873.0], 1605.0);
        assert_eq!(reach(&faster), "0.87 (0.68…1.17)");
    }
}
