//! `hopscope ab --builds A B --lane L --minus M`: judge lane L's change
//! net of lane M's. Each lane runs in lockstep on its own (M's run in the
//! directory `minus-M/` of L's), and the difference of their effects is
//! judged ([`hopscope_analyze::net`]): writer − floor is the library's
//! own cost, judged across two builds in one command.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hopscope_analyze::experiment::Experiment;
use hopscope_analyze::net::{self, Net};
use hopscope_probe::{RunFact, RunFacts};

use crate::builds::Request;

/// Refuse a `--minus` lane name before anything runs: a plain name (it
/// names a directory), not the lane it is taken from.
pub(crate) fn check(minus: &str, lane: Option<&str>, spec: Option<&Path>) -> anyhow::Result<()> {
    let plain = !minus.is_empty()
        && !minus.starts_with(['.', '-'])
        && minus.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !plain {
        anyhow::bail!("--minus {minus}: a lane name, as the tables print it (e.g. floor or floor-probed)");
    }
    if lane == Some(minus) {
        anyhow::bail!("--minus {minus}: the same lane as --lane; its change net of itself is zero");
    }
    // A spec whose arms name their lane leaves no room for a second one.
    if let Some(path) = spec {
        let spec = hopscope_harness::ExperimentSpec::load(path)?;
        crate::builds::lane(&spec, Some(minus)).context("--minus runs a second lane")?;
    }
    Ok(())
}

/// Run lane `minus` as `request` ran its lane (the same builds, spec and
/// deadline) into `dir/minus-LANE`, judge the net change, write `net.json`
/// and `net.md` into `dir`, and print it. `None` when the second run
/// measured nothing or stopped (its own line says why).
pub(crate) fn run(request: &Request, dir: &Path, lane: &Experiment, minus: &str) -> anyhow::Result<Option<Net>> {
    let sub = Request { lane: Some(minus.to_owned()), out: Some(sub_dir(dir, minus)), minus: None, ..request.clone() };
    let Some((_, minus_e, true)) = crate::builds::run(&sub)? else { return Ok(None) };
    // The newest run is the lane's, not its minus.
    let _ = hopscope_harness::rundir::create(Some(dir), "ab-builds", "latest-ab");
    let name = lane.meta.fact(&RunFact::LockstepLane).unwrap_or("lane");
    let minus_name = minus_e.meta.fact(&RunFact::LockstepLane).unwrap_or(minus);
    let n = net::net((name, lane), (minus_name, &minus_e), &lane.rule)
        .with_context(|| format!("no net change of `{name}` minus `{minus_name}`"))?;
    let written =
        hopscope_reports::write_net(dir, &n).with_context(|| format!("cannot write the net in {}", dir.display()))?;
    if !request.json {
        println!("\nnet: {}", n.verdict);
        for reason in &n.reasons {
            println!("  · {}", hopscope_reports::receipt::net::reason(reason));
        }
        print!("\n{written}");
    }
    Ok(Some(n))
}

/// Where `--minus` runs its lane: a directory of the lane's run.
fn sub_dir(dir: &Path, minus: &str) -> PathBuf {
    dir.join(format!("minus-{minus}"))
}
