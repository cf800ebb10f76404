//! `hopscope`: the command line. Each subcommand is a thin shell over the
//! library crates; errors become one line on stderr and a non-zero exit.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ab;
mod analyze;
mod builds;
mod calibrate;
mod commits;
mod compare;
mod decompose;
mod export;
mod history;
mod keepwarm;
mod knob_args;
mod merge;
mod net;
mod report;
mod resolve;
mod run;
mod stdout;
mod usage;
mod whatif;

/// Decompose the write path of a writer-thread architecture into
/// nanosecond slices.
#[derive(Debug, Parser)]
#[command(name = "hopscope", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report the clock, the cost of a clock read and of a probe mark, and
    /// which perf-event counters this host supports.
    Calibrate(calibrate::Args),
    /// Run inline, floor and writer lanes side by side, decompose the write
    /// into slices, and write the receipt (the main job).
    Decompose(decompose::Args),
    /// What changed from one run to another: every figure with a CI and a
    /// verdict, and an exit status a CI job can gate on.
    Compare(compare::Args),
    /// The run index as a table: each run's commit and headline figures.
    History(history::Args),
    /// Decompose an existing `.hop` trace without re-running it.
    Analyze(analyze::Args),
    /// Run a pre-registered A/B experiment from a spec and give its verdict.
    Ab(ab::Args),
    /// Measure the instrument's resolution by injecting known delays.
    Resolve(resolve::Args),
    /// What would a faster slice buy? Each slice virtually sped up and
    /// really slowed down, block by block: a causal profile.
    WhatIf(whatif::Args),
    /// Sweep keep-warm modes, windows and placements: wall, CPU and context
    /// switches per write, and their frontier.
    KeepWarm(keepwarm::Args),
    /// Write a trace as a timeline for Perfetto (protobuf) or chrome://tracing (JSON).
    Export(export::Args),
    /// Import a CRDT changeset along the naive and the tuned merge path (and
    /// each step alone) and decompose one merged change statement by statement.
    Merge(merge::Args),
    /// Render charts and report.html from a run directory's result.json.
    Report(report::Args),
    /// Run lanes side by side on one shape and write the raw `.hop` trace.
    Run(run::Args),
}

fn main() -> ExitCode {
    let cli: Cli = hopscope_harness::parse_flags("hopscope");
    // SIGINT / SIGTERM: a run stops after its block in progress, keeps its
    // trace complete and says so; a second signal exits at once.
    if let Err(err) = hopscope_harness::interrupt::install() {
        eprintln!("hopscope: cannot handle signals: {err}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if let Some(refused) = err.downcast_ref::<usage::UsageError>() {
                usage(refused.subcommand, refused.kind, &refused.message);
            }
            eprintln!("hopscope: {}", one_line(&err));
            // A flag value out of range is a usage error, as clap's own are.
            let flag = |cause: &(dyn std::error::Error + 'static)| {
                cause.is::<hopscope_harness::FlagError>()
                    || matches!(cause.downcast_ref(), Some(hopscope_harness::HarnessError::Flag(_)))
            };
            if err.chain().any(flag) {
                return ExitCode::from(2);
            }
            let signal = err.chain().find_map(|cause| match cause.downcast_ref::<hopscope_harness::RunError>() {
                Some(hopscope_harness::RunError::Interrupted { signal, .. }) => Some(*signal),
                _ => None,
            });
            signal.map_or(ExitCode::FAILURE, |s| ExitCode::from(s.exit_status()))
        }
    }
}

/// Exit 2 with clap's usage line for `subcommand`: a value or a mix of
/// flags clap's own parsing cannot catch (it needs the other flags, or a
/// table of names), refused as a usage error like the ones clap finds.
fn usage(subcommand: &str, kind: clap::error::ErrorKind, message: &str) -> ! {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    cli.build();
    match cli.find_subcommand_mut(subcommand) {
        Some(sub) => sub.error(kind, message).exit(),
        None => cli.error(kind, message).exit(),
    }
}

/// An error and its causes in one line, each said once: a cause whose text
/// its message already carries is not repeated.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text.trim_end());
    }
    line.replace('\n', " ")
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Decompose(args) => decompose::run(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Ab(args) => ab::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::History(args) => history::run(&args),
        Command::KeepWarm(args) => keepwarm::run(&args),
        Command::Resolve(args) => resolve::run(&args),
        Command::WhatIf(args) => whatif::run(&args),
        Command::Merge(args) => merge::run(&args),
    }
}
