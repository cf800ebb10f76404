//! The merge run's lane vocabulary: arms (`naive`, `tuned`, the control,
//! one per step) and phases (`cold`, `again`), and the lane name
//! `<arm>/<phase>` that joins them. The runner names its lanes with these
//! types and the analyzer reads them back with their `FromStr`, so neither
//! side spells a name the other must match.

use std::fmt;
use std::str::FromStr;

/// One of the two imports each arm makes per round: `cold` (every change
/// new) and `again` (the same changes re-imported, each losing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// The first import.
    Cold,
    /// The idempotent re-import.
    Again,
}

impl Phase {
    /// Both phases, in the order a round runs them.
    pub const ALL: [Phase; 2] = [Phase::Cold, Phase::Again];

    /// The phase's name in lane names (`<arm>/<phase>`) and results.
    pub const fn name(self) -> &'static str {
        match self {
            Phase::Cold => "cold",
            Phase::Again => "again",
        }
    }

    /// What the phase imports, for a receipt.
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Cold => "cold import",
            Phase::Again => "idempotent re-import",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Phase {
    type Err = String;

    fn from_str(name: &str) -> Result<Phase, String> {
        Phase::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| format!("unknown merge phase `{name}`"))
    }
}

/// One arm of a merge run: the path every step is judged against, the
/// fully tuned path, a second naive arm as the A/B control, or one step
/// tuned alone (named after its `MergeKnobs` field).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arm {
    /// Every step naive.
    Naive,
    /// Every step tuned.
    Tuned,
    /// A second naive arm, every step's A/B control.
    Control,
    /// One step tuned alone.
    Step(String),
}

impl Arm {
    /// The arm's name in lane names and results.
    pub fn name(&self) -> &str {
        match self {
            Arm::Naive => "naive",
            Arm::Tuned => "tuned",
            Arm::Control => "naive-control",
            Arm::Step(step) => step,
        }
    }

    /// Whether the arm is one step tuned alone (a step is judged; the
    /// other arms are what it is judged by).
    pub fn is_step(&self) -> bool {
        matches!(self, Arm::Step(_))
    }

    /// The trace lane of this arm in `phase`.
    pub fn lane(&self, phase: Phase) -> String {
        ArmLane { arm: self.clone(), phase }.to_string()
    }
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Arm {
    type Err = String;

    /// Any other non-empty name without `/` is a step.
    fn from_str(name: &str) -> Result<Arm, String> {
        Ok(match name {
            "naive" => Arm::Naive,
            "tuned" => Arm::Tuned,
            "naive-control" => Arm::Control,
            step if !step.is_empty() && !step.contains('/') => Arm::Step(step.to_owned()),
            other => return Err(format!("`{other}` is no merge arm")),
        })
    }
}

/// A merge lane: one arm in one phase, named `<arm>/<phase>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmLane {
    /// The arm.
    pub arm: Arm,
    /// The import.
    pub phase: Phase,
}

impl fmt::Display for ArmLane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.arm, self.phase)
    }
}

impl FromStr for ArmLane {
    type Err = String;

    fn from_str(name: &str) -> Result<ArmLane, String> {
        let (arm, phase) = name.split_once('/').ok_or_else(|| format!("`{name}` is no merge lane (<arm>/<phase>)"))?;
        Ok(ArmLane { arm: arm.parse()?, phase: phase.parse()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_and_lanes_read_back_from_their_names() {
        let arms = [Arm::Naive, Arm::Tuned, Arm::Control, Arm::Step("row_memo".to_owned())];
        for arm in arms {
            assert_eq!(arm.name().parse::<Arm>().as_ref(), Ok(&arm));
            for phase in Phase::ALL {
                let lane = ArmLane { arm: arm.clone(), phase };
                assert_eq!(lane.to_string().parse::<ArmLane>(), Ok(lane.clone()));
                assert_eq!(arm.lane(phase), lane.to_string());
            }
        }
        assert_eq!(Arm::Control.lane(Phase::Again), "naive-control/again");
        assert!("naive/warm".parse::<ArmLane>().is_err(), "an unknown phase");
        assert!("naive".parse::<ArmLane>().is_err(), "no phase");
        assert!("".parse::<Arm>().is_err());
    }
}
