//! The receipt's section on WAL checkpoints: per lane, how many ran in
//! its measured blocks, what one took, what they add per operation, the
//! lane's figures with and without the blocks that held one, and those
//! blocks named.

use std::fmt::Write as _;

use hopscope_analyze::Decomposition;
use hopscope_analyze::checkpoints::{Checkpoints, LaneCheckpoints};

/// Held blocks named per lane in the text (the JSON holds them all).
const NAMED_IN_TEXT: usize = 8;

/// The section, when the run recorded checkpoints.
pub(super) fn section(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    render(d.checkpoints.as_ref(), out)
}

/// The section of a run's checkpoints (nothing when it recorded none):
/// a decomposition's, or an A/B run's arms'.
pub(super) fn render(c: Option<&Checkpoints>, out: &mut String) -> std::fmt::Result {
    let Some(c) = c else { return Ok(()) };
    writeln!(out, "## WAL checkpoints\n")?;
    if c.lanes.iter().all(|l| l.checkpoints == 0) {
        return writeln!(
            out,
            "No WAL checkpoint ran during a measured block (recorded in every block: the checkpoint lock SQLite \
             takes, timed).\n"
        );
    }
    writeln!(
        out,
        "Every checkpoint the process ran during a block, timed by the checkpoint lock SQLite holds for its whole \
         length. A block that held one ran at another pace: the lane's figures over every block, and over the \
         blocks that held none.\n"
    )?;
    table(c, out)?;
    for lane in c.lanes.iter().filter(|l| !l.held.is_empty()) {
        writeln!(out, "- {}", held_line(lane))?;
    }
    writeln!(out)
}

fn table(c: &Checkpoints, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "| lane | blocks holding one | checkpoints | one checkpoint (mean µs) | adds per operation µs | median wall \
         µs/op (all / without) | mean wall µs/op (all / without) | of the held blocks' excess, the checkpoints' own |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---|---|---:|")?;
    for l in &c.lanes {
        let without = |f: fn(&hopscope_analyze::checkpoints::BlockFigures) -> f64| {
            l.without.as_ref().map_or("—".to_owned(), |w| format!("{:.3}", f(w)))
        };
        writeln!(
            out,
            "| `{}` | {} of {} | {} | {} | {:.3} | {:.3} / {} | {:.3} / {} | {} |",
            l.lane,
            l.held.len(),
            l.blocks,
            l.checkpoints,
            l.mean_us.map_or("—".to_owned(), |m| format!("{m:.1}")),
            l.cost_us_per_op,
            l.all.median_us,
            without(|w| w.median_us),
            l.all.mean_us,
            without(|w| w.mean_us),
            l.explained.map_or("—".to_owned(), |e| format!("{:.0}%", e * 100.0)),
        )?;
    }
    Ok(())
}

/// The blocks of `lane` that held a checkpoint, named (pass.sample).
fn held_line(lane: &LaneCheckpoints) -> String {
    let named: Vec<String> = lane
        .held
        .iter()
        .take(NAMED_IN_TEXT)
        .map(|h| format!("{}.{} ({:.0} µs of checkpoint, {:.3} µs/op)", h.pass, h.sample, h.checkpoint_us, h.us_per_op))
        .collect();
    let more = lane.held.len().saturating_sub(NAMED_IN_TEXT);
    let more = if more > 0 { format!(" and {more} more (result.json names them all)") } else { String::new() };
    format!("`{}`: blocks {}{more}", lane.lane, named.join(", "))
}
