//! The one error type of report rendering.

use std::path::PathBuf;

/// Why a report could not be rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The embedded font could not be registered with plotters.
    #[error("the embedded chart font could not be loaded")]
    Font,
    /// A chart failed to draw.
    #[error("cannot draw the {chart} chart: {message}")]
    Chart {
        /// Which chart.
        chart: &'static str,
        /// What plotters said.
        message: String,
    },
    /// A result could not be encoded as JSON.
    #[error("cannot encode {what}: {source}")]
    Json {
        /// Which file.
        what: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The page template failed to render.
    #[error("cannot render the page: {0}")]
    Template(String),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}
