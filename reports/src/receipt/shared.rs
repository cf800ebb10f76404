//! Shared work in words: a lane's batch sizes, and each slice of a lane
//! that batches in both of its views, what an operation waits (latency)
//! and what it costs the writer (cost).

use std::fmt::Write as _;

use hopscope_analyze::batches::{BatchFigures, BatchSweep, SweepPoint};
use hopscope_analyze::join::{Sharing, SliceSide};
use hopscope_analyze::slices::SliceFigures;
use hopscope_analyze::{Decomposition, LaneResult};

/// One line of a lane's batch sizes: how many operations its shared
/// intervals served, over the lane and block by block.
pub fn batch_line(lane: &str, b: &BatchFigures) -> String {
    let [median, low, high] = b.block_mean;
    let blocks = if (high - low).abs() < 0.05 {
        String::new()
    } else {
        format!("; a block's mean ran {low:.1}–{high:.1} (median {median:.1})")
    };
    // A batch that marked two intervals (its BEGIN and its COMMIT) serves
    // each operation twice: say so rather than count operations twice.
    let operations = if b.operations > 0 { b.operations } else { b.served };
    let each = if b.served > operations && operations > 0 {
        format!(", each operation in {:.1} of them", b.served as f64 / operations as f64)
    } else {
        String::new()
    };
    // A sampled capture kept an interval when it kept one of its
    // operations: large ones more often. Its kept intervals' figures say
    // so, beside the mean over every interval the program ran.
    let (kept, over_all) = match b.all_mean {
        Some(all) => (
            " kept",
            format!(
                "; over every interval the program ran, about {all:.1} (each kept one weighted by 1 ÷ its chance of \
                 holding a kept operation)"
            ),
        ),
        None => ("", String::new()),
    };
    format!(
        "`{lane}` served {operations} operations in {} shared intervals{each}: {:.1} operations per{kept} interval \
         (median {}, p10–p90 {}–{}, largest {}){blocks}{over_all}",
        b.intervals, b.mean, b.median, b.p10, b.p90, b.largest
    )
}

/// What a slice is in a batch, in a table's few words.
pub fn sharing_label(sharing: Sharing) -> &'static str {
    match sharing {
        Sharing::Own => "its own",
        Sharing::Shared => "shared by the batch",
        Sharing::Siblings => "waiting on the batch's others",
    }
}

/// What a slice of `lane` is in a batch, in a table's few words: in
/// batches of one, whose "shared" steps serve nobody else, the
/// operation's own.
pub fn kind_label(d: &Decomposition, lane: &str, sharing: Sharing) -> &'static str {
    let alone = d.lanes.get(lane).and_then(|l| l.batches.as_ref()).is_some_and(|b| b.largest <= 1);
    if alone && sharing != Sharing::Own { "its own (batches of one)" } else { sharing_label(sharing) }
}

/// The lanes that ran shared intervals, in reading order.
fn batching_lanes(d: &Decomposition) -> Vec<(&str, &LaneResult, &BatchFigures)> {
    d.lanes_in_order().into_iter().filter_map(|(name, lane)| lane.batches.as_ref().map(|b| (name, lane, b))).collect()
}

/// The receipt's section on shared work, when a lane batched: its batch
/// sizes, then the sliced lane's slices in both views.
pub(crate) fn section(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let lanes = batching_lanes(d);
    if lanes.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Shared work: batches\n")?;
    for (name, _, b) in &lanes {
        writeln!(out, "- {}.", batch_line(name, b))?;
    }
    if d.capture.is_some() {
        writeln!(
            out,
            "\nBatch sizes count every operation a shared interval served, sampled or not (a capture links each \
             one, flagging those it left out), so an interval's cost is divided among all it served.\n"
        )?;
    } else {
        writeln!(
            out,
            "\nBatch sizes are read from the probed build's marks (its shared intervals and the operations linked \
             to each); a clean build runs the same code unmarked, so its sizes are not known, only alike in kind.\n"
        )?;
    }
    if let Some(sweep) = &d.batch_sweep {
        sweep_section(sweep, out)?;
    }
    let insitu = d.insitu_lane.as_deref().map(|lane| (lane, d.slices.as_slice()));
    let peers = d.peer_slices.iter().map(|p| (p.lane.as_str(), p.slices.as_slice()));
    for (lane, slices) in insitu.into_iter().chain(peers) {
        if shares_work(slices) {
            views(d, lane, slices, out)?;
        }
    }
    Ok(())
}

/// The batch sweep in words: which setting is the knee, or that larger
/// batches still bought throughput at the largest tried, and when the
/// callers, not the setting, capped the batches.
pub fn knee_line(sweep: &BatchSweep) -> String {
    let name = |p: &SweepPoint| p.lane.trim_end_matches("-probed").to_owned();
    let capped = |p: &SweepPoint| {
        if p.capped_by_callers() {
            format!(
                "; `{}`'s batches (p90 {}, mean {:.1}) were as large as its {} callers at once allow: a larger \
                 setting cannot make them larger, more callers might",
                name(p),
                p.batch_p90,
                p.batch_mean,
                p.callers
            )
        } else {
            String::new()
        }
    };
    match sweep.knee.and_then(|k| Some((k, sweep.points.get(k)?))) {
        Some((k, knee)) => {
            let next = sweep.points.get(k + 1).map_or(String::new(), |n| {
                format!(
                    "; the next, `{}` ({:.1} a batch), bought {:+.1}% throughput for {:+.1}% median latency",
                    name(n),
                    n.batch_mean,
                    (n.ops_per_s / knee.ops_per_s - 1.0) * 100.0,
                    (n.latency_p50_us / knee.latency_p50_us - 1.0) * 100.0
                )
            });
            format!(
                "The knee is `{}` ({:.1} a batch): {:.0} writes per second, each waiting {:.1} µs (median){next}, \
                 less than the {:.0}% a step must buy{}",
                name(knee),
                knee.batch_mean,
                knee.ops_per_s,
                knee.latency_p50_us,
                sweep.knee_gain_pct,
                capped(knee)
            )
        }
        None => {
            let last = sweep.points.last();
            format!(
                "No knee: every step to larger batches bought at least {:.0}% more throughput, up to `{}`{}",
                sweep.knee_gain_pct,
                last.map(name).unwrap_or_default(),
                match last.map(capped) {
                    Some(line) if !line.is_empty() => line,
                    _ => "; larger batches may buy more still".to_owned(),
                }
            )
        }
    }
}

/// The batch sweep: a row per setting, and the knee.
fn sweep_section(sweep: &BatchSweep, out: &mut String) -> std::fmt::Result {
    writeln!(out, "### Batch size against latency and throughput\n")?;
    writeln!(
        out,
        "| lane | operations a batch | µs per operation (wall, mean over blocks) | operations per second | latency median µs | \
         latency p99 µs |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    for p in &sweep.points {
        writeln!(
            out,
            "| `{}` | {:.1} | {:.3} (`{}`) | {:.0} | {:.2} | {:.2} |",
            p.lane, p.batch_mean, p.us_per_op, p.throughput_lane, p.ops_per_s, p.latency_p50_us, p.latency_p99_us
        )?;
    }
    writeln!(
        out,
        "\nSettings in order of their batches (their 90th percentile), smallest first. Throughput is each setting's clean build (its \
         whole wall time ÷ its operations, its callers at once), latency its probed build's marks. {}.\n",
        knee_line(sweep)
    )
}

/// Whether a probed lane's slices are of a lane that batched (they are
/// rendered here, in both views, rather than beside the hook's peers).
pub fn shares_work(slices: &[SliceFigures]) -> bool {
    slices.iter().any(|s| s.cost_us.is_some())
}

/// `lane`'s batched slices in both views, and the writer's costs summed.
fn views(d: &Decomposition, lane: &str, slices: &[SliceFigures], out: &mut String) -> std::fmt::Result {
    writeln!(out, "### `{lane}`: what an operation waits, and what it costs\n")?;
    if let Some(line) = latency_line(d, lane) {
        writeln!(out, "{line}\n")?;
    }
    writeln!(
        out,
        "Each operation of `{lane}` waits for every shared interval it is in: what it waits is the **latency** \
         view, and its path slices add up to its whole time. What one operation **costs** is the other view: a \
         shared interval divided among the operations it served, and of the time it waits while the writer serves \
         the others, only the writer's step just before its own mark (or its share of the step before the batch's). \
         A slice across threads (the queue, a wake) is a wait and no thread's work: it has no cost. Costs are means \
         over every operation, so they add up: a COMMIT that ran a WAL checkpoint counts in full, so a shared \
         interval's cost can stand well above its median ÷ the batch (a what-if's speedup is a share of the \
         median).\n"
    )?;
    writeln!(out, "| slice | side | kind | waits (median µs) | waits (mean µs) | costs (µs per operation) |")?;
    writeln!(out, "|---|---|---|---:|---:|---:|")?;
    for s in slices {
        let kind = kind_label(d, lane, s.sharing);
        let side = match s.side {
            SliceSide::Caller => "caller",
            SliceSide::Writer => "writer",
            SliceSide::Cross => "cross-thread",
        };
        let tail = if s.on_path { "" } else { " *(off the path)*" };
        writeln!(
            out,
            "| {}{tail} | {side} | {} | {:.3} | {} | {} |",
            s.name,
            kind,
            s.median_us,
            s.mean_us.map_or("—".to_owned(), |m| format!("{m:.3}")),
            s.cost_us.map_or("— (a wait)".to_owned(), |c| format!("{c:.3}"))
        )?;
    }
    writer_sum(d, lane, slices, out)
}

/// Percentiles 50 and 99 of a probed lane's per-operation latency (first
/// mark to last), µs.
fn latency(lane: &LaneResult) -> Option<(f64, f64)> {
    let q = &lane.op_latency_quantiles_us;
    Some((*q.get(50)?, *q.get(99)?))
}

/// What one operation of `lane` waited, beside the sliced subject's, when
/// they differ: what batching does to one write.
fn latency_line(d: &Decomposition, lane: &str) -> Option<String> {
    let (p50, p99) = latency(d.lanes.get(lane)?)?;
    let mut line =
        format!("One operation of `{lane}` took {p50:.2} µs from its first mark to its last (median; p99 {p99:.2})");
    if let Some(subject) = d.insitu_lane.as_deref().filter(|s| *s != lane)
        && let Some((s50, s99)) = d.lanes.get(subject).and_then(latency)
    {
        line.push_str(&format!(", where one of `{subject}` took {s50:.2} (p99 {s99:.2})"));
    }
    line.push('.');
    Some(line)
}

/// The writer's costs summed, beside the lane's wall time and the writer's
/// CPU per operation: what a throughput reasons with.
fn writer_sum(d: &Decomposition, lane: &str, slices: &[SliceFigures], out: &mut String) -> std::fmt::Result {
    let writer: f64 = slices.iter().filter(|s| s.side == SliceSide::Writer).filter_map(|s| s.cost_us).sum();
    let waits: f64 = slices.iter().filter(|s| s.side == SliceSide::Writer && s.on_path).filter_map(|s| s.mean_us).sum();
    let lane_result = d.lanes.get(lane);
    let median = lane_result.and_then(|l| l.us_per_op.as_ref()).map(|s| s.median);
    let mean = lane_result.and_then(LaneResult::mean_us_per_op);
    let cpu = d.cpu_us_per_op.get(lane).and_then(|roles| roles.get(hopscope_probe::WRITER_ROLE)).copied();
    write!(
        out,
        "\nThe writer's slices cost {writer:.3} µs per operation in all (means), where an operation waits {waits:.3} \
         µs on the writer's side of its path (the sum of those slices' means)"
    )?;
    // Costs are means: beside them the lane's mean, its blocks with a WAL
    // checkpoint in it as they ran; the median over blocks leaves those out.
    // A capture's blocks are stretches of its time holding the operations
    // it kept, so its pace is its throughput, and under sampling a step's
    // cost spans the left-out operations' statements too.
    if let Some(c) = &d.capture {
        if let Some(rate) = c.ops_per_s.filter(|r| *r > 0.0) {
            write!(out, "; the program served {rate:.0} operations/s ({:.3} µs per operation)", 1e6 / rate)?;
        }
        if !c.facts.keeps_all() {
            write!(
                out,
                " — under sampling a cost of waiting on the batch's others spans the left-out operations' steps \
                 too, so the writer's sum can stand above its pace"
            )?;
        }
    } else {
        match (mean, median) {
            (Some(mean), Some(median)) => write!(
                out,
                "; the lane ran {mean:.3} µs per operation (wall time ÷ operations, the mean over blocks; median \
             {median:.3})"
            )?,
            (None, Some(median)) => write!(out, "; the lane ran {median:.3} µs per operation (median over blocks)")?,
            _ => {}
        }
    }
    if let Some(cpu) = cpu {
        write!(out, ", its writer thread {cpu:.3} µs of CPU per operation")?;
    }
    writeln!(
        out,
        ". A cost is what a faster step saves the lane's throughput when the writer is its bottleneck; a wait is \
         what it saves each operation's latency.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(lane: &str, batch_mean: f64, ops_per_s: f64, callers: u32) -> SweepPoint {
        SweepPoint {
            lane: lane.to_owned(),
            throughput_lane: lane.to_owned(),
            batch_mean,
            batch_p90: batch_mean.ceil() as u64,
            us_per_op: 1e6 / ops_per_s,
            ops_per_s,
            latency_p50_us: 50.0,
            latency_p99_us: 150.0,
            callers,
        }
    }

    #[test]
    fn a_sweep_whose_batches_reached_the_callers_says_the_callers_capped_them() {
        let capped = BatchSweep {
            points: vec![point("b1", 1.0, 40_000.0, 6), point("b32", 5.6, 95_000.0, 6)],
            knee: None,
            knee_gain_pct: 5.0,
        };
        let line = knee_line(&capped);
        assert!(line.contains("as large as its 6 callers at once allow"), "{line}");
        assert!(!line.contains("may buy more still"), "{line}");
        let open = BatchSweep {
            points: vec![point("b1", 1.0, 40_000.0, 64), point("b32", 20.0, 95_000.0, 64)],
            knee: None,
            knee_gain_pct: 5.0,
        };
        assert!(knee_line(&open).contains("may buy more still"));
    }

    #[test]
    fn a_batch_line_counts_an_operation_in_two_intervals_once() {
        let b = BatchFigures {
            all_mean: None,
            intervals: 6,
            served: 48,
            operations: 24,
            mean: 8.0,
            median: 8,
            p10: 8,
            p90: 8,
            largest: 8,
            block_mean: [8.0; 3],
            sizes: vec![(8, 6)],
        };
        let line = batch_line("w", &b);
        assert!(line.starts_with("`w` served 24 operations in 6 shared intervals, each operation in 2.0"), "{line}");
    }
}
