//! What the analyzer's synthetic traces share: a made-up host and a clock
//! that runs at exactly 1 ns per tick, so every duration written is the
//! duration read back.

use hopscope_probe::{ClockInfo, ClockSource, HostInfo};

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
