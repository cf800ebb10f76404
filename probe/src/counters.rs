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
    Counter::ALL.iter().map(|&counter| CounterSupport { counter, support: platform::try_open(counter) }).collect()
}

#[cfg(target_os = "linux")]
mod platform {
    use perf_event::Builder;
    use perf_event::events::{Event, Hardware, Software};

    use super::{Counter, Support};

    pub(super) fn try_open(counter: Counter) -> Support {
        let result = match counter {
            Counter::Cycles => open(Hardware::CPU_CYCLES),
            Counter::Instructions => open(Hardware::INSTRUCTIONS),
            Counter::CacheReferences => open(Hardware::CACHE_REFERENCES),
            Counter::CacheMisses => open(Hardware::CACHE_MISSES),
            Counter::BranchMisses => open(Hardware::BRANCH_MISSES),
            Counter::ContextSwitches => open(Software::CONTEXT_SWITCHES),
            Counter::CpuMigrations => open(Software::CPU_MIGRATIONS),
            Counter::TaskClock => open(Software::TASK_CLOCK),
            Counter::PageFaults => open(Software::PAGE_FAULTS),
        };
        match result {
            Ok(()) => Support::Supported,
            Err(err) => Support::Unsupported { reason: explain(&err) },
        }
    }

    fn open<E: Event + 'static>(event: E) -> std::io::Result<()> {
        let mut counter = Builder::new(event).observe_self().any_cpu().build()?;
        counter.enable()?;
        counter.disable()?;
        counter.read()?;
        Ok(())
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
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use super::{Counter, Support};

    pub(super) fn try_open(_counter: Counter) -> Support {
        Support::Unsupported { reason: "perf events exist only on Linux".to_owned() }
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
    fn support_round_trips_through_its_string_form() {
        for support in [Support::Supported, Support::Unsupported { reason: "no such event (ENOENT)".to_owned() }] {
            let json = serde_json::to_string(&support).expect("serialise");
            let back: Support = serde_json::from_str(&json).expect("deserialise");
            assert_eq!(back, support);
        }
        assert_eq!(Support::Supported.to_string(), "supported");
    }
}
