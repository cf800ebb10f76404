//! A keep-warm sweep's result as `keep-warm.json` holds it: the rows, the
//! machine's wake floor when it was measured, and what both say as data
//! ([`SweepFinding`], [`WakeBound`]), so the JSON carries every figure the
//! receipt's sentences do.

use serde::{Deserialize, Serialize};

use crate::sweep::{self, SweepFinding, SweepRow};
use crate::wake::{self, WakeBound, WakeFloor};

/// Schema of `keep-warm.json`.
pub const SWEEP_SCHEMA: &str = "hopscope.keep-warm/1";

/// A keep-warm sweep, analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    /// [`SWEEP_SCHEMA`].
    pub schema: String,
    /// One row per placement and setting, in the order they ran.
    pub rows: Vec<SweepRow>,
    /// What the sweep says ([`sweep::findings`]).
    pub findings: Vec<SweepFinding>,
    /// The machine's wake floor, when it was measured.
    pub wake_floor: Option<WakeFloor>,
    /// What the floor bounds on the sweep's rows ([`wake::bound`]).
    pub wake_bound: Option<WakeBound>,
}

impl SweepResult {
    /// The result of `rows` and the wake floor measured beside them.
    pub fn new(rows: Vec<SweepRow>, wake_floor: Option<WakeFloor>) -> SweepResult {
        let findings = sweep::findings(&rows);
        let wake_bound = wake_floor.as_ref().map(|f| wake::bound(f, &rows));
        SweepResult { schema: SWEEP_SCHEMA.to_owned(), rows, findings, wake_floor, wake_bound }
    }
}
