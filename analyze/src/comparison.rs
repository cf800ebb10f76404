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
//! ([`crate::floor`]). The findings say in words which lane is fastest,
//! whether the intervals separate, and where a peer wins and how it waits,
//! so a winning peer is reported, never hidden.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use hopscope_probe::{Role, RunFact, RunFacts, Variant};

use crate::lanes::{self, Difference, LaneBlocks};
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
}

/// The comparison table and what it says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Comparison {
    /// The subject's builds first (clean, then probed when a probed peer
    /// needs it), then the peers in run order.
    pub rows: Vec<ComparisonRow>,
    /// Sentences for the receipt.
    pub findings: Vec<String>,
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
    let row = |lane: &LaneBlocks, variant: Variant, versus: Option<&LaneBlocks>| {
        Some(ComparisonRow {
            lane: lane.name.clone(),
            description: facts.meta.fact(&RunFact::LaneDescription(lane.name.clone())).unwrap_or_default().to_owned(),
            us_per_op: *facts.summaries.get(&lane.name)?,
            hop_vs_inline: lanes::difference(lane, inline),
            beyond_floor: floor_of(variant).and_then(|f| lanes::difference(lane, f)),
            probed: variant == Variant::Probed,
            versus: versus.map(|v| v.name.clone()),
            vs_subject: versus.and_then(|v| lanes::difference(lane, v)),
            process_cpu_us: facts.process_cpu_us.get(&lane.name).copied(),
            ctx_switches: facts.ctx_switches.get(&lane.name).copied(),
        })
    };
    let rows: Vec<ComparisonRow> = subjects
        .filter_map(|(lane, variant)| row(lane, variant, None))
        .chain(peers.iter().filter_map(|(lane, variant)| row(lane, *variant, subject_of(*variant))))
        .collect();
    let findings = findings(&rows, shape);
    Some(Comparison { rows, findings })
}

/// What the rows say: per kind of build, the subject against its peers;
/// then the smallest cost beyond the floor among the clean builds.
fn findings(rows: &[ComparisonRow], shape: &str) -> Vec<String> {
    let mut out = Vec::new();
    let overlaps = |a: &Summary, b: &Summary| a.ci95[0] <= b.ci95[1] && b.ci95[0] <= a.ci95[1];
    for subject in rows.iter().filter(|r| r.versus.is_none()) {
        let kind = if subject.probed { "probed builds" } else { "clean builds" };
        let (mut beaten, mut tied) = (Vec::new(), Vec::new());
        for peer in rows.iter().filter(|r| r.versus.as_deref() == Some(subject.lane.as_str())) {
            let delta = peer.vs_subject.map_or(String::new(), |d| {
                format!(
                    " (paired {} − {} {:+.2} µs, 95% CI {:+.2}…{:+.2})",
                    peer.lane, subject.lane, d.median, d.ci95[0], d.ci95[1]
                )
            });
            // Which is faster only where the paired CI (or, unpaired, the
            // two lanes' CIs) leaves no doubt; otherwise they are tied.
            let lower = peer.us_per_op.median < subject.us_per_op.median;
            let separated = match peer.vs_subject {
                Some(d) => d.ci95[1] < 0.0 || d.ci95[0] > 0.0,
                None => !overlaps(&peer.us_per_op, &subject.us_per_op),
            };
            let line = format!("`{}` {:.2} µs{delta}", peer.lane, peer.us_per_op.median);
            match (separated, lower) {
                (true, true) => out.push(format!(
                    "`{}` is faster than `{}` on {shape} ({kind}): {:.2} against {:.2} µs per write{delta}. What it is \
                     and how it waits: {}.",
                    peer.lane, subject.lane, peer.us_per_op.median, subject.us_per_op.median, peer.description
                )),
                (true, false) => beaten.push(line),
                (false, _) => tied.push(line),
            }
        }
        if !tied.is_empty() {
            out.push(format!(
                "On {shape} ({kind}) this run cannot tell `{}` ({:.2} µs per write) apart from {}: the difference's CI \
                 includes zero.",
                subject.lane,
                subject.us_per_op.median,
                tied.join("; ")
            ));
        }
        if !beaten.is_empty() {
            out.push(format!(
                "`{}` ({:.2} µs per write, 95% CI {:.2}…{:.2}) is faster on {shape} ({kind}) than {}.",
                subject.lane,
                subject.us_per_op.median,
                subject.us_per_op.ci95[0],
                subject.us_per_op.ci95[1],
                beaten.join("; ")
            ));
        }
    }
    // A lane below the floor beyond its CI does not pay what the floor's
    // thread pays (it writes on the calling thread, or never sleeps): "its
    // cost beyond the floor" would be a negative cost, which means nothing.
    let beyond: Vec<(&ComparisonRow, crate::lanes::Difference)> =
        rows.iter().filter(|r| !r.probed).filter_map(|r| Some((r, r.beyond_floor?))).collect();
    for (row, below) in beyond.iter().filter(|(_, b)| b.median < 0.0) {
        let what =
            if below.ci95[1] < 0.0 { "is faster than the floor itself" } else { "cannot be told apart from the floor" };
        out.push(format!(
            "`{}` {what} ({:+.2} µs per write, 95% CI {:+.2}…{:+.2}): it has no cost beyond the floor to rank.",
            row.lane, below.median, below.ci95[0], below.ci95[1]
        ));
    }
    // Only lanes above the floor are ranked: "smallest" is said only when
    // there are two or more to rank.
    let ranked: Vec<_> = beyond.iter().filter(|(_, b)| b.median >= 0.0).collect();
    let below = beyond.len() - ranked.len();
    if let Some((row, b)) = ranked.iter().min_by(|a, b| a.1.median.total_cmp(&b.1.median)) {
        let what = match (ranked.len(), below) {
            (1, 0) => format!("`{}`'s cost beyond the floor (clean builds)", row.lane),
            (1, _) => format!("`{}` is the only lane with a cost beyond the floor to rank (clean builds)", row.lane),
            _ => format!("The smallest cost beyond the floor (clean builds) is `{}`'s", row.lane),
        };
        out.push(format!("{what}: {:+.2} µs per write (95% CI {:+.2}…{:+.2}).", b.median, b.ci95[0], b.ci95[1]));
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
        }
    }

    #[test]
    fn a_peer_below_the_floor_is_not_ranked_as_the_smallest_cost_beyond_it() {
        let rows = [row("writer", 30.0, 1.5), row("inline-peer", 24.0, -3.38), row("crossbeam", 29.0, 0.8)];
        let findings = findings(&rows, "kv");
        let smallest = findings.iter().find(|f| f.starts_with("The smallest cost beyond")).expect("ranked");
        assert!(smallest.contains("`crossbeam`'s: +0.80"), "{smallest}");
        let below = findings.iter().find(|f| f.contains("`inline-peer` is faster than the floor itself"));
        assert!(below.is_some_and(|f| f.contains("-3.38")), "{findings:#?}");
        assert!(findings.iter().all(|f| !(f.starts_with("The smallest") && f.contains("-3.38"))), "{findings:#?}");
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
        assert!(findings.iter().all(|f| !f.starts_with("`crossbeam` is faster")), "{findings:#?}");
        assert!(
            findings.iter().any(|f| f.contains("cannot tell `writer`") && f.contains("`crossbeam`")),
            "{findings:#?}"
        );
        assert!(findings.iter().any(|f| f.starts_with("`writer`") && f.contains("`flume`")), "{findings:#?}");
        assert!(
            findings.iter().any(|f| f.contains("`near-floor` cannot be told apart from the floor")),
            "{findings:#?}"
        );
        let smallest = findings.iter().find(|f| f.starts_with("The smallest")).expect("ranked");
        assert!(smallest.contains("`crossbeam`'s: +0.80"), "{smallest}");
    }

    #[test]
    fn one_lane_above_the_floor_is_not_called_the_smallest() {
        // The subject above the floor, its only peer below it: nothing to
        // rank it against (a new user's receipt said "smallest" here).
        let findings = findings(&[row("writer", 21.6, 0.14), row("cb", 20.7, -0.88)], "orders");
        assert!(findings.iter().all(|f| !f.contains("smallest")), "{findings:#?}");
        assert!(
            findings.iter().any(|f| f.starts_with("`writer` is the only lane with a cost beyond the floor to rank")),
            "{findings:#?}"
        );
        let alone = findings_of_one();
        assert!(
            alone.iter().any(|f| f.starts_with("`writer`'s cost beyond the floor (clean builds): +0.14")),
            "{alone:#?}"
        );
    }

    fn findings_of_one() -> Vec<String> {
        findings(&[row("writer", 21.6, 0.14)], "orders")
    }
}
