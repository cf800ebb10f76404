//! What the analyzer's synthetic traces share: a made-up host and a clock
//! that runs at exactly 1 ns per tick, so every duration written is the
//! duration read back, and a header of both that each test completes.

#![allow(dead_code)]

use hopscope_probe::{ClockInfo, ClockSource, HostInfo, TraceHeader};

/// A synthetic run's header: `lanes` and `threads` on [`host`] and
/// [`ns_clock`], the standard hops, nothing else recorded (the rest as
/// [`TraceHeader::for_this_host`] leaves it). A test adds
/// what it records with struct update syntax (`..header(..)`).
pub(crate) fn header(lanes: &[&str], threads: &[&str]) -> TraceHeader {
    TraceHeader {
        created_unix_ms: 1_700_000_000_000,
        host: host(),
        clock: ns_clock(),
        ..TraceHeader::for_this_host(lanes, threads)
    }
}

/// A host that names itself as synthetic.
pub(crate) fn host() -> HostInfo {
    HostInfo {
        hostname: "test".into(),
        cpu_model: "synthetic".into(),
        cores: 2,
        kernel: "0".into(),
        target: "test".into(),
    }
}

/// A TSC clock at 1 ns per tick.
pub(crate) fn ns_clock() -> ClockInfo {
    ClockInfo {
        source: ClockSource::Tsc,
        ns_per_tick: 1.0,
        invariant_tsc: true,
        kernel_clocksource: "tsc".into(),
        grain_ticks: None,
    }
}
