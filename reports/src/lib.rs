//! Rendering: plotters charts (PNG, SVG) and the self-contained HTML report,
//! drawn only from what [`hopscope_analyze`] produced. It measures nothing
//! and computes no statistics of its own.
//!
//! The charts arrive with the reports issue.

#![deny(missing_docs)]
