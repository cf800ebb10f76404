//! `receipt.md` of a decomposition: the tables a reviewer pastes, rendered
//! from a [`Decomposition`]. Formatting only: every figure comes from the
//! analysis.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use hopscope_probe::Role;

use hopscope_analyze::join::SliceSide;
use hopscope_analyze::lanes::Difference;
use hopscope_analyze::slices::Owner;
use hopscope_analyze::{CounterFigure, Decomposition};

/// Render `d` as Markdown: the title, the headline and warnings, then
/// every table.
pub fn markdown(d: &Decomposition) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = render_head(d, &mut out);
    let _ = render(d, &mut out);
    out
}

/// The tables alone, for a page that shows the title, headline and
/// warnings itself (the HTML report: each once).
pub fn body_markdown(d: &Decomposition) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = render(d, &mut out);
    out
}

/// One sentence with the headline figures, or `None` without lane arithmetic.
pub fn headline(d: &Decomposition) -> Option<String> {
    let derived = d.derived.as_ref()?;
    let mut sentence = match (&derived.boundary_us, &derived.library_us) {
        (Some(boundary), Some(library)) => format!(
            "Of the {} hop, {} is the thread boundary{} and {} is the writer's own work",
            super::crosscheck::difference(&derived.hop_us),
            super::crosscheck::difference(boundary),
            match (&derived.switches_us, &derived.machinery_us) {
                (Some(switches), Some(machinery)) => format!(
                    " ({} the bare switches, {} the machinery around them)",
                    super::crosscheck::difference(switches),
                    super::crosscheck::difference(machinery)
                ),
                _ => String::new(),
            },
            super::crosscheck::difference(library)
        ),
        _ => format!(
            "The hop (subject − baseline) is {}; without a floor lane it is not split into boundary and library",
            super::crosscheck::difference(&derived.hop_us)
        ),
    };
    if let Some(c) = &d.crosscheck {
        sentence.push_str(&super::crosscheck::headline_clause(c));
    }
    // A trailing "zero," clause before the end of the sentence.
    if sentence.ends_with(',') {
        sentence.pop();
    }
    sentence.push('.');
    Some(sentence)
}

fn render_head(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    // hopscope's own runs name their shape; a harness program and a
    // program's capture name themselves.
    let title = d
        .run
        .meta
        .get("shape")
        .or_else(|| d.run.meta.get("harness"))
        .or_else(|| d.lanes.keys().next())
        .map_or("unknown", String::as_str);
    writeln!(out, "# hopscope receipt: {title}\n")?;
    if let Some(partial) = &d.partial {
        writeln!(out, "**Partial result:** {}.\n", partial.sentence())?;
    }
    if let Some(h) = headline(d) {
        writeln!(out, "{h}\n")?;
    }
    if !d.warnings.is_empty() {
        writeln!(out, "## Warnings\n")?;
        for w in &d.warnings {
            writeln!(out, "- ⚠ {w}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn render(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let meta = |key: &str| d.run.meta.get(key).map_or("unknown", String::as_str);
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
    writeln!(out)?;

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
    }

    if let Some(c) = &d.comparison {
        render_comparison(c, out)?;
    }

    if !d.slices.is_empty() {
        let lane = d.insitu_lane.as_deref().unwrap_or("?");
        let grain_ns = d.clock.grain_ns();
        writeln!(out, "## Slices of `{lane}` (µs per operation, median of block medians)\n")?;
        let spans = d.slices.iter().any(|s| s.machinery_us.is_some());
        let (extra_head, extra_rule) = if spans { (" span machinery | net of it |", "---:|---:|") } else { ("", "") };
        writeln!(out, "| slice | side | owner | median | 95% CI | p90 | p99 | share |{extra_head}")?;
        writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|{extra_rule}")?;
        for s in &d.slices {
            let side = match s.side {
                SliceSide::Caller => "caller",
                SliceSide::Writer => "writer",
                SliceSide::Cross => "cross-thread",
            };
            let owner = owner_name(s.owner);
            let extra = match (spans, s.machinery_us) {
                (false, _) => String::new(),
                (true, Some(m)) if !s.within_two_grains => format!(" {m:.3} | {:.3} |", s.median_us - m),
                (true, Some(m)) => format!(" {m:.3} | — |"),
                (true, None) => " — | — |".to_owned(),
            };
            // A median the clock cannot resolve has no CI worth printing.
            let ci =
                if s.within_two_grains { "—".to_owned() } else { format!("{:.3}–{:.3}", s.ci95[0], s.ci95[1]) };
            writeln!(
                out,
                "| {} | {side} | {owner} | {} | {ci} | {:.3} | {:.3} | {:.1}% |{extra}",
                s.name,
                super::median_text(s, grain_ns),
                s.p90_us,
                s.p99_us,
                s.share * 100.0
            )?;
        }
        if let (true, Some(m)) = (spans, &d.span_machinery) {
            render_machinery(m, out)?;
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

    if let Some(c) = &d.crosscheck {
        super::crosscheck::render(c, out)?;
    }

    writeln!(out, "## Observer effect\n")?;
    match &d.observer_effect {
        Some(o) => writeln!(
            out,
            "Probed writer {:.3} µs vs clean writer {:.3} µs per op: Δ {:+.3} µs (95% CI {:+.3}…{:+.3}), {:+.1}%.\n",
            o.probed_us, o.clean_us, o.delta_us, o.delta_ci95[0], o.delta_ci95[1], o.delta_pct
        )?,
        None => writeln!(out, "Not measured: the run has no clean and probed writer pair.\n")?,
    }

    if !d.cpu_us_per_op.is_empty() {
        // Thread roles as the run named them: the caller, the lanes' own
        // threads (`writer` in hopscope's runs), and the whole process.
        let mut roles: Vec<&str> = vec!["caller"];
        for role in d.cpu_us_per_op.values().flat_map(|r| r.keys()) {
            if role != "process" && !roles.contains(&role.as_str()) {
                roles.push(role);
            }
        }
        roles.push("process");
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
        writeln!(
            out,
            "\nCPU from per-thread and process CPU clocks; context switches from `getrusage` (the process column counts every thread, a peer's included).\n"
        )?;
    }

    render_counters(d, out)?;

    writeln!(out, "## Drops\n")?;
    writeln!(out, "Marks dropped: {}.", d.drops.marks_dropped)?;
    for (lane, complete) in &d.drops.complete_ops {
        let incomplete = d.drops.incomplete_ops.get(lane).copied().unwrap_or(0);
        if complete + incomplete > 0 {
            writeln!(out, "- `{lane}`: {complete} operations joined, {incomplete} excluded")?;
        }
    }
    writeln!(out)?;

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

    writeln!(out, "## Run\n")?;
    writeln!(out, "- date: {}", date(d))?;
    writeln!(out, "- command: `{}`", meta("command"))?;
    // A program's own capture has none of the runner's settings to report.
    if d.run.meta.contains_key("ops_per_block") {
        writeln!(out, "- commit: {}", meta("commit"))?;
        let shape = d.run.meta.get("shape").map_or(String::new(), |s| format!("shape: {s} · "));
        writeln!(
            out,
            "- {shape}{} ops per block · {} samples × {} passes · {} warm-up blocks per lane · placement {}",
            meta("ops_per_block"),
            meta("samples"),
            meta("passes"),
            meta("warmup_blocks"),
            meta("placement")
        )?;
        if d.run.meta.contains_key("db") {
            writeln!(out, "- database: {} · SQLite {}", meta("db"), meta("sqlite_version"))?;
        }
    } else if let Some(capture) = d.run.meta.get("capture") {
        writeln!(out, "- captured by the program itself ({capture})")?;
    }
    // `lane.<name>` describes a lane; `lane.<name>.<field>` are its settings.
    for (key, value) in d.run.meta.iter().filter_map(|(k, v)| Some((k.strip_prefix("lane.")?, v))) {
        if !key.contains('.') {
            let role = d.run.meta.get(&format!("lane.{key}.role")).map_or(String::new(), |r| format!(" ({r})"));
            writeln!(out, "- {key}{role}: {value}")?;
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

/// When the run started, as RFC 3339 UTC. The stamp comes from the trace
/// file, so a damaged one past RFC 3339's last year (9999) is shown as the
/// raw number rather than trusted.
pub fn date(d: &Decomposition) -> String {
    /// 10000-01-01T00:00:00Z in milliseconds since the Unix epoch.
    const YEAR_10000_MS: u64 = 253_402_300_800_000;
    let ms = d.run.created_unix_ms;
    if ms >= YEAR_10000_MS {
        return format!("{ms} ms after the Unix epoch (past year 9999: a damaged header?)");
    }
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Per-operation perf-event counts per lane: `total (caller / writer)`.
fn render_comparison(c: &hopscope_analyze::comparison::Comparison, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## The reference writer and its peers (µs per operation)\n")?;
    writeln!(out, "| lane | µs/op | 95% CI | hop vs inline | beyond floor | CPU µs/op | ctx switches/op |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|")?;
    let diff = |d: &Option<hopscope_analyze::lanes::Difference>| {
        d.map_or("–".to_owned(), |d| format!("{:+.3} ({:+.3}…{:+.3})", d.median, d.ci95[0], d.ci95[1]))
    };
    let number = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.3}"));
    for r in &c.rows {
        writeln!(
            out,
            "| {} | {:.3} | {:.3}–{:.3} | {} | {} | {} | {} |",
            r.lane,
            r.us_per_op.median,
            r.us_per_op.ci95[0],
            r.us_per_op.ci95[1],
            diff(&r.hop_vs_inline),
            diff(&r.beyond_floor),
            number(r.process_cpu_us),
            number(r.ctx_switches)
        )?;
    }
    writeln!(
        out,
        "\nHop and beyond-floor figures are paired by round; CPU and context switches count every thread of the process.\n"
    )?;
    for f in &c.findings {
        writeln!(out, "- {f}")?;
    }
    writeln!(out, "\nHow each lane runs:\n")?;
    for r in &c.rows {
        writeln!(out, "- `{}`: {}", r.lane, r.description)?;
    }
    writeln!(out)
}

fn render_counters(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let mut names: Vec<&str> = d
        .lanes
        .values()
        .flat_map(|l| l.counters.iter())
        .filter(|(_, f)| matches!(f, CounterFigure::PerOp(_)))
        .map(|(k, _)| k.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Counters per operation (total, then each thread role)\n")?;
    writeln!(
        out,
        "| lane | {} |",
        names.iter().map(|n| n.trim_end_matches("_per_op").replace('_', " ")).collect::<Vec<_>>().join(" | ")
    )?;
    writeln!(out, "|---|{}", "---:|".repeat(names.len()))?;
    for (lane, result) in d.lanes_in_order() {
        let cells: Vec<String> = names
            .iter()
            .map(|n| match result.counters.get(*n) {
                Some(CounterFigure::PerOp(roles)) => {
                    let total = roles.get("total").map_or("–".to_owned(), |v| format!("{v:.3}"));
                    let each: Vec<String> =
                        roles.iter().filter(|(r, _)| *r != "total").map(|(r, v)| format!("{r} {v:.3}")).collect();
                    format!("{total} ({})", each.join(" / "))
                }
                Some(CounterFigure::Unsupported(why)) => why.clone(),
                None => "–".to_owned(),
            })
            .collect();
        writeln!(out, "| {lane} | {} |", cells.join(" | "))?;
    }
    writeln!(out, "\ntask-clock is in ns per operation; an unsupported counter is listed below, never shown as 0.\n")?;
    let crossing: Vec<(&str, f64, f64)> = d
        .lanes_in_order()
        .into_iter()
        .filter_map(|(lane, r)| Some((lane, r.cross_core_hops_per_op?, r.ops_crossing_cores?)))
        .collect();
    if !crossing.is_empty() {
        writeln!(out, "Cross-core hops (from the CPU each mark was taken on):\n")?;
        writeln!(out, "| lane | CPU changes per write | writes crossing cores |")?;
        writeln!(out, "|---|---:|---:|")?;
        for (lane, hops, share) in crossing {
            writeln!(out, "| {lane} | {hops:.3} | {:.1}% |", share * 100.0)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn row(out: &mut String, name: &str, definition: &str, d: &Difference) -> std::fmt::Result {
    writeln!(out, "| {name} | {definition} | {:.3} | {:.3}–{:.3} | {} |", d.median, d.ci95[0], d.ci95[1], d.rounds)
}

fn owner_name(owner: Owner) -> &'static str {
    super::owner_label(owner)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// What the span machinery is, under a slice table that states its share.
fn render_machinery(m: &hopscope_probe::SpanMachinery, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\n*Span machinery* is what a slice between two `tracing` span edges on one thread holds besides your code: \
         the layer's callbacks and, between spans, the Registry closing one span and creating the next. It was \
         measured in this process on empty operations ({} before the run and, in a harness run, 400 after every \
         probed block, whose medians are used): one span's whole life (create, enter, \
         exit, close) took {:.1} ns through Registry + HopLayer ({:.1} ns under a bare Registry); inside a slice, \
         enter → own exit {:.1} ns, exit → next span's enter {:.1} ns, enter → child's enter {:.1} ns, child's exit \
         → exit {:.1} ns, against {:.1} ns between two `hop!` marks. *Net of it* subtracts that median; \
         cross-thread slices state none (each side's share runs concurrently with the other's).",
        m.samples,
        m.span_life_ns,
        m.registry_life_ns,
        m.inside_ns,
        m.between_ns,
        m.into_ns,
        m.out_of_ns,
        m.bare_mark_ns
    )
}
