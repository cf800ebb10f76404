//! The one error type of the trace format.

use std::path::PathBuf;

/// Why a trace could not be written or read. Reading errors carry the byte
/// offset at which the problem was found, so a corrupt file can be examined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read trace {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing failed.
    #[error("cannot write trace: {0}")]
    Io(#[from] std::io::Error),
    /// Reading an opened trace failed (a directory, a device error).
    #[error("cannot read trace: {0}")]
    Read(std::io::Error),
    /// The file does not start with the hopscope magic bytes.
    #[error(
        "not a hopscope trace: it starts with {}, where a trace starts with {}",
        printable(found),
        printable(expected)
    )]
    BadMagic {
        /// The first eight bytes of the file.
        found: [u8; 8],
        /// The magic this build writes.
        expected: [u8; 8],
    },
    /// The file was written by a format version this build cannot read.
    #[error("trace format version {found} at byte 8 is not supported (this build reads versions 2 to {supported})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u16,
        /// The version this build reads and writes.
        supported: u16,
    },
    /// The file ends before a complete structure.
    #[error("trace truncated at byte {offset}: {what} needs {needed} bytes, {available} left")]
    Truncated {
        /// Where the incomplete structure starts.
        offset: u64,
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes the file has left.
        available: u64,
    },
    /// A record's stored checksum does not match its content.
    #[error("checksum mismatch in {what} at byte {offset}: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// Where the record starts.
        offset: u64,
        /// Which record.
        what: &'static str,
        /// The checksum in the file.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// The bytes are well framed but say something impossible.
    #[error("corrupt trace at byte {offset}: {reason}")]
    Corrupt {
        /// Where the problem was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The header record does not hold a valid header.
    #[error("trace header at byte {offset} is not valid: {source}")]
    Header {
        /// Where the header's JSON starts.
        offset: u64,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// A header or block handed to the writer cannot be encoded, or refers to
    /// something the header does not declare; nothing was written.
    #[error("trace cannot be written: {reason}")]
    Unwritable {
        /// What is wrong.
        reason: String,
    },
}

/// Eight bytes as a reader recognises them: quoted text where every byte
/// is printable ASCII, else hex.
fn printable(bytes: &[u8; 8]) -> String {
    if bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("\"{}\"", String::from_utf8_lossy(bytes))
    } else {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("bytes {}", hex.join(" "))
    }
}
