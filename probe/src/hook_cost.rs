//! What SQLite's trace hook costs a statement on the run's host: measured
//! before a run whose lanes mark statements through it, and stated beside
//! their slices as the span machinery is beside span slices.

use serde::{Deserialize, Serialize};

/// The thread role the marks SQLite's trace hook makes are handed in as,
/// where a lane gives its statements a role of their own: the analysis
/// prices the hops this role marks at [`HookCost`], per statement.
pub const STATEMENT_ROLE: &str = "sqlite";

/// The SQLite probe's cost per statement, measured in the run's own
/// process: the same prepared statement on two in-memory connections, one
/// bare and one probed with an operation set, in short chunks whose order
/// alternates each round, each round's `probed − bare` paired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookCost {
    /// The statement timed.
    pub sql: String,
    /// Median over rounds of `probed − bare`, ns per statement: two
    /// callbacks from SQLite (each a clock read and a ring write) and the
    /// two reads of SQLite's own clock its end report takes.
    pub ns_per_statement: f64,
    /// The rounds' quartiles of that difference, ns.
    pub quartiles_ns: [f64; 2],
    /// Median ns of the bare statement, for scale.
    pub bare_ns: f64,
    /// Median ns of one read of SQLite's own clock (the default VFS's):
    /// one of the two lies between the start and end marks, inside the
    /// statement's slice.
    pub sqlite_clock_ns: f64,
    /// Rounds paired.
    pub rounds: u32,
    /// Statements per timed chunk.
    pub chunk: u32,
}
