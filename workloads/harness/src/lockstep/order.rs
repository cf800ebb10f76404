//! The order of a lockstep round (which arm's follower runs first) and of
//! a pass's start (which arm's process starts first).
//!
//! Passes alternate `a` before `b` (even passes) and `b` before `a` (odd),
//! as an A/B run's passes do, and within a pass the control takes each
//! place in turn. Over a pair of passes every arm follows every other
//! equally often (twice per six rounds), so what one block leaves behind
//! (a warm cache, a cold core) falls on each arm alike.

/// The arms' indices (0 `a`, 1 `b`, 2 `control`) in round `sample` of
/// pass `pass`, of a run of `samples` rounds per pass.
///
/// The three rows of a pass order cycle on from one pair of passes to the
/// next rather than restarting each pass: with 4 rounds a pass restarted
/// at the first row ran the control last in half its rounds and `a` and
/// `b` in a quarter, and the control read +29 ns per write slower than
/// `a` (median of 20 null kv-writer decisions; +5…+91) — a noise floor
/// that was the round order's. Cycling, every arm takes every place
/// equally often over three pairs of passes, whatever the rounds (4 null
/// decisions after: the control −9.6…+17.8 ns, mean +1).
pub fn round(pass: u32, sample: u32, samples: u32) -> [usize; 3] {
    const A_FIRST: [[usize; 3]; 3] = [[0, 1, 2], [0, 2, 1], [2, 0, 1]];
    const B_FIRST: [[usize; 3]; 3] = [[1, 0, 2], [1, 2, 0], [2, 1, 0]];
    let rows = if pass.is_multiple_of(2) { &A_FIRST } else { &B_FIRST };
    // Both passes of a pair take the same rows: each is the other's mirror.
    let k = u64::from(pass / 2) * u64::from(samples) + u64::from(sample);
    rows[(k % 3) as usize]
}

/// The order pass `pass` starts its three followers in (arm indices).
///
/// Where a process starts in its pass's sequence moves it: with `a`, `b`
/// and the control always started in that order, the control (two
/// processes of build A) read 17 ns per write faster than `a` on average
/// over 40 kv-writer decisions, consistently (±3 ns), and started side by
/// side, 16 ns slower — as large as the changes a gate must call, and in a
/// fixed order it falls on `b − a` too. So every arm takes every place
/// equally often: the six orders in turn, each for two passes, so that
/// each runs with both round orders ([`round`]).
pub fn start_order(pass: u32) -> [usize; 3] {
    const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [1, 0, 2], [0, 2, 1], [2, 1, 0]];
    ORDERS[((pass / 2) % 6) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arm_starts_in_every_place_with_both_round_orders() {
        // Twelve passes: each arm in each place four times, twice with a
        // before b in the rounds and twice with b before a; and a starts
        // before b as often as after.
        let mut seen = std::collections::BTreeMap::new();
        let mut a_before_b = 0;
        for pass in 0..12 {
            let order = start_order(pass);
            let mut sorted = order;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2], "pass {pass}: {order:?}");
            for (place, &arm) in order.iter().enumerate() {
                *seen.entry((arm, place, pass % 2)).or_insert(0) += 1;
            }
            let at = |arm| order.iter().position(|&x| x == arm);
            a_before_b += i32::from(at(0) < at(1));
        }
        assert_eq!(seen.len(), 18);
        assert!(seen.values().all(|&n| n == 2), "{seen:?}");
        assert_eq!(a_before_b, 6);
    }

    #[test]
    fn every_arm_takes_every_place_equally_often_whatever_the_rounds() {
        for samples in 1..=7 {
            let mut places = [[0u32; 3]; 3];
            for pass in 0..6 {
                for sample in 0..samples {
                    let r = round(pass, sample, samples);
                    for (place, &arm) in r.iter().enumerate() {
                        places[arm][place] += 1;
                    }
                }
            }
            assert!(places.iter().flatten().all(|&n| n == 2 * samples), "{samples} rounds: {places:?}");
        }
    }

    #[test]
    fn a_pair_of_passes_is_balanced_and_keeps_each_pass_in_one_order() {
        let mut follows = [[0u32; 3]; 3];
        for pass in 0..2 {
            for sample in 0..3 {
                let r = round(pass, sample, 3);
                let (a, b) = (r.iter().position(|&x| x == 0), r.iter().position(|&x| x == 1));
                assert_eq!(a < b, pass == 0, "pass {pass} sample {sample}: {r:?}");
                let mut sorted = r;
                sorted.sort_unstable();
                assert_eq!(sorted, [0, 1, 2]);
                for w in r.windows(2) {
                    follows[w[0]][w[1]] += 1;
                }
            }
        }
        for (x, row) in follows.iter().enumerate() {
            for (y, &n) in row.iter().enumerate() {
                assert_eq!(n, if x == y { 0 } else { 2 }, "{x} then {y}");
            }
        }
    }
}
