//! Side by side: the subject and every peer lane of a run (published
//! crates, another implementation of the subject's job), each priced from
//! outside against the same baseline and floor lanes, and compared like
//! with like: a clean peer with the clean subject, a probed one with the
//! probed subject, so no row carries an observer effect its neighbour
//! lacks.
//!
//! `hop vs inline` is what the lane's thread boundary costs in all
//! (against the baseline, which has only a clean build); `beyond floor` is
//! what its own machinery adds to the bare boundary, against the floor
//! build of the same kind, and only when the floor stands for the boundary
//! ([`crate::floor`]). The findings ([`ComparisonFinding`]) say which lane
//! is fastest, whether the intervals separate, and where a peer wins and
//! how it waits, so a winning peer is reported, never hidden.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use hopscope_probe::{LaneFact, Role, RunFact, RunFacts, Variant};

use crate::lanes::{self, Difference, LaneBlocks};
pub use crate::recorded::Recorded;
use crate::roles::Roles;
use crate::stats::Summary;

/// One lane of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// Lane name (a peer's is its crate's).
    pub lane: String,
    /// What the lane is and how it waits (the run's description of it).
    pub description: String,
    /// µs per operation (median of blocks, CI).
    pub us_per_op: Summary,
    /// `lane − inline`, paired by round.
    pub hop_vs_inline: Option<Difference>,
    /// `lane − floor` (the floor's build of the same kind), paired by
    /// round; absent when the floor cannot stand for the boundary.
    pub beyond_floor: Option<Difference>,
    /// Whether this is a probed build.
    #[serde(default)]
    pub probed: bool,
    /// The subject build this row is compared with (the same kind of
    /// build), for a peer's row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versus: Option<String>,
    /// `lane − versus`, paired by round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_subject: Option<Difference>,
    /// Process CPU µs per operation (every thread, a peer's included).
    pub process_cpu_us: Option<f64>,
    /// Context switches per operation, every thread of the process.
    pub ctx_switches: Option<f64>,
    /// Caller threads that drove the lane at once: with several, µs per
    /// operation is wall time ÷ operations (a throughput), not what one
    /// operation waits.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub callers: u32,
}

fn one() -> u32 {
    1
}

fn is_one(callers: &u32) -> bool {
    *callers == 1
}

/// The comparison table and what it says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Comparison {
    /// The subject's builds first (clean, then probed when a probed peer
    /// needs it), then the peers in run order.
    pub rows: Vec<ComparisonRow>,
    /// What the rows say, as data (the receipt renders each in words); a
    /// result written before findings were data holds sentences.
    pub findings: Vec<Recorded<ComparisonFinding>>,
}

/// A lane of a finding: its µs per write and, for a peer, its difference
/// from the subject paired by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneFigure {
    /// Lane name.
    pub lane: String,
    /// µs per write, median of blocks.
    pub us_per_op: f64,
    /// `lane − subject`, paired by round, when the run paired them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_subject: Option<Difference>,
    /// Caller threads that drove it at once (see [`ComparisonRow::callers`]).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub callers: u32,
}

/// What a comparison says, per kind of build (`probed`) on the run's
/// `shape`. Which lane is faster is said only where the paired CI (or,
/// unpaired, the two lanes' CIs) leaves no doubt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
pub enum ComparisonFinding {
    /// A peer faster than the subject: a winning peer is reported, with
    /// what it is and how it waits.
    PeerFaster {
        /// The workload shape.
        shape: String,
        /// Probed builds (else clean).
        probed: bool,
        /// The subject's build.
        subject: LaneFigure,
        /// The faster peer.
        peer: LaneFigure,
        /// The peer's description (what it is, how it waits).
        description: String,
    },
    /// Peers this run cannot tell apart from the subject.
    Tied {
        /// The workload shape.
        shape: String,
        /// Probed builds (else clean).
        probed: bool,
        /// The subject's build.
        subject: LaneFigure,
        /// The tied peers.
        peers: Vec<LaneFigure>,
    },
    /// Peers the subject is faster than.
    SubjectFaster {
        /// The workload shape.
        shape: String,
        /// Probed builds (else clean).
        probed: bool,
        /// The subject's build, with its CI.
        subject: LaneFigure,
        /// The subject's µs per write, with its CI.
        subject_us: Summary,
        /// The slower peers.
        peers: Vec<LaneFigure>,
    },
    /// A clean lane at or below the floor: it does not pay what the
    /// floor's thread pays, so it has no cost beyond the floor to rank.
    AtFloor {
        /// Lane name.
        lane: String,
        /// `lane − floor`, paired by round (median below zero).
        beyond_floor: Difference,
    },
    /// The smallest cost beyond the floor among the clean builds above
    /// it.
    LeastBeyondFloor {
        /// Lane name.
        lane: String,
        /// Its `lane − floor`, paired by round.
        beyond_floor: Difference,
        /// Clean lanes above the floor (ranked).
        ranked: usize,
        /// Clean lanes at or below it (not ranked).
        below: usize,
    },
}

/// Per-lane context needed beside the blocks.
pub struct LaneFacts<'a> {
    /// µs per op summaries by lane.
    pub summaries: &'a BTreeMap<String, Summary>,
    /// Process CPU µs per op by lane.
    pub process_cpu_us: &'a BTreeMap<String, f64>,
    /// Process context switches per op by lane.
    pub ctx_switches: &'a BTreeMap<String, f64>,
    /// Run metadata (lane descriptions live under `lane.<name>`).
    pub meta: &'a BTreeMap<String, String>,
}

/// Compare the subject with every peer lane, build by build, or `None`
/// when the run has no peer (or lacks a baseline or a subject).
/// `floor_stands` is false when the floor cannot stand for the boundary:
/// no row then has a `beyond floor`.
pub fn compare(
    blocks: &[LaneBlocks],
    roles: &Roles,
    facts: &LaneFacts<'_>,
    shape: &str,
    floor_stands: bool,
) -> Option<Comparison> {
    let measured = |lane: Option<usize>| lane.and_then(|i| blocks.get(i)).filter(|l| l.ops > 0);
    let inline = measured(roles.prefer(Role::Baseline, Variant::Clean))?;
    let build = |role: Role, variant: Variant| measured(roles.find(role, variant));
    let subject_clean = measured(roles.prefer(Role::Subject, Variant::Clean))?;
    let subject_of = |variant: Variant| match variant {
        Variant::Clean => Some(subject_clean),
        Variant::Probed => build(Role::Subject, Variant::Probed),
    };
    let floor_of = |variant: Variant| {
        let floor = match variant {
            Variant::Clean => measured(roles.prefer(Role::Floor, Variant::Clean)),
            Variant::Probed => build(Role::Floor, Variant::Probed),
        };
        floor.filter(|_| floor_stands)
    };
    let peers: Vec<(&LaneBlocks, Variant)> = roles
        .with_role(Role::Peer)
        // The peers' inline baseline is no writer to compare.
        .filter(|&i| !roles.info(i).is_some_and(|l| l.baseline))
        .filter_map(|i| Some((measured(Some(i))?, roles.variant(i).unwrap_or(Variant::Clean))))
        .collect();
    if peers.is_empty() {
        return None;
    }
    let probed_subject =
        peers.iter().any(|(_, v)| *v == Variant::Probed).then(|| subject_of(Variant::Probed)).flatten();
    let subjects = std::iter::once((subject_clean, Variant::Clean)).chain(probed_subject.map(|l| (l, Variant::Probed)));
    let callers = |lane: &LaneBlocks| {
        facts.meta.parsed::<u32>(&RunFact::Lane(lane.name.clone(), LaneFact::Callers)).unwrap_or(1).max(1)
    };
    // A lane run by other callers than the baseline's and the floor's is
    // not a write of theirs plus a cost: its µs per write is another figure.
    let alike = |lane: &LaneBlocks, other: &LaneBlocks| callers(lane) == callers(other);
    let row = |lane: &LaneBlocks, variant: Variant, versus: Option<&LaneBlocks>| {
        Some(ComparisonRow {
            lane: lane.name.clone(),
            description: facts.meta.fact(&RunFact::LaneDescription(lane.name.clone())).unwrap_or_default().to_owned(),
            us_per_op: *facts.summaries.get(&lane.name)?,
            hop_vs_inline: lanes::difference(lane, inline).filter(|_| alike(lane, inline)),
            beyond_floor: floor_of(variant).filter(|f| alike(lane, f)).and_then(|f| lanes::difference(lane, f)),
            probed: variant == Variant::Probed,
            versus: versus.map(|v| v.name.clone()),
            vs_subject: versus.and_then(|v| lanes::difference(lane, v)),
            process_cpu_us: facts.process_cpu_us.get(&lane.name).copied(),
            ctx_switches: facts.ctx_switches.get(&lane.name).copied(),
            callers: callers(lane),
        })
    };
    let rows: Vec<ComparisonRow> = subjects
        .filter_map(|(lane, variant)| row(lane, variant, None))
        .chain(peers.iter().filter_map(|(lane, variant)| row(lane, *variant, subject_of(*variant))))
        .collect();
    let findings = findings(&rows, shape).into_iter().map(Recorded::Typed).collect();
    Some(Comparison { rows, findings })
}

/// What the rows say: per kind of build, the subject against its peers;
/// then the smallest cost beyond the floor among the clean builds.
fn findings(rows: &[ComparisonRow], shape: &str) -> Vec<ComparisonFinding> {
    let mut out = Vec::new();
    let overlaps = |a: &Summary, b: &Summary| a.ci95[0] <= b.ci95[1] && b.ci95[0] <= a.ci95[1];
    let figure = |r: &ComparisonRow| LaneFigure {
        lane: r.lane.clone(),
        us_per_op: r.us_per_op.median,
        vs_subject: r.vs_subject,
        callers: r.callers,
    };
    for subject in rows.iter().filter(|r| r.versus.is_none()) {
        let (probed, shape) = (subject.probed, shape.to_owned());
        let (mut beaten, mut tied) = (Vec::new(), Vec::new());
        for peer in rows.iter().filter(|r| r.versus.as_deref() == Some(subject.lane.as_str())) {
            let lower = peer.us_per_op.median < subject.us_per_op.median;
            let separated = match peer.vs_subject {
                Some(d) => d.ci95[1] < 0.0 || d.ci95[0] > 0.0,
                None => !overlaps(&peer.us_per_op, &subject.us_per_op),
            };
            match (separated, lower) {
                (true, true) => out.push(ComparisonFinding::PeerFaster {
                    shape: shape.clone(),
                    probed,
                    subject: figure(subject),
                    peer: figure(peer),
                    description: peer.description.clone(),
                }),
                (true, false) => beaten.push(figure(peer)),
                (false, _) => tied.push(figure(peer)),
            }
        }
        if !tied.is_empty() {
            out.push(ComparisonFinding::Tied { shape: shape.clone(), probed, subject: figure(subject), peers: tied });
        }
        if !beaten.is_empty() {
            out.push(ComparisonFinding::SubjectFaster {
                shape,
                probed,
                subject: figure(subject),
                subject_us: subject.us_per_op,
                peers: beaten,
            });
        }
    }
    // A lane below the floor beyond its CI does not pay what the floor's
    // thread pays (it writes on the calling thread, or never sleeps): "its
    // cost beyond the floor" would be a negative cost, which means nothing.
    let beyond: Vec<(&ComparisonRow, Difference)> =
        rows.iter().filter(|r| !r.probed).filter_map(|r| Some((r, r.beyond_floor?))).collect();
    for (row, below) in beyond.iter().filter(|(_, b)| b.median < 0.0) {
        out.push(ComparisonFinding::AtFloor { lane: row.lane.clone(), beyond_floor: *below });
    }
    // Only lanes above the floor are ranked.
    let ranked: Vec<_> = beyond.iter().filter(|(_, b)| b.median >= 0.0).collect();
    let below = beyond.len() - ranked.len();
    if let Some((row, b)) = ranked.iter().min_by(|a, b| a.1.median.total_cmp(&b.1.median)) {
        out.push(ComparisonFinding::LeastBeyondFloor {
            lane: row.lane.clone(),
            beyond_floor: *b,
            ranked: ranked.len(),
            below,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lane: &str, us: f64, beyond: f64) -> ComparisonRow {
        let summary = crate::stats::Samples::new(vec![us - 0.1, us, us + 0.1]).expect("finite").summary(1);
        ComparisonRow {
            lane: lane.to_owned(),
            description: format!("{lane}, a test lane"),
            us_per_op: summary,
            hop_vs_inline: None,
            beyond_floor: Some(Difference { median: beyond, ci95: [beyond - 0.2, beyond + 0.2], rounds: 20 }),
            probed: false,
            versus: (lane != "writer").then(|| "writer".to_owned()),
            vs_subject: None,
            process_cpu_us: None,
            ctx_switches: None,
            callers: 1,
        }
    }

    /// The findings of `rows` of kind `kind` (the finding's tag).
    fn of_kind<'a>(findings: &'a [ComparisonFinding], kind: &str) -> Vec<&'a ComparisonFinding> {
        let tag = |f: &ComparisonFinding| serde_json::to_value(f).expect("json")["finding"].clone();
        findings.iter().filter(|f| tag(f) == kind).collect()
    }

    #[test]
    fn a_peer_below_the_floor_is_not_ranked_as_the_smallest_cost_beyond_it() {
        let rows = [row("writer", 30.0, 1.5), row("inline-peer", 24.0, -3.38), row("crossbeam", 29.0, 0.8)];
        let findings = findings(&rows, "kv");
        let [ComparisonFinding::LeastBeyondFloor { lane, beyond_floor, ranked: 2, below: 1 }] =
            of_kind(&findings, "least_beyond_floor")[..]
        else {
            panic!("one lane ranked: {findings:#?}")
        };
        assert_eq!((lane.as_str(), beyond_floor.median), ("crossbeam", 0.8));
        let [ComparisonFinding::AtFloor { lane, beyond_floor }] = of_kind(&findings, "at_floor")[..] else {
            panic!("{findings:#?}")
        };
        assert_eq!(lane, "inline-peer");
        assert!(beyond_floor.ci95[1] < 0.0, "faster than the floor itself");
    }

    #[test]
    fn a_peer_whose_paired_ci_includes_zero_is_tied_not_faster() {
        let mut peer = row("crossbeam", 29.0, 0.8);
        peer.vs_subject = Some(Difference { median: -3.94, ci95: [-7.0, 1.59], rounds: 20 });
        let mut slower = row("flume", 31.0, 1.0);
        slower.vs_subject = Some(Difference { median: 1.0, ci95: [0.5, 1.5], rounds: 20 });
        let mut negative = row("near-floor", 30.5, -1.06);
        negative.beyond_floor = Some(Difference { median: -1.06, ci95: [-2.66, 0.30], rounds: 20 });
        let findings = findings(&[row("writer", 30.0, 1.5), peer, slower, negative], "kv");
        assert!(of_kind(&findings, "peer_faster").is_empty(), "{findings:#?}");
        let lanes = |peers: &[LaneFigure]| peers.iter().map(|p| p.lane.clone()).collect::<Vec<_>>();
        let [ComparisonFinding::Tied { subject, peers, .. }] = of_kind(&findings, "tied")[..] else {
            panic!("{findings:#?}")
        };
        assert_eq!((subject.lane.as_str(), lanes(peers)), ("writer", vec!["crossbeam".to_owned()]));
        let [ComparisonFinding::SubjectFaster { peers, .. }] = of_kind(&findings, "subject_faster")[..] else {
            panic!("{findings:#?}")
        };
        assert_eq!(lanes(peers), ["flume", "near-floor"]);
        let [ComparisonFinding::AtFloor { lane, beyond_floor }] = of_kind(&findings, "at_floor")[..] else {
            panic!("{findings:#?}")
        };
        assert!(lane == "near-floor" && beyond_floor.ci95[1] > 0.0, "cannot be told apart from the floor");
        let [ComparisonFinding::LeastBeyondFloor { lane, .. }] = of_kind(&findings, "least_beyond_floor")[..] else {
            panic!("{findings:#?}")
        };
        assert_eq!(lane, "crossbeam");
    }

    #[test]
    fn one_lane_above_the_floor_is_ranked_alone() {
        // The subject above the floor, its only peer below it: nothing to
        // rank it against (a new user's receipt said "smallest" here).
        let findings = findings(&[row("writer", 21.6, 0.14), row("cb", 20.7, -0.88)], "orders");
        let least = of_kind(&findings, "least_beyond_floor");
        assert!(
            matches!(least[..], [ComparisonFinding::LeastBeyondFloor { ranked: 1, below: 1, .. }]),
            "{findings:#?}"
        );
        let alone = super::findings(&[row("writer", 21.6, 0.14)], "orders");
        assert!(matches!(alone[..], [ComparisonFinding::LeastBeyondFloor { ranked: 1, below: 0, .. }]), "{alone:#?}");
    }

    #[test]
    fn a_sentence_an_older_build_recorded_reads_back_as_said() {
        let old = r#"{"rows": [], "findings": ["`writer` is faster on kv (clean builds) than `cb` 21.00 µs."]}"#;
        let c: Comparison = serde_json::from_str(old).expect("an old result reads");
        assert!(matches!(&c.findings[..], [Recorded::Sentence(s)] if s.starts_with("`writer` is faster")));
        let new = Comparison {
            rows: Vec::new(),
            findings: findings(&[row("writer", 21.6, 0.14)], "orders").into_iter().map(Recorded::Typed).collect(),
        };
        let back: Comparison = serde_json::from_str(&serde_json::to_string(&new).expect("json")).expect("reads");
        assert_eq!(back, new);
    }
}
