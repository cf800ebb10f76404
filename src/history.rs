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

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Reading the index never creates it.
    let index = RunIndex::located();
    let rows = index.history(usize::from(args.last))?;
    if rows.is_empty() {
        crate::emit(&format!(
            "no runs in {} yet: `hopscope decompose` and every harness program record each run there\n",
            index.path().display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "| run | when (UTC) | program | commit | host | CPUs | baseline | {} | gate |",
        FIGURES.map(|f| format!("{f} µs")).join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|{}---|", "---:|".repeat(FIGURES.len()));
    for row in rows {
        let commit = row.commit.as_deref().map_or("—".to_owned(), |c| c.chars().take(10).collect());
        let names = index.names_of(row.id)?.join(", ");
        let figures: Vec<String> =
            row.figures.iter().map(|f| f.map_or("—".to_owned(), |v| format!("{v:.3}"))).collect();
        let program = if row.program.is_empty() { "—" } else { row.program.as_str() };
        let _ = writeln!(
            out,
            "| #{} | {} | {program} | {commit} | {} | {} | {} | {} | {} |",
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
            figures.join(" | "),
            row.change.as_deref().unwrap_or("—")
        );
    }
    crate::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
