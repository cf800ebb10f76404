//! What a finished capture wrote, as the program gets it back and as the
//! line printed at its end says it.

use std::fmt;
use std::path::PathBuf;

/// Marks one thread dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadDrops {
    /// The thread's role name (its name), `(threads past the N roles)`
    /// (see [`LiveOptions::max_threads`](super::LiveOptions::max_threads)),
    /// or `(no thread)`.
    pub thread: String,
    /// Marks it dropped.
    pub dropped: u64,
}

/// What a finished capture wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureSummary {
    /// The trace.
    pub path: PathBuf,
    /// Operations written (shared intervals not counted).
    pub operations: u64,
    /// Marks written.
    pub marks: u64,
    /// Marks dropped, all threads.
    pub dropped: u64,
    /// Marks dropped, per thread that dropped any.
    pub dropped_by_thread: Vec<ThreadDrops>,
    /// Threads that marked.
    pub threads: usize,
    /// Windows the capture spans.
    pub windows: u32,
    /// Blocks written.
    pub blocks: u32,
    /// Operations handed on before they settled (held marks at their cap).
    pub cut: u64,
    /// Marks of hops the capture's table does not declare, left out (give
    /// the capture the program's table: [`LiveOptions::hops`]).
    pub undeclared_hops: u64,
    /// One operation in this many was kept.
    pub sample_every: u32,
    /// How long it ran, s.
    pub seconds: f64,
    /// The most marks held at once for unfinished operations.
    pub peak_held_marks: usize,
    /// The largest ring of a thread still marking at the end, marks.
    pub largest_ring_marks: usize,
}

impl fmt::Display for CaptureSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sampled =
            if self.sample_every > 1 { format!(" (1 in {} sampled)", self.sample_every) } else { String::new() };
        write!(
            f,
            "captured {} operations{sampled} from {} thread{} in {:.1} s, {} window{} → {}; ",
            self.operations,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.seconds,
            self.windows,
            if self.windows == 1 { "" } else { "s" },
            self.path.display()
        )?;
        if self.dropped == 0 {
            f.write_str("no mark dropped")?;
        } else {
            let per: Vec<String> =
                self.dropped_by_thread.iter().map(|d| format!("{} {}", d.thread, d.dropped)).collect();
            write!(f, "{} marks DROPPED ({})", self.dropped, per.join(", "))?;
        }
        if self.undeclared_hops > 0 {
            write!(
                f,
                "; {} marks of hops the table does not declare LEFT OUT (give the capture the program's hop table)",
                self.undeclared_hops
            )?;
        }
        if self.cut > 0 {
            write!(f, "; {} operations cut before they settled (held marks at their cap)", self.cut)?;
        }
        Ok(())
    }
}
