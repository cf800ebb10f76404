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

use hopscope_probe::counters::Counter;
use hopscope_probe::{Reading, ReadingKey, SliceKind, ThreadFigure, ThreadRole};

use crate::cpu::{ProcessSample, ThreadSample};

/// Where each reading goes in the trace header's reading list.
#[derive(Debug, Clone)]
pub(crate) struct ReadingKeys {
    /// Thread roles with readings: the caller first, then lanes' own roles.
    roles: Vec<ThreadRole>,
    counters: Vec<Counter>,
    /// Whether the span machinery keys follow the others.
    span_machinery: bool,
    /// Whether the WAL checkpoint keys close the list.
    checkpoints: bool,
    /// Each name's key.
    keys: HashMap<ReadingKey, u16>,
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
    pub(crate) fn new(roles: Vec<ThreadRole>, counters: Vec<Counter>) -> ReadingKeys {
        ReadingKeys { roles, counters, span_machinery: false, checkpoints: false, keys: HashMap::new() }.keyed()
    }

    /// Also declare the span machinery keys (a run with span lanes).
    pub(crate) fn with_span_machinery(mut self, on: bool) -> ReadingKeys {
        self.span_machinery = on;
        self.keyed()
    }

    /// Also declare the WAL checkpoint keys (a run that records them).
    pub(crate) fn with_checkpoints(mut self, on: bool) -> ReadingKeys {
        self.checkpoints = on;
        self.keyed()
    }

    fn keyed(mut self) -> ReadingKeys {
        self.keys = self.keys_in_order().into_iter().enumerate().map(|(i, name)| (name, key(i))).collect();
        self
    }

    /// The names the header declares, in key order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.keys_in_order().iter().map(ReadingKey::to_string).collect()
    }

    /// Every key in order: every role's and the process's figure of one
    /// kind together, kind by kind; the driver's wait; the counters; the
    /// span machinery.
    fn keys_in_order(&self) -> Vec<ReadingKey> {
        let mut keys = Vec::new();
        for figure in ThreadFigure::ALL {
            keys.extend(self.roles.iter().map(|role| ReadingKey::Thread(role.clone(), figure)));
            keys.push(ReadingKey::Thread(ThreadRole::Process, figure));
        }
        keys.push(ReadingKey::Thread(ThreadRole::Driver, ThreadFigure::RunQueueNs));
        for role in &self.roles {
            keys.extend(self.counters.iter().map(|c| ReadingKey::Counter(role.clone(), *c)));
        }
        if self.span_machinery {
            keys.extend(SliceKind::ALL.map(ReadingKey::SpanKind));
            keys.extend((0..hopscope_probe::EdgeCosts::READINGS.len()).map(ReadingKey::SpanEdge));
            keys.push(ReadingKey::SpanSequence);
        }
        if self.checkpoints {
            keys.extend([ReadingKey::Checkpoints, ReadingKey::CheckpointNs]);
        }
        keys
    }

    /// A block's readings. Several samples of one role (threads sharing a
    /// role, or several callers) are summed.
    pub(crate) fn readings(&self, samples: &BlockSamples) -> Vec<Reading> {
        let mut readings = Vec::new();
        let mut put = |name: ReadingKey, value: Option<u64>| {
            if let (Some(&key), Some(value)) = (self.keys.get(&name), value) {
                readings.push(Reading { key, value });
            }
        };
        let p = &samples.process;
        for (figure, value) in ThreadFigure::ALL.into_iter().zip([
            Some(p.cpu_ns),
            Some(p.ctx_switches),
            Some(p.involuntary),
            p.run_queue_ns,
        ]) {
            put(ReadingKey::Thread(ThreadRole::Process, figure), value);
        }
        put(ReadingKey::Thread(ThreadRole::Driver, ThreadFigure::RunQueueNs), p.driver_run_queue_ns);
        put(ReadingKey::Checkpoints, p.checkpoints.map(|c| c.0));
        put(ReadingKey::CheckpointNs, p.checkpoints.map(|c| c.1));
        for (index, role) in self.roles.iter().enumerate() {
            let Some(sample) = ThreadSample::total(samples.roles.iter().filter(|(r, _)| *r == index).map(|(_, s)| s))
            else {
                continue;
            };
            let values =
                [Some(sample.cpu_ns), Some(sample.ctx_switches), Some(sample.involuntary), sample.run_queue_ns];
            for (figure, value) in ThreadFigure::ALL.into_iter().zip(values) {
                put(ReadingKey::Thread(role.clone(), figure), value);
            }
            for (c, value) in &sample.counters {
                put(ReadingKey::Counter(role.clone(), *c), Some(*value));
            }
        }
        if self.span_machinery {
            let spans = &samples.spans;
            if let Some(ps) = spans.kinds_ps {
                for (kind, value) in SliceKind::ALL.into_iter().zip(ps) {
                    put(ReadingKey::SpanKind(kind), Some(value));
                }
            }
            if let Some(ps) = spans.edges_ps {
                for (edge, value) in ps.into_iter().enumerate() {
                    put(ReadingKey::SpanEdge(edge), Some(value));
                }
            }
            // One reading per pair: the key repeats.
            for value in &spans.sequences {
                put(ReadingKey::SpanSequence, Some(*value));
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
        let keys = ReadingKeys::new(vec![ThreadRole::Caller, ThreadRole::Lane("writer".into())], Vec::new())
            .with_checkpoints(true);
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
                checkpoints: Some((2, 900_000)),
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
            ("sqlite.checkpoints", 2),
            ("sqlite.checkpoint_ns", 900_000),
        ];
        assert_eq!(named, expect.map(|(k, v)| (k.to_owned(), v)));
    }
}
