//! The Markdown receipts: what a reviewer pastes, one per kind of result,
//! rendered from the data `hopscope_analyze` returns (formatting only).
//!
//! - the decomposition's `receipt.md` ([`markdown`], and [`body_markdown`]
//!   for a page that shows the headline and warnings itself);
//! - [`experiment`], [`merge`], [`sweep`] and [`resolution`]: each its
//!   result's `receipt.md`.

mod ab_reason;
pub mod causal;
mod checkpoints;
pub mod contention;
mod crosscheck;
mod declaration;
mod decomposition;
pub mod experiment;
pub mod merge;
pub mod net;
mod placements;
pub mod resolution;
pub mod shared;
pub mod sweep;
mod warning;

use hopscope_analyze::slices::{Owner, SliceFigures};

pub use ab_reason::reason;
pub use decomposition::{body_markdown, date, headline, markdown};
pub use warning::{floor_refusal, partial_sentence, warning, warnings};

/// What a run is called in titles: the shape hopscope's own commands
/// ran, else the harness program's name, else `fallback` (a program's
/// own capture: its first lane).
pub fn run_title<'a>(meta: &'a std::collections::BTreeMap<String, String>, fallback: Option<&'a str>) -> &'a str {
    use hopscope_probe::{RunFact, RunFacts};
    meta.fact(&RunFact::Shape).or_else(|| meta.fact(&RunFact::Harness)).or(fallback).unwrap_or("a program's own trace")
}

/// `text` as one Markdown code span, whatever it holds: fenced by one
/// backtick more than its longest run of them (CommonMark), padded when it
/// starts or ends with one, and on one line (a recorded command may hold
/// backticks or newlines; neither may end the span or the list item).
pub fn code_span(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A short name for `owner`, as tables print it.
pub fn owner_label(owner: Owner) -> &'static str {
    match owner {
        Owner::Library => "library",
        Owner::Sqlite => "SQLite",
        Owner::Boundary => "boundary",
        Owner::Tail => "tail",
        Owner::Caller => "caller's own",
        Owner::Wait => "wait",
        Owner::Between => "between marks",
    }
}

/// How a slice's median reads in a table: the figure in µs, or, within two
/// grains of the clock, `≤ 2 grains (~N ns)` with the mean that can be said.
pub fn median_text(figure: &SliceFigures, grain_ns: Option<f64>) -> String {
    match (figure.within_two_grains, grain_ns) {
        (true, Some(grain)) => {
            let mean = figure.mean_us.map_or(String::new(), |m| format!("; mean {:.1} ns", m * 1_000.0));
            format!("≤ 2 grains (~{:.0} ns{mean})", 2.0 * grain)
        }
        _ => format!("{:.3}", figure.median_us),
    }
}

/// The lanes of `lanes` whose blocks grew past the plan's size for their
/// callers (`` (lanes of several callers: `x` 600 (6 callers)) ``), or
/// nothing: the run's `ops_per_block` is the plan's.
pub(crate) fn grown_blocks<'a>(
    facts: &std::collections::BTreeMap<String, String>,
    lanes: impl IntoIterator<Item = &'a str>,
) -> String {
    use hopscope_probe::{LaneFact, RunFact, RunFacts};
    let plan: Option<u64> = facts.parsed(&RunFact::OpsPerBlock);
    let grown: Vec<String> = lanes
        .into_iter()
        .filter_map(|name| {
            let ops: u64 = facts.parsed(&RunFact::Lane(name.to_owned(), LaneFact::OpsPerBlock))?;
            let callers: u32 = facts.parsed(&RunFact::Lane(name.to_owned(), LaneFact::Callers)).unwrap_or(1);
            (Some(ops) != plan).then(|| format!("`{name}` {ops} ({callers} callers)"))
        })
        .collect();
    if grown.is_empty() { String::new() } else { format!(" (lanes of several callers: {})", grown.join(", ")) }
}

/// Every lane a run's facts describe (`lane.<name>.<fact>`), by name.
pub(crate) fn lanes_of(facts: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    let mut lanes: Vec<String> = facts
        .keys()
        .filter_map(|key| match key.parse::<hopscope_probe::RunFact>() {
            Ok(hopscope_probe::RunFact::Lane(name, hopscope_probe::LaneFact::OpsPerBlock)) => Some(name),
            _ => None,
        })
        .collect();
    lanes.dedup();
    lanes
}

#[cfg(test)]
mod tests {
    use super::code_span;

    #[test]
    fn a_code_span_holds_backticks_and_newlines() {
        assert_eq!(code_span("cargo build"), "`cargo build`");
        assert_eq!(code_span("echo `date`"), "`` echo `date` ``");
        assert_eq!(code_span("a``b"), "```a``b```");
        assert_eq!(code_span("`x`"), "`` `x` ``");
        assert_eq!(code_span("one\ntwo"), "`one two`");
    }
}
