//! Command-line flags shared by the commands that run hopscope's reference
//! lanes: the writer's knobs and the database's pragmas. The run's sizes
//! and placement are the harness's own flags ([`hopscope_harness::RunArgs`]).

use hopscope_harness::Placement;
use hopscope_workloads::knobs::{ChannelKind, GroupCommit, InjectedDelay, ReplyMode, ResultSlot, Wait};
use hopscope_workloads::{DbConfig, Knobs};

/// The reference writer's knobs (defaults: the shipping configuration).
#[derive(Debug, clap::Args)]
pub(crate) struct KnobArgs {
    /// Reply path: oneshot (per request) or persistent (one channel, FIFO).
    #[arg(long, default_value = "oneshot")]
    reply: ReplyMode,
    /// Request channel: std, crossbeam (its receive spins, yields, then parks) or parking (checks once, then parks).
    #[arg(long, default_value = "crossbeam")]
    channel: ChannelKind,
    /// How the writer waits: park, spin:<us>, yield:<us>, tick:<us> (sleep in 5 µs ticks), adaptive:<us> (spin only while recent spins mostly got their message within the window), adaptive:<us>:<budget>x (also spin at most the budget's share of the thread's own work between waits, e.g. adaptive:200us:1.5x).
    #[arg(long, default_value = "park")]
    writer_wait: Wait,
    /// How callers wait for replies: park, spin:<us>, yield:<us>, tick:<us>, adaptive:<us>, adaptive:<us>:<budget>x.
    #[arg(long, default_value = "park")]
    caller_wait: Wait,
    /// Drain every queued request per wake (true) or one per wake (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    coalesce: bool,
    /// Harvest the tables each statement changed.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    harvest: bool,
    /// Group commit: run up to N queued requests in one transaction (off: each its own autocommit; 1: each in a transaction of its own).
    #[arg(long, value_name = "N", default_value = "off")]
    group_commit: GroupCommit,
    /// Reply slot: allocate (per call) or reuse (per thread).
    #[arg(long, default_value = "reuse")]
    result_slot: ResultSlot,
    /// Busy-wait injected before a hop's mark, as HOP:NS (e.g. executed:2000).
    #[arg(long, value_name = "HOP:NS")]
    delay: Option<InjectedDelay>,
}

impl KnobArgs {
    /// The knobs, placed as the run's plan says.
    pub(crate) fn knobs(&self, placement: Placement) -> anyhow::Result<Knobs> {
        Ok(Knobs {
            reply: self.reply,
            channel: self.channel,
            writer_wait: self.writer_wait,
            caller_wait: self.caller_wait,
            coalesce: self.coalesce,
            harvest: self.harvest,
            group_commit: self.group_commit,
            result_slot: self.result_slot,
            delay: self.delay,
            placement,
        })
    }
}

/// The database every lane opens.
#[derive(Debug, clap::Args)]
pub(crate) struct DbArgs {
    /// SQLite journal mode: wal, delete, memory.
    #[arg(long, default_value = "wal")]
    journal_mode: hopscope_workloads::db::JournalMode,
    /// SQLite synchronous: off, normal, full.
    #[arg(long, default_value = "normal")]
    synchronous: hopscope_workloads::db::Synchronous,
}

impl DbArgs {
    pub(crate) fn config(&self) -> DbConfig {
        DbConfig { journal_mode: self.journal_mode, synchronous: self.synchronous }
    }
}
