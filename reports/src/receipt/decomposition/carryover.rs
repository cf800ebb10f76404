//! The receipt's carryover section: each lane's figure by the lane that ran
//! just before it.

use std::fmt::Write as _;

use hopscope_analyze::Decomposition;

/// Whether the order was balanced, and per lane its fastest and slowest
/// predecessor.
pub(super) fn render(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let Some(c) = &d.carryover else { return Ok(()) };
    if c.lanes.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Carryover (each lane by the lane before it)\n")?;
    let moved: Vec<&str> = c.lanes.iter().filter(|l| l.apart().is_some()).map(|l| l.lane.as_str()).collect();
    let balanced_but_moved;
    writeln!(
        out,
        "{}\n",
        if c.balanced && moved.is_empty() {
            "Every lane ran after every other lane about equally often, so what a lane leaves behind (a thread \
             still settling) falls on all lanes alike and cancels in their differences; no lane's figure moved with \
             the lane before it beyond its CIs."
        } else if c.balanced {
            balanced_but_moved = format!(
                "Every lane ran after every other lane about equally often, so each lane's figure averages over the \
                 same mix of predecessors; but {} moved with the lane before {} beyond the CIs (below): such a \
                 figure is its cost after this mix of lanes, and would differ beside other lanes.",
                moved.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", "),
                if moved.len() == 1 { "it" } else { "them" }
            );
            &balanced_but_moved
        } else if !moved.is_empty() {
            "**The lanes did not run after each other equally often, and some lane's figure depends on the lane \
             before it**: what a lane leaves behind (a thread still settling) falls on the lanes that follow it, and \
             their differences carry it."
        } else {
            "The lanes did not run after each other equally often (a run shorter than one cycle of the order, or an \
             order that is not balanced); no lane's figure moved with the lane before it beyond its CIs."
        }
    )?;
    writeln!(out, "| lane | fastest after | µs per op | slowest after | µs per op | slowest − fastest | CIs apart |")?;
    writeln!(out, "|---|---|---:|---|---:|---:|---|")?;
    for lane in &c.lanes {
        let by_median = |a: &&hopscope_analyze::carryover::After, b: &&hopscope_analyze::carryover::After| {
            a.median_us.total_cmp(&b.median_us)
        };
        let (Some(fast), Some(slow)) = (lane.after.iter().min_by(by_median), lane.after.iter().max_by(by_median))
        else {
            continue;
        };
        writeln!(
            out,
            "| {} | {} | {:.3} | {} | {:.3} | {:+.3} | {} |",
            lane.lane,
            fast.lane,
            fast.median_us,
            slow.lane,
            slow.median_us,
            slow.median_us - fast.median_us,
            if lane.apart().is_some() { "yes" } else { "no" }
        )?;
    }
    writeln!(out)?;
    Ok(())
}
