//! `hopscope ab`'s experiment specs: the harness's spec
//! ([`hopscope_harness::ExperimentSpec`]: name, hypothesis, sizes, rule)
//! plus a `shape` and, per arm, the reference writer's knobs or a peer
//! (`lane = "tokio-rusqlite"`), resolved to the two arms' lanes. Every
//! mistake is refused before measuring, in one line that names the field.

use std::path::Path;

use hopscope_harness::{ExperimentSpec, Lane, Placement, SpecError};
use serde::Deserialize;

use crate::knobs::{BlobHandover, ChannelKind, GroupCommit, InjectedDelay, ReplyMode, ResultSlot, Wait};
use crate::{Builds, DbConfig, Knobs, LaneKind, LaneSpec, Peer, Shape};

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
    /// Requests per transaction (0: off, each its own autocommit), e.g. 64.
    group_commit: Option<u16>,
    result_slot: Option<String>,
    /// `HOP:NS`, e.g. `executed:500`.
    delay: Option<String>,
    /// Blob hand-over on blob shapes: copy, move, shared.
    handover: Option<String>,
}

/// A parsed, validated A/B spec with its arms resolved to lanes.
#[derive(Debug, Clone)]
pub struct AbSpec {
    /// The harness's part: name, hypothesis, sizes, order and rule.
    pub experiment: ExperimentSpec,
    /// The workload both arms run.
    pub shape: Shape,
    /// Arms A and B.
    pub arms: [LaneSpec; 2],
}

impl AbSpec {
    /// Read and validate the spec at `path`.
    pub fn load(path: &Path) -> Result<AbSpec, SpecError> {
        AbSpec::resolve(ExperimentSpec::load(path)?)
    }

    /// Parse and validate `text` (read from `path`, named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<AbSpec, SpecError> {
        AbSpec::resolve(ExperimentSpec::parse(path, text)?)
    }

    fn resolve(experiment: ExperimentSpec) -> Result<AbSpec, SpecError> {
        let at = |reason: String| SpecError { path: experiment.path.clone(), reason };
        let shape: Shape = experiment
            .shape
            .as_deref()
            .ok_or_else(|| at("no `shape` (e.g. shape = \"single-insert\")".to_owned()))?
            .parse()
            .map_err(|e| at(format!("shape: {e}")))?;
        let placement = experiment.plan.placement;
        let arm = |i: usize| -> Result<LaneSpec, SpecError> {
            let (name, table) = &experiment.arms[i];
            let arm: Arm = toml::Value::Table(table.clone())
                .try_into()
                .map_err(|e: toml::de::Error| at(format!("{name}: {}", e.message().replace('\n', " "))))?;
            let (knobs, handover) = arm.knobs(placement).map_err(|e| at(format!("{name}.{e}")))?;
            if let Some(peer) = &arm.lane {
                let peer: Peer = peer.parse().map_err(|e| at(format!("{name}.lane: {e}")))?;
                if !arm.is_bare() {
                    return Err(at(format!("{name}: a peer arm (`lane`) takes no writer knobs")));
                }
                if experiment.probed {
                    return Err(at(format!("{name}.lane: peers carry no marks; set run.probed = false")));
                }
                let lane = LaneSpec::new(name, LaneKind::Peer(peer), Builds::Clean);
                return Ok(LaneSpec { placement, waits: (knobs.writer_wait, knobs.caller_wait), ..lane });
            }
            let builds = if experiment.probed { Builds::Probed } else { Builds::Clean };
            let mut lane = LaneSpec::new(name, LaneKind::Writer(knobs), builds);
            lane.handover = handover;
            Ok(lane)
        };
        let arms = [arm(0)?, arm(1)?];
        Ok(AbSpec { shape, arms, experiment })
    }

    /// The harness lanes of arms A and B.
    pub fn lanes(&self) -> Result<(Lane, Lane), crate::RunError> {
        let db = DbConfig::default();
        Ok((self.arms[0].lane(self.shape, db)?, self.arms[1].lane(self.shape, db)?))
    }
}

impl Arm {
    /// Whether the arm sets no writer knob.
    fn is_bare(&self) -> bool {
        let Arm {
            lane: _,
            reply,
            channel,
            writer_wait,
            caller_wait,
            coalesce,
            harvest,
            group_commit,
            result_slot,
            delay,
            handover,
        } = self;
        reply.is_none()
            && channel.is_none()
            && writer_wait.is_none()
            && caller_wait.is_none()
            && coalesce.is_none()
            && harvest.is_none()
            && group_commit.is_none()
            && result_slot.is_none()
            && delay.is_none()
            && handover.is_none()
    }

    /// The reference writer's knobs with this arm's overrides; errors name
    /// the field.
    fn knobs(&self, placement: Placement) -> Result<(Knobs, Option<BlobHandover>), String> {
        fn field<T: std::str::FromStr<Err = crate::ParseError>>(
            name: &str,
            value: &Option<String>,
        ) -> Result<Option<T>, String> {
            value.as_deref().map(str::parse).transpose().map_err(|e| format!("{name}: {e}"))
        }
        let defaults = Knobs::default();
        let knobs = Knobs {
            reply: field::<ReplyMode>("reply", &self.reply)?.unwrap_or(defaults.reply),
            channel: field::<ChannelKind>("channel", &self.channel)?.unwrap_or(defaults.channel),
            writer_wait: field::<Wait>("writer_wait", &self.writer_wait)?.unwrap_or(defaults.writer_wait),
            caller_wait: field::<Wait>("caller_wait", &self.caller_wait)?.unwrap_or(defaults.caller_wait),
            coalesce: self.coalesce.unwrap_or(defaults.coalesce),
            harvest: self.harvest.unwrap_or(defaults.harvest),
            group_commit: match self.group_commit {
                Some(size) => GroupCommit::of(size)
                    .ok_or_else(|| format!("group_commit: {size}: 0 (off) or 1 to {} requests", GroupCommit::MAX))?,
                None => defaults.group_commit,
            },
            result_slot: field::<ResultSlot>("result_slot", &self.result_slot)?.unwrap_or(defaults.result_slot),
            delay: field::<InjectedDelay>("delay", &self.delay)?,
            placement,
        };
        Ok((knobs, field::<BlobHandover>("handover", &self.handover)?))
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

    fn parse(text: &str) -> Result<AbSpec, SpecError> {
        AbSpec::parse(Path::new("exp.toml"), text)
    }

    #[test]
    fn a_good_spec_becomes_two_writer_arms_with_their_knobs() {
        let spec = parse(GOOD).expect("parses");
        let LaneKind::Writer(b) = spec.arms[1].kind else { panic!("b is not a writer") };
        assert_eq!(b.reply, ReplyMode::Persistent);
        assert_eq!(spec.experiment.plan.order, hopscope_harness::Order::FlipEachPass);
        assert!(spec.experiment.control);
        assert!(spec.experiment.meta()["spec.text"].contains("persistent"));
    }

    #[test]
    fn a_peer_arm_becomes_that_peers_lane() {
        let spec = parse(&GOOD.replace("reply = \"persistent\"", "lane = \"tokio-rusqlite\"")).expect("parses");
        assert_eq!(spec.arms[1].kind, LaneKind::Peer(Peer::TokioRusqlite));
        assert_eq!(spec.arms[1].builds, Builds::Clean);
        assert!(matches!(spec.arms[0].kind, LaneKind::Writer(_)));
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
            (GOOD.replace("min_effect_us = 0.2", "min_effect_us = 0.2\nconfidence_pct = 90"), "confidence_pct"),
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
