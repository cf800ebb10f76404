//! The receipt's cross-check section and the headline's figures: the lanes
//! against the full accounting, with every figure's CI.

use std::fmt::Write as _;

use hopscope_analyze::accounting::{Accounting, Figure};
use hopscope_analyze::lanes::Difference;
use hopscope_analyze::slices::{CrossCheck, Owner};

/// `median µs (95% CI lo…hi)`, or, when the CI covers zero, that and "not
/// distinguishable from zero".
pub(super) fn with_ci(median: f64, ci95: [f64; 2]) -> String {
    let figure = format!("{median:.2} µs (95% CI {:.2}…{:.2})", ci95[0], ci95[1]);
    if ci95[0] <= 0.0 && ci95[1] >= 0.0 { format!("{figure}, not distinguishable from zero,") } else { figure }
}

/// [`with_ci`] of a lane difference.
pub(super) fn difference(d: &Difference) -> String {
    with_ci(d.median, d.ci95)
}

/// The headline's clause on the cross-check.
pub(super) fn headline_clause(c: &CrossCheck) -> String {
    let verdict = if c.agree { "agree within" } else { "disagree by more than" };
    match &c.accounting {
        Some(a) => format!(
            "; the marks put it at {:.2} µs (95% CI {:.2}…{:.2}; {:+.2} µs from the lanes' figure: the two \
             instruments {verdict} the fixed {:.1} µs{})",
            a.net_us,
            a.total.ci95[0] - a.marks_us,
            a.total.ci95[1] - a.marks_us,
            a.difference_us,
            c.tolerance_us,
            // Only an agreement is weakened by a wide tolerance.
            if c.agree && weak(a) { ", a tolerance wider than the figure itself" } else { "" }
        ),
        None => format!(
            "; the two instruments {verdict} the fixed {:.1} µs (in-situ library slices {:.2} µs, {:+.2} µs \
             from the lanes')",
            c.tolerance_us, c.insitu_library_us, c.difference_us
        ),
    }
}

/// The section `## Cross-check`; `names` are the subject's and the
/// floor's lane names, as the lane arithmetic uses them.
pub(super) fn render(c: &CrossCheck, names: (&str, &str), out: &mut String) -> std::fmt::Result {
    writeln!(out, "## Cross-check: two instruments on the library's cost\n")?;
    match &c.accounting {
        Some(a) => render_accounting(c, a, names, out)?,
        None => render_slices_only(c, names, out)?,
    }
    Ok(())
}

/// Whether the lanes' figure is smaller than the cross-check's tolerance:
/// an accounting of zero would agree with it too, so agreement says little.
fn weak(a: &Accounting) -> bool {
    a.lanes_library_us.abs() < a.tolerance_us
}

/// The owner's row label; `own_code` is false when no mark gives the
/// subject's own code a slice, so a wake's slice holds that code too.
fn owner_row(owner: Owner, own_code: bool) -> &'static str {
    match owner {
        Owner::Library => "library, direct",
        Owner::Tail => "tails (closing work)",
        Owner::Sqlite => "SQLite",
        Owner::Boundary if !own_code => "boundary (wakes, and the code on either side of them)",
        Owner::Boundary => "boundary (wakes)",
        Owner::Caller => "the caller's own code",
        Owner::Wait => "waits (unsplit)",
        Owner::Between => "between marks",
    }
}

fn cell(f: &Figure) -> String {
    format!("{:+.3} | {:+.3}…{:+.3}", f.median_us, f.ci95[0], f.ci95[1])
}

/// The section with the full accounting: how the marks split `s − f` by
/// owner, against the lanes' figure, then what lies outside the table.
fn render_accounting(c: &CrossCheck, a: &Accounting, names: (&str, &str), out: &mut String) -> std::fmt::Result {
    accounting_intro(a, names, out)?;
    owner_rows(c, a, names.0, out)?;
    accounting_rows(a, names, out)?;
    agreement(a, out)?;
    if let Some(p) = &a.probed_lanes {
        probed_lanes(a, p, out)?;
    }
    if c.slices.is_empty() && c.floor_slices.is_empty() {
        return own_code_unmarked(a, names, out);
    }
    indirect_cost(&a.indirect, names, out)?;
    if let Some(off) = &a.off_path {
        off_path(off, names, out)?;
    }
    own_slices(c, names, out)
}

/// What the accounting table sums, and whether the marks close each
/// thread's cycle (so the slices add up to the whole operation).
fn accounting_intro(a: &Accounting, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    let cycles = if a.closed {
        "Both probed builds close each thread's cycle (`idle`, `returned`), so their path slices add up to each \
         operation's whole time on the caller's path."
    } else {
        "These marks do not close each thread's cycle (`idle` and `returned` are not both marked): the path slices hold what lies \
         between an operation's first and last mark, and the time between marks is a row of its own, outside the \
         slices' total."
    };
    writeln!(
        out,
        "Where `{s} − {f}` goes according to the marks. {cycles} Per round, the probed `{s}`'s slice means minus the \
         probed `{f}`'s, summed by owner (median over {} rounds, 95% CI).\n",
        a.rounds
    )
}

/// The table's head and a row per owner, then every slice's total.
fn owner_rows(c: &CrossCheck, a: &Accounting, s: &str, out: &mut String) -> std::fmt::Result {
    writeln!(out, "| owner | {s}'s slices | Δ µs per op | 95% CI |")?;
    writeln!(out, "|---|---|---:|---:|")?;
    let own_code = !(c.slices.is_empty() && c.floor_slices.is_empty());
    for o in &a.by_owner {
        let slices = if o.slices.is_empty() { "—".to_owned() } else { o.slices.join(", ") };
        writeln!(out, "| {} | {slices} | {} |", owner_row(o.owner, own_code), cell(&o.delta))?;
    }
    writeln!(
        out,
        "| **every slice** | | **{:+.3}** | {:+.3}…{:+.3} |",
        a.total.median_us, a.total.ci95[0], a.total.ci95[1]
    )
}

/// The table's rows below the total: the time between marks, the extra
/// marks taken off, the accounting's library against the lanes', and the
/// note that the owners' rows need not add up.
fn accounting_rows(a: &Accounting, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    let rows_note = if a.by_owner.len() > 1 {
        " Each row is its own median over the rounds, so the owners' rows need not add up to the total's."
    } else {
        ""
    };
    if let Some(between) = &a.between {
        writeln!(out, "| between marks (not in the slices' total) | | {} |", cell(between))?;
    }
    writeln!(out, "| less {s}'s {} extra marks | | {:+.3} | |", a.extra_marks, -a.marks_us)?;
    // Less a fixed cost, the total's CI shifts with it (the headline's).
    writeln!(
        out,
        "| **accounting: the library** | | **{:+.3}** | {:+.3}…{:+.3} |",
        a.net_us,
        a.total.ci95[0] - a.marks_us,
        a.total.ci95[1] - a.marks_us
    )?;
    writeln!(
        out,
        "| **lanes: {s} − {f}** (clean builds) | | **{:+.3}** | {:+.3}…{:+.3} |",
        a.lanes_library_us, a.lanes_library_ci95[0], a.lanes_library_ci95[1]
    )?;
    writeln!(out, "| difference | | {:+.3} | |", a.difference_us)?;
    if !rows_note.is_empty() {
        writeln!(out, "\n{}", rows_note.trim_start())?;
    }
    Ok(())
}

/// Whether the two instruments agree, and when the tolerance is wider
/// than the figure, what that agreement cannot say.
fn agreement(a: &Accounting, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\nThe two instruments agree when the accounting lies within a fixed {:.2} µs of the lanes' figure: \
         **agree: {}** (difference {:+.3} µs).",
        a.tolerance_us,
        if a.closes { "yes" } else { "no" },
        a.difference_us
    )?;
    if a.closes && weak(a) {
        writeln!(
            out,
            "The lanes' figure ({:+.3} µs) is smaller than that tolerance, so an accounting of zero would agree \
             too: here the agreement does not confirm the figure, only that neither instrument sees a large cost.",
            a.lanes_library_us
        )?;
    }
    Ok(())
}

/// The probed builds' lanes on the very operations the marks cover (`p`),
/// against the slices and against the clean lanes.
fn probed_lanes(a: &Accounting, p: &Difference, out: &mut String) -> std::fmt::Result {
    let between = a.between.map_or(0.0, |b| b.median_us);
    let covered = if a.closed {
        format!("the slices add up to that within {:+.3} µs", a.total.median_us - p.median)
    } else {
        format!(
            "the slices' sum differs by {:+.3} µs and the time between marks by {between:+.3} µs",
            a.total.median_us
        )
    };
    writeln!(
        out,
        "\nOn the very operations the marks cover, the probed builds' lanes differ by {:+.3} µs (95% CI \
         {:+.3}…{:+.3}), and {covered}. The clean lanes' figure differs from the probed ones' by {:+.3} µs: the \
         two builds' observer effects differing.",
        p.median,
        p.ci95[0],
        p.ci95[1],
        a.lanes_library_us - p.median
    )
}

/// When no mark gives the subject's own code a slice: every slice's
/// difference is the library's code and any indirect cost together.
fn own_code_unmarked(a: &Accounting, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\nNeither lane's marks give the subject's own code a slice of its own: it runs inside the slices the \
         boundary and the database own (a cross-thread slice holds the code on either side of its wake), so \
         {s} − {f} there, {:+.3} µs (95% CI {:+.3}…{:+.3}: every slice, as in the table), is the library's own \
         code and any indirect cost together. Mark its steps (a `caller` or `writer` span around them) to split \
         them.\n",
        a.total.median_us, a.total.ci95[0], a.total.ci95[1]
    )
}

/// The library's indirect cost `i`: `s − f` in the slices it does not own.
fn indirect_cost(i: &Figure, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    if i.covers_zero() {
        writeln!(
            out,
            "\nNo indirect cost is distinguishable from zero: {s} − {f} in the slices the library does not own (the \
             database's and the boundary's) is {:+.3} µs (95% CI {:+.3}…{:+.3}).",
            i.median_us, i.ci95[0], i.ci95[1]
        )
    } else {
        writeln!(
            out,
            "\nThe library's **indirect cost**: {:+.3} µs (95% CI {:+.3}…{:+.3}) of {s} − {f} sits in slices it does \
             not own (the database's and the boundary's): the subject's larger footprint slows work that is not its \
             own code, or its own code runs inside those slices where no mark separates it from the wake.",
            i.median_us, i.ci95[0], i.ci95[1]
        )
    }
}

/// The subject's tail beside the path (`off`), outside the total.
fn off_path(off: &Figure, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "\nBeside the path, not in the total: {s}'s tail runs while the caller already has its reply ({s} − {f} \
         {:+.3} µs, 95% CI {:+.3}…{:+.3}).",
        off.median_us, off.ci95[0], off.ci95[1]
    )
}

/// The library's own slices summed alone, and why that need not match
/// the table's *library, direct* row.
fn own_slices(c: &CrossCheck, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    let listed = |slices: &[String]| if slices.is_empty() { "none".to_owned() } else { slices.join(", ") };
    writeln!(
        out,
        "\nThe library's own slices alone ({s}'s {} less {f}'s {}): {:+.3} µs (the sum of their medians over \
         blocks; the *library, direct* row above is the median of per-round differences of means, which a few slow \
         operations move, so the two need not match).\n",
        listed(&c.slices),
        listed(&c.floor_slices),
        c.insitu_library_us
    )
}

fn render_slices_only(c: &CrossCheck, (s, f): (&str, &str), out: &mut String) -> std::fmt::Result {
    writeln!(out, "| instrument | µs per op |")?;
    writeln!(out, "|---|---:|")?;
    writeln!(out, "| in-situ: {s}'s library slices ({}) | {:.3} |", c.slices.join(", "), c.insitu_writer_us)?;
    if !c.floor_slices.is_empty() {
        writeln!(out, "| in-situ: less {f}'s own slices ({}) | {:.3} |", c.floor_slices.join(", "), c.insitu_floor_us)?;
    }
    writeln!(out, "| **in-situ library** | **{:.3}** |", c.insitu_library_us)?;
    writeln!(
        out,
        "| **lanes: {s} − {f}** | **{:.3}** (95% CI {:.3}…{:.3}) |",
        c.lanes_library_us, c.lanes_library_ci95[0], c.lanes_library_ci95[1]
    )?;
    writeln!(out, "| difference | {:+.3} |", c.difference_us)?;
    writeln!(
        out,
        "\nWithout a probed floor only the library's own slices can be summed (the boundary's and the database's \
         slices are not accounted). The instruments agree when they lie within a fixed {:.2} µs: **agree: {}**\n",
        c.tolerance_us, c.agree
    )
}
