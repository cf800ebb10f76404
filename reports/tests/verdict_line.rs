//! An A/B verdict's line says which way and by how much, and what decided
//! it: two `ab --builds` runs of kv-writer (a 75 ns chain compiled into
//! one slice), one decided by its flagged slices, one by the lane.

use hopscope_analyze::experiment::Experiment;
use hopscope_reports::receipt::experiment::{markdown, resolution_line, verdict_line};

fn run(name: &str) -> Experiment {
    let path = format!("{}/tests/fixtures/ab-builds-{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("an ab.json")
}

#[test]
fn a_reproduced_verdict_says_its_direction_its_size_and_what_decided_it() {
    let by_slices = run("by-slices");
    assert_eq!(
        verdict_line(&by_slices),
        "reproduced: B slower than A by +0.062 µs per operation (as its flagged slices account for it, 95% CI \
         +0.055…+0.070); the lane's own trimmed mean -0.014 (99% CI -0.049…+0.020)"
    );
    let by_lane = run("by-lane");
    assert_eq!(
        verdict_line(&by_lane),
        "reproduced: B slower than A by +0.037 µs per operation (the lane, its trimmed mean over passes); its \
         flagged slices account for +0.076"
    );
    // The same run, had the rest of the operation not moved and the lane's
    // CI held the slices' sum: the slices' estimate, the narrower, stated.
    let mut explained = by_lane.clone();
    let outcome = &mut explained.outcome;
    outcome.estimate = None;
    outcome.by_slices.as_mut().expect("an account").rest_ci_us = [-0.065, 0.020];
    outcome.across.as_mut().expect("across").delta.ci = [0.007, 0.090];
    assert_eq!(
        verdict_line(&explained),
        "reproduced: B slower than A by +0.076 µs per operation (as its flagged slices account for it, 95% CI \
         +0.072…+0.080); the lane's own trimmed mean +0.037 (99% CI +0.007…+0.090)"
    );
    let resolution = resolution_line(&by_lane).expect("a resolution");
    assert!(resolution.starts_with("Resolution: this run could tell a lane change of ±29.8 ns"), "{resolution}");
    let md = markdown(&by_slices);
    assert!(md.contains("**Verdict: reproduced: B slower than A by +0.062 µs"), "{md}");
    assert!(md.contains("judged by its slices"), "{md}");
}

#[test]
fn waits_on_a_batch_flagged_beside_the_step_that_changed_are_said_as_its_knock_on() {
    use hopscope_analyze::join::Sharing;
    use hopscope_reports::receipt::experiment::knock_on_line;
    let mut e = run("by-slices");
    assert_eq!(knock_on_line(&e), None, "no wait flagged: nothing to say");
    let v = e.slices.as_mut().expect("slice verdicts");
    let mut wait = v.changed().next().expect("a flagged slice").clone();
    let step = wait.name.clone();
    wait.name = "executed→txn_close".into();
    wait.delta_ns = 341.0;
    wait.sharing = Sharing::Siblings;
    v.slices.push(wait);
    let line = knock_on_line(&e).expect("a wait flagged beside the step");
    assert!(
        line.starts_with("Of the flagged slices, `executed→txn_close` is the wait on the batch's others (+341.0 ns"),
        "{line}"
    );
    assert!(line.contains(&format!("they move with `{step}`")), "{line}");
    assert!(markdown(&e).contains(&line), "the receipt says it");
    // The sharing round-trips, and an own slice writes none.
    let json = serde_json::to_string(&e).expect("json");
    assert_eq!(json.matches("\"sharing\":\"siblings\"").count(), 1, "{json}");
}
