//! CPU that adds up: in every block of a real decomposition the process's
//! CPU (every thread) is at least the caller's, and per lane at least each
//! thread role's; one thread's CPU is not more than the block's wall time. The process's readings enclose the callers' own, and
//! what reading the process clock costs is not billed to the block.

use hopscope_probe::Trace;

mod common;
use common::{hopscope, ok, small_decompose_args, temp_dir};

#[test]
fn the_process_never_spends_less_cpu_than_any_of_its_threads() {
    let dir = temp_dir("cpu");
    ok(&hopscope(&small_decompose_args(&dir, &[])));
    let trace = Trace::read(&dir.join("trace.hop")).expect("trace");
    let key = |name: &str| trace.header.readings.iter().position(|r| r == name).map(|i| i as u16);
    let (caller, process) = (key("caller.cpu_ns").expect("caller"), key("process.cpu_ns").expect("process"));
    let reading = |b: &hopscope_probe::Block, k: u16| b.readings.iter().find(|r| r.key == k).map(|r| r.value);
    let mut blocks = 0;
    for b in &trace.blocks {
        let (Some(c), Some(p)) = (reading(b, caller), reading(b, process)) else { continue };
        let lane = &trace.header.lanes[usize::from(b.lane)];
        assert!(p >= c, "lane {lane}, pass {} sample {}: process {p} ns < caller {c} ns", b.pass, b.sample);
        blocks += 1;
    }
    assert!(blocks >= trace.blocks.len() / 2, "{blocks} of {} blocks had both readings", trace.blocks.len());
    // One thread that works the whole block spends no more CPU than the
    // block's wall time: the caller's CPU window holds the timed one and
    // the clock's own reading, which is taken off (before, the readings'
    // syscalls put inline's CPU ~1.1 µs per block above its wall time).
    let inline = trace.header.lane("inline").expect("an inline lane");
    let mut process_excess = Vec::new();
    let ns_per_tick = trace.header.clock.ns_per_tick;
    let mut excess: Vec<f64> = trace
        .blocks
        .iter()
        .filter(|b| b.lane == inline)
        .filter_map(|b| {
            let wall = b.end.0.saturating_sub(b.start.0) as f64 * ns_per_tick;
            process_excess.push(reading(b, process)? as f64 - wall);
            Some(reading(b, caller)? as f64 - wall)
        })
        .collect();
    excess.sort_by(f64::total_cmp);
    let median = excess[excess.len() / 2];
    // What remains is a cold CPU-clock syscall costing more than the warm
    // one priced at start-up, and the kernel's CPU clock running a little
    // ahead: 1.0–1.4 µs per block here (against CLOCK_MONOTONIC too, so
    // not hopscope's clock), 3.1 µs once on a CI host. So the bound is the
    // failure it guards against, priced on the host that runs the test: a
    // reading's syscalls inside the window, of which the cheapest is one
    // schedstat file read (9–25 µs in a debug build; the old order put
    // 1.9 µs of a release build's in).
    let bound = schedstat_read_ns().max(3_000.0);
    assert!(
        median <= bound,
        "inline's caller CPU exceeds its wall time by {median:.0} ns in the median block, more than one schedstat read ({bound:.0} ns)"
    );
    // The process's excess over wall time is not held to a bound: on a
    // busy CI host its legitimate part (the process clock's readings,
    // which list every thread) read 49.5 µs in the median block, inside
    // the 54–81 µs the failure it would guard (the caller's own sampling
    // left in) reads here. The per-lane check below holds the process's
    // figure against each role's instead.
    let _ = process_excess;
    // Per lane, the process's median against each role's. A lane's own
    // thread hands its readings in just outside the process's window, and
    // its reading holds the CPU of its wake for the hand-in, which the
    // process's window does not: a CI host once read the handoff lane's
    // writer 0.18 µs/op above the process (3.511 against 3.333, a slow
    // wake spread over a block's operations). The failure guarded against
    // is a process figure missing a thread, the thread's whole CPU below.
    // The wake is once per block, so its slack is per block, spread over
    // the block's operations: a clean CI run once read the handoff lane's
    // writer 0.64 µs/op above its process at 20 operations a block (13 µs
    // of one wake of a halted vCPU), where 0.5 µs/op had been allowed. A
    // writer lane missing its writer thread still reads 17–22 µs/op below.
    const HAND_IN_WAKE_US: f64 = 50.0;
    let ops_per_block = {
        let mut ops: Vec<u64> = trace.blocks.iter().map(|b| b.op_count).collect();
        ops.sort_unstable();
        ops[ops.len() / 2].max(1) as f64
    };
    let slack = (HAND_IN_WAKE_US / ops_per_block).max(0.5);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
    for (lane, roles) in result["cpu_us_per_op"].as_object().expect("cpu") {
        let process = roles["process"].as_f64().expect("process");
        for (role, cpu) in roles.as_object().expect("roles") {
            let cpu = cpu.as_f64().expect("cpu");
            assert!(
                process + slack >= cpu,
                "{lane}: process {process:.3} µs/op < {role} {cpu:.3} (less a wake per block: {slack:.2} µs/op)"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What one read of the calling thread's schedstat file costs here, ns (the
/// median of 51): the cheapest of the readings a block's CPU window must
/// keep out.
fn schedstat_read_ns() -> f64 {
    let mut costs: Vec<f64> = (0..51)
        .map(|_| {
            let start = std::time::Instant::now();
            let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
            std::hint::black_box(text);
            start.elapsed().as_nanos() as f64
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    costs[costs.len() / 2]
}
