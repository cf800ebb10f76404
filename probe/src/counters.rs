//! perf-event counters: which ones this host can count, and why not.
//!
//! Hardware counters (cycles, instructions, cache and branch misses) need a
//! PMU that many VMs do not expose (`perf_event_open` fails with ENOENT);
//! a high `perf_event_paranoid` refuses even software counters (EACCES).
//! Either way a counter is reported as [`Support::Unsupported`] with the
//! reason, never as a zero reading and never as an error that stops a run.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A counter hopscope knows how to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counter {
    /// CPU cycles (hardware).
    Cycles,
    /// Instructions retired (hardware).
    Instructions,
    /// Last-level cache references (hardware).
    CacheReferences,
    /// Last-level cache misses (hardware).
    CacheMisses,
    /// Mispredicted branches (hardware).
    BranchMisses,
    /// Context switches (software).
    ContextSwitches,
    /// Moves of the thread to another CPU (software).
    CpuMigrations,
    /// Time on CPU as counted by the kernel (software, nanoseconds).
    TaskClock,
    /// Page faults (software).
    PageFaults,
}

impl Counter {
    /// Every counter, hardware first.
    pub const ALL: [Counter; 9] = [
        Counter::Cycles,
        Counter::Instructions,
        Counter::CacheReferences,
        Counter::CacheMisses,
        Counter::BranchMisses,
        Counter::ContextSwitches,
        Counter::CpuMigrations,
        Counter::TaskClock,
        Counter::PageFaults,
    ];

    /// The name `perf stat` uses for this counter.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Cycles => "cycles",
            Counter::Instructions => "instructions",
            Counter::CacheReferences => "cache-references",
            Counter::CacheMisses => "cache-misses",
            Counter::BranchMisses => "branch-misses",
            Counter::ContextSwitches => "context-switches",
            Counter::CpuMigrations => "cpu-migrations",
            Counter::TaskClock => "task-clock",
            Counter::PageFaults => "page-faults",
        }
    }

    /// Whether the counter needs a hardware PMU.
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            Counter::Cycles
                | Counter::Instructions
                | Counter::CacheReferences
                | Counter::CacheMisses
                | Counter::BranchMisses
        )
    }
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a counter can be opened on this host; serialised as the string
/// `supported` or `unsupported: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Support {
    /// The kernel opened, enabled and read the counter.
    Supported,
    /// The counter cannot be used here, and why.
    Unsupported {
        /// Human-readable cause, e.g. `no PMU event on this host (ENOENT)`.
        reason: String,
    },
}

impl Support {
    /// Whether the counter can be used.
    pub fn is_supported(&self) -> bool {
        matches!(self, Support::Supported)
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Supported => f.write_str("supported"),
            Support::Unsupported { reason } => write!(f, "unsupported: {reason}"),
        }
    }
}

impl From<Support> for String {
    fn from(support: Support) -> String {
        support.to_string()
    }
}

impl From<String> for Support {
    fn from(text: String) -> Support {
        match text.strip_prefix("unsupported: ") {
            Some(reason) => Support::Unsupported { reason: reason.to_owned() },
            None if text == "supported" => Support::Supported,
            None => Support::Unsupported { reason: text },
        }
    }
}

/// One counter's support on this host, as recorded in a trace header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSupport {
    /// The counter.
    pub counter: Counter,
    /// Whether it can be used, or why not.
    pub support: Support,
}

/// Try to open, enable and read every counter of [`Counter::ALL`] for the
/// calling thread. Off the hot path: several syscalls per counter.
pub fn detect() -> Vec<CounterSupport> {
    Counter::ALL
        .iter()
        .map(|&counter| CounterSupport { counter, support: support_of(platform::try_open(counter).map(drop)) })
        .collect()
}

/// The verdict on a counter from the result of opening it: the reason is
/// spelled out for the errors hosts commonly give.
pub fn support_of(opened: std::io::Result<()>) -> Support {
    match opened {
        Ok(()) => Support::Supported,
        Err(err) => Support::Unsupported { reason: explain(&err) },
    }
}

fn explain(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(2) => "no such event on this host (ENOENT: no hardware PMU exposed, common on VMs)".to_owned(),
        Some(13) | Some(1) => format!(
            "permission denied ({err}; kernel.perf_event_paranoid = {})",
            std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "unknown".to_owned())
        ),
        Some(95) => "operation not supported by this kernel or PMU (EOPNOTSUPP)".to_owned(),
        Some(38) => "perf_event_open is not available (ENOSYS)".to_owned(),
        _ => err.to_string(),
    }
}

/// Counters open on one thread, counting that thread only. Opened and read
/// off the hot path (each read is a syscall): at block boundaries.
#[derive(Debug, Default)]
pub struct ThreadCounters {
    open: Vec<(Counter, platform::Handle)>,
}

impl ThreadCounters {
    /// Open and enable each of `wanted` on the calling thread. Counters the
    /// host refuses are left out; [`detect`] says why.
    pub fn open(wanted: &[Counter]) -> ThreadCounters {
        ThreadCounters {
            open: wanted.iter().filter_map(|&c| platform::try_open(c).ok().map(|handle| (c, handle))).collect(),
        }
    }

    /// The counters that opened.
    pub fn counters(&self) -> Vec<Counter> {
        self.open.iter().map(|(c, _)| *c).collect()
    }

    /// Current value of every open counter, scaled by enabled ÷ running time
    /// when the kernel multiplexed it. A counter that fails to read is left
    /// out rather than reported as zero.
    pub fn read(&mut self) -> Vec<(Counter, u64)> {
        self.open.iter_mut().filter_map(|(c, handle)| platform::read_scaled(handle).ok().map(|v| (*c, v))).collect()
    }
}

#[cfg(target_os = "linux")]
mod platform {
    use perf_event::Builder;
    use perf_event::events::{Event, Hardware, Software};

    use super::Counter;

    /// An open, enabled perf-event counter.
    pub(super) type Handle = perf_event::Counter;

    pub(super) fn try_open(counter: Counter) -> std::io::Result<Handle> {
        match counter {
            Counter::Cycles => open(Hardware::CPU_CYCLES),
            Counter::Instructions => open(Hardware::INSTRUCTIONS),
            Counter::CacheReferences => open(Hardware::CACHE_REFERENCES),
            Counter::CacheMisses => open(Hardware::CACHE_MISSES),
            Counter::BranchMisses => open(Hardware::BRANCH_MISSES),
            Counter::ContextSwitches => open(Software::CONTEXT_SWITCHES),
            Counter::CpuMigrations => open(Software::CPU_MIGRATIONS),
            Counter::TaskClock => open(Software::TASK_CLOCK),
            Counter::PageFaults => open(Software::PAGE_FAULTS),
        }
    }

    fn open<E: Event + Clone + 'static>(event: E) -> std::io::Result<Handle> {
        // Count kernel-side events too (a context switch happens in the
        // kernel); where that is not allowed, count user space only.
        let build = |kernel: bool| Builder::new(event.clone()).observe_self().any_cpu().exclude_kernel(!kernel).build();
        let mut counter = build(true).or_else(|_| build(false))?;
        counter.enable()?;
        counter.read()?;
        Ok(counter)
    }

    pub(super) fn read_scaled(handle: &mut Handle) -> std::io::Result<u64> {
        let data = handle.read_count_and_time()?;
        if data.time_running == 0 || data.time_running == data.time_enabled {
            return Ok(data.count);
        }
        Ok((data.count as u128 * data.time_enabled as u128 / data.time_running as u128) as u64)
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use super::Counter;

    /// Nothing can be opened off Linux.
    #[derive(Debug)]
    pub(super) struct Handle;

    pub(super) fn try_open(_counter: Counter) -> std::io::Result<Handle> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "perf events exist only on Linux"))
    }

    pub(super) fn read_scaled(_handle: &mut Handle) -> std::io::Result<u64> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "perf events exist only on Linux"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_gets_a_verdict_and_unsupported_ones_carry_a_reason() {
        let all = detect();
        assert_eq!(all.len(), Counter::ALL.len());
        for entry in &all {
            if let Support::Unsupported { reason } = &entry.support {
                assert!(!reason.is_empty(), "{} has an empty reason", entry.counter);
            }
        }
    }

    #[test]
    fn failing_opens_become_unsupported_with_their_reason_never_zero() {
        let enoent = support_of(Err(std::io::Error::from_raw_os_error(2)));
        assert!(matches!(&enoent, Support::Unsupported { reason } if reason.contains("ENOENT")), "{enoent}");
        let eacces = support_of(Err(std::io::Error::from_raw_os_error(13)));
        assert!(matches!(&eacces, Support::Unsupported { reason } if reason.contains("perf_event_paranoid")));
        assert_eq!(support_of(Ok(())), Support::Supported);
        // Counters the host refuses are left out of a thread's readings.
        let mut counters = ThreadCounters::open(&Counter::ALL);
        let supported: Vec<Counter> =
            detect().into_iter().filter(|c| c.support.is_supported()).map(|c| c.counter).collect();
        assert_eq!(counters.counters(), supported);
        assert!(counters.read().iter().all(|(c, _)| supported.contains(c)));
    }

    #[test]
    fn support_round_trips_through_its_string_form() {
        for support in [Support::Supported, Support::Unsupported { reason: "no such event (ENOENT)".to_owned() }] {
            let json = serde_json::to_string(&support).expect("serialise");
            let back: Support = serde_json::from_str(&json).expect("deserialise");
            assert_eq!(back, support);
        }
        assert_eq!(Support::Supported.to_string(), "supported");
    }
}
