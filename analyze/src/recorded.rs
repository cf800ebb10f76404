//! A finding as a result file holds it. Findings are data (an enum with
//! its figures, rendered in words by the reports); results written before
//! they were held sentences, and those still read back and are said as
//! they were.

use serde::{Deserialize, Serialize};

/// A finding: typed, or the sentence an older build wrote in its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Recorded<T> {
    /// The finding with its figures.
    Typed(T),
    /// A sentence from a result written before findings were data.
    Sentence(String),
}

impl<T> Recorded<T> {
    /// The finding as data; `None` for an older build's sentence.
    pub fn typed(&self) -> Option<&T> {
        match self {
            Recorded::Typed(t) => Some(t),
            Recorded::Sentence(_) => None,
        }
    }
}
