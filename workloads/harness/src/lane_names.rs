//! The names a lane declares: the rule every lane and thread-role name
//! follows, and the role the harness itself gives a lane's statements.
//! One floor below the lane declarations (`lane.rs`, `sqlite.rs`) and the
//! traced threads renamed after their own names (`traced.rs`), which all
//! hold names to it.

/// Longest lane or thread-role name: names become file names, trace
/// header entries and report text.
pub const MAX_NAME_BYTES: usize = 64;

/// Refuse a name that could not serve as a path and a table cell: 1 to
/// [`MAX_NAME_BYTES`] bytes of ASCII letters, digits, `-` and `_`, in
/// segments joined by `/` (`naive/cold`; no `.`: run metadata keys lanes as
/// `lane.<name>.<field>`).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(format!("`{name}` must have 1 to {MAX_NAME_BYTES} bytes"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/'))) {
        return Err(format!("`{name}` holds {c:?}: use ASCII letters, digits, `-`, `_` and `/` between parts"));
    }
    if name.split('/').any(str::is_empty) {
        return Err(format!("`{name}` has an empty part between `/`"));
    }
    Ok(())
}

/// The thread role a lane probed by SQLite's trace hook hands its
/// statements' marks in as.
#[cfg(feature = "sqlite")]
pub const SQLITE_ROLE: &str = hopscope_probe::STATEMENT_ROLE;
