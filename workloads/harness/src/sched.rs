//! What the scheduler did to a thread while it worked: how long it waited
//! runnable for a CPU that something else held (run-queue delay) and how
//! often it was taken off a CPU it still wanted (involuntary switches).
//!
//! A figure is the write path's only if the machine gave the run its CPUs;
//! these readings say when it did not. Run-queue delay comes from
//! `/proc/<task>/schedstat` (its second field: ns spent runnable on a run
//! queue), which Linux keeps only while its scheduler statistics are on
//! (`CONFIG_SCHED_INFO` with delay accounting or schedstats enabled: as
//! root, `sysctl -w kernel.task_delayacct=1`). Where it keeps none the
//! file reads all zeros, and the reading is `None`, never 0. Involuntary
//! switches come from `getrusage`, which every Linux keeps. Both are read
//! at block boundaries only: a read opens a file.

/// The calling thread's run-queue delay so far, ns, or `None` where the
/// kernel keeps none.
pub fn thread_run_queue_ns() -> Option<u64> {
    read_schedstat("/proc/thread-self/schedstat")
}

/// Every thread's of the process summed, ns, or `None` where the kernel
/// keeps none. A thread that ended takes its share with it, so the sum of
/// a block that outlives a thread is short by it (no lane thread ends
/// inside a block).
pub fn process_run_queue_ns() -> Option<u64> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut total = 0u64;
    let mut any = false;
    for task in tasks.flatten() {
        if let Some(delay) = read_schedstat(task.path().join("schedstat")) {
            total = total.saturating_add(delay);
            any = true;
        }
    }
    any.then_some(total)
}

/// The thread that drives the run (hands blocks to the callers and waits
/// for them), by kernel thread id; 0 until a run names it.
static DRIVER: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Name the calling thread as the run's driver, whose waits
/// [`driver_run_queue_ns`] reads apart: it is hopscope's thread, not a
/// lane's, and it waits on the lane's core as a block starts (a receiver's
/// backoff yields before it parks).
pub fn set_driver() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        DRIVER.store(tid, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The driver thread's run-queue delay so far, ns: `None` before a run
/// names one ([`set_driver`]) or where the kernel keeps none.
pub fn driver_run_queue_ns() -> Option<u64> {
    let tid = DRIVER.load(std::sync::atomic::Ordering::Relaxed);
    (tid > 0).then(|| read_schedstat(format!("/proc/self/task/{tid}/schedstat")))?
}

/// `(all, involuntary)` context switches of `who` so far (`getrusage`).
pub(crate) fn switches(who: libc::c_int) -> (u64, u64) {
    // SAFETY: `usage` is a valid, writable rusage; `who` is RUSAGE_THREAD
    // or RUSAGE_SELF, both accepted on Linux.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; getrusage only writes into `usage`.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return (0, 0);
    }
    let (voluntary, involuntary) = (usage.ru_nvcsw.max(0) as u64, usage.ru_nivcsw.max(0) as u64);
    (voluntary + involuntary, involuntary)
}

fn read_schedstat(path: impl AsRef<std::path::Path>) -> Option<u64> {
    parse_schedstat(&std::fs::read_to_string(path).ok()?)
}

/// The run-queue delay in a schedstat line (`runtime_ns wait_ns
/// timeslices`), or `None` when the line is malformed or the kernel keeps
/// no statistics: then it prints `0 0 0`, while a thread that reads its own
/// line has been given a CPU at least once (the runtime alone can read 0:
/// the running thread's is brought up to date only when it is switched).
fn parse_schedstat(line: &str) -> Option<u64> {
    let mut fields = line.split_ascii_whitespace().map(str::parse::<u64>);
    let (_runtime, wait, slices) = (fields.next()?.ok()?, fields.next()?.ok()?, fields.next()?.ok()?);
    (slices > 0).then_some(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedstat_line_gives_its_wait_and_a_kernel_that_keeps_none_gives_none() {
        assert_eq!(parse_schedstat("43741450 5012785 51\n"), Some(5_012_785));
        assert_eq!(parse_schedstat("0 87370 1\n"), Some(87_370), "a thread not yet switched out");
        assert_eq!(parse_schedstat("0 0 0\n"), None, "statistics off");
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("12 x 3"), None);
    }

    #[test]
    fn involuntary_switches_are_among_all_switches() {
        std::thread::sleep(std::time::Duration::from_millis(1));
        let (all, involuntary) = switches(libc::RUSAGE_THREAD);
        assert!(all >= 1 && involuntary <= all, "{all} {involuntary}");
    }

    /// Pin the calling thread to CPU `cpu`.
    fn pin(cpu: usize) {
        // SAFETY: `set` is a valid cpu_set_t, zeroed then filled by
        // CPU_SET; sched_setaffinity only reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), 0, "pin");
        }
    }

    /// Two threads spinning on one CPU for the same stretch: each is
    /// runnable the whole time and runs about half of it, so each waits on
    /// the run queue about half the wall time.
    #[test]
    fn two_spinners_on_one_cpu_each_wait_about_half_the_time() {
        if thread_run_queue_ns().is_none() {
            // CI turns the statistics on (.ci/run) and says so: there the
            // test must run.
            assert!(
                std::env::var_os("HOPSCOPE_REQUIRE_RUN_QUEUE").is_none(),
                "the kernel keeps no run-queue delay, and this run requires it"
            );
            eprintln!("skipped: the kernel keeps no run-queue delay (sysctl -w kernel.task_delayacct=1)");
            return;
        }
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                let barrier = std::sync::Arc::clone(&barrier);
                std::thread::spawn(move || {
                    pin(0);
                    barrier.wait();
                    let (start, waited) = (std::time::Instant::now(), thread_run_queue_ns());
                    while start.elapsed() < std::time::Duration::from_millis(300) {
                        std::hint::spin_loop();
                    }
                    let waited = thread_run_queue_ns().zip(waited).map(|(b, a)| b.saturating_sub(a));
                    (waited.expect("statistics stay on") as f64) / start.elapsed().as_nanos() as f64
                })
            })
            .collect();
        for share in spinners.into_iter().map(|s| s.join().expect("spinner")) {
            assert!((0.3..=0.7).contains(&share), "a spinner waited {:.0}% of its wall time", share * 100.0);
        }
    }
}
