//! The rendering choices a reader may change, apart from the drawing: a
//! build without the `render` feature still takes them on its command line
//! and writers, and the charts read them when they draw.

/// Rendering choices a reader may change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChartOptions {
    /// Draw the distributions on a logarithmic µs axis.
    pub log_x: bool,
}
