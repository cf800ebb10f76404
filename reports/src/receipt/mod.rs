//! The Markdown receipts: what a reviewer pastes, one per kind of result,
//! rendered from the data `hopscope_analyze` returns (formatting only).
//!
//! - the decomposition's `receipt.md` ([`markdown`], and [`body_markdown`]
//!   for a page that shows the headline and warnings itself);
//! - [`experiment`], [`merge`], [`sweep`] and [`resolution`]: each its
//!   result's `receipt.md`.

mod ab_reason;
mod capture;
pub mod causal;
mod checkpoints;
pub mod contention;
mod crosscheck;
mod declaration;
mod decomposition;
pub mod experiment;
mod lane_facts;
pub mod merge;
pub mod net;
mod placements;
pub mod resolution;
pub mod shared;
pub mod sweep;
mod warning;
mod wording;

pub use ab_reason::reason;
pub use decomposition::{body_markdown, date, headline, markdown};
pub use warning::{floor_refusal, partial_sentence, warning, warnings};
pub use wording::{code_span, median_text, owner_label, run_title};
