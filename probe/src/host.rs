//! What machine a trace was taken on: CPU model, cores, kernel, clocksource.
//!
//! Read from `/proc` and `/sys` on Linux; every field degrades to `unknown`
//! elsewhere rather than failing, because a missing host detail must never
//! stop a measurement.

use serde::{Deserialize, Serialize};

/// The host facts a receipt needs so a reader can compare runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// CPU model string (`model name` in `/proc/cpuinfo`).
    pub cpu_model: String,
    /// Logical cores online on the machine (not the calling thread's
    /// affinity: a run pins its threads before it writes the header).
    pub cores: usize,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Operating system and architecture this binary was built for.
    pub target: String,
}

const UNKNOWN: &str = "unknown";

impl HostInfo {
    /// Read the host facts. Cheap (a few small file reads), off the hot path.
    pub fn detect() -> HostInfo {
        HostInfo {
            hostname: read_trimmed("/proc/sys/kernel/hostname"),
            cpu_model: cpuinfo_field("model name").unwrap_or_else(|| UNKNOWN.to_owned()),
            cores: std::fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|list| cpu_list_len(&list))
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        }
    }
}

/// How many CPUs a kernel CPU list (`0-3,6,8-9`) names; `None` if it does
/// not parse or names none.
fn cpu_list_len(list: &str) -> Option<usize> {
    let mut total = 0usize;
    for part in list.trim().split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?),
            None => {
                let cpu = part.parse::<usize>().ok()?;
                (cpu, cpu)
            }
        };
        total = total.checked_add(hi.checked_sub(lo)?.checked_add(1)?)?;
    }
    (total > 0).then_some(total)
}

/// The kernel's current clocksource, or `unknown`.
pub(crate) fn kernel_clocksource() -> String {
    read_trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource")
}

/// Whether the first CPU in `/proc/cpuinfo` lists `flag` among its flags.
pub(crate) fn cpu_has_flag(flag: &str) -> bool {
    cpuinfo_field("flags").is_some_and(|flags| flags.split_whitespace().any(|f| f == flag))
}

fn cpuinfo_field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_owned())
    })
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| UNKNOWN.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_fills_every_field() {
        let host = HostInfo::detect();
        assert!(host.cores >= 1);
        assert!(!host.cpu_model.is_empty());
        assert!(!host.kernel.is_empty());
        assert!(host.target.contains(std::env::consts::OS));
    }

    #[test]
    fn cpu_lists_count_ranges_and_singles_and_refuse_nonsense() {
        assert_eq!(cpu_list_len("0-1\n"), Some(2));
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("0-3,6,8-9"), Some(7));
        for bad in ["", "3-1", "a", "0-", "0,,1", "0-18446744073709551615"] {
            assert_eq!(cpu_list_len(bad), None, "{bad:?}");
        }
    }
}
