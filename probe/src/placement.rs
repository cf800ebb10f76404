//! Where a lane's threads ran, as a word a run records (`lane.<n>.placement`)
//! and the analyzer reads back: the vocabulary only. Pinning threads is the
//! harness's job (`hopscope_harness::placement`); the trace and its reader
//! need only the name, so both sides parse the same type.

use std::fmt;
use std::str::FromStr;

/// Where the caller and a lane's own threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Wherever the scheduler puts them.
    #[default]
    Unpinned,
    /// Both pinned to the same core.
    SameCore,
    /// Pinned to two different cores.
    DifferentCores,
}

impl Placement {
    /// Every placement, in the order flags list them.
    pub const ALL: [Placement; 3] = [Placement::Unpinned, Placement::SameCore, Placement::DifferentCores];

    /// The flag word of this placement, as runs record it.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Unpinned => "unpinned",
            Placement::SameCore => "same-core",
            Placement::DifferentCores => "different-cores",
        }
    }

    /// The core caller threads are pinned to (`None`: not pinned).
    pub fn caller_core(self) -> Option<usize> {
        match self {
            Placement::Unpinned => None,
            Placement::SameCore | Placement::DifferentCores => Some(0),
        }
    }

    /// The core a lane's own threads (its writer) are pinned to.
    pub fn worker_core(self) -> Option<usize> {
        match self {
            Placement::Unpinned => None,
            Placement::SameCore => Some(0),
            Placement::DifferentCores => Some(1),
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A placement word that is none of [`Placement::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown placement `{0}` (one of: unpinned, same-core, different-cores)")]
pub struct UnknownPlacement(pub String);

impl FromStr for Placement {
    type Err = UnknownPlacement;
    /// `unpinned`, `same-core`, `different-cores`.
    fn from_str(s: &str) -> Result<Placement, UnknownPlacement> {
        Placement::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| UnknownPlacement(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placement_reads_back_from_its_name() {
        for p in Placement::ALL {
            assert_eq!(p.to_string().parse::<Placement>(), Ok(p));
        }
        let unknown = "anywhere".parse::<Placement>().unwrap_err();
        assert!(unknown.to_string().contains("same-core"), "{unknown}");
        assert!("cross-core".parse::<Placement>().is_err(), "one name per placement");
        assert_eq!(Placement::SameCore.worker_core(), Placement::SameCore.caller_core());
        assert_ne!(Placement::DifferentCores.worker_core(), Placement::DifferentCores.caller_core());
    }
}
