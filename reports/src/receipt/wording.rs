//! How names and figures read in every receipt: a run's title, a code
//! span, an owner's label, a slice's median. The receipts of every kind
//! share them, so they sit below all of them.

use hopscope_analyze::slices::{Owner, SliceFigures};

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
