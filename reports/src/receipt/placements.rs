//! The receipt's section on placement: each placement twin beside the lane
//! it repeats (`--placement same-core,unpinned`) and what the placement
//! changed, or, for a run of one placement whose program lanes several
//! callers drive on one core, that it may have changed how they behaved.

use std::fmt::Write as _;

use hopscope_analyze::{Decomposition, PlacedTwin, Placements};
use hopscope_probe::{LaneFact, Role, RunFact, RunFacts};

/// The section: twins when the run has them, else the one-core note when
/// it applies, else nothing.
pub(super) fn section(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    match &d.placements {
        Some(p) => render(p, out),
        None => one_core_note(d, out),
    }
}

fn render(p: &Placements, out: &mut String) -> std::fmt::Result {
    writeln!(out, "## Placement\n")?;
    let others: Vec<&str> = p.twins.iter().map(|t| t.placements[1].as_str()).collect();
    let mut others = others;
    others.dedup();
    writeln!(
        out,
        "The program's lanes ran under {} and again under {}, side by side in the same rounds; the references \
         (inline, floor) ran under {} only.\n",
        p.first,
        others.join(" and "),
        p.first
    )?;
    writeln!(
        out,
        "| lane | placement | µs/op (median) | twin − lane, paired (95% CI) | latency median µs | batch mean (p90) | \
         slices that moved most (twin − lane, CI clear of zero) |"
    )?;
    writeln!(out, "|---|---|---:|---|---:|---|---|")?;
    for t in &p.twins {
        rows(t, out)?;
    }
    writeln!(out)?;
    for t in &p.twins {
        writeln!(out, "- {}", sentence(t))?;
    }
    writeln!(out)
}

fn rows(t: &PlacedTwin, out: &mut String) -> std::fmt::Result {
    let latency = |k: usize| t.latency_median_us.map_or("—".to_owned(), |l| format!("{:.2}", l[k]));
    let batch = |k: usize| match (t.batch_mean, t.batch_p90) {
        (Some(mean), Some(p90)) => format!("{:.1} ({})", mean[k], p90[k]),
        _ => "—".to_owned(),
    };
    writeln!(
        out,
        "| `{}` | {} | {:.3} | | {} | {} | |",
        t.lanes[0],
        t.placements[0],
        t.us_per_op[0],
        latency(0),
        batch(0)
    )?;
    let difference = match (t.difference, t.ratio()) {
        (Some(d), Some(r)) => format!("{:+.3} ({:+.3}…{:+.3}), {r:.2}×", d.median, d.ci95[0], d.ci95[1]),
        _ => "—".to_owned(),
    };
    let moved: Vec<String> = t.moved.iter().map(|s| format!("`{}` {:+.3} µs", s.name, s.difference.median)).collect();
    writeln!(
        out,
        "| `{}` | {} | {:.3} | {difference} | {} | {} | {} |",
        t.lanes[1],
        t.placements[1],
        t.us_per_op[1],
        latency(1),
        batch(1),
        if moved.is_empty() { "—".to_owned() } else { moved.join("; ") }
    )
}

/// What the placement changed for one twin, in a sentence.
fn sentence(t: &PlacedTwin) -> String {
    let [lane, _] = &t.lanes;
    let figure = if t.callers > 1 {
        format!("wall time per operation ({} callers at once: a throughput)", t.callers)
    } else {
        "wall time per operation".to_owned()
    };
    let mut parts = vec![wall_part(t, &figure)];
    if let (Some([a, b]), Some([pa, pb])) = (t.batch_mean, t.batch_p90) {
        let verb = if t.batches_changed() { "averaged" } else { "still averaged" };
        parts.push(format!("its batches {verb} {b:.1} (p90 {pb}) against {a:.1} (p90 {pa})"));
    }
    // The slice named is one that moved the lane's way.
    let lane_up = t.difference.is_some_and(|d| d.median > 0.0);
    if let Some(s) = t.moved.iter().find(|s| (s.difference.median > 0.0) == lane_up).filter(|_| t.changed()) {
        parts.push(format!("the slice that moved most its way: `{}` {:+.3} µs", s.name, s.difference.median));
    }
    let verdict = if t.changed() { "Placement changed" } else { "No change from placement shown for" };
    format!("{verdict} `{lane}`: {}.", parts.join("; "))
}

/// What the twin's wall time did: how many times faster or slower, or
/// why the run cannot tell.
fn wall_part(t: &PlacedTwin, figure: &str) -> String {
    let [first, other] = &t.placements;
    let (Some(d), Some(r)) = (t.difference, t.ratio()) else {
        return format!("no {figure} to compare");
    };
    let mut ci = format!("paired Δ {:+.3} µs, 95% CI {:+.3}…{:+.3}", d.median, d.ci95[0], d.ci95[1]);
    // A user read 15.4 against 20.1 µs in the table beside "1.05×": the
    // medians of blocks and the paired rounds part when a lane runs at two
    // paces; say which one the sentence judged.
    let [x, y] = t.us_per_op;
    if x > 0.0 && y > 0.0 && ((y / x) / r - 1.0).abs() > 0.1 {
        ci.push_str(&format!(
            "; the two medians of blocks read {:.2}× apart: the lanes ran at more than one pace, and the rounds \
             paired side by side are what is judged",
            y / x
        ));
    }
    if t.wall_changed() {
        let how = if r < 1.0 { format!("{:.2}× faster", 1.0 / r) } else { format!("{r:.2}× slower") };
        format!("its {figure} ran {how} {other} than {first} ({ci})")
    } else if d.ci95[0] <= 0.0 && d.ci95[1] >= 0.0 {
        format!("its {figure} under {other} is not told from {first}'s in this run ({ci}; {r:.2}×)")
    } else {
        format!("its {figure} under {other} lies within 5% of {first}'s ({ci})")
    }
}

/// A run of one placement with every thread on one core, whose program
/// lanes several callers drive: the placement may be what shaped them.
fn one_core_note(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let meta = &d.run.meta;
    if meta.fact(&RunFact::Placement) != Some("same-core") {
        return Ok(());
    }
    let crowded: Vec<&str> = d
        .lane_order
        .iter()
        .map(String::as_str)
        .filter(|lane| {
            let fact = |f: LaneFact| meta.fact(&RunFact::Lane((*lane).to_owned(), f));
            let program = fact(LaneFact::Role)
                .and_then(|r| r.parse::<Role>().ok())
                .is_some_and(|r| matches!(r, Role::Subject | Role::Peer));
            let callers: u32 = fact(LaneFact::Callers).and_then(|c| c.parse().ok()).unwrap_or(1);
            program && fact(LaneFact::Placement) == Some("same-core") && callers > 1
        })
        .collect();
    if crowded.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = crowded.iter().map(|l| format!("`{l}`")).collect();
    writeln!(out, "## Placement\n")?;
    writeln!(
        out,
        "Every thread of {} ran on one core (placement same-core), its callers and its writer taking turns: how \
         large batches grow and which slice waits can differ when they spread over cores. `--placement \
         same-core,unpinned` runs each program lane under both, side by side, and this section then says what \
         the placement changed.\n",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopscope_analyze::lanes::Difference;

    fn twin(us_per_op: [f64; 2], delta: f64) -> PlacedTwin {
        PlacedTwin {
            lanes: ["orders-probed".into(), "unpinned/orders-probed".into()],
            placements: ["same-core".into(), "unpinned".into()],
            probed: true,
            callers: 5,
            us_per_op,
            difference: Some(Difference { median: delta, ci95: [delta - 3.4, delta + 13.4], rounds: 40 }),
            latency_median_us: None,
            batch_mean: None,
            batch_p90: None,
            moved: Vec::new(),
        }
    }

    #[test]
    fn medians_apart_from_the_paired_rounds_are_said_beside_them() {
        // A user's table: 15.4 against 20.1 µs, the paired rounds 1.05×.
        let said = sentence(&twin([15.4, 20.1], 0.731));
        assert!(said.contains("1.05×"), "{said}");
        assert!(said.contains("the two medians of blocks read 1.31× apart"), "{said}");
        // Medians that agree with the pairing say nothing more.
        assert!(!sentence(&twin([15.4, 16.1], 0.731)).contains("medians of blocks"));
    }
}
