//! Experiment specs: a TOML file that fixes an A/B experiment — its arms,
//! shape, sizes and decision rule — before any data exists. Parsing turns it
//! into the library objects that run and judge it; every mistake is refused
//! before measuring, in one line that names the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hopscope_analyze::ab::{ARM_A, ARM_B, CONTROL, Rule};
use hopscope_probe::HopTable;
use hopscope_workloads::knobs::{BlobHandover, ChannelKind, InjectedDelay, Placement, ReplyMode, ResultSlot, Wait};
use hopscope_workloads::{Knobs, LaneKind, LaneSpec, Order, Peer, Plan, Shape};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// A spec as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: String,
    hypothesis: String,
    shape: String,
    #[serde(default)]
    run: RunSection,
    a: Arm,
    b: Arm,
    #[serde(default)]
    control: ControlSection,
    rule: Rule,
}

/// Sizes of the run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RunSection {
    ops: u64,
    samples: u32,
    /// Pairs of passes (`a→b`, then `b→a`).
    pairs: u32,
    warmup: u32,
    placement: String,
    /// Run the arms probed, so slices can be compared too.
    probed: bool,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection { ops: 200, samples: 30, pairs: 1, warmup: 3, placement: "same-core".into(), probed: false }
    }
}

/// Whether the inert control arm runs.
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

/// Knob overrides of one arm, over the reference writer's defaults; or,
/// with `lane`, a peer crate's lane instead of the reference writer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arm {
    /// A peer lane (`tokio-rusqlite`, `async-sqlite`, ...) as this arm.
    lane: Option<String>,
    reply: Option<String>,
    channel: Option<String>,
    writer_wait: Option<String>,
    caller_wait: Option<String>,
    coalesce: Option<bool>,
    harvest: Option<bool>,
    result_slot: Option<String>,
    /// `HOP:NS`, e.g. `executed:500`.
    delay: Option<String>,
    /// Blob hand-over on blob shapes: copy, move, shared.
    handover: Option<String>,
}

/// A parsed, validated spec.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) sha256: String,
    pub(crate) text: String,
    pub(crate) plan: Plan,
    pub(crate) rule: Rule,
    pub(crate) hypothesis: String,
}

impl Spec {
    /// Read and validate the spec at `path`.
    pub(crate) fn load(path: &Path) -> anyhow::Result<Spec> {
        let text =
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read spec {}: {e}", path.display()))?;
        Spec::parse(path, &text)
    }

    /// Parse `text` (read from `path`, named in errors).
    pub(crate) fn parse(path: &Path, text: &str) -> anyhow::Result<Spec> {
        let at = |what: String| anyhow::anyhow!("spec {}: {what}", path.display());
        let file: SpecFile = toml::from_str(text).map_err(|e| at(one_line(&e, text)))?;
        file.rule.check().map_err(at)?;
        let shape: Shape = file.shape.parse().map_err(|e: String| at(format!("shape: {e}")))?;
        let placement: Placement = file.run.placement.parse().map_err(|e: String| at(format!("run.placement: {e}")))?;
        if file.run.ops == 0 || file.run.samples == 0 || file.run.pairs == 0 {
            return Err(at("run.ops, run.samples and run.pairs must all be at least 1".to_owned()));
        }
        let probed = file.run.probed;
        let arm = |name: &str, arm: &Arm| -> anyhow::Result<LaneSpec> {
            let (knobs, handover) = arm.knobs(placement).map_err(|e| at(format!("{name}.{e}")))?;
            if let Some(peer) = &arm.lane {
                let peer: Peer = peer.parse().map_err(|e: String| at(format!("{name}.lane: {e}")))?;
                if !arm.is_bare() {
                    return Err(at(format!("{name}: a peer arm (`lane`) takes no writer knobs")));
                }
                if probed {
                    return Err(at(format!("{name}.lane: peers carry no marks; set run.probed = false")));
                }
                let lane = LaneSpec::new(name, LaneKind::Peer(peer), false);
                return Ok(LaneSpec { placement, waits: (knobs.writer_wait, knobs.caller_wait), ..lane });
            }
            let mut lane = LaneSpec::new(name, LaneKind::Writer(knobs), probed);
            lane.handover = handover;
            Ok(lane)
        };
        let mut lanes = vec![arm(ARM_A, &file.a)?, arm(ARM_B, &file.b)?];
        if file.control.enabled {
            lanes.push(arm(CONTROL, &file.a)?);
        }
        let plan = Plan {
            ops_per_block: file.run.ops,
            samples: file.run.samples,
            passes: 2 * file.run.pairs,
            warmup_blocks: file.run.warmup,
            order: Order::FlipEachPass,
            ..Plan::new(lanes, shape)
        };
        Ok(Spec {
            name: file.name,
            path: path.to_owned(),
            sha256: sha256_hex(text),
            text: text.to_owned(),
            plan,
            rule: file.rule,
            hypothesis: file.hypothesis,
        })
    }

    /// What the trace header records about the spec, so a re-analysis can
    /// use the rule as it was and detect a later edit.
    pub(crate) fn meta(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("spec.name".to_owned(), self.name.clone()),
            ("spec.path".to_owned(), self.path.display().to_string()),
            ("spec.sha256".to_owned(), self.sha256.clone()),
            ("spec.hypothesis".to_owned(), self.hypothesis.clone()),
            ("spec.text".to_owned(), self.text.clone()),
        ])
    }
}

impl Arm {
    /// Whether the arm sets no writer knob.
    fn is_bare(&self) -> bool {
        let Arm { lane: _, reply, channel, writer_wait, caller_wait, coalesce, harvest, result_slot, delay, handover } =
            self;
        reply.is_none()
            && channel.is_none()
            && writer_wait.is_none()
            && caller_wait.is_none()
            && coalesce.is_none()
            && harvest.is_none()
            && result_slot.is_none()
            && delay.is_none()
            && handover.is_none()
    }

    /// The reference writer's knobs with this arm's overrides; errors name
    /// the field.
    fn knobs(&self, placement: Placement) -> Result<(Knobs, Option<BlobHandover>), String> {
        fn field<T: std::str::FromStr<Err = String>>(name: &str, value: &Option<String>) -> Result<Option<T>, String> {
            value.as_deref().map(str::parse).transpose().map_err(|e| format!("{name}: {e}"))
        }
        let defaults = Knobs::default();
        let delay = match &self.delay {
            None => None,
            Some(text) => Some(parse_delay(text).map_err(|e| format!("delay: {e}"))?),
        };
        let knobs = Knobs {
            reply: field::<ReplyMode>("reply", &self.reply)?.unwrap_or(defaults.reply),
            channel: field::<ChannelKind>("channel", &self.channel)?.unwrap_or(defaults.channel),
            writer_wait: field::<Wait>("writer_wait", &self.writer_wait)?.unwrap_or(defaults.writer_wait),
            caller_wait: field::<Wait>("caller_wait", &self.caller_wait)?.unwrap_or(defaults.caller_wait),
            coalesce: self.coalesce.unwrap_or(defaults.coalesce),
            harvest: self.harvest.unwrap_or(defaults.harvest),
            result_slot: field::<ResultSlot>("result_slot", &self.result_slot)?.unwrap_or(defaults.result_slot),
            delay,
            placement,
        };
        Ok((knobs, field::<BlobHandover>("handover", &self.handover)?))
    }
}

/// `HOP:NS` → an injected delay before that hop's mark.
pub(crate) fn parse_delay(text: &str) -> Result<InjectedDelay, String> {
    let (hop, ns) = text.split_once(':').ok_or_else(|| format!("want HOP:NS, got `{text}`"))?;
    let before = HopTable::standard().find(hop).filter(|h| h.0 > 0).ok_or_else(|| {
        format!("unknown hop `{hop}` (locked, built, sent, woke, executed, harvested, replied, received, done)")
    })?;
    let ns = ns.parse().map_err(|_| format!("bad nanoseconds `{ns}`"))?;
    Ok(InjectedDelay { before, ns })
}

/// SHA-256 of `text`, lower-case hex.
pub(crate) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A TOML error as one line: `line N: message (near `...`)`.
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
shape = "single-insert"
[a]
reply = "oneshot"
[b]
reply = "persistent"
[rule]
min_effect_pct = 3.0
min_effect_us = 0.2
max_control_drift_pct = 3.0
"#;

    fn parse(text: &str) -> anyhow::Result<Spec> {
        Spec::parse(Path::new("exp.toml"), text)
    }

    #[test]
    fn a_good_spec_becomes_a_flipping_plan_with_a_control() {
        let spec = parse(GOOD).expect("parses");
        assert_eq!(spec.plan.lanes.len(), 3);
        assert_eq!(spec.plan.order, Order::FlipEachPass);
        assert_eq!(spec.plan.passes, 2);
        assert_eq!(spec.sha256.len(), 64);
        assert!(spec.meta()["spec.text"].contains("persistent"));
    }

    #[test]
    fn a_peer_arm_becomes_that_peers_lane() {
        let spec = parse(&GOOD.replace("reply = \"persistent\"", "lane = \"tokio-rusqlite\"")).expect("parses");
        assert_eq!(spec.plan.lanes[1].kind, LaneKind::Peer(Peer::TokioRusqlite));
        assert!(!spec.plan.lanes[1].probed);
        assert!(matches!(spec.plan.lanes[0].kind, LaneKind::Writer(_)));
    }

    #[test]
    fn every_mistake_names_its_field_in_one_line() {
        let cases = [
            (GOOD.replace("reply = \"persistent\"", "replyy = \"persistent\""), "replyy"),
            (GOOD.replace("reply = \"persistent\"", "reply = \"sometimes\""), "b.reply"),
            (GOOD.replace("min_effect_pct = 3.0", "min_effect_pct = \"five\""), "min_effect_pct"),
            (GOOD.replace("[b]\nreply = \"persistent\"\n", ""), "`b`"),
            (GOOD.replace("single-insert", "teleport"), "shape"),
            (GOOD.replace("min_effect_us = 0.2", "min_effect_us = -1.0"), "min_effect_us"),
            (GOOD.replace("reply = \"persistent\"", "lane = \"sqlite-rs\""), "b.lane"),
            (GOOD.replace("reply = \"persistent\"", "lane = \"tokio-rusqlite\"\nharvest = false"), "peer arm"),
            (
                GOOD.replace("reply = \"persistent\"", "lane = \"tokio-rusqlite\"")
                    .replace("[a]", "[run]\nprobed = true\n[a]"),
                "run.probed",
            ),
        ];
        for (text, field) in cases {
            let err = parse(&text).expect_err("refused").to_string();
            assert!(err.contains(field), "`{field}` not named in: {err}");
            assert_eq!(err.lines().count(), 1, "not one line: {err}");
        }
    }
}
