//! The order of a lockstep round: which arm's follower runs first.
//!
//! Passes alternate `a` before `b` (even passes) and `b` before `a` (odd),
//! as an A/B run's passes do, and within a pass the control takes each
//! place in turn. Over a pair of passes every arm follows every other
//! equally often (twice per six rounds), so what one block leaves behind
//! (a warm cache, a cold core) falls on each arm alike.

/// The arms' indices (0 `a`, 1 `b`, 2 `control`) in round `sample` of
/// pass `pass`.
pub fn round(pass: u32, sample: u32) -> [usize; 3] {
    const A_FIRST: [[usize; 3]; 3] = [[0, 1, 2], [0, 2, 1], [2, 0, 1]];
    const B_FIRST: [[usize; 3]; 3] = [[1, 0, 2], [1, 2, 0], [2, 1, 0]];
    let rows = if pass.is_multiple_of(2) { &A_FIRST } else { &B_FIRST };
    rows[(sample % 3) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_of_passes_is_balanced_and_keeps_each_pass_in_one_order() {
        let mut follows = [[0u32; 3]; 3];
        for pass in 0..2 {
            for sample in 0..3 {
                let r = round(pass, sample);
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
