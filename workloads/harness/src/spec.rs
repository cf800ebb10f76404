//! Experiment specs: a TOML file that fixes an A/B experiment — its two
//! arms, its sizes and its decision rule — before any data exists. Parsing
//! refuses every mistake before measuring, in one line naming the field.
//!
//! ```toml
//! name = "batching"
//! hypothesis = "Batching two writes per wake saves at least 5% per write."
//! [run]            # optional; these are the defaults
//! ops = 200
//! samples = 30
//! pairs = 1        # pairs of passes: a→b, then b→a
//! warmup = 3
//! placement = "same-core"
//! probed = false   # run the arms' probed builds (slices per arm)
//! [a]
//! lane = "one-per-wake"
//! [b]
//! lane = "two-per-wake"
//! [rule]
//! min_effect_pct = 5.0
//! min_effect_us = 0.3
//! max_control_drift_pct = 3.0
//! ```
//!
//! A program's arms name its declared lanes (`lane = "..."`); hopscope's own
//! `ab` command also reads the reference writer's knobs from an arm's table
//! and a `shape`. The spec text and its SHA-256 go into the trace, so a
//! later re-analysis judges by the rule as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hopscope_analyze::ab::Rule;
use hopscope_probe::{RunFact, RunFacts};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::placement::Placement;
use crate::plan::{Order, Plan};

/// Largest spec file read: far above any real spec.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// A spec as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: String,
    hypothesis: String,
    shape: Option<String>,
    #[serde(default)]
    run: RunSection,
    a: toml::Table,
    b: toml::Table,
    #[serde(default)]
    control: ControlSection,
    rule: Rule,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RunSection {
    /// Operations per block; absent: [`DEFAULT_SPEC_OPS`], grown so each
    /// of several callers gets at least [`crate::MIN_OPS_PER_CALLER`].
    ops: Option<u64>,
    samples: u32,
    pairs: u32,
    warmup: u32,
    placement: String,
    probed: bool,
}

/// Operations per block of a spec that gives none (each of several
/// callers still gets at least [`crate::MIN_OPS_PER_CALLER`]).
pub(crate) const DEFAULT_SPEC_OPS: u64 = 200;

impl Default for RunSection {
    fn default() -> Self {
        RunSection { ops: None, samples: 30, pairs: 1, warmup: 3, placement: "same-core".into(), probed: false }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ControlSection {
    enabled: bool,
}

impl Default for ControlSection {
    fn default() -> Self {
        ControlSection { enabled: true }
    }
}

/// A spec that parsed, with its rule checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentSpec {
    /// The experiment's name.
    pub name: String,
    /// The hypothesis, as written before the run.
    pub hypothesis: String,
    /// Where the spec was read from.
    pub path: PathBuf,
    /// SHA-256 of the text, lower-case hex.
    pub sha256: String,
    /// The text.
    pub text: String,
    /// The workload shape, for programs that have shapes (hopscope's `ab`).
    pub shape: Option<String>,
    /// The arms' tables, as written: `a` and `b`.
    pub arms: [(String, toml::Table); 2],
    /// Whether an inert second copy of arm A runs as the control.
    pub control: bool,
    /// Run the arms' probed builds.
    pub probed: bool,
    /// Sizes and order of the run (flipped passes, `2 × pairs` of them).
    pub plan: Plan,
    /// The decision rule.
    pub rule: Rule,
}

/// A spec that cannot be used, with the file and the field named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec {}: {reason}", path.display())]
pub struct SpecError {
    /// The spec file.
    pub path: PathBuf,
    /// What is wrong, in one line.
    pub reason: String,
}

impl ExperimentSpec {
    /// Read and parse the spec at `path` (at most [`MAX_SPEC_BYTES`]).
    pub fn load(path: &Path) -> Result<ExperimentSpec, SpecError> {
        let fail = |reason: String| SpecError { path: path.to_owned(), reason };
        let size = std::fs::metadata(path).map_err(|e| fail(format!("cannot read: {e}")))?.len();
        if size > MAX_SPEC_BYTES {
            return Err(fail(format!("{size} bytes, more than a spec may hold ({MAX_SPEC_BYTES})")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        ExperimentSpec::parse(path, &text)
    }

    /// Parse `text` (read from `path`, named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<ExperimentSpec, SpecError> {
        let fail = |reason: String| SpecError { path: path.to_owned(), reason };
        let file: SpecFile = toml::from_str(text).map_err(|e| fail(one_line(&e, text)))?;
        file.rule.check().map_err(|e| fail(e.to_string()))?;
        let placement: Placement = file
            .run
            .placement
            .parse()
            .map_err(|e: crate::placement::UnknownPlacement| fail(format!("run.placement: {e}")))?;
        if file.run.ops == Some(0) || file.run.samples == 0 || file.run.pairs == 0 {
            return Err(fail("run.ops, run.samples and run.pairs must all be at least 1".to_owned()));
        }
        let passes = file.run.pairs.checked_mul(2).ok_or_else(|| fail("run.pairs is too large".to_owned()))?;
        let plan = Plan {
            ops_per_block: file.run.ops.unwrap_or(DEFAULT_SPEC_OPS),
            samples: file.run.samples,
            passes,
            warmup_blocks: file.run.warmup,
            order: Order::FlipEachPass,
            placement,
            // Pre-registered: the spec's size, whatever the callers; a spec
            // that gives none has blocks sized for its callers.
            ops_per_caller: if file.run.ops.is_some() { None } else { Some(crate::MIN_OPS_PER_CALLER) },
            fixed_samples: true,
            ..Plan::careful()
        };
        plan.check().map_err(|e| fail(format!("run: {e}")))?;
        Ok(ExperimentSpec {
            name: file.name,
            hypothesis: file.hypothesis,
            path: path.to_owned(),
            sha256: sha256_hex(text),
            text: text.to_owned(),
            shape: file.shape,
            arms: [("a".to_owned(), file.a), ("b".to_owned(), file.b)],
            control: file.control.enabled,
            probed: file.run.probed,
            plan,
            rule: file.rule,
        })
    }

    /// The lane an arm names (`lane = "..."`), refusing any other field.
    pub fn arm_lane(&self, arm: usize) -> Result<&str, SpecError> {
        let name = &self.arms[arm.min(1)].0;
        let missing = format!("{name}: no `lane = \"...\"` naming a declared lane");
        self.named_lane(arm)?.ok_or_else(|| SpecError { path: self.path.clone(), reason: missing })
    }

    /// The lane an arm names, if it names one; any field but `lane` is
    /// refused (an arm of a program's spec, or of `ab --builds`, only
    /// picks a lane).
    pub fn named_lane(&self, arm: usize) -> Result<Option<&str>, SpecError> {
        let (name, table) = &self.arms[arm.min(1)];
        let fail = |reason: String| SpecError { path: self.path.clone(), reason };
        if let Some(other) = table.keys().find(|k| *k != "lane") {
            return Err(fail(format!("{name}.{other}: an arm names a lane (`lane = \"...\"`) only")));
        }
        match table.get("lane") {
            Some(toml::Value::String(lane)) => Ok(Some(lane)),
            Some(other) => Err(fail(format!("{name}.lane: a lane name in quotes, not `{other}`"))),
            None => Ok(None),
        }
    }

    /// What the trace header records about the spec, so a re-analysis can
    /// use the rule as it was and detect a later edit.
    pub fn meta(&self) -> BTreeMap<String, String> {
        let mut meta = BTreeMap::new();
        meta.record(RunFact::SpecName, self.name.clone());
        meta.record(RunFact::SpecPath, self.path.display().to_string());
        meta.record(RunFact::SpecSha256, self.sha256.clone());
        meta.record(RunFact::SpecHypothesis, self.hypothesis.clone());
        meta.record(RunFact::SpecText, self.text.clone());
        meta
    }
}

/// SHA-256 of `text`, lower-case hex.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A TOML error as one line: `line N: message (`the line`)`.
fn one_line(err: &toml::de::Error, text: &str) -> String {
    let message = err.message().replace('\n', " ");
    match err.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let source = text.lines().nth(line - 1).unwrap_or_default().trim();
            format!("line {line}: {message} (`{source}`)")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
hypothesis = "h"
[a]
lane = "v1"
[b]
lane = "v2"
[rule]
min_effect_pct = 3.0
min_effect_us = 0.2
max_control_drift_pct = 3.0
"#;

    fn parse(text: &str) -> Result<ExperimentSpec, SpecError> {
        ExperimentSpec::parse(Path::new("exp.toml"), text)
    }

    #[test]
    fn a_good_spec_becomes_flipped_passes_and_names_its_lanes() {
        let spec = parse(GOOD).expect("parses");
        assert_eq!((&spec.plan.order, spec.plan.passes, spec.control), (&Order::FlipEachPass, 2, true));
        assert_eq!((spec.arm_lane(0).expect("a"), spec.arm_lane(1).expect("b")), ("v1", "v2"));
        assert_eq!(spec.sha256.len(), 64);
        assert!(spec.meta()["spec.text"].contains("v2"));
    }

    #[test]
    fn a_spec_without_ops_sizes_blocks_for_its_callers_and_one_with_ops_stands() {
        let sized = parse(GOOD).expect("parses").plan;
        assert_eq!((sized.ops_per_block, sized.ops_for(1), sized.ops_for(6)), (200, 200, 600));
        let given = parse(&format!("{GOOD}[run]\nops = 200\n")).expect("parses").plan;
        assert_eq!(given.ops_for(6), 200, "the spec's own size stands");
        assert!(parse(&format!("{GOOD}[run]\nops = 0\n")).is_err());
    }

    #[test]
    fn every_mistake_names_its_field_in_one_line() {
        let cases = [
            (GOOD.replace("min_effect_pct = 3.0", "min_effect_pct = \"five\""), "min_effect_pct"),
            (GOOD.replace("[b]\nlane = \"v2\"\n", ""), "`b`"),
            (GOOD.replace("min_effect_us = 0.2", "min_effect_us = -1.0"), "min_effect_us"),
            (format!("{GOOD}[run]\nplacement = \"moon\"\n"), "run.placement"),
            (format!("{GOOD}[run]\npairs = 4294967295\n"), "run.pairs"),
            (GOOD.replace("name = \"t\"", "name = \"t\"\nextra = 1"), "extra"),
        ];
        for (text, field) in cases {
            let err = parse(&text).expect_err("refused").to_string();
            assert!(err.contains(field), "`{field}` not named in: {err}");
            assert_eq!(err.lines().count(), 1, "not one line: {err}");
        }
        let spec = parse(&GOOD.replace("lane = \"v2\"", "lane = \"v2\"\nreply = \"persistent\"")).expect("parses");
        assert!(spec.arm_lane(1).unwrap_err().to_string().contains("b.reply"));
    }
}
