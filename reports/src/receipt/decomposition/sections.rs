//! The sections of a decomposition's receipt, one function each, in the
//! order [`super::render`] writes them.

use std::fmt::Write as _;

use hopscope_analyze::Decomposition;
use hopscope_analyze::contention::Contention;
use hopscope_analyze::join::SliceSide;
use hopscope_analyze::slices::SliceFigures;
use hopscope_probe::{LaneFact, Role, RunFact, RunFacts, ThreadRole};

use super::cells::{row, yes_no};
use super::run_date::date;
use crate::receipt::lane_facts::grown_blocks;
use crate::receipt::wording::{code_span, median_text, owner_label};

/// What a block's readings can leave in the process's CPU figure after the
/// empty blocks' cost is taken off, µs a block (measured).
const READINGS_KEPT_US: f64 = 2.0;

/// Every lane's time per operation.
pub(super) fn lanes(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## Lanes (µs per operation, median of blocks)\n")?;
    writeln!(out, "| lane | probed | median | 95% CI | MAD | p10 | p90 | blocks | ops | max CV per pass |")?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    for (name, lane) in d.lanes_in_order() {
        let cv =
            lane.cv_by_pass.iter().copied().reduce(f64::max).map_or("–".to_owned(), |c| format!("{:.1}%", c * 100.0));
        match &lane.us_per_op {
            Some(s) => writeln!(
                out,
                "| {name} | {} | {:.3} | {:.3}–{:.3} | {:.3} | {:.3} | {:.3} | {} | {} | {cv} |",
                yes_no(lane.probed),
                s.median,
                s.ci95[0],
                s.ci95[1],
                s.mad,
                s.p10,
                s.p90,
                lane.blocks,
                lane.ops
            )?,
            None => writeln!(out, "| {name} | {} | no operations | | | | | 0 | 0 | |", yes_no(lane.probed))?,
        }
    }
    writeln!(
        out,
        "\n*Max CV per pass* is the largest, over passes, of the coefficient of variation (standard deviation ÷ \
         mean) of a lane's block figures within one pass: how far its blocks spread while the host stood still \
         enough for one pass. A high one with a tight CI means a few slow blocks (a checkpoint, a preempted \
         block), which the median over blocks sets aside."
    )?;
    writeln!(out)?;
    Ok(())
}

/// The lane arithmetic: hop, boundary (switches, machinery), library.
pub(super) fn derived(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    if let Some(derived) = &d.derived {
        writeln!(out, "## Derived (paired by round, µs per operation)\n")?;
        writeln!(out, "| figure | definition | median | 95% CI | rounds |")?;
        writeln!(out, "|---|---|---:|---:|---:|")?;
        let lane = |role: Role| derived.lane(role).unwrap_or(role.name());
        let (subject, floor, baseline) = (lane(Role::Subject), lane(Role::Floor), lane(Role::Baseline));
        row(out, "hop", &format!("{subject} − {baseline}"), &derived.hop_us)?;
        if let Some(boundary) = &derived.boundary_us {
            row(out, "boundary", &format!("{floor} − {baseline}"), boundary)?;
        }
        let handoff = lane(Role::Handoff);
        if let Some(switches) = &derived.switches_us {
            row(out, "· switches", &format!("{handoff} (a bare turn to a thread and back)"), switches)?;
        }
        if let Some(machinery) = &derived.machinery_us {
            row(out, "· machinery", &format!("{floor} − {baseline} − {handoff}"), machinery)?;
        }
        if let Some(library) = &derived.library_us {
            row(out, "library", &format!("{subject} − {floor}"), library)?;
        }
        writeln!(out)?;
        if derived.switches_us.is_some() || derived.library_us.is_some() {
            // A new user added switches and machinery and missed 0.2 µs of
            // the boundary.
            writeln!(
                out,
                "Each figure is its own median of per-round differences (and each round's lanes ran at their own \
                 moments), so the parts come near their whole without adding up to it exactly: compare a part's CI \
                 with the whole's, not their sum.\n"
            )?;
        }
    }
    Ok(())
}

/// The sliced lane's slices, with the span machinery and the clock's grain.
pub(super) fn slices(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    if !d.slices.is_empty() {
        let lane = d.insitu_lane.as_deref().unwrap_or("?");
        let grain_ns = d.clock.grain_ns();
        writeln!(out, "## Slices of `{lane}` (µs per operation, median of block medians)\n")?;
        let spans = d.slices.iter().any(|s| s.machinery_us.is_some() || s.machinery_unknown.is_some());
        let (extra_head, extra_rule) = if spans { (" span machinery | net of it |", "---:|---:|") } else { ("", "") };
        // A capture is read for its tail: its slices' p99.9 too.
        let tail_column = d.capture.is_some();
        let (p999_head, p999_rule) = if tail_column { (" p99.9 |", "---:|") } else { ("", "") };
        writeln!(out, "| slice | side | owner | median | 95% CI | p90 | p99 |{p999_head} mean | share |{extra_head}")?;
        writeln!(out, "|---|---|---|---:|---:|---:|---:|{p999_rule}---:|---:|{extra_rule}")?;
        for s in &d.slices {
            slice_row(s, grain_ns, spans, tail_column, out)?;
        }
        if let Some(c) = &d.coverage {
            let extra = if spans { " — | — |" } else { "" };
            writeln!(
                out,
                "| *between marks* | — | between marks | {:.3} | {:.3}–{:.3} | | |{} {:.3} | {:.1}% |{extra}",
                c.between.median_us,
                c.between.ci95[0],
                c.between.ci95[1],
                if tail_column { " |" } else { "" },
                c.between_mean_us,
                c.between_share * 100.0
            )?;
            coverage(c, out)?;
        }
        if let (Some(hook), true) = (&d.statement_hook, d.peer_slices.is_empty()) {
            // A lane marked by SQLite's hook (the peers' section states it
            // for theirs).
            writeln!(out, "\nSQLite's trace hook marks this lane's statements. {}", super::peers::hook_cost(hook))?;
        }
        if let (true, Some(m)) = (spans, &d.span_machinery) {
            // The key the harness records a `--span-path` under.
            super::machinery::render(m, d.run.meta.fact(&RunFact::SpanPathFlag).is_some(), out)?;
            span_events(d, out)?;
        }
        if let (true, Some(grain)) = (d.slices.iter().any(|s| s.within_two_grains), grain_ns) {
            writeln!(
                out,
                "\nThe clock advances in steps of {grain:.1} ns (its *grain*, measured before the run): a median within \
                 two grains is not a measurement and reads `≤ 2 grains`; the mean beside it is over every operation, \
                 each a whole number of grains, and is the finest figure the trace supports."
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// One slice's row: its side and owner, median and CI, tail, mean and
/// share; its p99.9 when `tail_column`, its span machinery when `spans`.
fn slice_row(
    s: &SliceFigures,
    grain_ns: Option<f64>,
    spans: bool,
    tail_column: bool,
    out: &mut String,
) -> std::fmt::Result {
    let side = match s.side {
        SliceSide::Caller => "caller",
        SliceSide::Writer => "writer",
        SliceSide::Cross => "cross-thread",
    };
    let owner = owner_label(s.owner);
    let extra = match (spans, s.machinery_us) {
        (false, _) => String::new(),
        (true, Some(m)) if !s.within_two_grains => format!(" {m:.3} | {:.3} |", s.median_us - m),
        (true, Some(m)) => format!(" {m:.3} | — |"),
        (true, None) if s.machinery_unknown.is_some() => " **unknown** | — |".to_owned(),
        (true, None) => " — | — |".to_owned(),
    };
    // A median the clock cannot resolve has no CI worth printing.
    let ci = if s.within_two_grains { "—".to_owned() } else { format!("{:.3}–{:.3}", s.ci95[0], s.ci95[1]) };
    // A tail slice runs beside the path (after the reply): its share
    // is not part of the path's 100%, and the row says so.
    let tail = if s.on_path { "" } else { " *(off the path)*" };
    let p999 = match (tail_column, s.p999_us) {
        (false, _) => String::new(),
        (true, Some(v)) => format!(" {v:.3} |"),
        (true, None) => " — |".to_owned(),
    };
    writeln!(
        out,
        "| {}{tail} | {side} | {owner} | {} | {ci} | {:.3} | {:.3} |{p999} {} | {:.1}% |{extra}",
        s.name,
        median_text(s, grain_ns),
        s.p90_us,
        s.p99_us,
        s.mean_us.map_or("—".to_owned(), |m| format!("{m:.3}")),
        s.share * 100.0
    )
}

/// What the slices cover of the operation, in words true for this lane's
/// marks: closed cycles or not.
fn coverage(c: &hopscope_analyze::coverage::Coverage, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\nShares are of the whole operation: each slice's mean over `{}`'s mean wall time per operation, {:.3} µs \
         ({} blocks), so the path slices' shares and the time between marks add up to 100% (a slice *off the path* \
         runs beside it, after the reply, and is not in that sum; medians do not add up: a \
         mean counts every slow operation, a block's cold first one or one caught in a WAL checkpoint, and a median \
         none of them). *Between marks* is, per block, the wall \
         time per operation less the mean path time: {:.3} µs on average, the median beside it over blocks.",
        c.lane, c.op_mean_us, c.blocks, c.between_mean_us
    )?;
    if c.closed {
        writeln!(
            out,
            "The marks close each thread's cycle (`idle`, `returned`), so what lies between them is the harness's own \
             loop between operations."
        )
    } else {
        writeln!(
            out,
            "These marks do not close each thread's cycle (`idle` and `returned` are not both marked): what runs before the first \
             mark and after the last one of an operation (a span's creation and close, code outside the spans or \
             before the caller's first mark, a thread's work after its last mark) is between marks, not in any slice."
        )
    }
}

/// The probed subject against the clean one, and how much of the
/// difference the instrument's measured costs explain.
pub(super) fn observer(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## Observer effect\n")?;
    // The subject the lane arithmetic used, or the subject lane that ran
    // in a run without it (a program of one subject lane).
    let subject = d.role_lane(Role::Subject).map_or_else(|| "the subject".to_owned(), |l| format!("`{l}`"));
    let Some(o) = &d.observer_effect else {
        return writeln!(out, "Not measured: the run has no clean and probed build of {subject}.\n");
    };
    writeln!(
        out,
        "Probed {subject} {:.3} µs vs clean {:.3} µs per op: Δ {:+.3} µs (the median of the rounds' paired \
         differences, not of the two medians; 95% CI {:+.3}…{:+.3}), {:+.1}%.",
        o.probed_us, o.clean_us, o.delta_us, o.delta_ci95[0], o.delta_ci95[1], o.delta_pct
    )?;
    if let Some(i) = &o.instrument {
        let mut parts = Vec::new();
        if i.spans_per_op > 0 {
            let path = match d.span_machinery.as_ref().map(|m| m.path) {
                Some(hopscope_probe::SpanPath::Subscriber) => "through HopSubscriber",
                _ => "through the Registry and the layer",
            };
            parts.push(format!(
                "{} span lives per operation × {:.1} ns (create, enter, exit, close {path})",
                i.spans_per_op, i.span_life_ns
            ));
        }
        if i.marks_per_op > 0 {
            parts.push(format!("{} marks × {:.1} ns", i.marks_per_op, i.mark_ns));
        }
        if i.statements_per_op > 0 {
            parts.push(format!(
                "{} statement{} through SQLite's trace hook × {:.1} ns",
                i.statements_per_op,
                if i.statements_per_op == 1 { "" } else { "s" },
                i.statement_ns
            ));
        }
        writeln!(
            out,
            "\n- **explained**: {:+.3} µs is what the instrument was measured to cost in this process, on empty \
             operations: {}.",
            i.explained_us,
            parts.join(" and ")
        )?;
        let resolved = o.delta_ci95[0] > 0.0 || o.delta_ci95[1] < 0.0;
        let within = o.delta_ci95[0] <= i.explained_us && i.explained_us <= o.delta_ci95[1];
        if !resolved {
            // The rest is a difference of two noisy figures: not a finding.
            writeln!(
                out,
                "- **the rest is not resolved**: Δ's CI includes zero, so this run cannot say how much of it the \
                 measured cost leaves over ({:+.3} µs by the medians).",
                i.unexplained_us
            )?;
        } else if within {
            writeln!(
                out,
                "- **the rest is within Δ's CI**: the measured cost alone accounts for the observer effect this run \
                 can resolve ({:+.3} µs left over by the medians).",
                i.unexplained_us
            )?;
        } else {
            writeln!(
                out,
                "- **not explained by that measurement**: {:+.3} µs. The same {} cost more among the program's own \
                 work than on empty operations (caches and branch predictors they share with it, a thread's wake \
                 moved by the extra work before it); this run does not split that part further.",
                i.unexplained_us,
                instrument_parts(i)
            )?;
        }
    }
    writeln!(out)
}

/// CPU time and context switches per operation, by thread role.
pub(super) fn cpu(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    if !d.cpu_us_per_op.is_empty() {
        // Thread roles as the run named them: the caller, the lanes' own
        // threads (`writer` in hopscope's runs), and the whole process.
        let (caller, process) = (ThreadRole::Caller.to_string(), ThreadRole::Process.to_string());
        let mut roles: Vec<&str> = vec![&caller];
        for role in d.cpu_us_per_op.values().flat_map(|r| r.keys()) {
            if *role != process && !roles.contains(&role.as_str()) {
                roles.push(role);
            }
        }
        roles.push(&process);
        writeln!(out, "## CPU and context switches (per operation)\n")?;
        let heads: Vec<String> = roles
            .iter()
            .map(|r| format!("{r} CPU µs"))
            .chain(roles.iter().map(|r| format!("{r} ctx switches")))
            .collect();
        writeln!(out, "| lane | {} |", heads.join(" | "))?;
        writeln!(out, "|---|{}", "---:|".repeat(heads.len()))?;
        for (lane, cpu) in &d.cpu_us_per_op {
            let cell = |k: &str| cpu.get(k).map_or("–".to_owned(), |v| format!("{v:.3}"));
            let switches = d.ctx_switches_per_op.get(lane);
            let ctx = |k: &str| switches.and_then(|s| s.get(k)).map_or("–".to_owned(), |v| format!("{v:.3}"));
            let cells: Vec<String> = roles.iter().map(|r| cell(r)).chain(roles.iter().map(|r| ctx(r))).collect();
            writeln!(out, "| {lane} | {} |", cells.join(" | "))?;
        }
        // What the ~2 µs a block the process's figure can keep is per
        // operation at this run's block size.
        let kept = d
            .run
            .meta
            .parsed::<f64>(&RunFact::OpsPerBlock)
            .filter(|n| *n > 0.0)
            .map_or(String::new(), |n| format!(", ~{:.3} µs a write at {n} writes a block", READINGS_KEPT_US / n));
        writeln!(
            out,
            "\nCPU from per-thread and process CPU clocks, with what a block's own readings cost taken off \
             (measured on empty blocks; the process's figure can keep ~{READINGS_KEPT_US} µs a block of it{kept}); \
             context switches from `getrusage` (the process column counts every thread, a peer's included)."
        )?;
        if roles.len() > 2 {
            writeln!(
                out,
                "A thread of a lane's own is read at its hand-ins, so its figures run from one hand-in to the next \
                 and hold the hand-in's own wake (about one switch a block), which the process's do not: a role's \
                 column and the caller's can add up to more than the process's."
            )?;
        }
        if roles.len() == 2 {
            writeln!(
                out,
                "No lane declared a thread of its own, so only the caller and the whole process are split out: a \
                 thread you start (a writer) gets a column of its own when the lane declares it \
                 (`Lane::threads`) and the thread hands in with `HandIn::collect` between blocks."
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// What the scheduler did to each lane: run-queue delay per operation
/// (every thread, and by role), its share of the lane's wall time, the
/// involuntary switches, and the rule a contended run is judged by.
pub(super) fn waits(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    if let Some(capture) = &d.capture {
        return super::super::capture::machine(capture, out);
    }
    let Some(c) = &d.contention else {
        let why = "the kernel keeps none (scheduler statistics off)";
        writeln!(
            out,
            "## What the machine did\n\nNo run-queue delay was recorded: {why}, so this run cannot say whether \
             another process held its CPUs.\n"
        )?;
        return Ok(());
    };
    writeln!(out, "## What the machine did (waiting for a CPU, per operation)\n")?;
    wait_table(c, out)?;
    contention_rule(c, out)?;
    if c.in_slices.is_empty() {
        return Ok(());
    }
    waits_in_slices(c, out)
}

/// A row per lane: its run-queue delay per operation, every thread's and
/// each role's, its share of wall time, its involuntary switches, and its
/// blocks that waited for another process.
fn wait_table(c: &Contention, out: &mut String) -> std::fmt::Result {
    let roles: Vec<&String> = {
        let mut r: Vec<&String> = c.lanes.values().flat_map(|w| w.by_role.keys()).collect();
        r.sort();
        r.dedup();
        r
    };
    let heads: Vec<String> = roles.iter().map(|r| format!("{r} µs")).collect();
    writeln!(
        out,
        "| lane | every thread µs | {}share of wall time | involuntary switches | blocks that waited for another \
         process | in those blocks: every thread's waits, summed, of the wall time (µs) |",
        heads.iter().map(|h| format!("{h} | ")).collect::<String>(),
    )?;
    writeln!(out, "|---|---:|{}---:|---:|---:|---:|", "---:|".repeat(heads.len()))?;
    for (lane, w) in &c.lanes {
        let by_role: String =
            roles.iter().map(|r| w.by_role.get(*r).map_or("– | ".to_owned(), |v| format!("{v:.3} | "))).collect();
        writeln!(
            out,
            "| {lane} | {:.3} | {by_role}{:.1}% | {:.3} | {} of {} | {} |",
            w.run_queue_us_per_op,
            w.share * 100.0,
            w.involuntary_per_op.get(&ThreadRole::Process.to_string()).copied().unwrap_or(0.0),
            w.contended_blocks,
            w.blocks,
            // The medians are of every block; a few that waited say so here.
            w.in_contended.map_or("–".to_owned(), |(waits, wall)| format!("{waits:.1} of {wall:.1}")),
        )?;
    }
    Ok(())
}

/// What the table's medians leave out, what a lane's waits are, and the
/// rule, fixed in advance, by which a block, a round and the run are
/// contended.
fn contention_rule(c: &Contention, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\nThe medians are of every block: a lane whose median block waited little can still have had a few blocks \
         held by another process (the last column gives their waits). Run-queue delay is time a thread was \
         runnable but another held its CPU (the kernel's scheduler \
         statistics, per block). A lane's threads wait for each other too, on one core most of all (a caller and \
         its writer sharing one core can each wait a large part of a write), but only while another of them runs, \
         so their waits stay near what the process ran at most, times the callers a lane runs at once (each may \
         wait while another runs). A lane's waits are every thread's of the process but hopscope's \
         driver thread's. The rule, fixed in advance: a block waited for another process when its threads waited \
         {:.0}% of its wall time or more, more than {:.1}× what the process ran (times its callers) and {:.0} ms in \
         all; a round (a block \
         of every lane, back to back) when any of its blocks did; the run is contended when half its rounds or \
         more did ({} of {} here: {}), and fewer are left out of every figure.\n",
        c.threshold_share * 100.0,
        hopscope_analyze::contention::CONTENDED_OVER_CPU,
        hopscope_analyze::contention::CONTENDED_MIN_WAIT_NS / 1e6,
        c.contended_rounds,
        c.rounds,
        if c.contended {
            "**contended**"
        } else if c.dropped_rounds {
            "not contended, those rounds left out"
        } else {
            "not contended"
        }
    )
}

/// Where the waits showed: block by block, how much of each slice came
/// with each µs waited, for the lanes another process held long enough.
fn waits_in_slices(c: &Contention, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "Where the waits showed: block by block, how many µs of a slice came with each µs the lane's threads \
         waited per write (a least-squares slope over the blocks, about 1 for a slice all the waits fell in; an \
         association, drawn only for a lane another process held in {} blocks or more and whose blocks' waits \
         spread by {:.0} µs per write or more). A wake slice with a large slope is the scheduler's time, not the \
         boundary's.\n\n| lane | slice | µs per µs waited | 95% CI | blocks \
         |\n|---|---|---:|---:|---:|",
        hopscope_analyze::contention::slices::MIN_BLOCKS,
        hopscope_analyze::contention::slices::MIN_SPREAD_US
    )?;
    for (lane, found) in &c.in_slices {
        for w in found {
            writeln!(
                out,
                "| {lane} | {} | {:.2} | {:.2}…{:.2} | {} |",
                w.slice, w.per_us_waited, w.ci95[0], w.ci95[1], w.blocks
            )?;
        }
    }
    writeln!(out)
}

/// What the instrument lost, and which counters were recorded.
pub(super) fn drops(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## Drops\n")?;
    writeln!(out, "Marks dropped: {}.", d.drops.marks_dropped)?;
    for (lane, complete) in &d.drops.complete_ops {
        let incomplete = d.drops.incomplete_ops.get(lane).copied().unwrap_or(0);
        if complete + incomplete > 0 {
            writeln!(out, "- `{lane}`: {complete} operations joined, {incomplete} excluded")?;
        }
    }
    writeln!(out)?;
    // A capture reads no perf counter and has no `--counters` to pass.
    if d.capture.is_some() {
        return Ok(());
    }
    writeln!(out, "## Counters\n")?;
    if d.counters.is_empty() {
        writeln!(
            out,
            "perf-event counters were not recorded (pass `--counters`): an open counter adds µs to every context \
             switch of its thread on this kind of host, so they stay off while measuring."
        )?;
    }
    for c in &d.counters {
        writeln!(out, "- {}: {}", c.counter.name(), c.support)?;
    }
    writeln!(out)?;
    Ok(())
}

/// How, when and where the run was made.
pub(super) fn run(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let facts = &d.run.meta;
    let meta = |fact: RunFact| facts.fact(&fact).unwrap_or("unknown");
    writeln!(out, "## Run\n")?;
    writeln!(out, "- date: {}", date(d))?;
    writeln!(out, "- command: {}", code_span(meta(RunFact::Command)))?;
    // A program's own capture has none of the runner's settings to report.
    if facts.fact(&RunFact::OpsPerBlock).is_some() {
        writeln!(out, "- commit: {}", meta(RunFact::Commit))?;
        let shape = facts.fact(&RunFact::Shape).map_or(String::new(), |s| format!("shape: {s} · "));
        writeln!(
            out,
            "- {shape}{} ops per block{} · {} samples × {} passes · {} warm-up blocks per lane · placement {}",
            meta(RunFact::OpsPerBlock),
            grown_blocks(facts, d.lanes_in_order().into_iter().map(|(name, _)| name)),
            meta(RunFact::Samples),
            meta(RunFact::Passes),
            meta(RunFact::WarmupBlocks),
            meta(RunFact::Placement)
        )?;
        if facts.fact(&RunFact::Db).is_some() {
            writeln!(out, "- database: {} · SQLite {}", meta(RunFact::Db), meta(RunFact::SqliteVersion))?;
        }
    } else if let Some(capture) = facts.fact(&RunFact::Capture) {
        writeln!(out, "- captured by the program itself ({capture})")?;
    }
    // `lane.<name>` describes a lane; `lane.<name>.<field>` are its settings.
    for (key, value) in facts {
        if let Ok(RunFact::LaneDescription(name)) = key.parse() {
            let role =
                facts.fact(&RunFact::Lane(name.clone(), LaneFact::Role)).map_or(String::new(), |r| format!(" ({r})"));
            writeln!(out, "- {name}{role}: {value}")?;
        }
    }
    writeln!(
        out,
        "- host: {} · {} cores · kernel {} · {}",
        d.host.cpu_model, d.host.cores, d.host.kernel, d.host.hostname
    )?;
    writeln!(
        out,
        "- clock: {} · {:.6} ns/tick · invariant TSC: {} · kernel clocksource: {}",
        d.clock.source,
        d.clock.ns_per_tick,
        yes_no(d.clock.invariant_tsc),
        d.clock.kernel_clocksource
    )?;
    writeln!(
        out,
        "- statistics: a lane's or slice's median has a bootstrap CI ({} resamples, seed {:#x}); a paired difference \
         between lanes has the sign test's CI over its rounds",
        d.run.bootstrap_resamples, d.run.bootstrap_seed
    )?;
    Ok(())
}

/// What each span slice holds besides its two edges, where that is more
/// than one of the four measured shapes, and why a flagged slice states
/// no machinery.
fn span_events(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    for s in &d.slices {
        match (&s.span_events, s.span_kind, s.machinery_us, &s.machinery_unknown) {
            (Some(events), None, Some(m), _) => writeln!(
                out,
                "\n- `{}` holds, besides its two edges, {}: {:.3} µs of machinery, the sum of those events' \
                 measured costs.",
                s.name,
                events.describe(),
                m
            )?,
            (_, _, None, Some(why)) => writeln!(
                out,
                "\n- `{}`: **span machinery unknown**, {why}; its figure includes an unstated share of span \
                 callbacks.",
                s.name
            )?,
            _ => {}
        }
    }
    Ok(())
}

/// What a lane's instrument is made of, in words: its spans, its marks,
/// its statements through SQLite's hook.
fn instrument_parts(i: &hopscope_analyze::InstrumentCost) -> String {
    let parts: Vec<&str> = [
        (i.spans_per_op > 0, "spans"),
        (i.marks_per_op > 0, "marks"),
        (i.statements_per_op > 0, "statements through SQLite's hook"),
    ]
    .into_iter()
    .filter_map(|(present, name)| present.then_some(name))
    .collect();
    match parts.as_slice() {
        [] => "marks".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
