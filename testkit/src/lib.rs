//! What hopscope's tests and benchmarks share, so no test file carries its
//! own copy:
//!
//! - [`Counting`], a counting global allocator, the instrument behind "the
//!   hot path allocates nothing" and the per-input memory of the fuzz run;
//! - [`crowded`] and [`until_uncrowded`]: a test whose flow needs runs the
//!   host left alone starts it again when another process crowded one;
//! - [`output_text`]: what a command a test ran said, both streams.
//!
//! A test binary installs the allocator once and reads it around what it
//! watches:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: hopscope_testkit::Counting = hopscope_testkit::Counting;
//!
//! let before = hopscope_testkit::allocations();
//! /* the code under watch */
//! assert_eq!(hopscope_testkit::allocations(), before);
//! ```

#![deny(missing_docs)]

mod alloc;
mod crowded;

pub use alloc::*;
pub use crowded::{crowded, until_uncrowded};

/// What a finished command said: its stdout, then its stderr, as text (a
/// test of a command line asserts on what a user reads, whichever stream).
pub fn output_text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}
