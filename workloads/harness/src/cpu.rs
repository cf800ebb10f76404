//! CPU time per thread and per process, context switches, perf-event
//! counters per thread, and the caller's own work between writes.
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
    crate::sched::switches(libc::RUSAGE_THREAD).0
}

/// Context switches of every thread of the process so far (`getrusage`),
/// which covers threads a peer crate starts and hopscope cannot see.
pub fn process_ctx_switches() -> u64 {
    crate::sched::switches(libc::RUSAGE_SELF).0
}

/// CPU time (user + system) of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// What one thread reports at a block boundary: its CPU time, what the
/// scheduler did to it ([`crate::sched`]) and its perf-event counters so
/// far. Differences of two samples price a block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadSample {
    /// CPU time of the thread, ns.
    pub cpu_ns: u64,
    /// Context switches of the thread (`getrusage`).
    pub ctx_switches: u64,
    /// Of those, the involuntary ones: taken off a CPU it still wanted.
    pub involuntary: u64,
    /// Time runnable but waiting for a CPU, ns; `None` where the kernel
    /// keeps none.
    pub run_queue_ns: Option<u64>,
    /// Counter values, for the counters that opened on the thread.
    pub counters: Vec<(hopscope_probe::counters::Counter, u64)>,
}

thread_local! {
    // The calling thread's perf-event counters, opened on its first sample
    // (outside any measured block: the first sample of a thread is taken
    // before its first block) when a run records counters.
    static THREAD_COUNTERS: std::cell::RefCell<Option<ThreadCounters>> = const { std::cell::RefCell::new(None) };
}

impl ThreadSample {
    /// Sample the calling thread with its own counters, opening them on the
    /// first call when perf counters are on. This is what every thread that
    /// marks for a lane reports at block boundaries.
    pub fn here() -> ThreadSample {
        THREAD_COUNTERS.with(|cell| {
            let mut counters = cell.borrow_mut();
            let counters = counters.get_or_insert_with(open_counters);
            ThreadSample::take(counters)
        })
    }

    /// As [`ThreadSample::here`], to open a window the caller times: the
    /// CPU clock is read last, so the other readings' syscalls
    /// (`getrusage`, the counters) run before the window, not in it.
    /// Close the window with [`ThreadSample::here`], which reads the CPU
    /// clock first, and take [`thread_clock_cost_ns`] off the difference.
    pub fn opening() -> ThreadSample {
        THREAD_COUNTERS.with(|cell| {
            let mut counters = cell.borrow_mut();
            let counters = counters.get_or_insert_with(open_counters);
            let ((ctx_switches, involuntary), run_queue_ns) =
                (crate::sched::switches(libc::RUSAGE_THREAD), crate::sched::thread_run_queue_ns());
            let counters = counters.read();
            ThreadSample { cpu_ns: thread_cpu_ns(), ctx_switches, involuntary, run_queue_ns, counters }
        })
    }

    /// The sum of `samples`, `None` for none.
    pub fn total<'a>(samples: impl IntoIterator<Item = &'a ThreadSample>) -> Option<ThreadSample> {
        samples.into_iter().fold(None, |total: Option<ThreadSample>, s| match total {
            None => Some(s.clone()),
            Some(mut t) => {
                t.add(s);
                Some(t)
            }
        })
    }

    /// Sample the calling thread: its CPU clock (first) and `counters`.
    pub fn take(counters: &mut ThreadCounters) -> ThreadSample {
        let cpu_ns = thread_cpu_ns();
        let (ctx_switches, involuntary) = crate::sched::switches(libc::RUSAGE_THREAD);
        let run_queue_ns = crate::sched::thread_run_queue_ns();
        ThreadSample { cpu_ns, ctx_switches, involuntary, run_queue_ns, counters: counters.read() }
    }

    /// `self − earlier`, counter by counter (counters missing from either
    /// sample are left out).
    pub fn since(&self, earlier: &ThreadSample) -> ThreadSample {
        ThreadSample {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            ctx_switches: self.ctx_switches.saturating_sub(earlier.ctx_switches),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
            run_queue_ns: self.run_queue_ns.zip(earlier.run_queue_ns).map(|(now, then)| now.saturating_sub(then)),
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
    /// A run-queue delay either lacks is unknown for the sum.
    pub fn add(&mut self, other: &ThreadSample) {
        self.cpu_ns += other.cpu_ns;
        self.ctx_switches += other.ctx_switches;
        self.involuntary += other.involuntary;
        self.run_queue_ns = self.run_queue_ns.zip(other.run_queue_ns).map(|(a, b)| a + b);
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

/// The CPU a timed window's own readings add to it, ns: what a block's
/// caller measures around an empty window ([`ThreadSample::opening`], two
/// clock reads, [`ThreadSample::here`]), the median of 101, measured once
/// per process. That is mostly one CPU-clock syscall (the part of each
/// reading on the window's side of its sample: ~0.6 µs in a VM, where the
/// thread's CPU clock is not served from the vDSO). A block's caller CPU
/// has it taken off, so a thread busy the whole block reads about its wall
/// time (it read ~1.1 µs more per block before).
pub fn thread_clock_cost_ns() -> u64 {
    static COST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *COST.get_or_init(|| {
        let mut empty: Vec<u64> = (0..101)
            .map(|_| {
                let before = ThreadSample::opening();
                std::hint::black_box((hopscope_probe::clock::now(), hopscope_probe::clock::now()));
                ThreadSample::here().since(&before).cpu_ns
            })
            .collect();
        empty.sort_unstable();
        empty[empty.len() / 2]
    })
}

/// CPU time (user + system) of the whole process, in nanoseconds, with
/// every thread's runtime brought up to date first.
///
/// The process clock sums each thread's runtime as the scheduler last
/// accounted it, and a thread running on another CPU is accounted only at
/// a tick or a switch: a writer that spins across a block boundary would
/// have its CPU land in whichever block holds the next tick (a lane of two
/// spinning threads read about one thread's CPU). Reading a thread's own
/// clock makes the kernel account a running thread up to now, so each
/// thread's clock is read first. Block boundaries only: it lists
/// `/proc/self/task`.
pub fn process_cpu_ns() -> u64 {
    account_running_threads();
    cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The whole process's readings over a block: its CPU (every thread, with
/// each running thread's clock brought up to date), its context switches,
/// the involuntary ones, and every thread's run-queue delay summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessSample {
    /// CPU time, ns.
    pub cpu_ns: u64,
    /// Context switches of every thread (`getrusage`).
    pub ctx_switches: u64,
    /// Of those, the involuntary ones.
    pub involuntary: u64,
    /// Every thread's time runnable without a CPU, ns; `None` where the
    /// kernel keeps none.
    pub run_queue_ns: Option<u64>,
    /// Of that, the run's driver thread's ([`crate::sched::set_driver`]):
    /// hopscope's own, not a lane's.
    pub driver_run_queue_ns: Option<u64>,
    /// WAL checkpoints the process finished, and their summed length, ns;
    /// `None` when the run records none.
    pub checkpoints: Option<(u64, u64)>,
}

impl ProcessSample {
    /// The readings at a block's start: the process's CPU clock last.
    pub fn opening() -> ProcessSample {
        let (ctx_switches, involuntary) = crate::sched::switches(libc::RUSAGE_SELF);
        let driver_run_queue_ns = crate::sched::driver_run_queue_ns();
        let run_queue_ns = crate::sched::process_run_queue_ns();
        let checkpoints = crate::checkpoints::totals();
        ProcessSample {
            cpu_ns: process_cpu_ns(),
            ctx_switches,
            involuntary,
            run_queue_ns,
            driver_run_queue_ns,
            checkpoints,
        }
    }

    /// The block's figures, from its start `self`: the CPU clock first
    /// ([`process_cpu_since`], which takes this reading's own cost off).
    pub fn closing(self) -> ProcessSample {
        let cpu_ns = process_cpu_since(self.cpu_ns);
        let (ctx_switches, involuntary) = crate::sched::switches(libc::RUSAGE_SELF);
        let run_queue_ns = crate::sched::process_run_queue_ns();
        let driver_run_queue_ns = crate::sched::driver_run_queue_ns();
        let checkpoints = crate::checkpoints::totals();
        ProcessSample {
            checkpoints: checkpoints
                .zip(self.checkpoints)
                .map(|(now, then)| (now.0.saturating_sub(then.0), now.1.saturating_sub(then.1))),
            driver_run_queue_ns: driver_run_queue_ns
                .zip(self.driver_run_queue_ns)
                .map(|(now, then)| now.saturating_sub(then)),
            cpu_ns,
            ctx_switches: ctx_switches.saturating_sub(self.ctx_switches),
            involuntary: involuntary.saturating_sub(self.involuntary),
            run_queue_ns: run_queue_ns.zip(self.run_queue_ns).map(|(now, then)| now.saturating_sub(then)),
        }
    }
}

/// The CPU the process's own two readings add to a block's process
/// figure, ns: the median of 21 empty windows ([`ProcessSample::opening`]
/// then [`ProcessSample::closing`]), measured once per process (~2 µs in a
/// VM: the part of each clock syscall inside the window).
pub fn process_clock_cost_ns() -> u64 {
    static COST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *COST.get_or_init(|| {
        let mut empty: Vec<u64> = (0..21).map(|_| ProcessSample::opening().closing().cpu_ns).collect();
        empty.sort_unstable();
        empty[empty.len() / 2]
    })
}

/// The whole process's CPU time since `start` (a [`process_cpu_ns`]
/// reading), less what this very reading cost the calling thread: listing
/// `/proc/self/task` and reading every thread's clock take tens of µs of
/// the caller's CPU, which a block's figure must not carry. Read after the
/// calling thread's own end-of-block sample, as `start` was read before
/// its first, so the process's window holds the thread's and its CPU is
/// never less than the thread's.
pub fn process_cpu_since(start: u64) -> u64 {
    let before = thread_cpu_ns();
    account_running_threads();
    let own = thread_cpu_ns().saturating_sub(before);
    cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).saturating_sub(start).saturating_sub(own)
}

/// Read every thread's CPU clock, which brings a running thread's runtime
/// up to date in the kernel (`task_sched_runtime`).
fn account_running_threads() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
    for task in tasks.flatten() {
        if let Some(tid) = task.file_name().to_str().and_then(|name| name.parse::<libc::pid_t>().ok()) {
            let _ = cpu_clock_ns(thread_cpu_clock(tid));
        }
    }
}

/// The clock id of thread `tid`'s scheduler CPU time, as the kernel
/// encodes it (`MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`; what glibc's
/// `pthread_getcpuclockid` returns).
fn thread_cpu_clock(tid: libc::pid_t) -> libc::clockid_t {
    const CPUCLOCK_SCHED: libc::clockid_t = 2;
    const CPUCLOCK_PERTHREAD: libc::clockid_t = 4;
    ((!tid) << 3) | CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD
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

    /// A thread that spins on another CPU without a switch is counted up
    /// to now at every reading, not only at the scheduler's next tick: each
    /// 300 µs between readings (the reader asleep) shows about 300 µs of
    /// the spinner's CPU.
    #[test]
    fn a_thread_spinning_elsewhere_is_counted_up_to_now() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        use std::time::{Duration, Instant};
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        std::thread::sleep(Duration::from_millis(5));
        let mut shares = Vec::new();
        let (mut cpu, mut at) = (process_cpu_ns(), Instant::now());
        for _ in 0..25 {
            std::thread::sleep(Duration::from_micros(300));
            let (now_cpu, now_at) = (process_cpu_ns(), Instant::now());
            shares.push((now_cpu - cpu) as f64 / now_at.duration_since(at).as_nanos() as f64);
            (cpu, at) = (now_cpu, now_at);
        }
        stop.store(true, Ordering::Relaxed);
        spinner.join().expect("spinner");
        shares.sort_by(f64::total_cmp);
        // Stale accounting shows most intervals near 0 (0.05 here: the
        // reader's own CPU) and a few at a tick's worth; up to date, nearly
        // every one near 1. The bar is low so a busy test machine, where
        // the spinner shares a core, still passes.
        assert!(shares[shares.len() / 2] > 0.25, "process CPU per wall interval: {shares:?}");
    }
}
