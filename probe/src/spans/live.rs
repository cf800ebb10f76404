//! Live watched spans: what each one marks and what it has seen so far, in a
//! fixed table of atomics.
//!
//! The layer must find a span's binding on every enter and exit, on whatever
//! thread polls it. Keeping it in the span's extensions costs an allocation
//! per span and a registry lookup per callback; this table is allocated once
//! with the layer and is read with plain atomic loads. A span's slot is
//! claimed when it is created (compare-and-swap of an empty key) and freed
//! when it closes; a span that finds no free slot among its probes is not
//! bound, and the layer counts it. Registry span ids carry a generation, so
//! a slot never answers for a later span that reuses an id.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::segments::{Owners, SEGMENT};
use crate::hop::Hop;

/// Slots in a table: live watched spans at once (per subscriber).
pub(crate) const SLOTS: usize = 4_096;

/// Slots a span may try, from its home slot on.
const PROBES: usize = 16;

/// One live span. Its own cache line: a slot is written by the thread that
/// polls the span, and a neighbour's by another.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The span's id, 0 while the slot is free.
    key: AtomicU64,
    /// The index of the watch that bound it.
    pub(crate) watch: AtomicU32,
    /// Times it has been entered.
    pub(crate) enters: AtomicU32,
    /// Whether `op` holds its operation id yet.
    pub(crate) has_op: AtomicBool,
    pub(crate) op: AtomicU64,
    /// Ticks of its first enter, 0 before it.
    pub(crate) first_enter: AtomicU64,
    /// Ticks of its latest exit, 0 before it.
    pub(crate) last_exit: AtomicU64,
    /// Claims of this slot so far ([`LiveSpans::claim`]): the high bits of
    /// the span ids it issues, so an id never names a later span.
    generation: AtomicU32,
    /// Handles to its span (`clone_span` adds one, `try_close` takes one):
    /// [`LiveSpans::claim`]'s spans are closed when the last one goes.
    pub(crate) refs: AtomicU32,
    /// The hops its enter and exit mark, each plus one (0: none), copied
    /// from its watch when bound: an enter or exit finds them on the line
    /// it already reads.
    hops: AtomicU32,
    /// Whether the span has no parent (its close is a root's).
    pub(crate) root: AtomicBool,
}

impl Slot {
    /// The operation id, once known.
    pub(crate) fn op(&self) -> Option<u64> {
        self.has_op.load(Ordering::Acquire).then(|| self.op.load(Ordering::Relaxed))
    }

    /// Set the operation id (a later `record` replaces an earlier one).
    pub(crate) fn set_op(&self, op: u64) {
        self.op.store(op, Ordering::Relaxed);
        self.has_op.store(true, Ordering::Release);
    }

    /// A freshly claimed slot's binding: its watch and op id, nothing seen.
    fn bind(&self, watch: u32, op: Option<u64>) {
        self.watch.store(watch, Ordering::Relaxed);
        self.enters.store(0, Ordering::Relaxed);
        self.first_enter.store(0, Ordering::Relaxed);
        self.last_exit.store(0, Ordering::Relaxed);
        match op {
            Some(op) => self.set_op(op),
            None => self.has_op.store(false, Ordering::Release),
        }
    }

    /// Record the hops its enter and exit mark.
    pub(crate) fn set_hops(&self, on_enter: Option<Hop>, on_exit: Option<Hop>) {
        let packed = |hop: Option<Hop>| hop.map_or(0, |h| u32::from(h.0) + 1);
        self.hops.store(packed(on_enter) << 16 | packed(on_exit), Ordering::Relaxed);
    }

    /// The hop its enter marks.
    #[inline]
    pub(crate) fn enter_hop(&self) -> Option<Hop> {
        let packed = self.hops.load(Ordering::Relaxed) >> 16;
        packed.checked_sub(1).map(|h| Hop(h as u16))
    }

    /// The hop its exit marks.
    #[inline]
    pub(crate) fn exit_hop(&self) -> Option<Hop> {
        let packed = self.hops.load(Ordering::Relaxed) & 0xffff;
        packed.checked_sub(1).map(|h| Hop(h as u16))
    }

    /// Note an enter at `ticks`: keeps the first one, and says whether this
    /// was it.
    pub(crate) fn entered(&self, ticks: u64) -> bool {
        // A load and a store, no read-modify-write: a span is entered by
        // one thread at a time in practice (a future by its poller); two
        // threads entering it at the same instant leave one of their ticks.
        let first = self.first_enter.load(Ordering::Relaxed) == 0;
        if first {
            self.first_enter.store(ticks.max(1), Ordering::Relaxed);
        }
        // Not a read-modify-write: two threads entering one span at the same
        // instant may count one enter; the count is a statistic, never a mark.
        self.enters.store(self.enters.load(Ordering::Relaxed).saturating_add(1), Ordering::Relaxed);
        first
    }

    /// Note an exit at `ticks`: keeps the latest one.
    pub(crate) fn exited(&self, ticks: u64) {
        self.last_exit.store(ticks.max(1), Ordering::Relaxed);
    }
}

/// The table of one subscriber's live watched spans.
#[derive(Debug)]
pub(crate) struct LiveSpans {
    slots: Box<[Slot]>,
    /// Which segments of the first [`SHARED`] slots threads own
    /// ([`LiveSpans::claim`]).
    owners: Owners,
}

impl Default for LiveSpans {
    fn default() -> Self {
        LiveSpans { slots: (0..SLOTS).map(|_| Slot::default()).collect(), owners: Owners::new(SHARED / SEGMENT) }
    }
}

/// Where the slots no thread owns begin: the last quarter of the table.
const SHARED: usize = SLOTS / 4 * 3;
const _: () = assert!(SHARED.is_multiple_of(SEGMENT), "whole segments");

/// Low bits of an id [`LiveSpans::claim`] issues: its slot's index.
const INDEX_BITS: u32 = SLOTS.trailing_zeros();
const _: () = assert!(SLOTS.is_power_of_two(), "an id's low bits are its slot");

/// Slots a claim tries, from where its thread last claimed.
const CLAIM_PROBES: usize = 64;

thread_local! {
    /// Where this thread's next claim looks first: the slot it last freed
    /// or claimed (in its own segment, or in the shared quarter).
    static NEXT_CLAIM: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// Where span `id` starts probing: a Fibonacci hash, so ids that differ in
/// their high (generation) bits only still spread.
fn home(id: u64) -> usize {
    (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % SLOTS
}

fn probes(id: u64) -> impl Iterator<Item = usize> {
    let start = home(id);
    (0..PROBES).map(move |i| (start + i) % SLOTS)
}

impl LiveSpans {
    /// Claim a slot for span `id` bound by watch `watch`, its op id if
    /// known. `None` when every probed slot is taken.
    pub(crate) fn insert(&self, id: u64, watch: u32, op: Option<u64>) -> Option<&Slot> {
        let slot = probes(id).map(|i| &self.slots[i]).find(|slot| {
            slot.key.load(Ordering::Relaxed) == 0
                && slot.key.compare_exchange(0, id, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })?;
        slot.bind(watch, op);
        Some(slot)
    }

    /// Claim a free slot for a new span bound by watch `watch` (its op id
    /// if known) and issue its id: the slot's index in the low bits, the
    /// slot's claim count above, so the id finds its slot in one load
    /// ([`LiveSpans::claimed`]). One handle. A slot of a segment the thread
    /// owns ([`segments`](super::segments)) is claimed with a load and a
    /// store; when its segments are full and no other is free, one of the
    /// shared quarter by compare-and-swap. `None` when those it tries are
    /// all taken.
    #[inline]
    pub(crate) fn claim(&self, watch: u32, op: Option<u64>) -> Option<(u64, &Slot)> {
        let hint = NEXT_CLAIM.try_with(std::cell::Cell::get).unwrap_or(usize::MAX);
        let mut segment = self.owners.current();
        while let Some(owned) = segment {
            let base = owned * SEGMENT;
            let start = if (base..base + SEGMENT).contains(&hint) { hint - base } else { 0 };
            for i in 0..SEGMENT {
                let index = base + (start + i) % SEGMENT;
                let slot = &self.slots[index];
                // Only this thread stores a key here: a free slot stays free
                // until it does.
                if slot.key.load(Ordering::Acquire) == 0 {
                    let id = Self::next_id(index, slot);
                    // Bound before its key is published: a thread that finds
                    // the key (with the id tracing hands over) finds the
                    // binding.
                    Self::bind_claimed(index, slot, id, watch, op);
                    slot.key.store(id, Ordering::Release);
                    return Some((id, slot));
                }
            }
            segment = self.owners.take_another();
        }
        self.claim_shared(hint, watch, op)
    }

    /// [`LiveSpans::claim`] in the shared quarter, by compare-and-swap: the
    /// binding is written once the slot is won.
    #[cold]
    fn claim_shared(&self, hint: usize, watch: u32, op: Option<u64>) -> Option<(u64, &Slot)> {
        let start = if (SHARED..SLOTS).contains(&hint) { hint - SHARED } else { 0 };
        (0..CLAIM_PROBES).find_map(|i| {
            let index = SHARED + (start + i) % (SLOTS - SHARED);
            let slot = &self.slots[index];
            if slot.key.load(Ordering::Relaxed) != 0 {
                return None;
            }
            let id = Self::next_id(index, slot);
            slot.key.compare_exchange(0, id, Ordering::Acquire, Ordering::Relaxed).ok()?;
            Self::bind_claimed(index, slot, id, watch, op);
            Some((id, slot))
        })
    }

    /// The id the next claim of free slot `index` issues: the slot's
    /// index, and its claim count above.
    #[inline]
    fn next_id(index: usize, slot: &Slot) -> u64 {
        let generation = u64::from(slot.generation.load(Ordering::Relaxed).wrapping_add(1).max(1));
        (generation << INDEX_BITS) | index as u64
    }

    /// Bind claimed slot `index` to span `id` (one handle, nothing seen),
    /// and start this thread's next claim there.
    #[inline]
    fn bind_claimed(index: usize, slot: &Slot, id: u64, watch: u32, op: Option<u64>) {
        slot.generation.store((id >> INDEX_BITS) as u32, Ordering::Relaxed);
        slot.refs.store(1, Ordering::Relaxed);
        slot.bind(watch, op);
        let _ = NEXT_CLAIM.try_with(|next| next.set(index));
    }

    /// The slot of span `id` issued by [`LiveSpans::claim`], if it is
    /// still live.
    #[inline]
    pub(crate) fn claimed(&self, id: u64) -> Option<&Slot> {
        let slot = &self.slots[(id as usize) & (SLOTS - 1)];
        (slot.key.load(Ordering::Acquire) == id).then_some(slot)
    }

    /// The slot of span `id`, if it is bound.
    #[inline]
    pub(crate) fn find(&self, id: u64) -> Option<&Slot> {
        probes(id).map(|i| &self.slots[i]).find(|slot| slot.key.load(Ordering::Acquire) == id)
    }

    /// Free `slot` (its span closed). Everything read from it must be read
    /// before this.
    pub(crate) fn remove(&self, slot: &Slot) {
        slot.key.store(0, Ordering::Release);
    }

    /// Free the slot of span `id` issued by [`LiveSpans::claim`], and make
    /// it where this thread's next claim starts: the line is in this
    /// thread's cache now, where a slot further on was last touched
    /// thousands of claims ago (a thread that creates and closes a span per
    /// step reuses one or two lines instead of walking the whole table).
    pub(crate) fn release(&self, id: u64, slot: &Slot) {
        self.remove(slot);
        let _ = NEXT_CLAIM.try_with(|next| next.set((id as usize) & (SLOTS - 1)));
    }

    /// Ids of the spans bound now: how the end of a block waits for spans
    /// still closing on other threads.
    pub(crate) fn bound(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().map(|s| s.key.load(Ordering::Acquire)).filter(|&k| k != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_keeps_first_enter_last_exit_and_a_late_op() {
        let live = LiveSpans::default();
        let slot = live.insert(42, 3, None).expect("room");
        assert_eq!(slot.op(), None);
        assert!(slot.entered(10));
        slot.exited(11);
        assert!(!slot.entered(20));
        slot.exited(21);
        slot.set_op(7);
        let found = live.find(42).expect("bound");
        assert_eq!(found.first_enter.load(Ordering::Relaxed), 10);
        assert_eq!(found.last_exit.load(Ordering::Relaxed), 21);
        assert_eq!(found.enters.load(Ordering::Relaxed), 2);
        assert_eq!((found.op(), found.watch.load(Ordering::Relaxed)), (Some(7), 3));
        live.remove(found);
        assert!(live.find(42).is_none());
        assert_eq!(live.bound().count(), 0);
    }

    #[test]
    fn a_claimed_id_finds_its_slot_and_never_a_later_span() {
        let live = LiveSpans::default();
        let (id, slot) = live.claim(2, Some(9)).expect("room");
        assert_eq!(slot.refs.load(Ordering::Relaxed), 1);
        assert_eq!(live.claimed(id).and_then(Slot::op), Some(9));
        live.remove(slot);
        assert!(live.claimed(id).is_none());
        // The same slot claimed again issues another id; the old one finds nothing.
        let ids: Vec<u64> = (0..3)
            .map(|_| {
                let (next, slot) = live.claim(2, None).expect("room");
                live.remove(slot);
                next
            })
            .collect();
        assert!(ids.iter().all(|&next| next != id && next != 0), "{id} {ids:?}");
        // Claims walk on through the table until it is full, then are refused.
        let held: Vec<u64> = std::iter::from_fn(|| live.claim(0, None).map(|(id, _)| id)).take(SLOTS + 1).collect();
        assert_eq!(held.len(), SLOTS);
        assert!(held.iter().all(|&id| live.claimed(id).is_some()));
    }

    #[test]
    fn colliding_ids_probe_on_and_a_full_neighbourhood_refuses() {
        let live = LiveSpans::default();
        // Ids with one home slot: the same low 24 bits after the hash are
        // hard to build, so fill the table until an insert is refused.
        let mut ids = Vec::new();
        for id in 1..=(SLOTS as u64 * 4) {
            match live.insert(id, 0, Some(id)) {
                Some(_) => ids.push(id),
                None => break,
            }
        }
        assert!(ids.len() >= SLOTS / 2, "only {} spans fit before a refusal", ids.len());
        for id in &ids {
            assert_eq!(live.find(*id).and_then(Slot::op), Some(*id), "span {id} finds its own slot");
        }
    }
}
