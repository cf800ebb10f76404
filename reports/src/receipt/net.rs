//! `net.md`: a change net of another lane's, as `hopscope ab --minus`
//! judged it.

use std::fmt::Write as _;

use hopscope_analyze::generations::PassMean;
use hopscope_analyze::net::{Net, NetReason};
use hopscope_analyze::recorded::Recorded;

/// The net change's receipt: the verdict, the two lanes' effects and the
/// difference, and how its CI was had.
pub fn markdown(n: &Net) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# hopscope A/B, net: `{}` − `{}`\n", n.lane, n.minus);
    let _ = writeln!(out, "**Verdict: {}**\n", n.verdict);
    for r in &n.reasons {
        let _ = writeln!(out, "- {}", reason(r));
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
/// A net change's reason in words (an older net's sentence as it was).
pub fn reason(recorded: &Recorded<NetReason>) -> String {
    match recorded {
        Recorded::Sentence(said) => said.clone(),
        Recorded::Typed(NetReason::NoVerdict { lanes }) => {
            let runs = if lanes.len() > 1 { "runs" } else { "run" };
            format!("no verdict: the {runs} of `{}` gave none", lanes.join("` and `"))
        }
        Recorded::Typed(NetReason::Net { lane, minus, mean_us, ci, level_pct, min_us, beyond }) => {
            let figure = format!("{mean_us:+.3} µs ({level_pct:.0}% CI {:+.3}…{:+.3})", ci[0], ci[1]);
            let what = format!("`{lane}` net of `{minus}`");
            if *beyond {
                let way = if *mean_us > 0.0 { "slower" } else { "faster" };
                format!("{what} is {way} in B by {figure}, beyond the rule's {min_us:.3} µs")
            } else {
                format!("{what}: {figure}, no change beyond zero and the rule's {min_us:.3} µs")
            }
        }
    }
}
