//! CPU time per thread and per process, and thread placement.
//!
//! CPU time comes from the kernel's scheduler clocks,
//! `CLOCK_THREAD_CPUTIME_ID` and `CLOCK_PROCESS_CPUTIME_ID` (user + system,
//! nanosecond resolution). `getrusage` reports the same quantity but, on
//! kernels without precise CPU accounting, only in scheduler ticks (1–4 ms):
//! too coarse for blocks that last a few milliseconds. Both are syscalls,
//! taken at block boundaries only.

use std::sync::atomic::{AtomicBool, Ordering};

use hopscope_probe::counters::{Counter, ThreadCounters};

/// Whether lanes open perf-event counters on their threads. Off unless a
/// run asks: on this VM any open counter, even a software one, costs a
/// few µs per context switch of its thread (the kernel switches the
/// counter's context in and out), which would inflate every threaded
/// lane's figure and favour lanes whose threads carry none.
static PERF_COUNTERS: AtomicBool = AtomicBool::new(false);

/// Turn perf-event counters on or off for threads that start after this.
pub fn record_perf_counters(on: bool) {
    PERF_COUNTERS.store(on, Ordering::Relaxed);
}

/// Whether perf-event counters are on (see [`record_perf_counters`]).
pub fn perf_counters_on() -> bool {
    PERF_COUNTERS.load(Ordering::Relaxed)
}

/// The calling thread's perf-event counters, or none when they are off.
pub fn open_counters() -> ThreadCounters {
    if perf_counters_on() { ThreadCounters::open(&Counter::ALL) } else { ThreadCounters::default() }
}

/// Context switches (voluntary + involuntary) of the calling thread so far,
/// from `getrusage`: counted by the kernel anyway, so reading it costs
/// nothing between reads.
pub fn thread_ctx_switches() -> u64 {
    ctx_switches(libc::RUSAGE_THREAD)
}

/// Context switches of every thread of the process so far (`getrusage`),
/// which covers threads a peer crate starts and hopscope cannot see.
pub fn process_ctx_switches() -> u64 {
    ctx_switches(libc::RUSAGE_SELF)
}

fn ctx_switches(who: libc::c_int) -> u64 {
    // SAFETY: `usage` is a valid, writable rusage; `who` is RUSAGE_THREAD
    // or RUSAGE_SELF, both accepted on Linux.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; getrusage only writes into `usage`.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return 0;
    }
    (usage.ru_nvcsw + usage.ru_nivcsw).max(0) as u64
}

/// CPU time (user + system) of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// What one thread reports at a block boundary: its CPU time and its
/// perf-event counters so far. Differences of two samples price a block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadSample {
    /// CPU time of the thread, ns.
    pub cpu_ns: u64,
    /// Context switches of the thread (`getrusage`).
    pub ctx_switches: u64,
    /// Counter values, for the counters that opened on the thread.
    pub counters: Vec<(hopscope_probe::counters::Counter, u64)>,
}

impl ThreadSample {
    /// Sample the calling thread: its CPU clock and `counters`.
    pub fn take(counters: &mut ThreadCounters) -> ThreadSample {
        ThreadSample { cpu_ns: thread_cpu_ns(), ctx_switches: thread_ctx_switches(), counters: counters.read() }
    }

    /// `self − earlier`, counter by counter (counters missing from either
    /// sample are left out).
    pub fn since(&self, earlier: &ThreadSample) -> ThreadSample {
        ThreadSample {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            ctx_switches: self.ctx_switches.saturating_sub(earlier.ctx_switches),
            counters: self
                .counters
                .iter()
                .filter_map(|(c, v)| {
                    earlier.counters.iter().find(|(e, _)| e == c).map(|(_, before)| (*c, v.saturating_sub(*before)))
                })
                .collect(),
        }
    }

    /// Add `other`'s values into `self` (summing several caller threads).
    pub fn add(&mut self, other: &ThreadSample) {
        self.cpu_ns += other.cpu_ns;
        self.ctx_switches += other.ctx_switches;
        for (c, v) in &other.counters {
            match self.counters.iter_mut().find(|(mine, _)| mine == c) {
                Some((_, total)) => *total += v,
                None => self.counters.push((*c, *v)),
            }
        }
    }
}

/// The caller's own work between two writes: a busy-wait of a fixed number
/// of clock ticks (zero: none, one predictable branch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gap {
    ticks: u64,
}

impl Gap {
    /// A gap of `ns` nanoseconds on this host's clock.
    pub fn ns(ns: u64) -> Gap {
        let ns_per_tick = hopscope_probe::ClockInfo::measure().ns_per_tick;
        Gap { ticks: if ns == 0 { 0 } else { (ns as f64 / ns_per_tick).round() as u64 } }
    }

    /// Busy-wait the gap (before a write, so every write but none of the
    /// block's bookkeeping is preceded by it).
    #[inline]
    pub fn wait(self) {
        if self.ticks == 0 {
            return;
        }
        let start = hopscope_probe::clock::now();
        while hopscope_probe::clock::now().since(start) < self.ticks {
            std::hint::spin_loop();
        }
    }
}

/// CPU time (user + system) of the whole process, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn cpu_clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec and `clock` is one of the
    // CPU-time clock ids clock_gettime accepts.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPUs online on the machine. Not `available_parallelism`, which follows
/// the calling thread's affinity and so says 1 once a runner thread is
/// pinned.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions; it only reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Pin the calling thread to CPU `index` (modulo the CPUs online).
/// Returns whether it worked (it may not in a restricted cpuset). Counts
/// from the machine's CPUs, not the caller's affinity: a thread spawned by a
/// pinned thread inherits its mask, and must still reach every core.
pub fn pin_current(index: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        let cpu = index % online_cpus();
        // SAFETY: `set` is a plain bitmask on the stack, zeroed and then
        // filled by CPU_SET with an index below CPU_SETSIZE;
        // sched_setaffinity only reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            libc::CPU_SET(cpu.min(libc::CPU_SETSIZE as usize - 1), &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = index;
        false
    }
}

/// Ids of the process's threads (Linux: `/proc/self/task`; empty elsewhere).
/// A peer crate spawns its own threads; the ids that appear while it opens
/// are its threads, which [`place_task`] can then pin.
pub fn task_ids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Pin thread `tid` of this process to CPU `core` (modulo the CPUs online),
/// or let it run anywhere with `None`. Returns whether it worked.
pub fn place_task(tid: i32, core: Option<usize>) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bitmask on the stack, zeroed and then
        // filled by CPU_SET with indices below CPU_SETSIZE;
        // sched_setaffinity only reads it, and an unknown tid is an error
        // return, not undefined behaviour.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            match core {
                Some(core) => libc::CPU_SET((core % online_cpus()).min(libc::CPU_SETSIZE as usize - 1), &mut set),
                None => (0..libc::CPU_SETSIZE as usize).for_each(|cpu| libc::CPU_SET(cpu, &mut set)),
            }
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tid, core);
        false
    }
}

/// Apply a lane's placement to the calling worker thread: pinned to its
/// core, or free to run anywhere (undoing a mask inherited from a pinned
/// parent).
pub fn place_worker(core: Option<usize>) {
    match core {
        Some(core) => {
            pin_current(core);
        }
        None => unpin_current(),
    }
}

/// Let the calling thread run on every core the process may use (undo
/// [`pin_current`]).
pub fn unpin_current() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bitmask on the stack, initialised by
        // CPU_ZERO before use; sched_setaffinity only reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            for cpu in 0..libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = thread_cpu_ns();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let after = thread_cpu_ns();
        assert!(after > before, "thread CPU did not advance: {before} → {after}");
        assert!(process_cpu_ns() >= after - before);
    }
}
