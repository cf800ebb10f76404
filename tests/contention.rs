//! A run beside a CPU hog, through the command line as a user meets it: a
//! busy loop pinned to the core the run's threads share, so the writer
//! waits for a CPU another thread holds. The run must say it was contended
//! (headline, `result.json`, `history`), refuse to become a baseline, and
//! give no verdict against one — all with exit status 5.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod common;
use common::{hopscope_indexed, temp_dir};
use hopscope_testkit::output_text as text;

/// A thread that spins on the first CPU the process may use (the core a
/// `same-core` run pins both its threads to) until dropped.
struct Hog {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start() -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            assert!(hopscope_harness::placement::pin_current(0), "the hog could not be pinned");
            while !flag.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        Hog { stop, thread: Some(thread) }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_run_beside_a_cpu_hog_is_named_contended_and_judges_nothing() {
    if hopscope_harness::sched::thread_run_queue_ns().is_none() {
        // CI turns the statistics on (.ci/run) and says so: there the
        // test must run.
        assert!(
            std::env::var_os("HOPSCOPE_REQUIRE_RUN_QUEUE").is_none(),
            "the kernel keeps no run-queue delay, and this run requires it"
        );
        eprintln!("skipped: the kernel keeps no run-queue delay (sysctl -w kernel.task_delayacct=1)");
        return;
    }
    let root = temp_dir("hog");
    let run = |out: &str, extra: &[&str]| {
        let dir = root.join(out);
        let mut args = vec!["decompose", "--quick", "--ops", "20", "--samples", "4", "--passes", "2", "--warmup", "1"];
        args.extend_from_slice(&["--placement", "same-core"]);
        args.extend_from_slice(extra);
        args.extend(["--out", dir.to_str().expect("utf-8")]);
        hopscope_indexed(&root, &args)
    };
    // The baseline, on the machine as the test found it.
    let quiet = run("quiet", &["--save-baseline", "main"]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert!(text(&quiet).contains("baseline: main = run #1"), "{}", text(&quiet));

    let hogged = {
        let _hog = Hog::start();
        run("hogged", &["--baseline", "main", "--save-baseline", "main"])
    };
    let out = text(&hogged);
    assert_eq!(hogged.status.code(), Some(5), "{out}");
    assert!(out.contains("baseline: main not saved: another process held this run's CPUs"), "{out}");
    assert!(
        out.contains("change:  drift-suspected (no verdict: another process held a run's CPUs) against main"),
        "{out}"
    );
    assert!(out.contains("contended: another process held this run's CPUs"), "the terminal says it too: {out}");

    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("hogged/result.json")).expect("result")).expect("json");
    let contention = &result["contention"];
    assert_eq!(contention["contended"], true, "{contention}");
    let receipt = std::fs::read_to_string(root.join("hogged/receipt.md")).expect("receipt");
    assert!(receipt.contains("**Contended:** another process held this run's CPUs"), "{receipt}");
    let change: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("hogged/change.json")).expect("change")).expect("json");
    assert_eq!(change["verdict"], "drift-suspected");
    // The contended run named with what it waited, as data.
    let waited = &change["contended"][0]["waited"];
    assert!(waited["contended_rounds"].as_u64().is_some_and(|n| n > 0) && waited["lane"].is_string(), "{change}");
    let said = std::fs::read_to_string(root.join("hogged/change.md")).expect("change.md");
    assert!(said.contains("another process held this run's CPUs"), "{said}");

    // The baseline still names the quiet run; history marks the other.
    let history = text(&hopscope_indexed(&root, &["history"]));
    let row = |id: &str| history.lines().find(|l| l.starts_with(&format!("| #{id} "))).unwrap_or_default().to_owned();
    assert!(row("1").contains("| main |") && !row("1").contains("contended"), "{history}");
    assert!(row("2").contains("**contended**"), "{history}");
    let again = hopscope_indexed(&root, &["compare", "main", "#2"]);
    assert_eq!(again.status.code(), Some(5), "compare gives no verdict either: {}", text(&again));
    let _ = std::fs::remove_dir_all(&root);
}
