//! CPU that adds up: in every block of a real decomposition the process's
//! CPU (every thread) is at least the caller's, and per lane at least each
//! thread role's. The process's readings enclose the callers' own, and
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
    // Per lane, the process's median against each role's (a lane's own
    // thread hands its readings in just outside the process's window, so
    // a block may not order them; its typical block does).
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result")).expect("json");
    for (lane, roles) in result["cpu_us_per_op"].as_object().expect("cpu") {
        let process = roles["process"].as_f64().expect("process");
        for (role, cpu) in roles.as_object().expect("roles") {
            let cpu = cpu.as_f64().expect("cpu");
            assert!(process >= cpu, "{lane}: process {process:.3} µs/op < {role} {cpu:.3}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
