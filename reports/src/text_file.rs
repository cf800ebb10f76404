//! Writing one text file of a run (JSON, a receipt, a page), the error
//! naming the file: the writers of both halves, written and drawn, end here.

use std::path::Path;

use crate::ReportError;

/// Write `text` to `path`, the error naming the file.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Io { path: path.to_owned(), source })
}
