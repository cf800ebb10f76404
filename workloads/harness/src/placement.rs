//! Where a lane's threads run: the caller pinned to core 0 and the lane's
//! own thread to the same or the other core, or both left to the scheduler.
//!
//! On VMs, waking a thread whose vCPU is halted costs tens of µs, and which
//! lane pays it depends on where the scheduler put each lane's threads; an
//! unpinned run once showed a floor at 34 µs next to a writer at 126 µs, a
//! fake 90 µs "library" cost. Runs pin by default and say so.

use std::fmt;
use std::str::FromStr;

/// Where the caller and a lane's own threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Wherever the scheduler puts them.
    #[default]
    Unpinned,
    /// Both pinned to the same core.
    SameCore,
    /// Pinned to two different cores.
    DifferentCores,
}

impl Placement {
    /// Every placement, in the order flags list them.
    pub const ALL: [Placement; 3] = [Placement::Unpinned, Placement::SameCore, Placement::DifferentCores];

    /// The flag word of this placement.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Unpinned => "unpinned",
            Placement::SameCore => "same-core",
            Placement::DifferentCores => "different-cores",
        }
    }

    /// The core caller threads are pinned to (`None`: not pinned).
    pub fn caller_core(self) -> Option<usize> {
        match self {
            Placement::Unpinned => None,
            Placement::SameCore | Placement::DifferentCores => Some(0),
        }
    }

    /// The core a lane's own threads (its writer) are pinned to.
    pub fn worker_core(self) -> Option<usize> {
        match self {
            Placement::Unpinned => None,
            Placement::SameCore => Some(0),
            Placement::DifferentCores => Some(1),
        }
    }

    /// Place the calling thread as a caller: pinned to its core, or free to
    /// run anywhere (undoing a mask inherited from a pinned parent).
    pub fn place_caller(self) {
        place_worker(self.caller_core());
    }

    /// Place the calling thread as the lane's own thread.
    pub fn place_worker(self) {
        place_worker(self.worker_core());
    }

    /// Whether the two threads may share one core (pinned together, or one
    /// CPU online): a spinning wait there starves the thread it waits for.
    pub fn shares_a_core(self) -> bool {
        self == Placement::SameCore || online_cpus() <= 1
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A placement word that is none of [`Placement::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown placement `{0}` (one of: unpinned, same-core, different-cores)")]
pub struct UnknownPlacement(pub String);

impl FromStr for Placement {
    type Err = UnknownPlacement;
    /// `unpinned`, `same-core`, `different-cores` (or `cross-core`).
    fn from_str(s: &str) -> Result<Placement, UnknownPlacement> {
        match s {
            "cross-core" => Ok(Placement::DifferentCores),
            _ => Placement::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| UnknownPlacement(s.to_owned())),
        }
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
    fn placements_parse_from_their_flag_words() {
        for p in Placement::ALL {
            assert_eq!(p.name().parse::<Placement>(), Ok(p));
        }
        assert_eq!("cross-core".parse::<Placement>(), Ok(Placement::DifferentCores));
        assert!("anywhere".parse::<Placement>().unwrap_err().to_string().contains("same-core"));
        assert_eq!(Placement::SameCore.worker_core(), Placement::SameCore.caller_core());
    }
}
