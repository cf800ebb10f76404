//! `hopscope history`: the run index as a table, oldest first: one row per
//! run with its commit and its headline figures, so a figure can be read
//! over commits.

use std::fmt::Write as _;
use std::process::ExitCode;

use hopscope_harness::index::{FIGURES, RunIndex};

/// Flags of `hopscope history`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The newest N runs.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..))]
    last: u16,
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM` (UTC).
fn when(ms: i64) -> String {
    let secs = u64::try_from(ms / 1000).unwrap_or(0);
    let stamp = humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
    stamp.to_string().replace('T', " ").chars().take(16).collect()
}

/// How the subject figure's lane ran: `` `writer` clean `` or
/// `` `ingest` probed, 8 callers ``.
fn subject_lane(lane: &hopscope_analyze::LaneRun) -> String {
    let build = if lane.probed { "probed" } else { "clean" };
    let callers = if lane.callers > 1 { format!(", {} callers", lane.callers) } else { String::new() };
    format!("`{}` {build}{callers}", lane.lane)
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Reading the index never creates it.
    let index = RunIndex::located();
    let rows = index.history(usize::from(args.last))?;
    if rows.is_empty() {
        crate::stdout::emit(&format!(
            "no runs in {} yet: `hopscope decompose` and every harness program record each run there\n",
            index.path().display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "`subject µs` is the subject lane's wall time per operation (the median over blocks), of the lane in \
         `subject lane`: a probed build carries its marks' cost, and with several callers at once it is a \
         throughput, not what one write waits; compare rows of the same lane, build and callers.\n"
    );
    let _ = writeln!(
        out,
        "| run | when (UTC) | program | commit | host | CPUs | baseline | subject lane | {} | gate |",
        FIGURES.map(|f| format!("{f} µs")).join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|{}---|", "---:|".repeat(FIGURES.len()));
    for row in rows {
        let commit = row.commit.as_deref().map_or("—".to_owned(), short_commit);
        let names = index.names_of(row.id)?.join(", ");
        let figures: Vec<String> =
            row.figures.iter().map(|f| f.map_or("—".to_owned(), |v| format!("{v:.3}"))).collect();
        let program = if row.program.is_empty() { "—" } else { row.program.as_str() };
        let _ = writeln!(
            out,
            "| #{} | {} | {program} | {commit} | {} | {} | {} | {} | {} | {} |",
            row.id,
            when(row.created_unix_ms),
            row.host,
            // Whether another process held the run's CPUs: its figures are
            // the scheduler's, and no gate judged them.
            match row.contended {
                Some(true) => "**contended**",
                Some(false) => "own",
                None => "—",
            },
            if names.is_empty() { "—" } else { &names },
            row.subject.as_ref().map_or("—".to_owned(), subject_lane),
            figures.join(" | "),
            row.change.as_deref().unwrap_or("—")
        );
    }
    crate::stdout::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// A commit as the table prints it: ten hex digits, and `-dirty` kept when
/// the index says the run's code had uncommitted changes (cut with the
/// rest, a run of uncommitted code read as its commit's).
fn short_commit(commit: &str) -> String {
    let (hash, dirty) = match commit.strip_suffix("-dirty") {
        Some(hash) => (hash, "-dirty"),
        None => (commit, ""),
    };
    format!("{}{dirty}", hash.chars().take(10).collect::<String>())
}

#[cfg(test)]
mod short_commit_tests {
    #[test]
    fn a_dirty_commit_keeps_its_mark() {
        assert_eq!(super::short_commit("406bec849ca8eda99c5d-dirty"), "406bec849c-dirty");
        assert_eq!(super::short_commit("406bec849ca8eda99c5d"), "406bec849c");
    }
}
