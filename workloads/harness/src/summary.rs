//! What a person reads in the terminal after a run: each lane's µs per
//! operation, the derived figures, the slices, the cross-check and the
//! observer effect, then the headline and warnings. The words are the
//! reports crate's ([`hopscope_reports::terminal`]); this path stays for
//! programs that print it themselves.

pub use hopscope_reports::terminal::decomposition;
