//! What a run is: its lanes, shape, block sizes and lane order, and the
//! trace header that records all of it.

use std::collections::BTreeMap;

use hopscope_probe::{TraceHeader, counters};

use crate::db::DbConfig;
use crate::error::RunError;
use crate::lane::LaneSpec;
use crate::shape::Shape;

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Lanes, alternated in rotating order.
    pub lanes: Vec<LaneSpec>,
    /// What every lane writes.
    pub shape: Shape,
    /// Operations per block.
    pub ops_per_block: u64,
    /// Blocks per lane per pass.
    pub samples: u32,
    /// Passes over all samples.
    pub passes: u32,
    /// Unrecorded blocks per lane before the first pass.
    pub warmup_blocks: u32,
    /// Pragmas of every lane's database.
    pub db: DbConfig,
    /// How lanes are ordered within a round.
    pub order: Order,
    /// Busy work of the caller before each write, ns (0: back to back).
    pub caller_gap_ns: u64,
    /// Open perf-event counters on every lane's threads. Off by default:
    /// each open counter costs µs per context switch here (see
    /// [`crate::cpu::record_perf_counters`]); context switches are counted
    /// from `getrusage` either way.
    pub perf_counters: bool,
}

/// How the lanes of one round are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Rotate by one lane every round, so no lane always goes first.
    #[default]
    Rotate,
    /// Plan order in even passes, the first two lanes swapped in odd passes:
    /// the `a→b` / `b→a` passes of an A/B experiment.
    FlipEachPass,
}

impl Order {
    /// The lane indices of round (`pass`, `sample`) for `lanes` lanes.
    pub fn round(self, pass: u32, sample: u32, lanes: usize) -> Vec<usize> {
        match self {
            Order::Rotate => {
                let rotation = (sample + pass) as usize % lanes.max(1);
                (0..lanes).map(|offset| (rotation + offset) % lanes).collect()
            }
            Order::FlipEachPass => {
                let mut order: Vec<usize> = (0..lanes).collect();
                if pass % 2 == 1 && lanes >= 2 {
                    order.swap(0, 1);
                }
                order
            }
        }
    }
}

impl Plan {
    /// A plan with the careful defaults: 200 ops per block, 50 samples,
    /// 4 passes, 5 warm-up blocks per lane. Many short blocks rather than a
    /// few long ones: a block median shrugs off the rare WAL checkpoint that
    /// a long block would average in.
    pub fn new(lanes: Vec<LaneSpec>, shape: Shape) -> Plan {
        Plan {
            lanes,
            shape,
            ops_per_block: 200,
            samples: 50,
            passes: 4,
            warmup_blocks: 5,
            db: DbConfig::default(),
            order: Order::Rotate,
            caller_gap_ns: 0,
            perf_counters: false,
        }
    }

    /// A short plan (seconds): 100 ops, 20 samples, 2 passes, 2 warm-ups.
    pub fn quick(lanes: Vec<LaneSpec>, shape: Shape) -> Plan {
        Plan { ops_per_block: 100, samples: 20, passes: 2, warmup_blocks: 2, ..Plan::new(lanes, shape) }
    }

    pub(super) fn check(&self) -> Result<(), RunError> {
        if self.lanes.is_empty() {
            return Err(RunError::Plan("no lanes to run".to_owned()));
        }
        if self.ops_per_block == 0 || self.samples == 0 || self.passes == 0 {
            return Err(RunError::Plan("ops per block, samples and passes must all be at least 1".to_owned()));
        }
        for (i, lane) in self.lanes.iter().enumerate() {
            if self.lanes[..i].iter().any(|l| l.name == lane.name) {
                return Err(RunError::Plan(format!("lane name `{}` is used twice", lane.name)));
            }
        }
        Ok(())
    }

    /// Thread roles as the trace header declares them.
    fn threads(&self) -> Vec<String> {
        let mut threads = vec!["caller".to_owned(), "writer".to_owned()];
        threads.extend((1..self.shape.callers()).map(|c| format!("caller-{c}")));
        threads
    }
}

/// The trace header of a run of `plan`, with `run_meta` and every plan
/// setting in its metadata.
pub(super) fn header(plan: &Plan, run_meta: BTreeMap<String, String>) -> TraceHeader {
    let lanes: Vec<&str> = plan.lanes.iter().map(|l| l.name.as_str()).collect();
    let threads = plan.threads();
    let threads: Vec<&str> = threads.iter().map(String::as_str).collect();
    let mut header = TraceHeader::for_this_host(&lanes, &threads);
    // Counters not recorded are not listed: the header says what the
    // blocks hold.
    header.counters = if plan.perf_counters { counters::detect() } else { Vec::new() };
    header.run = run_meta;
    let meta = &mut header.run;
    meta.insert("shape".to_owned(), plan.shape.to_string());
    meta.insert("ops_per_block".to_owned(), plan.ops_per_block.to_string());
    meta.insert("samples".to_owned(), plan.samples.to_string());
    meta.insert("passes".to_owned(), plan.passes.to_string());
    meta.insert("warmup_blocks".to_owned(), plan.warmup_blocks.to_string());
    meta.insert("db".to_owned(), plan.db.to_string());
    meta.insert("order".to_owned(), format!("{:?}", plan.order));
    meta.insert("caller_gap_ns".to_owned(), plan.caller_gap_ns.to_string());
    meta.insert("perf_counters".to_owned(), if plan.perf_counters { "on" } else { "off" }.to_owned());
    meta.insert("sqlite_version".to_owned(), rusqlite::version().to_owned());
    for lane in &plan.lanes {
        meta.insert(format!("lane.{}", lane.name), lane.to_string());
        meta.insert(format!("lane.{}.probed", lane.name), lane.probed.to_string());
    }
    header
}
