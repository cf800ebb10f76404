//! The receipt's section on probed peers: each published writer's slices,
//! marked through SQLite's own trace hook, side by side.

use std::fmt::Write as _;

use hopscope_analyze::{Decomposition, HopCheck, LaneSlices, SliceDifference};
use hopscope_probe::HookCost;

/// Each probed peer's slices, one column per peer, and a line per peer
/// naming the slice where it is furthest behind the quickest of them.
pub(super) fn peer_slices(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    // A lane that batched is marked by its own probe, not the hook, and
    // has its section beside the shared work.
    let peers: Vec<LaneSlices> =
        d.peer_slices.iter().filter(|p| !super::super::shared::shares_work(&p.slices)).cloned().collect();
    let peers = &peers;
    if peers.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Slices of each probed peer (µs per operation, median of block medians)\n")?;
    writeln!(
        out,
        "Marked where each peer runs: the caller around the call (`enter`, `done`) and, on whatever thread the \
         peer runs the statement, SQLite's own trace hook (`woke`: the statement's start, its first step; \
         `executed`: its end, when its last step returns; a thread that runs no code of ours, as sqlx's worker, gets each \
         statement's operation in the order the calls announced them under the lock that serialises them). \
         So `enter→woke` holds the way to the peer's thread (its channel, \
         the wake, the peer's dispatch up to the statement, the statement's preparation and binds), \
         `woke→executed` SQLite's step, and `executed→done` the way back (the rest of the peer's closure, \
         its reply, the caller's wake; also an auto-checkpoint SQLite runs after a commit's step has \
         ended, so a rare slow `executed→done` may be SQLite's). The hook costs each statement two callbacks from SQLite and \
         two reads of SQLite's own clock, one of them inside `woke→executed`."
    )?;
    match &d.statement_hook {
        Some(hook) => writeln!(out, "{}\n", hook_cost(hook))?,
        None => writeln!(out, "This run did not measure the hook's cost per statement (an older trace).\n")?,
    }
    let costs: Vec<String> = peers.iter().filter_map(marking_cost).collect();
    if !costs.is_empty() {
        writeln!(
            out,
            "What the marks cost each operation in this run, probed minus clean build paired by round (95% CI): \
             {}.\n",
            costs.join(", ")
        )?;
    }
    let names = slice_names(peers);
    let head: Vec<String> = peers
        .iter()
        .map(|p| match (p.reference, p.baseline) {
            (true, _) => format!("`{}` (reference)", p.lane),
            (_, true) => format!("`{}` (inline baseline)", p.lane),
            _ => format!("`{}`", p.lane),
        })
        .collect();
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
    match peers.iter().find(|p| p.reference) {
        Some(reference) => where_each_loses(reference, peers, &names, out)?,
        None => {
            for peer in peers {
                if let Some(line) = furthest_behind(peer, peers, &names) {
                    writeln!(out, "- {line}")?;
                }
            }
        }
    }
    writeln!(out)?;
    hops_add_up(peers, out)?;
    Ok(())
}

/// Each lane's hop from its slices beside the hop its clean lane pays: the
/// check that a peer's marks hold its whole operation.
fn hops_add_up(peers: &[LaneSlices], out: &mut String) -> std::fmt::Result {
    let checked: Vec<(&LaneSlices, &HopCheck)> = peers.iter().filter_map(|p| Some((p, p.hop.as_ref()?))).collect();
    let Some((_, first)) = checked.first() else { return Ok(()) };
    writeln!(
        out,
        "### Do the slices add up? Each hop from the slices against the clean lanes' (µs per operation, paired by \
         round, 95% CI)\n"
    )?;
    writeln!(
        out,
        "The clean lanes' hop is the lane's wall time per operation minus `{}`'s. From the slices it is the lane's \
         path (its slices' means summed) minus `{}`'s, each less what its marks cost that round (probed minus \
         clean). The two differ by the time the inline baseline spends outside its marks minus the time the lane \
         does: a lane whose marks miss part of its operation (work before `enter` or after `done`) shows it here. \
         They agree within {:.1} µs.\n",
        first.clean[1], first.baseline, first.tolerance_us
    )?;
    writeln!(out, "| lane | hop, clean lanes | hop, from the slices | difference | agree |")?;
    writeln!(out, "|---|---:|---:|---:|:---:|")?;
    for (peer, hop) in &checked {
        let f =
            |d: &hopscope_analyze::lanes::Difference| format!("{:+.3} ({:+.3}…{:+.3})", d.median, d.ci95[0], d.ci95[1]);
        writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            peer.lane,
            f(&hop.lanes),
            f(&hop.slices),
            f(&hop.difference),
            if hop.agree { "yes" } else { "**no**" }
        )?;
    }
    writeln!(out)
}

/// Each peer's slices minus the reference's, paired by round, and a line
/// per peer naming the slice(s) holding most of what it adds.
fn where_each_loses(
    reference: &LaneSlices,
    peers: &[LaneSlices],
    names: &[String],
    out: &mut String,
) -> std::fmt::Result {
    writeln!(
        out,
        "### Where each peer loses: its slices minus `{}`'s (paired by round, µs per operation, 95% CI)\n",
        reference.lane
    )?;
    writeln!(out, "| peer | {} |", names.join(" | "))?;
    writeln!(out, "|---|{}", "---:|".repeat(names.len()))?;
    let others: Vec<&LaneSlices> = peers.iter().filter(|p| !p.reference).collect();
    let label = |p: &LaneSlices| {
        if p.baseline { format!("`{}` (inline, no thread)", p.lane) } else { format!("`{}`", p.lane) }
    };
    for peer in &others {
        let cells: Vec<String> = names
            .iter()
            .map(|name| match peer.versus_reference.iter().find(|d| &d.name == name) {
                Some(d) => signed(d),
                None => "—".to_owned(),
            })
            .collect();
        writeln!(out, "| {} | {} |", label(peer), cells.join(" | "))?;
    }
    writeln!(out)?;
    for peer in others.iter().filter(|p| !p.baseline) {
        writeln!(out, "- {}", loses_most(peer, &reference.lane))?;
    }
    Ok(())
}

fn signed(d: &SliceDifference) -> String {
    let f = &d.difference;
    format!("{:+.3} ({:+.3}…{:+.3})", f.median, f.ci95[0], f.ci95[1])
}

/// The slice(s) holding most of what `peer` adds over the reference: the
/// largest paired difference whose CI clears zero, and the next one too
/// when it is nearly as large (three quarters) or the largest alone is
/// less than half of all the clear ones together.
fn loses_most(peer: &LaneSlices, reference: &str) -> String {
    let mut clear: Vec<&SliceDifference> =
        peer.versus_reference.iter().filter(|d| d.difference.ci95[0] > 0.0).collect();
    clear.sort_by(|a, b| b.difference.median.total_cmp(&a.difference.median));
    let total: f64 = clear.iter().map(|d| d.difference.median).sum();
    let one = |d: &SliceDifference| {
        let f = &d.difference;
        format!("`{}`, {:+.3} µs (95% CI {:+.3}…{:+.3})", d.name, f.median, f.ci95[0], f.ci95[1])
    };
    match clear.as_slice() {
        [] => format!("`{}`: no slice clearly slower than `{reference}`'s (no paired CI above zero).", peer.lane),
        [first, rest @ ..] => {
            let (a, second) = (first.difference.median, rest.first());
            let named = match second {
                Some(b) if b.difference.median >= 0.75 * a || a * 2.0 < total => {
                    format!("{} and {}", one(first), one(b))
                }
                _ => one(first),
            };
            format!(
                "`{}` adds {total:+.3} µs over `{reference}` in the slices that clearly differ, most of it in {named}.",
                peer.lane
            )
        }
    }
}

/// A probed peer's observer effect, as the run paired it.
fn marking_cost(peer: &LaneSlices) -> Option<String> {
    let effect = peer.observer_effect.as_ref()?;
    let f = &effect.difference;
    Some(format!("`{}` − `{}` {:+.3} µs ({:+.3}…{:+.3})", peer.lane, effect.clean, f.median, f.ci95[0], f.ci95[1]))
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

/// Without a reference: where `peer` is furthest above the quickest peer,
/// slice by slice, or that it is the quickest in every slice (one peer
/// alone: nothing said).
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

/// What SQLite's trace hook cost a statement before this run, and what of
/// it can lie inside a statement's own slice.
pub(super) fn hook_cost(hook: &HookCost) -> String {
    format!(
        "Measured before this run on this host, the hook adds {:+.1} ns to a statement (`{}`, probed minus bare, \
         median of {} paired rounds of {} statements, quartiles {:+.1}…{:+.1} ns; the bare statement {:.1} ns). \
         Of it, the start mark's ring write and SQLite's end-of-statement clock read ({:.1} ns) lie inside \
         the statement's own slice; the rest falls in the slices either side. `cargo bench -p hopscope-probe \
         --features sqlite --bench sqlite` times it alone.",
        hook.ns_per_statement,
        hook.sql,
        hook.rounds,
        hook.chunk,
        hook.quartiles_ns[0],
        hook.quartiles_ns[1],
        hook.bare_ns,
        hook.sqlite_clock_ns
    )
}
