//! The instrument's resolution: inject known delays into one slice of the
//! reference writer (arm B; arm A is the same writer without it), run the
//! A/B passes several times per size, and judge how small a change is
//! detected, how often a false alarm is raised, how well a change is sized
//! and whether it is blamed on the right slice.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use hopscope_analyze::ab_trace::AbTrace;
use hopscope_analyze::resolution::{self, RESOLUTION_SCHEMA, Repeat, Resolution, ResolutionRow};
use hopscope_harness::{HarnessError, Order, Placement, Plan, Role, Variant, runner};
use hopscope_probe::{Hop, HopTable, HostInfo, RunFact, RunFacts, SliceName};

use crate::db::DbConfig;
use crate::error::ParseError;
use crate::knobs::{DelaySchedule, InjectedDelay, Knobs};
use crate::lane::{Builds, LaneKind, LaneSpec};
use crate::shape::Shape;
use crate::writer::spin::Delay;

/// Largest delay injected: 1 ms per write.
pub const MAX_DELTA_NS: u64 = 1_000_000;

/// Calls of the injected busy-wait timed to measure its real cost.
const DELAY_CHECK_CALLS: u32 = 20_000;

/// What a resolution measurement runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolve {
    /// The hop whose slice gets the delay.
    pub before: Hop,
    /// The slice's name, `from→to`.
    pub slice: String,
    /// Injected delays, ns per write.
    pub deltas: Vec<u64>,
    /// A/B repeats per delay.
    pub repeats: usize,
    /// Samples per pass of each repeat.
    pub samples: u32,
    /// Operations per block.
    pub ops: u64,
}

impl Resolve {
    /// A measurement of the slice named by its closing hop or as
    /// `from→to` (e.g. `built` or `locked→built`).
    pub fn new(slice: &str, deltas: Vec<u64>, repeats: usize, samples: u32, ops: u64) -> Result<Resolve, ParseError> {
        let hop = SliceName::end_of(slice).unwrap_or_else(|| slice.to_owned());
        let hop = hop.as_str();
        let table = HopTable::standard();
        let before = table.find(hop).filter(|h| *h != Hop::ENTER && *h != Hop::RETURNED).ok_or_else(|| {
            ParseError::new(
                "slice",
                slice,
                "a hop the writer can delay: locked, built, sent, woke, executed, harvested, replied, idle, \
                 received, done",
            )
        })?;
        if let Some(big) = deltas.iter().find(|d| **d > MAX_DELTA_NS) {
            return Err(ParseError::new("delay", &big.to_string(), format!("at most {MAX_DELTA_NS} ns")));
        }
        if repeats == 0 || samples == 0 || ops == 0 {
            return Err(ParseError::new("size", "0", "repeats, samples and ops must all be at least 1"));
        }
        // The slice opens at the hop before it in an operation's documented
        // order, on the caller's path: `idle` is the writer's closing mark
        // beside the path (it follows `replied`), so `received` opens at
        // `replied` as the join names it, and only `idle` itself opens there.
        let at = Hop::DOCUMENTED_ORDER.iter().position(|h| *h == before).unwrap_or(1).max(1);
        let from = Hop::DOCUMENTED_ORDER[..at]
            .iter()
            .rev()
            .find(|h| **h != Hop::IDLE)
            .and_then(|h| table.get(*h))
            .map(|d| d.name.clone())
            .unwrap_or_default();
        Ok(Resolve { before, slice: SliceName::new(from, hop).to_string(), deltas, repeats, samples, ops })
    }

    /// One repeat: two instances of the reference writer probed, in four
    /// passes of flipped order (`a→b`, `b→a`, `a→b`, `b→a`); `b` carries the
    /// delay in the first pair of passes, `a` in the second (a crossover).
    fn plan(&self) -> Plan {
        Plan {
            ops_per_block: self.ops,
            samples: self.samples,
            passes: 4,
            warmup_blocks: 2,
            order: Order::FlipEachPass,
            placement: Placement::SameCore,
            ..Plan::careful()
        }
    }
}

/// Measure every size of `r` into `dir` (the first repeat of each size is
/// kept for inspection), telling `say` each size's figures.
pub fn run(
    r: &Resolve,
    dir: &Path,
    meta: &BTreeMap<String, String>,
    say: impl Fn(&ResolutionRow),
) -> Result<Resolution, HarnessError> {
    // Before any run pins this thread to one core.
    let host = HostInfo::detect();
    let db = DbConfig::default();
    let base = Knobs { placement: Placement::SameCore, ..Knobs::default() };
    let mut rows = Vec::new();
    // The injected slice is found in the join by the hop that closes it.
    let hop_name = SliceName::end_of(&r.slice).unwrap_or_default();
    for &ns in &r.deltas {
        let started = Instant::now();
        let injected = InjectedDelay { before: r.before, ns, schedule: DelaySchedule::Always };
        // What the busy-wait really costs here: the truth the estimates are
        // held to, measured rather than assumed.
        let delay_measured_ns = Delay::new(Some(injected)).measured_ns(DELAY_CHECK_CALLS);
        // Two identical instances differ by tens of ns (their heaps, their
        // files), the same way all through one process: with the delay
        // always in `b` that difference was read as the delay's (0 ns was
        // "detected" in 22% of 40 repeats, 25 ns estimated at 9). Each
        // instance carries the delay in one pair of passes.
        let carried = |odd| Knobs {
            delay: Some(InjectedDelay { schedule: DelaySchedule::PassPairs { odd }, ..injected }),
            ..base
        };
        let arms = [("a", carried(true), Role::ArmA), ("b", carried(false), Role::ArmB)]
            .into_iter()
            .map(|(name, knobs, role)| {
                let spec = LaneSpec::new(name, LaneKind::Writer(knobs), Builds::Probed);
                Ok(spec.lane(Shape::SingleInsert, db)?.only(Variant::Probed).with_role(role))
            })
            .collect::<Result<Vec<_>, crate::error::RunError>>()
            .map_err(|e| HarnessError::Usage(e.to_string()))?;
        let mut repeats: Vec<Repeat> = Vec::with_capacity(r.repeats);
        for k in 0..r.repeats {
            let run_dir = dir.join(format!("delta-{ns}ns")).join(format!("repeat-{k}"));
            let mut run_meta = meta.clone();
            run_meta.record(RunFact::ResolveCrossover, resolution::CROSSOVER_PASS_PAIRS);
            let summary = runner::run(&r.plan(), &arms, &run_dir, run_meta, false)?;
            // Streamed: a repeat's memory is one block, however long it ran.
            let trace = AbTrace::read_file(&summary.trace)
                .map_err(|source| HarnessError::Analyze { path: summary.trace.clone(), source })?;
            repeats.push(resolution::judge_repeat(&trace, &hop_name));
            // Keep the first repeat of each size; the others' traces would
            // only fill the disk.
            if k > 0 {
                let _ = std::fs::remove_dir_all(&run_dir);
            }
        }
        let row = resolution::summarize(ns, delay_measured_ns, &r.slice, &repeats, started.elapsed().as_secs_f64());
        say(&row);
        rows.push(row);
    }
    let mut meta = meta.clone();
    meta.record(RunFact::OpsPerBlock, r.ops.to_string());
    meta.record(RunFact::Samples, r.samples.to_string());
    Ok(Resolution { schema: RESOLUTION_SCHEMA.to_owned(), slice: r.slice.clone(), deltas: rows, host, meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_is_named_by_its_closing_hop_or_in_full() {
        let r = Resolve::new("built", vec![0, 100], 1, 1, 1).expect("parses");
        assert_eq!((r.before, r.slice.as_str()), (Hop::BUILT, "locked→built"));
        assert_eq!(Resolve::new("locked→built", vec![], 1, 1, 1).expect("parses").before, Hop::BUILT);
        assert!(Resolve::new("enter", vec![], 1, 1, 1).is_err());
        assert!(Resolve::new("returned", vec![], 1, 1, 1).is_err());
        assert_eq!(Resolve::new("idle", vec![], 1, 1, 1).expect("parses").slice, "replied→idle");
        assert_eq!(Resolve::new("received", vec![], 1, 1, 1).expect("parses").slice, "replied→received");
        assert!(Resolve::new("built", vec![u64::MAX], 1, 1, 1).is_err());
        assert!(Resolve::new("built", vec![], 0, 1, 1).is_err());
    }
}
