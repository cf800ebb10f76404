//! `hopscope decompose`: the reference lanes — inline, the floor and the
//! writer, each clean and probed where that means something — declared on
//! the public harness and run as any user's lanes are.

use std::process::ExitCode;

use hopscope_harness::{Harness, RunArgs};
use hopscope_workloads::{LaneSpec, Peer, Shape};

use anyhow::Context;

use crate::compare::{self, FailOn};
use crate::index::RunIndex;
use crate::knob_args::{DbArgs, KnobArgs};

/// The lanes of a decomposition: SQLite alone, the bare switches (a turn
/// passed to a thread and back: the boundary's kernel part), the bare
/// boundary clean (for the arithmetic) and probed (its own slices,
/// subtracted in the cross-check), the writer clean (for the arithmetic)
/// and probed (for the slices and the observer effect).
const LANES: [&str; 6] = ["inline", "handoff", "floor", "floor-probed", "writer", "writer-probed"];

/// [`LANES`] for `shape`: the handoff stands beside one caller's single
/// statements only (a turn is one operation).
fn lanes_for(shape: Shape) -> impl Iterator<Item = &'static str> {
    let handoff = shape.single_statement() && shape.callers() == 1 && shape.rows_per_op() == 1;
    LANES.into_iter().filter(move |name| handoff || *name != "handoff")
}

/// Flags of `hopscope decompose`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    run: RunArgs,
    /// What every lane writes (see `hopscope run --help`).
    #[arg(long, default_value = "single-insert")]
    shape: Shape,
    /// Also run published crates' writer threads as lanes (tokio-rusqlite,
    /// async-sqlite async and blocking, sqlx-sqlite, deadpool-sqlite), each
    /// compared with inline, floor and the reference writer.
    #[arg(long)]
    peers: bool,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    knobs: KnobArgs,
    /// Save this run as baseline NAME in the run index (replacing what the
    /// name pointed at), for a later `--baseline NAME` or `compare NAME …`.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare this run with baseline NAME (or any run `compare` accepts):
    /// `change.md` and `change.json` in the run directory, the verdict on
    /// stdout.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// With --baseline: exit 3 on a regression (and 5 when drift refuses
    /// the verdict), or with `any` also 4 on an improvement.
    #[arg(long, value_enum, requires = "baseline")]
    fail_on: Option<FailOn>,
    /// Print one JSON object on stdout instead of the summary
    /// (`hopscope.decompose/1`: the run directory, its index id, the
    /// decomposition and, with --baseline, the change); progress and
    /// errors stay on stderr.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if args.peers && !hopscope_workloads::peers::BUILT {
        anyhow::bail!("this build has no peer lanes: rebuild with the `peers` cargo feature (on by default)");
    }
    let plan = args.run.plan()?;
    let knobs = args.knobs.knobs(plan.placement)?;
    let peers = Peer::ALL.iter().filter(|_| args.peers).map(|p| p.name());
    let names: Vec<&str> = lanes_for(args.shape).chain(peers).collect();
    let db = args.db.config();
    let mut harness = Harness::with_args("decompose", args.run.clone());
    for (key, value) in hopscope_workloads::run_facts(args.shape, db) {
        harness = harness.meta(key, value);
    }
    for spec in LaneSpec::standard(&names, knobs)? {
        harness = harness.lane(spec.lane(args.shape, db)?);
    }
    // The baseline is looked up before the run, so a typo costs nothing.
    // Without --baseline or --save-baseline the index is a convenience: a
    // run whose index cannot be opened still runs, and says so.
    let needed = args.baseline.is_some() || args.save_baseline.is_some();
    let index = match RunIndex::open() {
        Ok(index) => Some(index),
        Err(err) if !needed => {
            eprintln!("hopscope: warning: {err:#}; this run is not indexed");
            None
        }
        Err(err) => return Err(err),
    };
    let baseline = match (&index, args.baseline.as_deref()) {
        (Some(index), Some(key)) => Some((key, index.find(key)?)),
        _ => None,
    };
    if args.json {
        harness = harness.quiet();
    }
    let outcome = harness.run()?;
    if let (true, Some(line)) = (args.json, &outcome.stopped) {
        eprintln!("hopscope: {line}");
    }
    let say = |line: String| {
        if !args.json {
            println!("{line}");
        }
    };
    let (Some(d), Some(index)) = (outcome.decomposition.as_ref().filter(|_| outcome.stopped.is_none()), &index) else {
        return Ok(outcome.exit_code());
    };
    let id = index.record(&outcome.dir, d)?;
    say(format!("index:   run #{id} in {}", index.path().display()));
    if let Some(name) = &args.save_baseline {
        index.save_baseline(name, id)?;
        say(format!("baseline: {name} = run #{id}"));
    }
    let print_json = |change: Option<&hopscope_analyze::change::Change>| -> anyhow::Result<()> {
        if args.json {
            let out = serde_json::json!({
                "schema": "hopscope.decompose/1", "dir": outcome.dir, "run_id": id, "result": d, "change": change,
            });
            println!("{}", serde_json::to_string_pretty(&out).context("cannot write JSON")?);
        }
        Ok(())
    };
    let Some((key, row)) = baseline else {
        print_json(None)?;
        return Ok(outcome.exit_code());
    };
    let this = outcome.dir.display().to_string();
    let change = compare::between((&row.dir, &format!("{key} (run #{})", row.id)), (&outcome.dir, &this))?;
    let md = outcome.dir.join("change.md");
    std::fs::write(&md, hopscope_reports::change_markdown(&change))
        .with_context(|| format!("cannot write {}", md.display()))?;
    let json = outcome.dir.join("change.json");
    let text = serde_json::to_string_pretty(&change).context("cannot write JSON")?;
    std::fs::write(&json, text).with_context(|| format!("cannot write {}", json.display()))?;
    say(format!("change:  {} against {key} → {}", change.verdict, md.display()));
    for finding in change.findings.iter().skip(1) {
        say(format!("         {finding}"));
    }
    print_json(Some(&change))?;
    Ok(ExitCode::from(compare::exit_status(change.verdict, args.fail_on)))
}
