//! The receipt's section on probed peers: each published writer's slices,
//! marked through SQLite's own trace hook, side by side.

use std::fmt::Write as _;

use hopscope_analyze::{Decomposition, LaneSlices};

/// Each probed peer's slices, one column per peer, and a line per peer
/// naming the slice where it is furthest behind the quickest of them.
pub(super) fn peer_slices(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let peers = &d.peer_slices;
    if peers.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Slices of each probed peer (µs per operation, median of block medians)\n")?;
    writeln!(
        out,
        "Marked where each peer runs: the caller around the call (`enter`, `done`) and, on whatever thread the \
         peer runs the statement, SQLite's own trace hook (`woke`: the statement's start, its first step; \
         `executed`: its end, at its reset). So `enter→woke` holds the way to the peer's thread (its channel, \
         the wake, the peer's dispatch up to the statement, the statement's preparation and binds), \
         `woke→executed` SQLite's step and reset, and `executed→done` the way back (the rest of the peer's \
         closure, its reply, the caller's wake). The hook costs a statement ~0.2 µs, mostly SQLite's own \
         callbacks and two reads of its clock, one inside `woke→executed` (`cargo bench -p hopscope-probe \
         --features sqlite --bench sqlite`); it is not yet measured in the run.\n"
    )?;
    let names = slice_names(peers);
    let head: Vec<String> = peers.iter().map(|p| format!("`{}`", p.lane)).collect();
    writeln!(out, "| slice | {} |", head.join(" | "))?;
    writeln!(out, "|---|{}", "---:|".repeat(peers.len()))?;
    for name in &names {
        let cells: Vec<String> = peers
            .iter()
            .map(|p| match figure(p, name) {
                Some((median, ci)) => format!("{median:.3} ({:.3}–{:.3})", ci[0], ci[1]),
                None => "—".to_owned(),
            })
            .collect();
        writeln!(out, "| {name} | {} |", cells.join(" | "))?;
    }
    writeln!(out)?;
    for peer in peers {
        if let Some(line) = furthest_behind(peer, peers, &names) {
            writeln!(out, "- {line}")?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// Slice names in the order the first peer holding each has them.
fn slice_names(peers: &[LaneSlices]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for peer in peers {
        for s in &peer.slices {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    names
}

/// A peer's median and 95% CI of slice `name`.
fn figure(peer: &LaneSlices, name: &str) -> Option<(f64, [f64; 2])> {
    peer.slices.iter().find(|s| s.name == name).map(|s| (s.median_us, s.ci95))
}

/// Where `peer` is furthest above the quickest peer, slice by slice, or
/// that it is the quickest in every slice (one peer alone: nothing said).
fn furthest_behind(peer: &LaneSlices, peers: &[LaneSlices], names: &[String]) -> Option<String> {
    if peers.len() < 2 {
        return None;
    }
    let behind = names.iter().filter_map(|name| {
        let mine = figure(peer, name)?.0;
        let (best, lane) = peers
            .iter()
            .filter_map(|p| figure(p, name).map(|(m, _)| (m, p.lane.as_str())))
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        Some((name.as_str(), mine - best, lane))
    });
    let worst = behind.max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(match worst {
        (_, gap, _) if gap <= 0.0 => format!("`{}` is the quickest probed peer in every slice.", peer.lane),
        (name, gap, best) => format!(
            "`{}` is furthest behind the quickest peer in `{name}`: +{gap:.3} µs over `{best}` (difference of the two \
             medians, not a paired estimate).",
            peer.lane
        ),
    })
}
