//! `hop!` follows the `enabled` feature: records with it, vanishes without.
//!
//! `cargo test --workspace` builds the probe without `enabled`; `.ci/run`
//! also runs `cargo test -p hopscope-probe --features enabled`.

use hopscope_probe::{ENABLED, Hop, OpId, hop, local, serves};

fn on_fresh_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().expect("test thread")
}

#[cfg(not(feature = "enabled"))]
#[test]
fn without_the_feature_hop_records_nothing_and_evaluates_nothing() {
    const { assert!(!ENABLED) };
    let (drained, evaluated) = on_fresh_thread(|| {
        local::attach(8);
        let mut evaluated = 0;
        for i in 0..4 {
            hop!(
                {
                    evaluated += 1;
                    OpId(i)
                },
                Hop::SENT
            );
            serves!(OpId(99), {
                evaluated += 1;
                OpId(i)
            });
        }
        (local::drain(), evaluated)
    });
    assert!(drained.marks.is_empty());
    assert_eq!(drained.dropped, 0);
    assert_eq!(evaluated, 0, "arguments of a disabled hop! must not run");
}

#[cfg(feature = "enabled")]
#[test]
fn with_the_feature_hop_records_each_mark() {
    const { assert!(ENABLED) };
    let drained = on_fresh_thread(|| {
        local::attach(8);
        for i in 0..4 {
            hop!(OpId(i), Hop::SENT);
            serves!(OpId(99), OpId(i));
        }
        local::drain()
    });
    assert_eq!(drained.marks.len(), 8);
    assert!(drained.marks.iter().step_by(2).all(|m| m.hop == Hop::SENT));
    let links: Vec<_> = drained.marks.iter().filter_map(|m| m.link().map(|shared| (m.op.0, shared.0))).collect();
    assert_eq!(links, [(0, 99), (1, 99), (2, 99), (3, 99)]);
}
