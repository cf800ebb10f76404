//! Per-block readings: CPU time and context switches of the caller, the
//! lane's own thread and the process, and the perf-event counters a run
//! recorded, each under a key the trace header names.

use hopscope_probe::Reading;
use hopscope_probe::counters::Counter;

use crate::cpu::ThreadSample;

/// Reading keys every block carries first, in this order; then
/// `caller.<counter>` and `writer.<counter>` for each counter the host
/// supports (see [`hopscope_probe::counters`]).
pub const READINGS: [&str; 6] = [
    "caller.cpu_ns",
    "writer.cpu_ns",
    "process.cpu_ns",
    "caller.ctx_switches",
    "writer.ctx_switches",
    "process.ctx_switches",
];

/// Where each reading goes in the trace header's reading list.
pub(crate) struct ReadingKeys {
    counters: Vec<Counter>,
}

impl ReadingKeys {
    /// Keys for the fixed readings and `counters`.
    pub(crate) fn new(counters: Vec<Counter>) -> ReadingKeys {
        ReadingKeys { counters }
    }

    /// The names the header declares, in key order.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = READINGS.iter().map(|r| (*r).to_owned()).collect();
        for role in ["caller", "writer"] {
            names.extend(self.counters.iter().map(|c| format!("{role}.{}", c.name())));
        }
        names
    }

    /// A block's readings from its caller and worker samples.
    pub(crate) fn readings(
        &self,
        caller: &ThreadSample,
        worker: Option<&ThreadSample>,
        process_cpu: u64,
        process_ctx_switches: u64,
    ) -> Vec<Reading> {
        let mut readings = vec![
            Reading { key: 0, value: caller.cpu_ns },
            Reading { key: 2, value: process_cpu },
            Reading { key: 3, value: caller.ctx_switches },
            Reading { key: 5, value: process_ctx_switches },
        ];
        if let Some(worker) = worker {
            readings.push(Reading { key: 1, value: worker.cpu_ns });
            readings.push(Reading { key: 4, value: worker.ctx_switches });
        }
        let base = READINGS.len();
        for (role, sample) in [(0, Some(caller)), (1, worker)] {
            let Some(sample) = sample else { continue };
            for (c, value) in &sample.counters {
                if let Some(i) = self.counters.iter().position(|k| k == c) {
                    let key = base + role * self.counters.len() + i;
                    readings.push(Reading { key: key as u16, value: *value });
                }
            }
        }
        readings.sort_by_key(|r| r.key);
        readings
    }
}
