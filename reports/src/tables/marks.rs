//! `marks.parquet`: every mark of a run's trace, streamed a block at a
//! time into row groups of at most [`ROW_GROUP_ROWS`] rows.
//!
//! `t_ns` is nanoseconds from the start of the trace's first block (the
//! clock's raw ticks scaled by the run's own calibration), so marks of one
//! run subtract into slice durations and runs never share a time axis.
//! Links are not rows: `serves` names the shared interval (a batch's
//! transaction, whose own marks are rows under its id) that serves a row's
//! operation.

use hopscope_probe::{Mark, TraceReader};

use super::convert::int;
use super::file::TableFile;
use super::rows::MarkRow;
use super::types::{RunSource, TableError};

/// Rows buffered before a row group is written (marks only; the other
/// tables are one row group): bounds memory on a long trace. A buffered
/// row holds four strings (~300 bytes), so 2^17 rows keep the buffer near
/// 40 MB; at 2^20 a careful run's 840,000 marks took 313 MB of resident
/// memory. DuckDB's own row groups are of the same order (122,880 rows).
const ROW_GROUP_ROWS: usize = 1 << 17;

/// Append `run`'s marks to `file`; a sentence when its trace ended early
/// (the marks stop at the last complete block).
pub(super) fn stream(run: &RunSource<'_>, file: &mut TableFile<MarkRow>) -> Result<Option<String>, TableError> {
    let path = run.dir.join("trace.hop");
    let mut reader = TraceReader::open(&path).map_err(|source| TableError::Trace { path: path.clone(), source })?;
    let header = reader.header().clone();
    let id = run.run_id();
    let ns_per_tick = header.clock.ns_per_tick;
    let mut origin = None;
    let mut pending: Vec<MarkRow> = Vec::new();
    let name = |names: &[String], i: u16| names.get(usize::from(i)).cloned().unwrap_or_else(|| format!("#{i}"));
    let cut = loop {
        let block = match reader.next_block() {
            Ok(Some(block)) => block,
            Ok(None) => break None,
            Err(err) => break Some(format!("{}: marks stop before the damage ({err})", path.display())),
        };
        let origin = *origin.get_or_insert(block.start.0);
        let lane = name(&header.lanes, block.lane);
        // Links are no marks: each row names the interval serving its op.
        let served: std::collections::HashMap<u64, u64> =
            block.streams.iter().flat_map(|s| &s.marks).filter_map(|m| Some((m.op.0, m.link()?.0))).collect();
        for stream in &block.streams {
            let thread = name(&header.threads, stream.thread);
            for mark in stream.marks.iter().filter(|m| !m.is_link()) {
                let hop = header.hops.get(mark.hop).map_or_else(|| format!("#{}", mark.hop.0), |h| h.name.clone());
                // Ticks before the origin (a mark taken before its block's
                // start is recorded) give negative times, not a wrap.
                let ticks = i128::from(mark.ticks.0) - i128::from(origin);
                pending.push(MarkRow {
                    run_id: id.clone(),
                    lane: lane.clone(),
                    pass: i64::from(block.pass),
                    sample: i64::from(block.sample),
                    thread: thread.clone(),
                    op: int("operation id", mark.op.0)?,
                    hop,
                    cpu: (mark.cpu != Mark::UNKNOWN_CPU).then_some(i64::from(mark.cpu)),
                    t_ns: (ticks as f64 * ns_per_tick).round() as i64,
                    serves: served.get(&mark.op.0).map(|id| int("shared interval id", *id)).transpose()?,
                });
            }
        }
        if pending.len() >= ROW_GROUP_ROWS {
            file.write(&pending)?;
            pending.clear();
        }
    };
    file.write(&pending)?;
    Ok(cut)
}
