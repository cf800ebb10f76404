//! Runs another process crowded. hopscope refuses to save a baseline or
//! draw a verdict from a run whose CPUs another process held (by design:
//! `tests/contention.rs`); a test of a flow that needs saved baselines and
//! verdicts starts it again, afresh, when that happened.

use std::process::Output;
use std::time::Duration;

/// Whether a hopscope command's output says another process held its
/// CPUs (a baseline then not saved, a verdict refused).
pub fn crowded(out: &Output) -> bool {
    let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).contains("another process held");
    said(&out.stdout) || said(&out.stderr)
}

/// Run `flow` (given its attempt, from 1, to make a fresh directory of) up
/// to `attempts` times until it completes: it returns false when a run in
/// it was crowded, having asserted nothing past that run. A crowded moment
/// lasts seconds, so each new attempt waits 3 s. Whether one attempt
/// completed.
pub fn until_uncrowded(attempts: u32, mut flow: impl FnMut(u32) -> bool) -> bool {
    (1..=attempts).any(|attempt| {
        let done = flow(attempt);
        if !done {
            eprintln!("attempt {attempt}: another process held a run's CPUs; again in 3 s");
            std::thread::sleep(Duration::from_secs(3));
        }
        done
    })
}
