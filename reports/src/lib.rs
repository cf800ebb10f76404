//! Every file a run writes, from what hopscope-analyze computed: the JSON
//! results, the Markdown receipts, and (the `render` feature, on by
//! default) plotters charts as PNG files and the self-contained
//! `report.html`. Nothing here measures or computes a statistic; every
//! number written is a field of the result.
//!
//! - [`finish`]: the one writer a run ends with: its result's files, the
//!   change against a baseline, the trace listed among them ([`Written`]).
//! - [`receipt`]: the Markdown receipts (`receipt.md`) of every kind of
//!   result.
//! - `charts`, `style`, `render` (with `render`): one chart per file over
//!   any plotters backend, the palette and embedded DejaVu Sans font (PNG
//!   text renders the same on a machine with no fonts), and the PNG and
//!   page writers `hopscope report` also calls. Without the feature the
//!   chart and template stack is not built and runs list their drawn files
//!   as not drawn.
//! - [`write_decomposition`] and its siblings: each kind of result's files.
//! - [`tables`]: the results of many runs as Parquet tables a query engine
//!   reads (the writer is the feature `parquet`).

#![deny(missing_docs)]

pub mod calibration;
mod change;
mod chart_options;
#[cfg(feature = "render")]
pub mod charts;
mod drawn;
mod error;
mod finish;
#[cfg(feature = "render")]
mod html;
pub mod receipt;
#[cfg(feature = "render")]
mod render;
#[cfg(feature = "render")]
pub mod style;
pub mod tables;
pub mod terminal;
mod text_file;
mod written;

pub use change::{
    change_markdown, decided as change_decided, headline as change_headline, judged_line as change_judged,
    sentence as change_sentence,
};
pub use chart_options::ChartOptions;
#[cfg(feature = "render")]
pub use charts::ChartKind;
#[cfg(feature = "render")]
pub use charts::{
    ab_png, ab_svg, causal_png, causal_svg, frontier_png, merge_png, merge_slices_png, merge_slices_svg, merge_svg,
    resolution_png,
};
pub use drawn::BUILT as DRAWS;
pub use error::ReportError;
pub use finish::{Finished, RunResult, finish};
#[cfg(feature = "render")]
pub use html::{causal_page, experiment_page, merge_page, page};
#[cfg(feature = "render")]
pub use render::{Rendered, render, render_experiment, render_merge};
pub use written::{
    Written, write_causal, write_decomposition, write_experiment, write_merge, write_net, write_resolution, write_sweep,
};
