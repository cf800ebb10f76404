//! Two configurations of a user's own code judged as A/B arms by the same
//! verdict rules as `hopscope ab`: a program declares both as lanes and
//! runs with `--ab SPEC`, the spec naming them.

use crate::common;

use std::path::{Path, PathBuf};

use common::busy;
use hopscope_harness::{BoxError, ClosureLane, Harness, HarnessError, Lane};

/// A lane whose every operation busy-waits `ns`.
fn config(name: &str, ns: u64) -> ClosureLane<()> {
    Lane::subject(
        name,
        |_s| Ok::<_, BoxError>(()),
        move |_: &mut (), _op| {
            busy(ns);
            Ok::<_, BoxError>(())
        },
    )
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopscope-harness-ab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn spec(dir: &Path, b_lane: &str) -> PathBuf {
    let path = dir.join("batching.toml");
    let text = format!(
        r#"name = "one-or-two"
hypothesis = "the second configuration costs 2 µs more per operation"
[run]
ops = 50
samples = 12
pairs = 1
warmup = 1
[a]
lane = "one-per-wake"
[b]
lane = "{b_lane}"
[rule]
min_effect_pct = 10.0
min_effect_us = 0.5
max_control_drift_pct = 10.0
# Busy-wait arms are nearly noiseless (spreads of 0.0–0.8%), so the ratio
# of two spreads says nothing here; a real spec keeps the default 4.
max_spread_ratio = 1000.0
"#
    );
    std::fs::write(&path, text).expect("spec");
    path
}

fn harness(dir: &Path, spec: &Path) -> Harness {
    let out = dir.join("run");
    let args = ["program", "--ab", spec.to_str().expect("utf-8"), "--out", out.to_str().expect("utf-8")];
    Harness::try_from_args("ab-test", args)
        .expect("flags")
        .quiet()
        .lane(config("one-per-wake", 2_000))
        .lane(config("two-per-wake", 4_000))
}

#[test]
fn two_configurations_of_a_program_get_a_verdict_under_the_spec_s_rule() {
    let _turn = crate::common::serial();
    let dir = dir("verdict");
    let outcome = harness(&dir, &spec(&dir, "two-per-wake")).run().expect("run");
    let e = outcome.experiment.expect("an A/B verdict");
    assert_eq!(e.outcome.verdict.to_string(), "reproduced", "{:?}", e.outcome.reasons);
    assert_eq!(e.outcome.passes.len(), 2, "a→b then b→a");
    for pass in &e.outcome.passes {
        assert!(
            (pass.delta_us.median - 2.0).abs() < 0.5,
            "pass {}: Δ {:.3} µs for 2 µs",
            pass.pass,
            pass.delta_us.median
        );
    }
    assert!(e.arms["a"].contains("one-per-wake") && e.arms["b"].contains("two-per-wake"), "{:?}", e.arms);
    assert!(e.arms["control"].contains("one-per-wake-control"), "{:?}", e.arms);
    assert_eq!(e.name, "one-or-two");
    assert_eq!(e.rule.min_effect_pct, 10.0, "judged by the rule the spec fixed");
    for file in ["ab.json", "receipt.md", "report.html", "trace.hop"] {
        assert!(outcome.dir.join(file).exists(), "{file}");
    }
}

#[test]
fn a_spec_naming_an_undeclared_lane_is_refused_before_measuring() {
    let _turn = crate::common::serial();
    let dir = dir("undeclared");
    let err = harness(&dir, &spec(&dir, "three-per-wake")).run().expect_err("refused");
    assert!(matches!(err, HarnessError::Spec(_)));
    let line = err.to_string();
    assert!(
        line.contains("b.lane: `three-per-wake` is not a declared lane (declared: one-per-wake, two-per-wake)"),
        "{line}"
    );
    assert!(!dir.join("run").join("trace.hop").exists(), "nothing was measured");
}
