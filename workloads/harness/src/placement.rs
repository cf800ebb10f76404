//! Where a lane's threads run: the caller pinned to core 0 and the lane's
//! own thread to the same or the other core, or both left to the scheduler.
//!
//! On VMs, waking a thread whose vCPU is halted costs tens of µs, and which
//! lane pays it depends on where the scheduler put each lane's threads; an
//! unpinned run once showed a floor at 34 µs next to a writer at 126 µs, a
//! fake 90 µs "library" cost. Runs pin by default and say so.

pub use hopscope_probe::{Placement, UnknownPlacement};

/// Placing the calling thread as a [`Placement`] says: the vocabulary lives
/// in the probe crate (runs record it, the analyzer reads it), the pinning
/// here, where the threads are.
pub trait Pin {
    /// Place the calling thread as a caller: pinned to its core, or free to
    /// run anywhere (undoing a mask inherited from a pinned parent).
    fn place_caller(self);
    /// Place the calling thread as the lane's own thread.
    fn place_worker(self);
    /// Whether the two threads may share one core (pinned together, or one
    /// CPU online): a spinning wait there starves the thread it waits for.
    fn shares_a_core(self) -> bool;
}

impl Pin for Placement {
    fn place_caller(self) {
        place_worker(self.caller_core());
    }

    fn place_worker(self) {
        place_worker(self.worker_core());
    }

    fn shares_a_core(self) -> bool {
        self == Placement::SameCore || online_cpus() <= 1
    }
}

/// CPUs online on the machine. Not `available_parallelism`, which follows
/// the calling thread's affinity and so says 1 once a runner thread is
/// pinned.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions; it only reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// The CPUs this process may run on, in ascending order: the affinity the
/// first caller of any placement function had (the process's cpuset,
/// before a run pins anything), falling back to every CPU online where it
/// cannot be read. Pinning picks from these, so a restricted cpuset (a
/// container, `taskset`) is honoured rather than silently escaped from.
pub fn allowed_cpus() -> &'static [usize] {
    static ALLOWED: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    ALLOWED.get_or_init(|| {
        let read = Affinity::current().map(|a| a.cpus()).unwrap_or_default();
        if read.is_empty() { (0..online_cpus()).collect() } else { read }
    })
}

/// Pins asked for that the kernel refused, over the process's life.
static PIN_FAILURES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many pins the kernel refused so far (a run compares this before and
/// after, and warns when it grew).
pub fn pin_failures() -> u64 {
    PIN_FAILURES.load(std::sync::atomic::Ordering::Relaxed)
}

fn count(pinned: bool) -> bool {
    if !pinned {
        PIN_FAILURES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    pinned
}

/// Why `placement` cannot be had in this process, if it cannot: two
/// different cores need two CPUs the process may use.
pub fn unachievable(placement: Placement) -> Option<String> {
    let allowed = allowed_cpus();
    (placement == Placement::DifferentCores && allowed.len() < 2).then(|| {
        format!(
            "placement different-cores needs two CPUs, and this process may use only {:?} (its CPU affinity); use \
             --placement same-core or unpinned, or widen the cpuset",
            allowed
        )
    })
}

/// The CPU the `index`-th pinned core means: the `index`-th CPU the process
/// may use (modulo their number).
pub fn cpu_for(index: usize) -> usize {
    let allowed = allowed_cpus();
    allowed[index % allowed.len()]
}

/// Pin the calling thread to the `index`-th CPU the process may use
/// ([`allowed_cpus`]). Returns whether the kernel agreed; a refusal is
/// counted ([`pin_failures`]). Counts from the process's set, not the
/// caller's affinity: a thread spawned by a pinned thread inherits its
/// mask, and must still reach every allowed core.
pub fn pin_current(index: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        let cpu = cpu_for(index);
        // SAFETY: `set` is a plain bitmask on the stack, zeroed and then
        // filled by CPU_SET with an index below CPU_SETSIZE;
        // sched_setaffinity only reads it.
        let pinned = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            libc::CPU_SET(cpu.min(libc::CPU_SETSIZE as usize - 1), &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        count(pinned)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = index;
        count(false)
    }
}

/// Ids of the process's threads (Linux: `/proc/self/task`; empty elsewhere).
/// A peer crate spawns its own threads; the ids that appear while it opens
/// are its threads, which [`place_task`] can then pin.
pub fn task_ids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Pin thread `tid` of this process to the `core`-th CPU it may use, or
/// let it run on any of them with `None`. Returns whether it worked (a
/// refusal is counted).
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
                Some(core) => libc::CPU_SET(cpu_for(core).min(libc::CPU_SETSIZE as usize - 1), &mut set),
                None => allowed_cpus().iter().for_each(|cpu| libc::CPU_SET(*cpu, &mut set)),
            }
            count(libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tid, core);
        count(false)
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

/// The calling thread's CPU affinity, to give back with
/// [`Affinity::restore`] after a run has pinned the thread.
#[derive(Clone)]
pub struct Affinity {
    #[cfg(target_os = "linux")]
    set: libc::cpu_set_t,
}

impl std::fmt::Debug for Affinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Affinity").finish_non_exhaustive()
    }
}

impl Affinity {
    /// The calling thread's affinity now (`None` where it cannot be read).
    pub fn current() -> Option<Affinity> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: `set` is a plain bitmask on the stack, zeroed;
            // sched_getaffinity writes at most `size_of::<cpu_set_t>()` bytes.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
                    .then_some(Affinity { set })
            }
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// The CPUs in this affinity, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: CPU_ISSET only reads the mask, at indices below
            // CPU_SETSIZE.
            (0..libc::CPU_SETSIZE as usize).filter(|cpu| unsafe { libc::CPU_ISSET(*cpu, &self.set) }).collect()
        }
        #[cfg(not(target_os = "linux"))]
        Vec::new()
    }

    /// Give the calling thread this affinity again.
    pub fn restore(&self) {
        #[cfg(target_os = "linux")]
        // SAFETY: `self.set` is a mask read by sched_getaffinity; setting it
        // back only reads it.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.set);
        }
    }
}

/// Let the calling thread run on every core the process may use (undo
/// [`pin_current`]).
pub fn unpin_current() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bitmask on the stack, initialised by
        // CPU_ZERO before use, with indices below CPU_SETSIZE;
        // sched_setaffinity only reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            for cpu in allowed_cpus() {
                libc::CPU_SET((*cpu).min(libc::CPU_SETSIZE as usize - 1), &mut set);
            }
            count(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_land_on_cpus_the_process_may_use_and_are_checked() {
        std::thread::spawn(|| {
            let allowed = allowed_cpus().to_vec();
            assert!(!allowed.is_empty());
            for index in 0..allowed.len() + 2 {
                assert!(pin_current(index), "pin to allowed CPU index {index} refused");
                let now = Affinity::current().expect("affinity").cpus();
                assert_eq!(now, [allowed[index % allowed.len()]]);
            }
            unpin_current();
            assert_eq!(Affinity::current().expect("affinity").cpus(), allowed);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn two_cores_are_refused_in_one_line_when_the_process_has_one() {
        // Only checkable when the process has a single CPU; otherwise the
        // placement must be achievable.
        let refused = unachievable(Placement::DifferentCores);
        assert_eq!(refused.is_some(), allowed_cpus().len() < 2);
        assert!(unachievable(Placement::SameCore).is_none() && unachievable(Placement::Unpinned).is_none());
    }
}
