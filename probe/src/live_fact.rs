//! The facts a live capture records about itself (`live.<fact>` run
//! facts): how it was taken, and what it took.

/// One fact of a live capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LiveFact {
    /// Seconds per window (`window_s`).
    WindowS,
    /// How long an operation's marks are held after its last one before
    /// it counts as done, ms (`settle_ms`).
    SettleMs,
    /// Marks of each thread's first ring (`ring_marks`).
    RingMarks,
    /// Marks a thread's ring may grow to (`ring_cap`).
    RingCap,
    /// Marks held for unfinished operations at most (`held_marks`).
    HeldMarks,
    /// Thread roles the capture had room for (`max_threads`).
    MaxThreads,
    /// What the mark of an operation the sampling leaves out costs, ns,
    /// measured at the start (`left_out_mark_ns`; a kept one's is the
    /// header's `mark_ns`).
    LeftOutMarkNs,
    /// How long the capture ran, s (`seconds`).
    Seconds,
    /// Operations it wrote (`operations`).
    Operations,
    /// Marks it wrote (`marks`).
    Marks,
    /// Marks dropped: rings full past their cap, threads past the roles
    /// (`dropped`).
    Dropped,
    /// Operations handed on before they settled (the held marks at their
    /// cap): any later mark of theirs lands apart (`cut`).
    Cut,
    /// Marks of hops the table does not declare, left out
    /// (`undeclared_hops`).
    UndeclaredHops,
    /// The most marks held at once (`peak_held_marks`).
    PeakHeldMarks,
    /// The largest ring a thread still marking at the end had grown to
    /// (`largest_ring_marks`).
    LargestRingMarks,
}

impl LiveFact {
    /// Every live fact.
    pub const ALL: [LiveFact; 15] = [
        LiveFact::WindowS,
        LiveFact::SettleMs,
        LiveFact::RingMarks,
        LiveFact::RingCap,
        LiveFact::HeldMarks,
        LiveFact::MaxThreads,
        LiveFact::LeftOutMarkNs,
        LiveFact::Seconds,
        LiveFact::Operations,
        LiveFact::Marks,
        LiveFact::Dropped,
        LiveFact::Cut,
        LiveFact::UndeclaredHops,
        LiveFact::PeakHeldMarks,
        LiveFact::LargestRingMarks,
    ];

    /// Its name after `live.` in a run fact's key.
    pub fn name(self) -> &'static str {
        match self {
            LiveFact::WindowS => "window_s",
            LiveFact::SettleMs => "settle_ms",
            LiveFact::RingMarks => "ring_marks",
            LiveFact::RingCap => "ring_cap",
            LiveFact::HeldMarks => "held_marks",
            LiveFact::MaxThreads => "max_threads",
            LiveFact::LeftOutMarkNs => "left_out_mark_ns",
            LiveFact::Seconds => "seconds",
            LiveFact::Operations => "operations",
            LiveFact::Marks => "marks",
            LiveFact::Dropped => "dropped",
            LiveFact::Cut => "cut",
            LiveFact::UndeclaredHops => "undeclared_hops",
            LiveFact::PeakHeldMarks => "peak_held_marks",
            LiveFact::LargestRingMarks => "largest_ring_marks",
        }
    }
}
