//! The names of a block's readings, typed: whose thread a reading is of
//! ([`ThreadRole`]) and what it measured ([`ReadingKey`]).
//!
//! A trace header lists its reading names as strings (that is the file
//! format, and traces written by older builds must still read); the
//! harness writes them through [`ReadingKey`]'s `Display` and the analyzer
//! reads them back through its `FromStr`, so the spelling lives here and
//! nowhere else. A name this build does not know stays [`ReadingKey::Other`]
//! and is carried by name, never dropped.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::counters::Counter;
use crate::machinery::{EdgeCosts, SliceKind, SpanSequence};

/// Whose threads a reading, or a trace thread, belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ThreadRole {
    /// The harness's caller threads (`caller`): the first caller's trace
    /// thread, and the role every caller's readings are summed under.
    Caller,
    /// The harness's caller thread number `n` ≥ 1 (`caller-n`): a trace
    /// thread of a lane with several callers.
    ExtraCaller(u32),
    /// Process-wide readings (`process`): every thread, a peer crate's own
    /// included.
    Process,
    /// The run's driver thread (`driver`), read apart: part of the
    /// process, not of a lane.
    Driver,
    /// One of a lane's own thread roles (`writer`, or whatever the lane
    /// declared).
    Lane(String),
}

/// The thread role hopscope's own writer lanes give their writer thread:
/// spelled here once, for the lanes that declare it and the figures that
/// read it.
pub const WRITER_ROLE: &str = "writer";

impl ThreadRole {
    /// The role hopscope's own writer lanes give their writer thread
    /// ([`WRITER_ROLE`]).
    pub fn writer() -> ThreadRole {
        ThreadRole::Lane(WRITER_ROLE.to_owned())
    }

    /// Whether this is one of the harness's caller threads.
    pub fn is_caller(&self) -> bool {
        matches!(self, ThreadRole::Caller | ThreadRole::ExtraCaller(_))
    }

    /// Whether a lane may declare a thread role of this name: not one the
    /// harness keeps for its own threads and pseudo-roles.
    pub fn is_lane_role(name: &str) -> bool {
        matches!(name.parse(), Ok(ThreadRole::Lane(_)))
    }
}

impl fmt::Display for ThreadRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadRole::Caller => f.write_str("caller"),
            ThreadRole::ExtraCaller(n) => write!(f, "caller-{n}"),
            ThreadRole::Process => f.write_str("process"),
            ThreadRole::Driver => f.write_str("driver"),
            ThreadRole::Lane(name) => f.write_str(name),
        }
    }
}

/// A thread role name no lane may use: `caller-` followed by anything but
/// a caller's number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("thread role `{0}`: names starting `caller-` are the harness's callers (`caller-1`, `caller-2`, ...)")]
pub struct ReservedRole(pub String);

impl FromStr for ThreadRole {
    type Err = ReservedRole;

    fn from_str(name: &str) -> Result<ThreadRole, ReservedRole> {
        Ok(match name {
            "caller" => ThreadRole::Caller,
            "process" => ThreadRole::Process,
            "driver" => ThreadRole::Driver,
            _ => match name.strip_prefix("caller-") {
                Some(n) => ThreadRole::ExtraCaller(n.parse().map_err(|_| ReservedRole(name.to_owned()))?),
                None => ThreadRole::Lane(name.to_owned()),
            },
        })
    }
}

/// What a thread role's reading measured, beside the perf counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ThreadFigure {
    /// CPU time, ns (`cpu_ns`).
    CpuNs,
    /// Context switches (`ctx_switches`).
    CtxSwitches,
    /// Involuntary context switches (`involuntary_switches`).
    InvoluntarySwitches,
    /// Time runnable but waiting for a CPU, ns (`run_queue_ns`).
    RunQueueNs,
}

impl ThreadFigure {
    /// Every figure, in the order a trace header lists them.
    pub const ALL: [ThreadFigure; 4] =
        [ThreadFigure::CpuNs, ThreadFigure::CtxSwitches, ThreadFigure::InvoluntarySwitches, ThreadFigure::RunQueueNs];

    /// The figure's name after the role's in a reading name.
    pub fn name(self) -> &'static str {
        match self {
            ThreadFigure::CpuNs => "cpu_ns",
            ThreadFigure::CtxSwitches => "ctx_switches",
            ThreadFigure::InvoluntarySwitches => "involuntary_switches",
            ThreadFigure::RunQueueNs => "run_queue_ns",
        }
    }
}

/// What a live capture reads of its process and its host while it runs,
/// carried in the blocks of the window the time fell in: a window's
/// readings summed say whether the program had its CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LiveReading {
    /// CPU time of the program's threads (the drain's included), ns.
    ProcessCpuNs,
    /// Time the program's threads waited runnable for a CPU, ns (where the
    /// kernel keeps scheduler statistics).
    ProcessRunQueueNs,
    /// CPU time the whole host spent busy, every CPU, ns.
    HostBusyNs,
    /// CPU time the hypervisor gave another guest while this one wanted it
    /// (steal), every CPU, ns.
    HostStealNs,
}

impl LiveReading {
    /// Every reading, in the order a capture's header lists them.
    pub const ALL: [LiveReading; 4] =
        [LiveReading::ProcessCpuNs, LiveReading::ProcessRunQueueNs, LiveReading::HostBusyNs, LiveReading::HostStealNs];

    /// Its name in a trace header.
    pub fn name(self) -> &'static str {
        match self {
            LiveReading::ProcessCpuNs => "live.process_cpu_ns",
            LiveReading::ProcessRunQueueNs => "live.process_run_queue_ns",
            LiveReading::HostBusyNs => "live.host_busy_ns",
            LiveReading::HostStealNs => "live.host_steal_ns",
        }
    }
}

/// The name of one per-block reading in a trace header.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadingKey {
    /// A role's own figure (`writer.cpu_ns`, `process.run_queue_ns`).
    Thread(ThreadRole, ThreadFigure),
    /// A role's perf-event counter (`caller.context-switches`).
    Counter(ThreadRole, Counter),
    /// The span machinery of one slice kind measured after a block, ps
    /// (`span.inside_ps`).
    SpanKind(SliceKind),
    /// One of the machinery's parts measured after a block, ps: an index
    /// into [`EdgeCosts::READINGS`].
    SpanEdge(usize),
    /// The span events between two consecutive marks of a block's threads
    /// ([`SpanSequence::READING`]).
    SpanSequence,
    /// WAL checkpoints the process finished during the block
    /// (`sqlite.checkpoints`).
    Checkpoints,
    /// Their summed length, ns (`sqlite.checkpoint_ns`).
    CheckpointNs,
    /// What a live capture read of its process and host (`live.…`).
    Live(LiveReading),
    /// A name this build does not know (a newer build's trace).
    Other(String),
}

impl ReadingKey {
    /// [`ReadingKey::Checkpoints`]'s name.
    pub const CHECKPOINTS: &'static str = "sqlite.checkpoints";
    /// [`ReadingKey::CheckpointNs`]'s name.
    pub const CHECKPOINT_NS: &'static str = "sqlite.checkpoint_ns";

    /// The role whose reading this is, if it is a role's.
    pub fn role(&self) -> Option<&ThreadRole> {
        match self {
            ReadingKey::Thread(role, _) | ReadingKey::Counter(role, _) => Some(role),
            _ => None,
        }
    }
}

impl fmt::Display for ReadingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadingKey::Thread(role, figure) => write!(f, "{role}.{}", figure.name()),
            ReadingKey::Counter(role, counter) => write!(f, "{role}.{}", counter.name()),
            ReadingKey::SpanKind(kind) => f.write_str(kind.reading_key()),
            ReadingKey::SpanEdge(i) => f.write_str(EdgeCosts::READINGS.get(*i).copied().unwrap_or("span.edge")),
            ReadingKey::SpanSequence => f.write_str(SpanSequence::READING),
            ReadingKey::Checkpoints => f.write_str(ReadingKey::CHECKPOINTS),
            ReadingKey::CheckpointNs => f.write_str(ReadingKey::CHECKPOINT_NS),
            ReadingKey::Live(reading) => f.write_str(reading.name()),
            ReadingKey::Other(name) => f.write_str(name),
        }
    }
}

impl FromStr for ReadingKey {
    type Err = std::convert::Infallible;

    /// Any name parses ([`ReadingKey::named`]).
    fn from_str(name: &str) -> Result<ReadingKey, Self::Err> {
        Ok(ReadingKey::named(name))
    }
}

impl ReadingKey {
    /// The key a trace header's reading `name` stands for; what this build
    /// does not know is [`ReadingKey::Other`].
    pub fn named(name: &str) -> ReadingKey {
        match name {
            SpanSequence::READING => return ReadingKey::SpanSequence,
            ReadingKey::CHECKPOINTS => return ReadingKey::Checkpoints,
            ReadingKey::CHECKPOINT_NS => return ReadingKey::CheckpointNs,
            _ => {}
        }
        if let Some(kind) = SliceKind::of_reading_key(name) {
            return ReadingKey::SpanKind(kind);
        }
        if let Some(reading) = LiveReading::ALL.into_iter().find(|r| r.name() == name) {
            return ReadingKey::Live(reading);
        }
        if let Some(i) = EdgeCosts::READINGS.iter().position(|r| *r == name) {
            return ReadingKey::SpanEdge(i);
        }
        // A role's name holds no dot (lanes' roles are checked), so the
        // figure is what follows the first one.
        let other = || ReadingKey::Other(name.to_owned());
        let Some((role, what)) = name.split_once('.') else { return other() };
        let Ok(role) = role.parse::<ThreadRole>() else { return other() };
        if let Some(figure) = ThreadFigure::ALL.into_iter().find(|f| f.name() == what) {
            return ReadingKey::Thread(role, figure);
        }
        match Counter::ALL.into_iter().find(|c| c.name() == what) {
            Some(counter) => ReadingKey::Counter(role, counter),
            None => other(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_back_as_itself() {
        let roles = [
            ThreadRole::Caller,
            ThreadRole::ExtraCaller(3),
            ThreadRole::Process,
            ThreadRole::Driver,
            ThreadRole::Lane("writer".into()),
        ];
        let mut keys = vec![
            ReadingKey::SpanSequence,
            ReadingKey::Checkpoints,
            ReadingKey::CheckpointNs,
            ReadingKey::Other("future.thing".into()),
        ];
        keys.extend(LiveReading::ALL.map(ReadingKey::Live));
        keys.extend(SliceKind::ALL.map(ReadingKey::SpanKind));
        keys.extend((0..EdgeCosts::READINGS.len()).map(ReadingKey::SpanEdge));
        for role in &roles {
            keys.extend(ThreadFigure::ALL.map(|f| ReadingKey::Thread(role.clone(), f)));
            keys.extend(Counter::ALL.map(|c| ReadingKey::Counter(role.clone(), c)));
        }
        for key in keys {
            let name = key.to_string();
            assert_eq!(name.parse::<ReadingKey>(), Ok(key.clone()), "{name}");
        }
    }

    #[test]
    fn the_names_traces_carry_are_spelled_as_before() {
        let writer = ThreadRole::Lane("writer".into());
        assert_eq!(ReadingKey::Thread(writer.clone(), ThreadFigure::CpuNs).to_string(), "writer.cpu_ns");
        assert_eq!(ReadingKey::Thread(ThreadRole::Driver, ThreadFigure::RunQueueNs).to_string(), "driver.run_queue_ns");
        assert_eq!(ReadingKey::Counter(ThreadRole::Caller, Counter::TaskClock).to_string(), "caller.task-clock");
        assert_eq!(ThreadRole::ExtraCaller(2).to_string(), "caller-2");
        // A dotted name whose figure is unknown is kept whole, by name.
        assert_eq!("writer.future_ns".parse::<ReadingKey>(), Ok(ReadingKey::Other("writer.future_ns".into())));
    }

    #[test]
    fn the_harness_keeps_its_own_role_names() {
        for name in ["caller", "caller-1", "process", "driver", "caller-x"] {
            assert!(!ThreadRole::is_lane_role(name), "{name}");
        }
        assert!(ThreadRole::is_lane_role("writer"));
        assert!(ThreadRole::is_lane_role("callers"));
        assert_eq!("caller-x".parse::<ThreadRole>(), Err(ReservedRole("caller-x".into())));
    }
}
