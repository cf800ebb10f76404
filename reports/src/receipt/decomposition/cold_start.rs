//! The receipt's cold-start section: each probed lane's first operation of
//! a block against its median one, and the library's share of that.

use std::fmt::Write as _;

use hopscope_analyze::Decomposition;

/// Each probed lane's cold start and, with a probed subject and floor, the
/// library split into its cold start and its cost once warm.
pub(super) fn render(d: &Decomposition, out: &mut String) -> std::fmt::Result {
    let Some(cold) = &d.cold_start else { return Ok(()) };
    writeln!(out, "## Cold start (each block's first operation)\n")?;
    writeln!(
        out,
        "Lanes take turns block by block, so a block's first operation runs after the other lanes' code and data \
         filled the caches. Probed lanes, path time in µs, medians over blocks; the excess is first − median in \
         each block.\n"
    )?;
    writeln!(out, "| lane | first op | block median | excess | 95% CI | blocks |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    for lane in &cold.lanes {
        let e = &lane.excess_us;
        writeln!(
            out,
            "| {} | {:.2} | {:.2} | {:+.2} | {:+.2}…{:+.2} | {} |",
            lane.lane, lane.first_us, lane.median_us, e.median, e.ci95[0], e.ci95[1], e.rounds
        )?;
    }
    writeln!(out)?;
    if let (Some(first), Some([subject, floor])) = (&cold.library_first_op_us, &cold.compared) {
        write!(
            out,
            "The library's cold start ({subject}'s excess − {floor}'s, paired by round): {:+.2} µs (95% CI \
             {:+.2}…{:+.2}, {} rounds)",
            first.median, first.ci95[0], first.ci95[1], first.rounds
        )?;
        match (cold.ops_per_block, &cold.library_steady_us) {
            (Some(n), Some(steady)) => writeln!(
                out,
                "; spread over {n:.0} operations per block, {:+.3} µs of the library's per-operation figure. The \
                 library once warm (per round, the library less that round's share): {:.3} µs (95% CI {:.3}–{:.3}); \
                 a median of per-round differences, it need not equal the library's median less the median share.\n",
                first.median / n,
                steady.median,
                steady.ci95[0],
                steady.ci95[1]
            )?,
            _ => writeln!(out, ".\n")?,
        }
    }
    Ok(())
}
