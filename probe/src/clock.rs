//! The clock: raw ticks on the hot path, nanoseconds only off it.
//!
//! hopscope reads one process-wide [`quanta::Clock`]. On x86_64 hosts with an
//! invariant TSC that is a bare `rdtsc`; elsewhere quanta falls back to the
//! OS monotonic clock, whose raw value is already in nanoseconds. Raw values
//! are wrapped in [`Ticks`] so they cannot be mistaken for nanoseconds; the
//! scale factor is measured once ([`ClockInfo::measure`]) and written into the
//! trace header, where the analyzer applies it.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::host;

/// A raw clock reading. Not nanoseconds: multiply by
/// [`ClockInfo::ns_per_tick`] (done by the analyzer, never on the hot path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ticks(pub u64);

impl Ticks {
    /// Ticks elapsed from `earlier` to `self`; zero if the clock went backwards
    /// (possible across cores on hosts without an invariant TSC).
    #[inline]
    pub fn since(self, earlier: Ticks) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();

/// The process-wide clock, calibrated on first use (a few milliseconds).
///
/// Call it once before any measured region (attaching a buffer does) so the
/// calibration never lands inside a measurement.
pub fn clock() -> &'static quanta::Clock {
    CLOCK.get_or_init(|| {
        let clock = quanta::Clock::new();
        let ns_per_tick = clock.delta_as_nanos(0, SCALE_SPAN_TICKS) as f64 / SCALE_SPAN_TICKS as f64;
        let tsc = detect_source(&clock, ns_per_tick) == ClockSource::Tsc;
        let rdtscp = tsc && host::cpu_has_flag("rdtscp") && cfg!(target_arch = "x86_64") && cfg!(target_os = "linux");
        RDTSCP.store(rdtscp, std::sync::atomic::Ordering::Relaxed);
        TSC.store(tsc && cfg!(target_arch = "x86_64"), std::sync::atomic::Ordering::Relaxed);
        clock
    })
}

/// Whether quanta's raw reading is the TSC itself, checked when the clock
/// was first measured: [`now`] then reads it inline.
static TSC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Read the clock: one `rdtsc` on TSC hosts, a vDSO `clock_gettime` otherwise.
///
/// On TSC hosts, once the clock is measured, this is one relaxed load and an
/// inlined `rdtsc`, the same reading quanta's raw clock returns (measured:
/// a raw reading falls between two `rdtsc`s), without the two calls through
/// `OnceLock` and quanta. No lock, no allocation, no syscall on TSC hosts.
#[inline]
pub fn now() -> Ticks {
    #[cfg(target_arch = "x86_64")]
    if TSC.load(std::sync::atomic::Ordering::Relaxed) {
        return Ticks(read_tsc());
    }
    Ticks(clock().raw())
}

/// Whether [`now_on_cpu`] may use `rdtscp`: the clock reads the TSC and the
/// CPU has the instruction. Set once when the clock is first measured.
static RDTSCP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The CPU a clock read reports when it did not sample one: the value a
/// mark stores then ([`Mark::UNKNOWN_CPU`](crate::Mark::UNKNOWN_CPU) is it).
pub const UNKNOWN_CPU: u16 = u16::MAX;

/// Read the clock and the CPU the thread runs on. On TSC hosts with
/// `rdtscp` both come from that one instruction (its aux register holds the
/// CPU number on Linux); elsewhere the CPU is [`UNKNOWN_CPU`]
/// rather than paying a second call on the hot path.
#[inline]
pub fn now_on_cpu() -> (Ticks, u16) {
    #[cfg(target_arch = "x86_64")]
    if RDTSCP.load(std::sync::atomic::Ordering::Relaxed) {
        let mut aux = 0u32;
        // SAFETY: RDTSCP is only set after /proc/cpuinfo listed the `rdtscp`
        // flag; the instruction only reads the TSC and TSC_AUX.
        let ticks = unsafe { std::arch::x86_64::__rdtscp(&mut aux) };
        // Linux stores (node << 12) | cpu in TSC_AUX.
        return (Ticks(ticks), (aux & 0xfff) as u16);
    }
    (now(), UNKNOWN_CPU)
}

/// Which hardware or OS source the raw ticks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The CPU time-stamp counter, read with `rdtsc`.
    Tsc,
    /// The OS monotonic clock (quanta's fallback); ticks are nanoseconds.
    Monotonic,
}

impl std::fmt::Display for ClockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClockSource::Tsc => "TSC",
            ClockSource::Monotonic => "OS monotonic",
        })
    }
}

/// What the trace header records about the clock, so ticks can be turned into
/// nanoseconds later and a reader can judge how far to trust them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInfo {
    /// Where raw ticks come from.
    pub source: ClockSource,
    /// Nanoseconds per raw tick, from quanta's calibration against the OS clock.
    pub ns_per_tick: f64,
    /// Whether the CPU advertises an invariant TSC (`constant_tsc` and
    /// `nonstop_tsc`): ticks then run at one rate on every core and in every
    /// power state. `false` on non-x86 hosts.
    pub invariant_tsc: bool,
    /// The kernel's current clocksource (`tsc`, `kvm-clock`, `hpet`, ...), or
    /// `unknown` where the host does not expose it.
    pub kernel_clocksource: String,
    /// The smallest step the clock advances by, in ticks ([`grain_ticks`]):
    /// no difference of two reads is finer. Absent in traces written before
    /// it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grain_ticks: Option<u64>,
}

/// Span of raw ticks over which the scale factor is read: large enough that
/// integer rounding inside quanta is below one part per billion.
const SCALE_SPAN_TICKS: u64 = 1 << 40;

impl ClockInfo {
    /// Identify the clock source and read its calibration. Off the hot path:
    /// it reads `/proc` and `/sys` and may calibrate the clock.
    pub fn measure() -> ClockInfo {
        let clock = clock();
        let ns_per_tick = clock.delta_as_nanos(0, SCALE_SPAN_TICKS) as f64 / SCALE_SPAN_TICKS as f64;
        ClockInfo {
            source: detect_source(clock, ns_per_tick),
            ns_per_tick,
            invariant_tsc: host::cpu_has_flag("constant_tsc") && host::cpu_has_flag("nonstop_tsc"),
            kernel_clocksource: host::kernel_clocksource(),
            grain_ticks: Some(grain_ticks(clock, GRAIN_READS)),
        }
    }

    /// Convert a tick count to nanoseconds with this calibration.
    pub fn to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// The clock's grain in nanoseconds, when measured.
    pub fn grain_ns(&self) -> Option<f64> {
        self.grain_ticks.map(|g| self.to_ns(g))
    }
}

/// Back-to-back reads the grain is taken from (about 0.2 ms).
const GRAIN_READS: usize = 20_000;

/// The smallest step `clock` advances by, in ticks: the greatest common
/// divisor of the differences between back-to-back reads that occur at
/// least once per thousand reads (rare odd differences, an interrupt or a
/// migration, do not count). Not the smallest difference seen: on a host
/// whose counter steps by 1 that is the cost of a read (20-odd ticks);
/// there the divisor is 1. On a VM whose TSC steps by 26 ticks every
/// difference is a multiple of 26.
pub fn grain_ticks(clock: &quanta::Clock, reads: usize) -> u64 {
    let mut previous = clock.raw();
    let mut counts: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for _ in 0..reads.max(2) {
        let now = clock.raw();
        if now > previous {
            *counts.entry(now - previous).or_default() += 1;
        }
        previous = now;
    }
    grain_of(&counts, reads)
}

/// [`grain_ticks`] from a histogram of differences over `reads` reads.
fn grain_of(counts: &std::collections::HashMap<u64, usize>, reads: usize) -> u64 {
    let floor = (reads / 1_000).max(2);
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let common = counts.iter().filter(|(_, n)| **n >= floor).map(|(d, _)| *d).fold(0, gcd);
    // Too few reads to call any difference common: the smallest seen.
    if common == 0 { counts.keys().copied().min().unwrap_or(1) } else { common }
}

/// Decide whether quanta reads the TSC: bracket one quanta read between two
/// bare `rdtsc` reads; the TSC source lands between them, the monotonic
/// source (nanoseconds since boot) lands far outside.
#[cfg(target_arch = "x86_64")]
fn detect_source(clock: &quanta::Clock, _ns_per_tick: f64) -> ClockSource {
    let inside = (0..8).any(|_| {
        let before = read_tsc();
        let raw = clock.raw();
        let after = read_tsc();
        before <= raw && raw <= after
    });
    if inside { ClockSource::Tsc } else { ClockSource::Monotonic }
}

/// Without a TSC to compare against, the monotonic fallback is the one whose
/// ticks are exactly nanoseconds.
#[cfg(not(target_arch = "x86_64"))]
fn detect_source(_clock: &quanta::Clock, ns_per_tick: f64) -> ClockSource {
    if (ns_per_tick - 1.0).abs() < 1e-12 { ClockSource::Monotonic } else { ClockSource::Tsc }
}

/// A bare `rdtsc`, the floor any clock read is compared against.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn read_tsc() -> u64 {
    // SAFETY: `rdtsc` exists on every x86_64 CPU and has no preconditions; it
    // only reads the time-stamp counter.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_rdtsc()
    }
}

#[cfg(test)]
mod grain_tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_grain_is_the_common_step_not_the_read_cost() {
        // A VM's TSC: differences of 26, 52, 78 ticks, and one stray 5.
        let vm: HashMap<u64, usize> = [(26, 6_000), (52, 3_000), (78, 990), (5, 1)].into();
        assert_eq!(grain_of(&vm, 10_000), 26);
        // Bare metal: every difference from 20 to 24 ticks, the cost of a read.
        let metal: HashMap<u64, usize> = (20..25).map(|d| (d, 2_000)).collect();
        assert_eq!(grain_of(&metal, 10_000), 1);
        // Nanoseconds from the OS clock in steps of 10.
        let coarse: HashMap<u64, usize> = [(30, 5_000), (40, 5_000)].into();
        assert_eq!(grain_of(&coarse, 10_000), 10);
    }

    #[test]
    fn this_hosts_grain_is_measured() {
        let grain = grain_ticks(clock(), 5_000);
        assert!(grain >= 1);
        assert!(ClockInfo::measure().grain_ns().is_some_and(|ns| ns > 0.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inline_reading_is_quanta_s_raw_clock() {
        // Whichever way `now` reads, it must be in quanta's raw units: the
        // scale and every trace depend on it. A tolerance of a few thousand
        // ticks absorbs `rdtsc` running out of order; another counter (ns
        // since boot against TSC ticks) is off by orders of magnitude.
        let clock = clock();
        for _ in 0..1_000 {
            let before = clock.raw();
            let reading = now().0;
            let after = clock.raw();
            assert!(reading + 10_000 >= before && reading <= after + 10_000, "{before} {reading} {after}");
        }
    }

    #[test]
    fn ticks_advance_and_scale_to_positive_ns() {
        let a = now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now();
        let info = ClockInfo::measure();
        assert!(info.ns_per_tick > 0.0 && info.ns_per_tick.is_finite());
        let ns = info.to_ns(b.since(a));
        // A sleep of 2 ms lasts at least 2 ms; the upper bound only guards
        // against a calibration off by orders of magnitude.
        assert!(ns >= 1.5e6, "2 ms sleep measured as {ns} ns");
        assert!(ns < 5.0e9, "2 ms sleep measured as {ns} ns");
    }

    #[test]
    fn since_saturates_when_the_clock_goes_backwards() {
        assert_eq!(Ticks(5).since(Ticks(9)), 0);
        assert_eq!(Ticks(9).since(Ticks(5)), 4);
    }
}
