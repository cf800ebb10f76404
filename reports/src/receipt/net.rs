//! `net.md`: a change net of another lane's, as `hopscope ab --minus`
//! judged it.

use std::fmt::Write as _;

use hopscope_analyze::generations::PassMean;
use hopscope_analyze::net::Net;

/// The net change's receipt: the verdict, the two lanes' effects and the
/// difference, and how its CI was had.
pub fn markdown(n: &Net) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# hopscope A/B, net: `{}` − `{}`\n", n.lane, n.minus);
    let _ = writeln!(out, "**Verdict: {}**\n", n.verdict);
    for reason in &n.reasons {
        let _ = writeln!(out, "- {reason}");
    }
    let _ = writeln!(out, "\n| B − A, µs per write | mean | {:.0}% CI | SD over passes |", n.level_pct);
    let _ = writeln!(out, "|---|---:|---|---:|");
    let row = |out: &mut String, name: &str, d: &PassMean| {
        let _ = writeln!(out, "| `{name}` | {:+.3} | {:+.3}…{:+.3} | {:.3} |", d.mean_us, d.ci[0], d.ci[1], d.sd_us);
    };
    row(&mut out, &n.lane, &n.lane_delta);
    row(&mut out, &n.minus, &n.minus_delta);
    let _ = writeln!(
        out,
        "| **`{}` − `{}`** | **{:+.3}** | {:+.3}…{:+.3} | |",
        n.lane, n.minus, n.mean_us, n.ci[0], n.ci[1]
    );
    let _ = writeln!(
        out,
        "\nEach lane was run in lockstep on its own (its receipt: this directory's `receipt.md`, and \
         `minus-{}/receipt.md`), so each B − A is free of the host's drift. Net CI: {}.",
        n.minus, n.method
    );
    out
}
