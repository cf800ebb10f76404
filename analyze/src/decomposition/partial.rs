//! What a partial decomposition left out, and why, as data: the receipt
//! says it in words (`hopscope_reports::receipt::partial_sentence`).

use serde::{Deserialize, Serialize};

use crate::recorded::Recorded;

/// What a partial decomposition left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    /// Measured blocks the figures use.
    pub blocks_kept: u64,
    /// Bytes of the trace after the last block used (0 when the trace
    /// itself is complete and the run stopped early).
    pub bytes_dropped: u64,
    /// Why the run or the trace ended early (an older result's is a
    /// clause, read back as written).
    pub reason: Recorded<PartialCause>,
    /// Whether blocks were skipped inside the trace (damaged records) rather
    /// than only cut off at its end: the blocks kept are then not all
    /// "before" anything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub damaged: bool,
}

/// Why a run's figures cover less than it planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum PartialCause {
    /// The run was stopped (an interrupt, a lane that failed).
    Stopped {
        /// The line the run stopped with.
        line: String,
    },
    /// The trace is whole but the run ended before its last planned block.
    EndedEarly {
        /// Blocks the trace holds.
        held: u64,
        /// Blocks the run planned (`planned_blocks`).
        planned: u64,
    },
    /// The trace file is cut: its last block record is incomplete.
    TraceCut {
        /// What the reader found where the file ends.
        detail: String,
    },
    /// Damaged block records inside the trace were skipped.
    TraceDamaged {
        /// What the reader found.
        detail: String,
    },
}

impl Partial {
    /// A run stopped after `blocks` measured blocks, with `line` saying why.
    pub fn stopped(blocks: u64, line: &str) -> Partial {
        Partial {
            blocks_kept: blocks,
            bytes_dropped: 0,
            reason: Recorded::Typed(PartialCause::Stopped { line: line.to_owned() }),
            damaged: false,
        }
    }

    /// A whole trace of `held` blocks from a run that planned `planned`.
    pub fn ended_early(held: u64, planned: u64) -> Partial {
        Partial {
            blocks_kept: held,
            bytes_dropped: 0,
            reason: Recorded::Typed(PartialCause::EndedEarly { held, planned }),
            damaged: false,
        }
    }
}

impl Partial {
    /// What the trace reader found where a cut or damaged trace stops.
    pub fn reader_detail(&self) -> Option<&str> {
        match self.reason.typed()? {
            PartialCause::TraceCut { detail } | PartialCause::TraceDamaged { detail } => Some(detail),
            PartialCause::Stopped { .. } | PartialCause::EndedEarly { .. } => None,
        }
    }
}

impl From<&hopscope_probe::Salvage> for Partial {
    fn from(s: &hopscope_probe::Salvage) -> Partial {
        let detail = s.reason.clone();
        let damaged = s.blocks_skipped > 0;
        Partial {
            blocks_kept: s.blocks_kept,
            bytes_dropped: s.bytes_dropped,
            reason: Recorded::Typed(if damaged {
                PartialCause::TraceDamaged { detail }
            } else {
                PartialCause::TraceCut { detail }
            }),
            damaged,
        }
    }
}
