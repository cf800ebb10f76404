//! The run directory's lock: a second run is refused naming the holder, and
//! a lock this process held a moment ago (a forked child still sharing the
//! open file until it execs) is waited out rather than refused.

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Duration;

use hopscope_harness::RunError;
use hopscope_harness::rundir::{LOCK_FILE, lock};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-rundir-lock-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Hold `dir`'s lock through an open file of our own, as a forked child
/// would, recording `holder` as the holder.
fn hold(dir: &std::path::Path, holder: &str) -> std::fs::File {
    std::fs::create_dir_all(dir).expect("dir");
    let mut file = OpenOptions::new().create(true).truncate(true).write(true).open(dir.join(LOCK_FILE)).expect("open");
    file.lock().expect("lock");
    write!(file, "{holder}").expect("write holder");
    file
}

#[test]
fn a_lock_our_own_process_releases_soon_is_waited_for() {
    let _turn = crate::common::serial();
    let dir = temp_dir("own");
    let held = hold(&dir, &std::process::id().to_string());
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(60));
        drop(held);
    });
    let got = lock(&dir);
    release.join().expect("release thread");
    assert!(got.is_ok(), "refused: {:?}", got.err());
}

#[test]
fn a_lock_another_process_holds_is_refused_naming_it() {
    let _turn = crate::common::serial();
    let dir = temp_dir("other");
    let _held = hold(&dir, "4242");
    let started = std::time::Instant::now();
    let err = lock(&dir).expect_err("busy");
    assert!(matches!(&err, RunError::Busy { holder, .. } if holder == "pid 4242"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(500), "it waited for another process");
}
