//! The marks inside a merged change, declared after the standard and
//! closing hops (see [`table`]). Slices: `start→key` resolves the row's key,
//! `key→site` the site's ordinal, `site→compare` reads the clock (and, on a
//! tie, the local value), `compare→apply` writes the value, `apply→clock`
//! records the winning clock. A change that loses ends at `compare`.

use hopscope_probe::{Hop, HopTable, Side};

/// Names, in order, of the merge marks.
pub const NAMES: [&str; 6] = ["start", "key", "site", "compare", "apply", "clock"];
/// The change is in hand.
pub const START: Hop = Hop(12);
/// Its row's key is resolved.
pub const KEY: Hop = Hop(13);
/// Its site's ordinal is resolved.
pub const SITE: Hop = Hop(14);
/// The clocks are compared.
pub const COMPARE: Hop = Hop(15);
/// The value is applied (winning changes).
pub const APPLY: Hop = Hop(16);
/// The winning clock is recorded.
pub const CLOCK: Hop = Hop(17);

/// The standard hops plus these, with the ids above.
pub fn table() -> HopTable {
    let mut table = HopTable::standard();
    for name in NAMES {
        table.add(name, Side::Writer);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_marks_get_the_ids_their_constants_say() {
        let table = table();
        let ids = [START, KEY, SITE, COMPARE, APPLY, CLOCK];
        for (name, id) in NAMES.iter().zip(ids) {
            assert_eq!(table.find(name), Some(id), "{name}");
        }
    }
}
