//! Lane roles: what each lane of a trace stands for, so the analyzer finds
//! the baseline, the floor and the subject by what they are, not by name.
//!
//! A run declares its lanes with a [`LaneInfo`] each, in the trace header
//! beside the lane names. A lane that exists in two builds of the same code
//! (clean and probed, to measure the observer effect) is two trace lanes
//! sharing one [`LaneInfo::code`] and differing in [`LaneInfo::variant`].
//! Traces written before roles existed carry none; [`LaneInfo::legacy`]
//! reads their roles from hopscope's fixed lane names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a lane stands for in the lane arithmetic.
///
/// `hop = subject − baseline`, `boundary = floor − baseline`,
/// `library = subject − floor`; a handoff lane splits the boundary into the
/// bare switches and the floor's machinery (`boundary − handoff`); peers are compared with the subject; the
/// arms of an A/B experiment are judged against each other and the control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The same work without a thread boundary (e.g. the insert on the
    /// calling thread): what the database itself costs.
    Baseline,
    /// A bare hand-off between the caller and a thread, with no work on
    /// either side (a park/unpark ping-pong): what the two context switches
    /// of a thread boundary cost by themselves.
    Handoff,
    /// A bare writer thread with none of the subject's machinery: what any
    /// thread boundary costs.
    Floor,
    /// The code under study (a library's writer, the user's own).
    Subject,
    /// Another implementation of the subject's job, compared with it.
    Peer,
    /// Arm A of an A/B experiment.
    ArmA,
    /// Arm B of an A/B experiment.
    ArmB,
    /// The inert second copy of arm A: how much the harness itself moves.
    Control,
}

impl Role {
    /// Every role, in the order receipts list them.
    pub const ALL: [Role; 8] =
        [Role::Baseline, Role::Handoff, Role::Floor, Role::Subject, Role::Peer, Role::ArmA, Role::ArmB, Role::Control];

    /// The role's stable lower-case name (as in the trace header).
    pub fn name(self) -> &'static str {
        match self {
            Role::Baseline => "baseline",
            Role::Handoff => "handoff",
            Role::Floor => "floor",
            Role::Subject => "subject",
            Role::Peer => "peer",
            Role::ArmA => "arm-a",
            Role::ArmB => "arm-b",
            Role::Control => "control",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A role name that is not one of [`Role::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lane role `{0}` (baseline, handoff, floor, subject, peer, arm-a, arm-b, control)")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Role, UnknownRole> {
        Role::ALL.into_iter().find(|r| r.name() == s).ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// Which build of a lane's code ran: with marks or without.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// Marks compiled out or not recorded (the figure a user's program has).
    Clean,
    /// Every hop marked (slices, and the observer effect against `Clean`).
    Probed,
}

/// One lane's declaration in the trace header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneInfo {
    /// What the lane stands for.
    pub role: Role,
    /// Which build ran; `None` when the lane has one build only and the
    /// trace itself shows whether it marks (a program's own `hop!` marks).
    pub variant: Option<Variant>,
    /// The name the lane was declared under: shared by its clean and probed
    /// trace lanes (`writer` for `writer` and `writer-probed`).
    pub code: String,
    /// The peers' reference: the subject's code marked the way its peers
    /// are (the same hops, by the same instrument), against which each
    /// peer's slices are paired. Absent (false) in traces before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reference: bool,
    /// The peers' baseline: the inline statement marked the way the peers
    /// are, against which each probed peer's slices are summed into its
    /// hop (`peer − inline`) and checked against the clean lanes' hop.
    /// Absent (false) in traces before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
}

impl LaneInfo {
    /// The suffix of a probed variant's trace lane name.
    pub const PROBED_SUFFIX: &'static str = "-probed";

    /// A program's own capture, lane `code`: the code under study, in the
    /// one build it ran (whether it marks, the trace itself shows).
    pub fn program(code: &str) -> LaneInfo {
        LaneInfo { role: Role::Subject, variant: None, code: code.to_owned(), reference: false, baseline: false }
    }

    /// The roles of a trace written before roles were recorded, read from
    /// hopscope's fixed lane names: `inline`, `floor` and `writer` (each
    /// optionally `-probed`) are baseline, floor and subject; `a`, `b` and
    /// `control` are A/B arms; a trace of one other lane (a program's own
    /// capture) is that program's subject; anything else is a peer.
    pub fn legacy(name: &str, lanes: usize) -> LaneInfo {
        let (code, variant) = match name.strip_suffix(LaneInfo::PROBED_SUFFIX) {
            Some(code) => (code, Some(Variant::Probed)),
            None => (name, None),
        };
        let role = match code {
            "inline" => Role::Baseline,
            "floor" => Role::Floor,
            "writer" => Role::Subject,
            "a" => Role::ArmA,
            "b" => Role::ArmB,
            "control" => Role::Control,
            _ if lanes == 1 => Role::Subject,
            _ => Role::Peer,
        };
        // hopscope's clean reference lanes had no suffix and no marks.
        let variant = match (variant, role) {
            (None, Role::Baseline | Role::Floor | Role::Subject) if lanes > 1 => Some(Variant::Clean),
            (v, _) => v,
        };
        LaneInfo { role, variant, code: code.to_owned(), reference: false, baseline: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_through_their_names() {
        for role in Role::ALL {
            assert_eq!(role.name().parse::<Role>(), Ok(role));
            let json = serde_json::to_string(&role).expect("json");
            assert_eq!(json, format!("\"{}\"", role.name()));
        }
        assert!("writer".parse::<Role>().unwrap_err().to_string().contains("subject"));
    }

    #[test]
    fn legacy_traces_get_roles_from_hopscope_s_lane_names() {
        let writer = LaneInfo::legacy("writer-probed", 5);
        assert_eq!(
            (writer.role, writer.variant, writer.code.as_str()),
            (Role::Subject, Some(Variant::Probed), "writer")
        );
        assert_eq!(LaneInfo::legacy("inline", 5).variant, Some(Variant::Clean));
        assert_eq!(LaneInfo::legacy("floor", 5).role, Role::Floor);
        assert_eq!(LaneInfo::legacy("tokio-rusqlite", 6).role, Role::Peer);
        assert_eq!(LaneInfo::legacy("b", 3).role, Role::ArmB);
        let capture = LaneInfo::legacy("traced-writer", 1);
        assert_eq!((capture.role, capture.variant), (Role::Subject, None));
    }
}
