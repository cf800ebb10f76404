//! What the program and its host did with the CPUs while a capture ran,
//! read by the drain at its sweeps, no more often than once per block's
//! stretch (every 500 ms in windows of 10 s), and carried in the
//! blocks of the window the time fell in ([`LiveReading`]).
//!
//! The program's CPU and run-queue wait are its threads' scheduler
//! statistics (`/proc/self/task/*/schedstat`: ns on a CPU, ns runnable
//! waiting for one); where the kernel keeps none (the files read zeros) the
//! CPU comes from `/proc/self/stat` (10 ms grain) and the wait is not read.
//! The host's busy and steal time come from `/proc/stat`'s first line (all
//! CPUs, in USER_HZ: 100 per second on Linux). A thread that exited takes
//! its schedstat share with it: a window in which one ended is short by
//! it. Elsewhere than Linux nothing is read.

use std::collections::BTreeMap;

use crate::reading_key::LiveReading;
use crate::trace::{Block, Reading};

/// ns per USER_HZ tick (`/proc/stat`, `/proc/self/stat`).
const NS_PER_USER_TICK: u64 = 10_000_000;

/// One look at the counters, each `None` where it cannot be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Snapshot([Option<u64>; 4]);

impl Snapshot {
    /// The counters now.
    pub(super) fn now() -> Snapshot {
        let (cpu, run_queue) = process();
        let (busy, steal) = host().unzip();
        Snapshot([cpu, run_queue, busy, steal])
    }

    /// What grew from `earlier` to this one.
    fn since(&self, earlier: &Snapshot) -> [Option<u64>; 4] {
        std::array::from_fn(|i| Some(self.0[i]?.saturating_sub(earlier.0[i]?)))
    }
}

/// The readings gathered and not yet written, by window, and the last
/// look at the counters.
#[derive(Debug)]
pub(super) struct HostReadings {
    last: Snapshot,
    /// When the last look was taken, ticks.
    last_tick: u64,
    /// The shortest time between two looks a sweep takes, ticks: a look
    /// opens a file per thread, so a program of many threads is not read
    /// more often than its windows need.
    every_ticks: u64,
    pending: BTreeMap<u32, [Option<u64>; 4]>,
}

impl HostReadings {
    /// Start from the counters now, looking again no sooner than
    /// `every_ticks` after a look when a sweep asks
    /// ([`HostReadings::read_if_due`]).
    pub(super) fn start(every_ticks: u64) -> HostReadings {
        HostReadings { last: Snapshot::now(), last_tick: crate::clock::now().0, every_ticks, pending: BTreeMap::new() }
    }

    /// [`HostReadings::read`], when `every_ticks` have passed since the
    /// last look.
    pub(super) fn read_if_due(&mut self, window_of: impl Fn(u64) -> u32) {
        if crate::clock::now().0.saturating_sub(self.last_tick) >= self.every_ticks {
            self.read(window_of);
        }
    }

    /// Look at the counters again and put what grew since the last look in
    /// the window (`window_of` a tick) the time between the two looks is
    /// centred in.
    pub(super) fn read(&mut self, window_of: impl Fn(u64) -> u32) {
        let now = crate::clock::now().0;
        let middle = self.last_tick / 2 + now / 2;
        self.last_tick = now;
        self.add(window_of(middle), Snapshot::now());
    }

    /// Put what grew from the last look to `now` in `window`.
    fn add(&mut self, window: u32, now: Snapshot) {
        let grew = now.since(&self.last);
        self.last = now;
        add_into(self.pending.entry(window).or_default(), grew);
    }

    /// Hand `block` the readings pending for its window and any earlier
    /// one (a window whose blocks were all written before its last look
    /// passes its rest to the next block written), the key of reading `i`
    /// being `first_key + i`.
    pub(super) fn attach(&mut self, block: &mut Block, first_key: u16) {
        let later = self.pending.split_off(&block.pass.saturating_add(1));
        let due = std::mem::replace(&mut self.pending, later);
        self.attach_sums(block, first_key, due.into_values());
    }

    /// Hand `block` every reading still pending (the capture's last).
    pub(super) fn attach_rest(&mut self, block: &mut Block, first_key: u16) {
        let due = std::mem::take(&mut self.pending);
        self.attach_sums(block, first_key, due.into_values());
    }

    fn attach_sums(&self, block: &mut Block, first_key: u16, due: impl Iterator<Item = [Option<u64>; 4]>) {
        let mut sums: [Option<u64>; 4] = [None; 4];
        for values in due {
            add_into(&mut sums, values);
        }
        for (i, value) in sums.into_iter().enumerate() {
            let (Some(value), Ok(offset)) = (value, u16::try_from(i)) else { continue };
            block.readings.push(Reading { key: first_key.saturating_add(offset), value });
        }
    }
}

/// Add `values` into `sums`, reading by reading: a reading either side
/// lacks is the other's.
fn add_into(sums: &mut [Option<u64>; 4], values: [Option<u64>; 4]) {
    for (sum, add) in sums.iter_mut().zip(values) {
        *sum = match (*sum, add) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }
}

/// The header's names of the readings, in [`Snapshot`] order.
pub(super) fn names() -> Vec<String> {
    LiveReading::ALL.iter().map(|r| r.name().to_owned()).collect()
}

/// `(CPU ns, run-queue ns)` of the process's live threads.
fn process() -> (Option<u64>, Option<u64>) {
    let (mut cpu, mut waited, mut any) = (0u64, 0u64, false);
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let Ok(line) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
            let mut fields = line.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
            if let (Some(Some(on_cpu)), Some(Some(runnable))) = (fields.next(), fields.next()) {
                cpu = cpu.saturating_add(on_cpu);
                waited = waited.saturating_add(runnable);
                any |= on_cpu > 0 || runnable > 0;
            }
        }
    }
    if any {
        return (Some(cpu), Some(waited));
    }
    (stat_cpu(), None)
}

/// The process's user + system time from `/proc/self/stat`, ns.
fn stat_cpu() -> Option<u64> {
    let line = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces and parentheses: fields count from
    // the last ')'. utime and stime are fields 14 and 15, the 12th and
    // 13th after it.
    let rest = &line[line.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11).map(|f| f.parse::<u64>().ok());
    let (user, system) = (fields.next()??, fields.next()??);
    Some(user.saturating_add(system).saturating_mul(NS_PER_USER_TICK))
}

/// `(busy, steal)` of every CPU of the host from `/proc/stat`, ns.
fn host() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let values: Vec<u64> = line.split_ascii_whitespace().map_while(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is in user).
    let field = |i: usize| values.get(i).copied().unwrap_or(0);
    let busy = [0, 1, 2, 5, 6, 7].iter().fold(0u64, |sum, &i| sum.saturating_add(field(i)));
    Some((busy.saturating_mul(NS_PER_USER_TICK), field(7).saturating_mul(NS_PER_USER_TICK)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Ticks;

    fn block(pass: u32) -> Block {
        Block {
            lane: 0,
            pass,
            sample: 0,
            op_count: 1,
            start: Ticks(0),
            end: Ticks(1),
            streams: Vec::new(),
            readings: Vec::new(),
        }
    }

    #[test]
    fn readings_go_to_a_block_of_their_window_or_the_next_written() {
        let mut host = HostReadings {
            last: Snapshot([Some(0), None, Some(0), Some(0)]),
            last_tick: 0,
            every_ticks: 0,
            pending: BTreeMap::new(),
        };
        for (window, at) in [(0, 10), (0, 25), (1, 40), (2, 70)] {
            host.add(window, Snapshot([Some(at), None, Some(2 * at), Some(0)]));
        }
        let mut first = block(1);
        host.attach(&mut first, 5);
        let value = |b: &Block, key: u16| b.readings.iter().find(|r| r.key == key).map(|r| r.value);
        // Windows 0 and 1: CPU 40, busy 80, steal 0; no run-queue reading.
        assert_eq!(
            (value(&first, 5), value(&first, 6), value(&first, 7), value(&first, 8)),
            (Some(40), None, Some(80), Some(0))
        );
        let mut last = block(1);
        host.attach_rest(&mut last, 5);
        assert_eq!(value(&last, 5), Some(30), "window 2's, to the capture's last block");
        assert!(host.pending.is_empty());
    }

    #[test]
    fn this_host_reads_its_cpu_and_busy_time() {
        let before = Snapshot::now();
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        let grew = Snapshot::now().since(&before);
        if cfg!(target_os = "linux") {
            assert!(grew[0].is_some() && grew[2].is_some(), "{grew:?}");
        }
    }
}
