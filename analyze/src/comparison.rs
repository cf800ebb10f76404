//! Side by side: the reference writer and every other lane of a run that
//! is not one of its references (published peers, as a rule), each priced
//! from outside against the same inline and floor lanes.
//!
//! `hop vs inline` is what the lane's thread boundary costs in all;
//! `beyond floor` is what its own machinery adds to the bare boundary. The
//! findings say in words which lane is fastest, whether the intervals
//! separate, and where a peer wins and how it waits, so a winning peer is
//! reported, never hidden.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use hopscope_probe::{Role, Variant};

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
    /// `lane − floor`, paired by round.
    pub beyond_floor: Option<Difference>,
    /// Process CPU µs per operation (every thread, a peer's included).
    pub process_cpu_us: Option<f64>,
    /// Context switches per operation, every thread of the process.
    pub ctx_switches: Option<f64>,
}

/// The comparison table and what it says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Comparison {
    /// The reference writer first, then the other lanes in run order.
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

/// Compare the clean subject with every peer lane, or `None` when the run
/// has no peer (or lacks a baseline, a floor or a subject).
pub fn compare(blocks: &[LaneBlocks], roles: &Roles, facts: &LaneFacts<'_>, shape: &str) -> Option<Comparison> {
    let measured = |lane: Option<usize>| lane.and_then(|i| blocks.get(i)).filter(|l| l.ops > 0);
    let inline = measured(roles.prefer(Role::Baseline, Variant::Clean))?;
    let floor = measured(roles.prefer(Role::Floor, Variant::Clean))?;
    let writer = measured(roles.prefer(Role::Subject, Variant::Clean))?;
    let others: Vec<&LaneBlocks> = roles.with_role(Role::Peer).filter_map(|i| measured(Some(i))).collect();
    if others.is_empty() {
        return None;
    }
    let rows: Vec<ComparisonRow> = std::iter::once(writer)
        .chain(others)
        .filter_map(|lane| {
            Some(ComparisonRow {
                lane: lane.name.clone(),
                description: facts.meta.get(&format!("lane.{}", lane.name)).cloned().unwrap_or_default(),
                us_per_op: *facts.summaries.get(&lane.name)?,
                hop_vs_inline: lanes::difference(lane, inline),
                beyond_floor: lanes::difference(lane, floor),
                process_cpu_us: facts.process_cpu_us.get(&lane.name).copied(),
                ctx_switches: facts.ctx_switches.get(&lane.name).copied(),
            })
        })
        .collect();
    let findings = findings(&rows, blocks, shape);
    Some(Comparison { rows, findings })
}

fn findings(rows: &[ComparisonRow], blocks: &[LaneBlocks], shape: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(writer) = rows.first() else { return out };
    let writer_blocks = blocks.iter().find(|l| l.name == writer.lane);
    let overlaps = |a: &Summary, b: &Summary| a.ci95[0] <= b.ci95[1] && b.ci95[0] <= a.ci95[1];
    let mut peers_beaten = Vec::new();
    for row in &rows[1..] {
        let paired =
            writer_blocks.zip(blocks.iter().find(|l| l.name == row.lane)).and_then(|(w, p)| lanes::difference(p, w));
        let delta = paired.map_or(String::new(), |d| {
            format!(" (paired {} − writer {:+.2} µs, 95% CI {:+.2}…{:+.2})", row.lane, d.median, d.ci95[0], d.ci95[1])
        });
        if row.us_per_op.median < writer.us_per_op.median {
            out.push(format!(
                "`{}` is faster than the reference writer on {shape}: {:.2} against {:.2} µs per write{delta}. What it \
                 is and how it waits: {}.",
                row.lane, row.us_per_op.median, writer.us_per_op.median, row.description
            ));
        } else {
            let separated = if overlaps(&row.us_per_op, &writer.us_per_op) {
                "their intervals overlap"
            } else {
                "the intervals do not overlap"
            };
            peers_beaten.push(format!("`{}` {:.2} µs ({separated}){delta}", row.lane, row.us_per_op.median));
        }
    }
    if !peers_beaten.is_empty() {
        out.insert(
            0,
            format!(
                "The reference writer ({:.2} µs per write, 95% CI {:.2}…{:.2}) is faster on {shape} than {}.",
                writer.us_per_op.median,
                writer.us_per_op.ci95[0],
                writer.us_per_op.ci95[1],
                peers_beaten.join("; ")
            ),
        );
    }
    let smallest =
        rows.iter().filter_map(|r| Some((r, r.beyond_floor?))).min_by(|a, b| a.1.median.total_cmp(&b.1.median));
    if let Some((row, beyond)) = smallest {
        let who =
            if row.lane == writer.lane { "the reference writer's".to_owned() } else { format!("`{}`'s", row.lane) };
        out.push(format!(
            "The smallest cost beyond the floor is {who}: {:+.2} µs per write (95% CI {:+.2}…{:+.2}).",
            beyond.median, beyond.ci95[0], beyond.ci95[1]
        ));
    }
    out
}
