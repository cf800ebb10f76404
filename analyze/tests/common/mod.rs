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

/// A trace of the seed corpus (`tests/corpus/`).
pub(crate) fn corpus(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(name)
}

/// A fresh scratch directory of this test process, named after `test`
/// and `name`, and the `trace.hop` path in it (the caller removes it).
pub(crate) fn scratch_trace(test: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-{test}-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join("trace.hop")
}
