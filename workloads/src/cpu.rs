//! CPU time per thread and per process, and thread placement.
//!
//! CPU time comes from `getrusage` (user + system): `RUSAGE_THREAD` for the
//! calling thread, `RUSAGE_SELF` for the process. Both are syscalls, taken at
//! block boundaries only.

/// CPU time (user + system) of the calling thread, in nanoseconds; 0 where
/// the OS has no per-thread figure.
pub fn thread_cpu_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        rusage_ns(libc::RUSAGE_THREAD)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// CPU time (user + system) of the whole process, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    rusage_ns(libc::RUSAGE_SELF)
}

fn rusage_ns(who: libc::c_int) -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the right size, and `who`
    // is one of the constants getrusage accepts.
    let rc = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    // SAFETY: getrusage returned 0, so it filled `usage`; zeroed memory is a
    // valid `rusage` in any case.
    let usage = unsafe { usage.assume_init() };
    let tv_ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    tv_ns(usage.ru_utime) + tv_ns(usage.ru_stime)
}

/// Pin the calling thread to the `index`-th core available to the process.
/// Returns whether it worked (it may not in a restricted cpuset).
pub fn pin_current(index: usize) -> bool {
    let Some(cores) = core_affinity::get_core_ids() else {
        return false;
    };
    if cores.is_empty() {
        return false;
    }
    core_affinity::set_for_current(cores[index % cores.len()])
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
        assert!(
            after > before,
            "thread CPU did not advance: {before} → {after}"
        );
        assert!(process_cpu_ns() >= after - before);
    }
}
