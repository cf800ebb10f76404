//! The bookkeeping of a virtual speedup, without timing: what is owed,
//! who pays, who inherits. How well a speedup predicts a real one is a
//! measurement (`cargo bench -p hopscope-probe --features what-if --bench
//! whatif`), not a test.

use std::sync::Mutex;

use super::*;

/// One experiment at a time: the speedup is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn edges() -> Vec<(Hop, Hop)> {
    vec![(Hop::SENT, Hop::WOKE), (Hop::REPLIED, Hop::RECEIVED)]
}

fn paid() -> u64 {
    PAID.with(Cell::get).1
}

#[test]
fn each_pass_of_the_slice_s_end_adds_its_delay_and_the_passing_thread_owes_nothing() {
    let _serial = serial();
    start(&Speedup { end: Hop::EXECUTED, delay_ns: 1_000.0, edges: edges() }).expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    assert!(delay > 0);
    on_mark(OpId(1), Hop::WOKE);
    assert_eq!(owed(), 0, "other hops add nothing");
    on_mark(OpId(1), Hop::EXECUTED);
    on_mark(OpId(2), Hop::EXECUTED);
    assert_eq!(owed(), 2 * delay);
    assert_eq!(paid(), 2 * delay, "its own passes are paid for");
    assert_eq!(stop(), 2 * delay, "stop says what was inserted");
    // Stopped: marks do nothing.
    on_mark(OpId(3), Hop::EXECUTED);
    assert_eq!(owed(), 2 * delay);
}

#[test]
fn another_thread_pays_at_its_next_mark_unless_woken_by_a_thread_that_paid() {
    let _serial = serial();
    start(&Speedup { end: Hop::EXECUTED, delay_ns: 2_000.0, edges: edges() }).expect("start");
    let delay = DELAY.load(Ordering::Relaxed);
    // A thread that marked before the pass and marks again after it pays
    // (busy-waits) what the pass added.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (ready, is_ready) = std::sync::mpsc::channel::<()>();
    let paying = std::thread::spawn(move || {
        on_mark(OpId(10), Hop::ENTER);
        let before = paid();
        ready.send(()).expect("ready");
        wait.recv().expect("go");
        on_mark(OpId(10), Hop::BUILT);
        (before, paid())
    });
    is_ready.recv().expect("ready");
    on_mark(OpId(0), Hop::EXECUTED);
    go.send(()).expect("go");
    assert_eq!(paying.join().expect("thread"), (0, delay));
    assert_eq!(spun(), delay, "it spun what it owed");
    // A caller that marked before the writer's pass, then waits for the
    // reply: woken by it, it inherits what the writer had paid.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (ready, is_ready) = std::sync::mpsc::channel::<()>();
    let caller = std::thread::spawn(move || {
        on_mark(OpId(1), Hop::SENT);
        ready.send(()).expect("ready");
        wait.recv().expect("reply");
        on_mark(OpId(1), Hop::RECEIVED);
        paid()
    });
    is_ready.recv().expect("ready");
    on_mark(OpId(1), Hop::EXECUTED);
    on_mark(OpId(1), Hop::REPLIED);
    assert_eq!(SLOT[1].load(Ordering::Relaxed), 2 * delay, "the reply carries what the writer paid");
    go.send(()).expect("reply");
    assert_eq!(caller.join().expect("caller"), 2 * delay, "inherited");
    assert_eq!(spun(), delay, "the woken caller spun nothing");
    stop();
}

#[test]
fn an_experiment_refuses_a_second_one_and_hops_it_cannot_name() {
    let _serial = serial();
    let speedup = Speedup { end: Hop::EXECUTED, delay_ns: 100.0, edges: edges() };
    start(&speedup).expect("start");
    assert_eq!(start(&speedup), Err(WhatIfError::Running));
    stop();
    let far = Speedup { end: Hop(64), ..speedup.clone() };
    assert_eq!(start(&far), Err(WhatIfError::HopOutOfRange(64)));
    let edge = Speedup { edges: vec![(Hop(70), Hop::WOKE)], ..speedup };
    assert_eq!(start(&edge), Err(WhatIfError::HopOutOfRange(70)));
}
