//! The comparison's findings in words: which lane is faster and by how
//! much, which cannot be told apart, and which lane has the smallest cost
//! beyond the floor ([`hopscope_analyze::comparison::ComparisonFinding`]).

use hopscope_analyze::comparison::{ComparisonFinding, LaneFigure, Recorded};

/// A recorded finding as the receipt says it.
pub(crate) fn sentence(finding: &Recorded<ComparisonFinding>) -> String {
    match finding {
        Recorded::Typed(f) => typed(f),
        Recorded::Sentence(said) => said.clone(),
    }
}

/// Which builds a finding is about.
fn kind(probed: bool) -> &'static str {
    if probed { "probed builds" } else { "clean builds" }
}

/// ` (paired PEER − SUBJECT ±d µs, 95% CI …)` when the run paired them.
fn paired(peer: &LaneFigure, subject: &LaneFigure) -> String {
    peer.vs_subject.map_or(String::new(), |d| {
        format!(
            " (paired {} − {} {:+.2} µs, 95% CI {:+.2}…{:+.2})",
            peer.lane, subject.lane, d.median, d.ci95[0], d.ci95[1]
        )
    })
}

/// Peers as a list: `` `lane` 12.34 µs (paired …) `` each.
fn listed(peers: &[LaneFigure], subject: &LaneFigure) -> String {
    let callers = |p: &LaneFigure| {
        if p.callers == subject.callers { String::new() } else { format!(" with {} callers at once", p.callers) }
    };
    let each: Vec<String> = peers
        .iter()
        .map(|p| format!("`{}` {:.2} µs{}{}", p.lane, p.us_per_op, callers(p), paired(p, subject)))
        .collect();
    each.join("; ")
}

/// When two lanes ran different numbers of callers at once: what their µs
/// per write are (empty when alike).
fn callers_apart(peer: &LaneFigure, subject: &LaneFigure) -> String {
    if peer.callers == subject.callers {
        return String::new();
    }
    let many = |f: &LaneFigure| if f.callers == 1 { "1 caller".to_owned() } else { format!("{} callers", f.callers) };
    format!(
        " The two ran {} and {} at once: µs per write is wall time ÷ writes, which with several callers is a \
         throughput, not what one write waits.",
        many(peer),
        many(subject)
    )
}

fn typed(finding: &ComparisonFinding) -> String {
    match finding {
        ComparisonFinding::PeerFaster { shape, probed, subject, peer, description } => format!(
            "`{}` is faster than `{}` on {shape} ({}): {:.2} against {:.2} µs per write{}.{} What it is and how it \
             waits: {description}.",
            peer.lane,
            subject.lane,
            kind(*probed),
            peer.us_per_op,
            subject.us_per_op,
            paired(peer, subject),
            callers_apart(peer, subject)
        ),
        ComparisonFinding::Tied { shape, probed, subject, peers } => format!(
            "On {shape} ({}) this run cannot tell `{}` ({:.2} µs per write) apart from {}: the difference's CI \
             includes zero.",
            kind(*probed),
            subject.lane,
            subject.us_per_op,
            listed(peers, subject)
        ),
        ComparisonFinding::SubjectFaster { shape, probed, subject, subject_us, peers } => format!(
            "`{}` ({:.2} µs per write, 95% CI {:.2}…{:.2}) is faster on {shape} ({}) than {}.",
            subject.lane,
            subject_us.median,
            subject_us.ci95[0],
            subject_us.ci95[1],
            kind(*probed),
            listed(peers, subject)
        ),
        ComparisonFinding::AtFloor { lane, beyond_floor: b } => {
            let what =
                if b.ci95[1] < 0.0 { "is faster than the floor itself" } else { "cannot be told apart from the floor" };
            format!(
                "`{lane}` {what} ({:+.2} µs per write, 95% CI {:+.2}…{:+.2}): it has no cost beyond the floor to rank.",
                b.median, b.ci95[0], b.ci95[1]
            )
        }
        ComparisonFinding::LeastBeyondFloor { lane, beyond_floor: b, ranked, below } => {
            // "Smallest" only when there are two or more to rank.
            let what = match (ranked, below) {
                (1, 0) => format!("`{lane}`'s cost beyond the floor (clean builds)"),
                (1, _) => format!("`{lane}` is the only lane with a cost beyond the floor to rank (clean builds)"),
                _ => format!("The smallest cost beyond the floor (clean builds) is `{lane}`'s"),
            };
            format!("{what}: {:+.2} µs per write (95% CI {:+.2}…{:+.2}).", b.median, b.ci95[0], b.ci95[1])
        }
    }
}

#[cfg(test)]
mod tests {
    use hopscope_analyze::lanes::Difference;
    use hopscope_analyze::stats::Samples;

    use super::*;

    fn figure(lane: &str, us: f64, paired: Option<(f64, [f64; 2])>) -> LaneFigure {
        let vs_subject = paired.map(|(median, ci95)| Difference { median, ci95, rounds: 20 });
        LaneFigure { lane: lane.into(), us_per_op: us, vs_subject, callers: 1 }
    }

    fn said(f: ComparisonFinding) -> String {
        sentence(&Recorded::Typed(f))
    }

    #[test]
    fn each_finding_is_said_with_its_figures() {
        let writer = figure("writer", 30.0, None);
        let (shape, probed) = ("kv".to_owned(), false);
        let faster = said(ComparisonFinding::PeerFaster {
            shape: shape.clone(),
            probed: true,
            subject: writer.clone(),
            peer: figure("crossbeam", 24.0, Some((-6.0, [-7.0, -5.0]))),
            description: "a crossbeam channel, parks".into(),
        });
        assert_eq!(
            faster,
            "`crossbeam` is faster than `writer` on kv (probed builds): 24.00 against 30.00 µs per write (paired \
             crossbeam − writer -6.00 µs, 95% CI -7.00…-5.00). What it is and how it waits: a crossbeam channel, parks."
        );
        let tied = said(ComparisonFinding::Tied {
            shape: shape.clone(),
            probed,
            subject: writer.clone(),
            peers: vec![figure("crossbeam", 29.0, Some((-3.94, [-7.0, 1.59]))), figure("near-floor", 30.5, None)],
        });
        assert!(tied.starts_with("On kv (clean builds) this run cannot tell `writer` (30.00 µs per write) apart from `crossbeam` 29.00 µs (paired crossbeam − writer -3.94"), "{tied}");
        assert!(tied.ends_with("; `near-floor` 30.50 µs: the difference's CI includes zero."), "{tied}");
        let subject_us = Samples::new(vec![29.9, 30.0, 30.1]).expect("finite").summary(1);
        let beaten = said(ComparisonFinding::SubjectFaster {
            shape,
            probed,
            subject: writer,
            subject_us,
            peers: vec![figure("flume", 31.0, Some((1.0, [0.5, 1.5])))],
        });
        assert!(beaten.starts_with("`writer` (30.00 µs per write, 95% CI "), "{beaten}");
        assert!(
            beaten.contains("is faster on kv (clean builds) than `flume` 31.00 µs (paired flume − writer +1.00"),
            "{beaten}"
        );
    }

    #[test]
    fn the_floor_findings_rank_only_lanes_above_it() {
        let d = |median: f64, hi: f64| Difference { median, ci95: [median - 0.2, hi], rounds: 20 };
        let below = said(ComparisonFinding::AtFloor { lane: "inline-peer".into(), beyond_floor: d(-3.38, -3.18) });
        assert_eq!(
            below,
            "`inline-peer` is faster than the floor itself (-3.38 µs per write, 95% CI -3.58…-3.18): it has no cost beyond the floor to rank."
        );
        let apart = said(ComparisonFinding::AtFloor { lane: "near-floor".into(), beyond_floor: d(-1.06, 0.3) });
        assert!(apart.starts_with("`near-floor` cannot be told apart from the floor"), "{apart}");
        let least = |ranked, below| {
            said(ComparisonFinding::LeastBeyondFloor { lane: "cb".into(), beyond_floor: d(0.8, 1.0), ranked, below })
        };
        assert_eq!(
            least(2, 1),
            "The smallest cost beyond the floor (clean builds) is `cb`'s: +0.80 µs per write (95% CI +0.60…+1.00)."
        );
        assert!(
            least(1, 1).starts_with("`cb` is the only lane with a cost beyond the floor to rank"),
            "{}",
            least(1, 1)
        );
        assert!(least(1, 0).starts_with("`cb`'s cost beyond the floor (clean builds): +0.80"), "{}", least(1, 0));
    }

    #[test]
    fn an_older_results_sentence_is_said_as_it_was() {
        let old = Recorded::Sentence("`writer` is faster on kv (clean builds) than `cb` 21.00 µs.".to_owned());
        assert_eq!(sentence(&old), "`writer` is faster on kv (clean builds) than `cb` 21.00 µs.");
    }
}
