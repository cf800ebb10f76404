//! Pure analysis of `.hop` traces: join marks into per-operation slices,
//! summarise them (medians of block medians, MAD, bootstrap CIs), derive the
//! lane arithmetic (`hop`, `boundary`, `library`), cross-check the two
//! instruments, give A/B verdicts and build receipts. It reads traces through
//! [`hopscope_probe::trace`] and never runs a workload.
//!
//! The analysis arrives with the decompose issue.

#![deny(missing_docs)]
