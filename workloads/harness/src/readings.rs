//! Per-block readings: CPU time, context switches, involuntary switches
//! and run-queue delay of every thread role (the caller, each of a lane's
//! own threads) and of the process, and the perf-event counters a run
//! recorded, each under a key the trace header names (`<role>.cpu_ns`,
//! `<role>.ctx_switches`, `<role>.involuntary_switches`,
//! `<role>.run_queue_ns`, the same for `process`, `<role>.<counter>`),
//! and, in runs with span lanes, the span machinery measured after each
//! probed block (`span.<kind>_ps`). A reading the kernel does not keep
//! (run-queue delay without scheduler statistics) is left out of the
//! block, never written as 0.

use std::collections::HashMap;

use hopscope_probe::Reading;
use hopscope_probe::counters::Counter;

use crate::cpu::{ProcessSample, ThreadSample};

/// The role of the threads that issue a lane's operations.
pub const CALLER_ROLE: &str = "caller";

/// The pseudo-role of process-wide readings (every thread, a peer crate's
/// own included).
pub const PROCESS: &str = "process";

/// The pseudo-role of the run's driver thread, whose run-queue delay is
/// read apart (`driver.run_queue_ns`): it is part of the process's, and
/// not a lane's.
pub const DRIVER: &str = "driver";

/// What each role and the process report, as key suffixes.
const PER_THREAD: [&str; 4] = ["cpu_ns", "ctx_switches", "involuntary_switches", "run_queue_ns"];

/// Where each reading goes in the trace header's reading list.
#[derive(Debug, Clone)]
pub(crate) struct ReadingKeys {
    /// Thread roles with readings: the caller first, then lanes' own roles.
    roles: Vec<String>,
    counters: Vec<Counter>,
    /// Whether the span machinery keys follow the others.
    span_machinery: bool,
    /// Each name's key.
    keys: HashMap<String, u16>,
}

/// One block's samples, by thread role index (into the roles given to
/// [`ReadingKeys::new`]), and the process's.
#[derive(Debug, Default)]
pub(crate) struct BlockSamples {
    pub(crate) roles: Vec<(usize, ThreadSample)>,
    pub(crate) process: ProcessSample,
    /// The span machinery measured after the block and the span events
    /// its threads ran between their marks (probed span lanes).
    pub(crate) spans: SpanReadings,
}

/// What a span block adds to its readings.
#[derive(Debug, Default)]
pub(crate) struct SpanReadings {
    /// The machinery measured after it, ps per slice kind in
    /// [`hopscope_probe::SliceKind::ALL`] order (probed builds).
    pub(crate) kinds_ps: Option<[u64; 4]>,
    /// The edge pairs and span events, ps, in
    /// [`hopscope_probe::EdgeCosts::READINGS`] order.
    pub(crate) edges_ps: Option<[u64; 7]>,
    /// The pairs of consecutive marks its threads made and the span events
    /// between them ([`hopscope_probe::SpanSequence::to_reading`]).
    pub(crate) sequences: Vec<u64>,
}

impl ReadingKeys {
    /// Keys for `roles` (the caller's first) and `counters`.
    pub(crate) fn new(roles: Vec<String>, counters: Vec<Counter>) -> ReadingKeys {
        ReadingKeys { roles, counters, span_machinery: false, keys: HashMap::new() }.keyed()
    }

    /// Also declare the span machinery keys (a run with span lanes).
    pub(crate) fn with_span_machinery(mut self, on: bool) -> ReadingKeys {
        self.span_machinery = on;
        self.keyed()
    }

    fn keyed(mut self) -> ReadingKeys {
        self.keys = self.names().into_iter().enumerate().map(|(i, name)| (name, key(i))).collect();
        self
    }

    /// The names the header declares, in key order: every role's and the
    /// process's figure of one kind together, kind by kind.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for what in PER_THREAD {
            names.extend(self.roles.iter().map(|role| format!("{role}.{what}")));
            names.push(format!("{PROCESS}.{what}"));
        }
        names.push(format!("{DRIVER}.run_queue_ns"));
        for role in &self.roles {
            names.extend(self.counters.iter().map(|c| format!("{role}.{}", c.name())));
        }
        if self.span_machinery {
            names.extend(hopscope_probe::SliceKind::ALL.iter().map(|k| k.reading_key().to_owned()));
            names.extend(hopscope_probe::EdgeCosts::READINGS.iter().map(|k| (*k).to_owned()));
            names.push(hopscope_probe::SpanSequence::READING.to_owned());
        }
        names
    }

    /// A block's readings. Several samples of one role (threads sharing a
    /// role, or several callers) are summed.
    pub(crate) fn readings(&self, samples: &BlockSamples) -> Vec<Reading> {
        let mut readings = Vec::new();
        let mut put = |name: String, value: Option<u64>| {
            if let (Some(&key), Some(value)) = (self.keys.get(&name), value) {
                readings.push(Reading { key, value });
            }
        };
        let p = &samples.process;
        for (what, value) in
            PER_THREAD.iter().zip([Some(p.cpu_ns), Some(p.ctx_switches), Some(p.involuntary), p.run_queue_ns])
        {
            put(format!("{PROCESS}.{what}"), value);
        }
        put(format!("{DRIVER}.run_queue_ns"), p.driver_run_queue_ns);
        for (index, role) in self.roles.iter().enumerate() {
            let Some(sample) = ThreadSample::total(samples.roles.iter().filter(|(r, _)| *r == index).map(|(_, s)| s))
            else {
                continue;
            };
            let values =
                [Some(sample.cpu_ns), Some(sample.ctx_switches), Some(sample.involuntary), sample.run_queue_ns];
            for (what, value) in PER_THREAD.iter().zip(values) {
                put(format!("{role}.{what}"), value);
            }
            for (c, value) in &sample.counters {
                put(format!("{role}.{}", c.name()), Some(*value));
            }
        }
        if self.span_machinery {
            let spans = &samples.spans;
            if let Some(ps) = spans.kinds_ps {
                for (kind, value) in hopscope_probe::SliceKind::ALL.iter().zip(ps) {
                    put(kind.reading_key().to_owned(), Some(value));
                }
            }
            if let Some(ps) = spans.edges_ps {
                for (name, value) in hopscope_probe::EdgeCosts::READINGS.iter().zip(ps) {
                    put((*name).to_owned(), Some(value));
                }
            }
            // One reading per pair: the key repeats.
            for value in &spans.sequences {
                put(hopscope_probe::SpanSequence::READING.to_owned(), Some(*value));
            }
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
        let sample = |cpu_ns, ctx_switches, involuntary, run_queue_ns| ThreadSample {
            cpu_ns,
            ctx_switches,
            involuntary,
            run_queue_ns,
            counters: Vec::new(),
        };
        let samples = BlockSamples {
            roles: vec![(0, sample(10, 1, 0, None)), (1, sample(20, 2, 1, Some(300))), (1, sample(5, 1, 1, Some(50)))],
            process: ProcessSample {
                cpu_ns: 40,
                ctx_switches: 4,
                involuntary: 2,
                run_queue_ns: Some(400),
                driver_run_queue_ns: Some(30),
            },
            spans: Default::default(),
        };
        let named: Vec<(String, u64)> =
            keys.readings(&samples).iter().map(|r| (names[usize::from(r.key)].clone(), r.value)).collect();
        // The caller's run-queue delay is unknown: left out, not 0.
        let expect = [
            ("caller.cpu_ns", 10),
            ("writer.cpu_ns", 25),
            ("process.cpu_ns", 40),
            ("caller.ctx_switches", 1),
            ("writer.ctx_switches", 3),
            ("process.ctx_switches", 4),
            ("caller.involuntary_switches", 0),
            ("writer.involuntary_switches", 2),
            ("process.involuntary_switches", 2),
            ("writer.run_queue_ns", 350),
            ("process.run_queue_ns", 400),
            ("driver.run_queue_ns", 30),
        ];
        assert_eq!(named, expect.map(|(k, v)| (k.to_owned(), v)));
    }
}
