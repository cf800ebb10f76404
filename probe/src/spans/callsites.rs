//! Which watch each span callsite belongs to, decided once per callsite.
//!
//! `tracing` registers every callsite with every subscriber before its first
//! span; the layer matches the callsite's name against its watches then and
//! remembers the answer here, keyed by the callsite's `'static` metadata
//! address. Creating a span then costs a few atomic loads, not a string
//! comparison per watch. The table only grows (callsites are static); when
//! it is full, or a callsite was never registered with this layer, the
//! answer is computed from the name each time: slower, never wrong.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use tracing::Metadata;

/// Callsites remembered; a program has a few hundred span callsites at most.
const SLOTS: usize = 2_048;

/// The answer "not watched".
pub(crate) const UNWATCHED: u32 = u32::MAX;

/// An entry whose answer is not written yet.
const PENDING: u32 = 0;

#[derive(Debug)]
struct Entry {
    /// The metadata's address, 0 while free.
    key: AtomicUsize,
    /// The watch index + 1 once written ([`UNWATCHED`] as itself),
    /// [`PENDING`] while being written.
    watch: AtomicU32,
}

/// The layer's callsite table.
#[derive(Debug)]
pub(crate) struct Callsites {
    entries: Box<[Entry]>,
}

impl Default for Callsites {
    fn default() -> Self {
        Callsites {
            entries: (0..SLOTS).map(|_| Entry { key: AtomicUsize::new(0), watch: AtomicU32::new(0) }).collect(),
        }
    }
}

/// A callsite's key: the address of its metadata, which `tracing` hands to
/// every callback of that callsite (callsite metadata is a `static`).
fn key(metadata: &Metadata<'_>) -> usize {
    std::ptr::from_ref(metadata) as usize
}

impl Callsites {
    /// The watch of `metadata`: remembered, or `decide(name)` (then
    /// remembered).
    #[inline]
    pub(crate) fn watch(&self, metadata: &Metadata<'_>, decide: impl Fn(&str) -> u32) -> u32 {
        let key = key(metadata);
        let start = key.wrapping_mul(0x9E37_79B9) % SLOTS;
        for i in 0..SLOTS {
            let entry = &self.entries[(start + i) % SLOTS];
            match entry.key.load(Ordering::Acquire) {
                k if k == key => {
                    return match entry.watch.load(Ordering::Acquire) {
                        PENDING => decide(metadata.name()),
                        UNWATCHED => UNWATCHED,
                        stored => stored - 1,
                    };
                }
                0 => return self.remember(metadata, decide(metadata.name())),
                _ => {}
            }
        }
        decide(metadata.name())
    }

    /// Store `watch` as the answer for `metadata`; returns it.
    #[cold]
    pub(crate) fn remember(&self, metadata: &Metadata<'_>, watch: u32) -> u32 {
        let key = key(metadata);
        let start = key.wrapping_mul(0x9E37_79B9) % SLOTS;
        for i in 0..SLOTS {
            let entry = &self.entries[(start + i) % SLOTS];
            let held = match entry.key.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => key,
                Err(held) => held,
            };
            if held == key {
                // UNWATCHED (u32::MAX) wraps to 0 here, so store it as itself.
                let stored = if watch == UNWATCHED { UNWATCHED } else { watch + 1 };
                entry.watch.store(stored, Ordering::Release);
                return watch;
            }
        }
        watch
    }
}
