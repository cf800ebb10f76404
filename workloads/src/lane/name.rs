//! hopscope's own lanes by name: [`StandardLane`] is the code a name
//! stands for, [`LaneName`] adds the build (`writer` or `writer-probed`).
//! Commands hold them typed; a name a user types is parsed once, here.

use std::fmt;
use std::str::FromStr;

use hopscope_probe::LaneInfo;

use super::spec::{INLINE_HOOK, LaneKind, WRITER_HOOK};
use crate::error::ParseError;
use crate::knobs::Knobs;
use crate::peers::Peer;

/// The code one of hopscope's own lanes runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StandardLane {
    /// The statement on the calling thread (`inline`).
    Inline,
    /// The bare hand-off to a thread and back (`handoff`).
    Handoff,
    /// The bare writer thread (`floor`).
    Floor,
    /// The reference writer (`writer`).
    Writer,
    /// The reference writer marked by the SQLite hook, as peers are
    /// (`writer-hook`).
    WriterHook,
    /// The inline statement marked by the SQLite hook (`inline-hook`).
    InlineHook,
    /// A published crate's writer thread (its name).
    Peer(Peer),
}

impl StandardLane {
    /// Every lane but the peers (each of [`Peer::ALL`] is one more).
    pub const OWN: [StandardLane; 6] = [
        StandardLane::Inline,
        StandardLane::Handoff,
        StandardLane::Floor,
        StandardLane::Writer,
        StandardLane::WriterHook,
        StandardLane::InlineHook,
    ];

    /// The lane's name.
    pub fn name(self) -> &'static str {
        match self {
            StandardLane::Inline => "inline",
            StandardLane::Handoff => "handoff",
            StandardLane::Floor => "floor",
            StandardLane::Writer => "writer",
            StandardLane::WriterHook => WRITER_HOOK,
            StandardLane::InlineHook => INLINE_HOOK,
            StandardLane::Peer(peer) => peer.name(),
        }
    }

    /// What the lane runs, the writer lanes with `knobs`.
    pub fn kind(self, knobs: Knobs) -> LaneKind {
        match self {
            StandardLane::Inline => LaneKind::Inline,
            StandardLane::Handoff => LaneKind::Handoff,
            StandardLane::Floor => LaneKind::Floor,
            StandardLane::Writer => LaneKind::Writer(knobs),
            StandardLane::WriterHook => LaneKind::WriterHook(knobs),
            StandardLane::InlineHook => LaneKind::InlineHook,
            StandardLane::Peer(peer) => LaneKind::Peer(peer),
        }
    }
}

/// One of hopscope's own lanes in one build: its clean build, or its
/// probed one (`-probed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaneName {
    /// The code.
    pub lane: StandardLane,
    /// The probed build rather than the clean one.
    pub probed: bool,
}

impl LaneName {
    /// The clean build of `lane`.
    pub const fn clean(lane: StandardLane) -> LaneName {
        LaneName { lane, probed: false }
    }

    /// The probed build of `lane`.
    pub const fn probed(lane: StandardLane) -> LaneName {
        LaneName { lane, probed: true }
    }

    /// The probed build of this lane; refused for the handoff, which has
    /// no marks.
    pub fn probed_build(self) -> Result<LaneName, ParseError> {
        if self.lane == StandardLane::Handoff {
            return Err(ParseError::new(
                "lane",
                &format!("{}{}", self.lane.name(), LaneInfo::PROBED_SUFFIX),
                "the handoff lane has no marks, so no -probed build",
            ));
        }
        Ok(LaneName::probed(self.lane))
    }
}

impl fmt::Display for LaneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.lane.name())?;
        if self.probed { f.write_str(LaneInfo::PROBED_SUFFIX) } else { Ok(()) }
    }
}

impl FromStr for LaneName {
    type Err = ParseError;

    fn from_str(name: &str) -> Result<LaneName, ParseError> {
        let (base, probed) = match name.strip_suffix(LaneInfo::PROBED_SUFFIX) {
            Some(base) => (base, true),
            None => (name, false),
        };
        let lane = StandardLane::OWN.into_iter().find(|l| l.name() == base);
        let lane = lane.or_else(|| base.parse::<Peer>().ok().map(StandardLane::Peer)).ok_or_else(|| {
            let peers: Vec<&str> = Peer::ALL.iter().map(|p| p.name()).collect();
            ParseError::new(
                "lane",
                base,
                format!(
                    "inline, floor, writer, writer-hook, inline-hook, each optionally -probed, handoff, or a peer: {}",
                    peers.join(", ")
                ),
            )
        })?;
        let name = LaneName::clean(lane);
        if probed { name.probed_build() } else { Ok(name) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lane_name_reads_back_as_itself() {
        let mut lanes = StandardLane::OWN.to_vec();
        lanes.extend(Peer::ALL.map(StandardLane::Peer));
        for lane in lanes {
            for name in [LaneName::clean(lane), LaneName::probed(lane)] {
                if name == LaneName::probed(StandardLane::Handoff) {
                    continue;
                }
                assert_eq!(name.to_string().parse::<LaneName>(), Ok(name), "{name}");
            }
        }
        assert_eq!(LaneName::probed(StandardLane::Writer).to_string(), "writer-probed");
    }

    #[test]
    fn unknown_and_impossible_names_are_refused_with_what_exists() {
        let unknown = "teleport".parse::<LaneName>().unwrap_err().to_string();
        assert!(unknown.contains("teleport") && unknown.contains("writer-hook"), "{unknown}");
        let handoff = "handoff-probed".parse::<LaneName>().unwrap_err().to_string();
        assert!(handoff.contains("no marks"), "{handoff}");
    }
}
