//! Cells and rows the decomposition's tables share: a difference's row and
//! a yes/no flag.

use std::fmt::Write as _;

use hopscope_analyze::lanes::Difference;

/// One row of the derived table: a difference's name, definition, median,
/// 95% CI and rounds.
pub(super) fn row(out: &mut String, name: &str, definition: &str, d: &Difference) -> std::fmt::Result {
    writeln!(out, "| {name} | {definition} | {:.3} | {:.3}–{:.3} | {} |", d.median, d.ci95[0], d.ci95[1], d.rounds)
}

/// A flag as a table cell.
pub(super) fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
