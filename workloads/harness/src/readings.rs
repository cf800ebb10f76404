//! Per-block readings: CPU time and context switches of every thread role
//! (the caller, each of a lane's own threads) and of the process, and the
//! perf-event counters a run recorded, each under a key the trace header
//! names (`<role>.cpu_ns`, `<role>.ctx_switches`, `process.cpu_ns`,
//! `<role>.<counter>`), and, in runs with span lanes, the span machinery
//! measured after each probed block (`span.<kind>_ps`).

use hopscope_probe::Reading;
use hopscope_probe::counters::Counter;

use crate::cpu::ThreadSample;

/// The role of the threads that issue a lane's operations.
pub const CALLER_ROLE: &str = "caller";

/// The pseudo-role of process-wide readings (every thread, a peer crate's
/// own included).
pub const PROCESS: &str = "process";

/// Where each reading goes in the trace header's reading list.
#[derive(Debug, Clone)]
pub(crate) struct ReadingKeys {
    /// Thread roles with readings: the caller first, then lanes' own roles.
    roles: Vec<String>,
    counters: Vec<Counter>,
    /// Whether the span machinery keys follow the others.
    span_machinery: bool,
}

/// One block's samples, by thread role index (into the roles given to
/// [`ReadingKeys::new`]), and the process's.
#[derive(Debug, Default)]
pub(crate) struct BlockSamples {
    pub(crate) roles: Vec<(usize, ThreadSample)>,
    pub(crate) process_cpu_ns: u64,
    pub(crate) process_ctx_switches: u64,
    /// The span machinery measured after the block, ps per slice kind in
    /// [`hopscope_probe::SliceKind::ALL`] order (probed span lanes).
    pub(crate) span_ps: Option<[u64; 4]>,
}

impl ReadingKeys {
    /// Keys for `roles` (the caller's first) and `counters`.
    pub(crate) fn new(roles: Vec<String>, counters: Vec<Counter>) -> ReadingKeys {
        ReadingKeys { roles, counters, span_machinery: false }
    }

    /// Also declare the span machinery keys (a run with span lanes).
    pub(crate) fn with_span_machinery(mut self, on: bool) -> ReadingKeys {
        self.span_machinery = on;
        self
    }

    /// The names the header declares, in key order.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for role in &self.roles {
            names.push(format!("{role}.cpu_ns"));
        }
        names.push(format!("{PROCESS}.cpu_ns"));
        for role in &self.roles {
            names.push(format!("{role}.ctx_switches"));
        }
        names.push(format!("{PROCESS}.ctx_switches"));
        for role in &self.roles {
            names.extend(self.counters.iter().map(|c| format!("{role}.{}", c.name())));
        }
        if self.span_machinery {
            names.extend(hopscope_probe::SliceKind::ALL.iter().map(|k| k.reading_key().to_owned()));
        }
        names
    }

    /// A block's readings. Several samples of one role (threads sharing a
    /// role, or several callers) are summed.
    pub(crate) fn readings(&self, samples: &BlockSamples) -> Vec<Reading> {
        let roles = self.roles.len();
        let mut summed: Vec<Option<ThreadSample>> = vec![None; roles];
        for (role, sample) in &samples.roles {
            if let Some(slot) = summed.get_mut(*role) {
                slot.get_or_insert_with(ThreadSample::default).add(sample);
            }
        }
        let mut readings = vec![
            Reading { key: key(roles), value: samples.process_cpu_ns },
            Reading { key: key(2 * roles + 1), value: samples.process_ctx_switches },
        ];
        let counters_base = 2 * roles + 2;
        for (role, sample) in summed.iter().enumerate() {
            let Some(sample) = sample else { continue };
            readings.push(Reading { key: key(role), value: sample.cpu_ns });
            readings.push(Reading { key: key(roles + 1 + role), value: sample.ctx_switches });
            for (c, value) in &sample.counters {
                if let Some(i) = self.counters.iter().position(|k| k == c) {
                    readings.push(Reading { key: key(counters_base + role * self.counters.len() + i), value: *value });
                }
            }
        }
        if let (true, Some(ps)) = (self.span_machinery, samples.span_ps) {
            let base = counters_base + roles * self.counters.len();
            readings.extend(ps.iter().enumerate().map(|(i, value)| Reading { key: key(base + i), value: *value }));
        }
        readings.sort_by_key(|r| r.key);
        readings
    }
}

/// A reading key; the header holds far fewer than 2^16 names (roles and
/// counters are capped when a plan is checked).
fn key(index: usize) -> u16 {
    u16::try_from(index).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reading_lands_under_the_name_of_its_role() {
        let keys = ReadingKeys::new(vec!["caller".into(), "writer".into()], Vec::new());
        let names = keys.names();
        let samples = BlockSamples {
            roles: vec![
                (0, ThreadSample { cpu_ns: 10, ctx_switches: 1, counters: Vec::new() }),
                (1, ThreadSample { cpu_ns: 20, ctx_switches: 2, counters: Vec::new() }),
                (1, ThreadSample { cpu_ns: 5, ctx_switches: 1, counters: Vec::new() }),
            ],
            process_cpu_ns: 40,
            process_ctx_switches: 4,
            span_ps: None,
        };
        let named: Vec<(String, u64)> =
            keys.readings(&samples).iter().map(|r| (names[usize::from(r.key)].clone(), r.value)).collect();
        let expect = [
            ("caller.cpu_ns", 10),
            ("writer.cpu_ns", 25),
            ("process.cpu_ns", 40),
            ("caller.ctx_switches", 1),
            ("writer.ctx_switches", 3),
            ("process.ctx_switches", 4),
        ];
        assert_eq!(named, expect.map(|(k, v)| (k.to_owned(), v)));
    }
}
