//! Command-line flags shared by the commands that run lanes: the writer's
//! knobs and the run plan's sizes.

use hopscope_workloads::knobs::{ChannelKind, Placement, ReplyMode, ResultSlot, Wait};
use hopscope_workloads::{DbConfig, Knobs, Plan};

/// The reference writer's knobs (defaults: the shipping configuration).
#[derive(Debug, clap::Args)]
pub(crate) struct KnobArgs {
    /// Reply path: oneshot (per request) or persistent (one channel, FIFO).
    #[arg(long, default_value = "oneshot")]
    reply: ReplyMode,
    /// Channel implementation: std or crossbeam.
    #[arg(long, default_value = "crossbeam")]
    channel: ChannelKind,
    /// How the writer waits: park, spin:<us>, yield:<us>.
    #[arg(long, default_value = "park")]
    writer_wait: Wait,
    /// How callers wait for replies: park, spin:<us>, yield:<us>.
    #[arg(long, default_value = "park")]
    caller_wait: Wait,
    /// Drain every queued request per wake (true) or one per wake (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    coalesce: bool,
    /// Harvest the tables each statement changed.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    harvest: bool,
    /// Reply slot: allocate (per call) or reuse (per thread).
    #[arg(long, default_value = "reuse")]
    result_slot: ResultSlot,
    /// Thread placement: unpinned, same-core, different-cores (default:
    /// same-core for `decompose`, unpinned otherwise).
    #[arg(long)]
    placement: Option<Placement>,
    /// Busy-wait injected before a hop's mark, as HOP:NS (e.g. executed:2000).
    #[arg(long)]
    delay: Option<String>,
}

impl KnobArgs {
    /// The knobs, with `placement` used when `--placement` is not given.
    pub(crate) fn knobs_placed(&self, placement: Placement) -> anyhow::Result<Knobs> {
        let knobs = self.knobs()?;
        Ok(Knobs { placement: self.placement.unwrap_or(placement), ..knobs })
    }

    pub(crate) fn knobs(&self) -> anyhow::Result<Knobs> {
        let delay = match &self.delay {
            None => None,
            Some(text) => Some(crate::spec::parse_delay(text).map_err(|e| anyhow::anyhow!("--delay: {e}"))?),
        };
        Ok(Knobs {
            reply: self.reply,
            channel: self.channel,
            writer_wait: self.writer_wait,
            caller_wait: self.caller_wait,
            coalesce: self.coalesce,
            harvest: self.harvest,
            result_slot: self.result_slot,
            delay,
            placement: self.placement.unwrap_or_default(),
        })
    }
}

/// Sizes of a run; each overrides the default or `--quick` plan.
#[derive(Debug, clap::Args)]
pub(crate) struct PlanArgs {
    /// Operations per block.
    #[arg(long)]
    ops: Option<u64>,
    /// Blocks per lane per pass.
    #[arg(long)]
    samples: Option<u32>,
    /// Passes.
    #[arg(long)]
    passes: Option<u32>,
    /// Unrecorded warm-up blocks per lane.
    #[arg(long)]
    warmup: Option<u32>,
    /// SQLite journal mode: wal, delete, memory.
    #[arg(long, default_value = "wal")]
    journal_mode: hopscope_workloads::db::JournalMode,
    /// SQLite synchronous: off, normal, full.
    #[arg(long, default_value = "normal")]
    synchronous: hopscope_workloads::db::Synchronous,
    /// Record perf-event counters (cycles, instructions, context switches,
    /// ...) on every lane's threads. Off by default: on VMs each open
    /// counter adds µs to every context switch of its thread.
    #[arg(long)]
    counters: bool,
}

impl PlanArgs {
    pub(crate) fn apply(&self, mut plan: Plan) -> Plan {
        plan.ops_per_block = self.ops.unwrap_or(plan.ops_per_block);
        plan.samples = self.samples.unwrap_or(plan.samples);
        plan.passes = self.passes.unwrap_or(plan.passes);
        plan.warmup_blocks = self.warmup.unwrap_or(plan.warmup_blocks);
        plan.db = DbConfig { journal_mode: self.journal_mode, synchronous: self.synchronous };
        plan.perf_counters = self.counters;
        plan
    }
}
