//! The harness's caller threads: every call into a lane's code (open, reset,
//! the block itself, hand-in, count) runs on one of them, with a deadline,
//! and a panic there is caught and described rather than printed. The
//! thread that drives the run only waits, so a lane that panics, fails or
//! blocks stops the run cleanly, with what was measured before kept.
//!
//! A caller that misses its deadline is left running (a thread cannot be
//! stopped from outside) and is detached when the callers are dropped.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::error::Failure;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// One caller thread: where its jobs go, and the thread.
type CallerThread = (Option<Sender<Job>>, Option<JoinHandle<()>>);

/// The caller threads of one run.
pub(crate) struct Callers {
    threads: Vec<CallerThread>,
    /// A call missed its deadline: its thread may never return.
    stuck: bool,
}

thread_local! {
    /// Set on the harness's caller threads: their panics are described by
    /// the run's error, not printed by the default hook.
    static IS_CALLER: Cell<bool> = const { Cell::new(false) };
    /// The last panic on this caller thread, with where it was raised.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Route panics on caller threads into [`LAST_PANIC`]; every other
/// thread's panics go to the hook that was installed before.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IS_CALLER.with(Cell::get) {
                let payload = info.payload();
                let message = payload
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("(a panic without a message)");
                let text = match info.location() {
                    Some(at) => format!("{message} (at {}:{}:{})", at.file(), at.line(), at.column()),
                    None => message.to_owned(),
                };
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

/// Run `f` on the calling thread (not a caller thread: no deadline), a
/// panic caught and described as on a caller thread.
pub(crate) fn here<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    install_panic_hook();
    let was = IS_CALLER.with(|c| c.replace(true));
    let result = catching(f);
    IS_CALLER.with(|c| c.set(was));
    result
}

/// Run `f`, turning a panic into its description.
pub(crate) fn catching<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| Failure::Panicked { message: describe(&*payload) })
}

fn describe(payload: &(dyn Any + Send)) -> String {
    if let Some(described) = LAST_PANIC.with(|last| last.borrow_mut().take()) {
        return described;
    }
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "(a panic without a message)".to_owned(),
    }
}

impl Callers {
    /// Start `n` caller threads, each with a mark buffer of `capacity`.
    pub(crate) fn spawn(n: usize, capacity: usize) -> std::io::Result<Callers> {
        install_panic_hook();
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx): (Sender<Job>, Receiver<Job>) = crossbeam_channel::unbounded();
            let handle = std::thread::Builder::new().name(format!("hopscope-caller-{i}")).spawn(move || {
                IS_CALLER.with(|c| c.set(true));
                hopscope_probe::local::attach(capacity);
                for job in rx {
                    job();
                }
            })?;
            threads.push((Some(tx), Some(handle)));
        }
        Ok(Callers { threads, stuck: false })
    }

    /// Whether a call missed its deadline (the run must stop).
    #[cfg(test)]
    pub(crate) fn stuck(&self) -> bool {
        self.stuck
    }

    /// Run `f` on caller `caller` and wait for it at most `deadline`.
    #[cfg(test)]
    pub(crate) fn call<R: Send + 'static>(
        &mut self,
        caller: usize,
        deadline: Duration,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, Failure> {
        let mut results = self.call_each(vec![(caller, Box::new(f) as Box<dyn FnOnce() -> R + Send>)], deadline)?;
        results.pop().ok_or_else(|| Failure::Panicked { message: "a caller thread returned nothing".to_owned() })
    }

    /// Run each `(caller, job)` on its caller thread, all at once, and
    /// wait for every one within `deadline`; results in the jobs' order.
    pub(crate) fn call_each<R: Send + 'static>(
        &mut self,
        jobs: Vec<(usize, Box<dyn FnOnce() -> R + Send>)>,
        deadline: Duration,
    ) -> Result<Vec<R>, Failure> {
        let until = Instant::now() + deadline;
        let (done, results) = crossbeam_channel::unbounded::<(usize, Result<R, Failure>)>();
        let n = jobs.len();
        for (slot, (caller, job)) in jobs.into_iter().enumerate() {
            let done = done.clone();
            let sender = self.threads.get(caller).and_then(|(tx, _)| tx.as_ref());
            let Some(sender) = sender else {
                return Err(Failure::Panicked { message: format!("no caller thread {caller}") });
            };
            let wrapped: Job = Box::new(move || {
                let _ = done.send((slot, catching(job)));
            });
            if sender.send(wrapped).is_err() {
                return Err(Failure::Panicked { message: format!("caller thread {caller} has ended") });
            }
        }
        drop(done);
        let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
        for _ in 0..n {
            let left = until.saturating_duration_since(Instant::now());
            match results.recv_timeout(left) {
                Ok((slot, Ok(r))) => out[slot] = Some(r),
                Ok((_, Err(failure))) => return Err(self.after_failure(failure, &results, n, until)),
                Err(RecvTimeoutError::Timeout) => {
                    self.stuck = true;
                    return Err(Failure::Deadline { limit: deadline });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Panicked { message: "a caller thread ended mid-call".to_owned() });
                }
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// After one job failed, wait (within the deadline) for the others of
    /// the same call so no caller is still inside the lane when the run
    /// moves on; a caller that does not return makes the run stuck.
    fn after_failure<R>(
        &mut self,
        failure: Failure,
        results: &Receiver<(usize, Result<R, Failure>)>,
        n: usize,
        until: Instant,
    ) -> Failure {
        for _ in 1..n {
            if results.recv_deadline(until).is_err() {
                self.stuck = true;
                break;
            }
        }
        failure
    }
}

impl Drop for Callers {
    fn drop(&mut self) {
        for (tx, _) in &mut self.threads {
            tx.take();
        }
        for (_, handle) in &mut self.threads {
            if let Some(handle) = handle.take()
                && !self.stuck
            {
                let _ = handle.join();
            }
            // A stuck caller's handle is dropped: the thread is detached.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_failure_with_its_message_and_place() {
        let mut callers = Callers::spawn(1, 16).expect("callers");
        let failure = callers.call(0, Duration::from_secs(10), || -> u32 { panic!("lane exploded") }).unwrap_err();
        let Failure::Panicked { message } = failure else { panic!("not a panic: {failure}") };
        assert!(message.contains("lane exploded") && message.contains("callers.rs"), "{message}");
        // The thread survives and serves the next call.
        assert_eq!(callers.call(0, Duration::from_secs(10), || 7).expect("second call"), 7);
    }

    #[test]
    fn a_call_past_its_deadline_is_left_behind() {
        let mut callers = Callers::spawn(1, 16).expect("callers");
        let started = Instant::now();
        let failure =
            callers.call(0, Duration::from_millis(100), || std::thread::sleep(Duration::from_secs(3600))).unwrap_err();
        assert!(matches!(failure, Failure::Deadline { .. }), "{failure}");
        assert!(callers.stuck());
        drop(callers);
        assert!(started.elapsed() < Duration::from_secs(60), "dropping waited for the stuck caller");
    }

    #[test]
    fn every_caller_runs_its_job_and_results_keep_their_order() {
        let mut callers = Callers::spawn(3, 16).expect("callers");
        let jobs: Vec<(usize, Box<dyn FnOnce() -> String + Send>)> = (0..3)
            .map(|c| {
                (
                    c,
                    Box::new(move || std::thread::current().name().unwrap_or("").to_owned())
                        as Box<dyn FnOnce() -> _ + Send>,
                )
            })
            .collect();
        let names = callers.call_each(jobs, Duration::from_secs(10)).expect("jobs");
        assert_eq!(names, ["hopscope-caller-0", "hopscope-caller-1", "hopscope-caller-2"]);
    }
}
