//! Pooled per-operation distributions in bounded memory.
//!
//! The headline figures are medians of block medians, computed exactly from
//! one block at a time. What pools every operation of a lane (p10/p90/p99
//! of a slice, the latency CDF, Tukey outlier counts) would otherwise need
//! every operation's value at once, which grows with the run. A
//! [`Distribution`] holds the values themselves up to [`EXACT_VALUES`], so
//! short runs get exact figures, and past that a DDSketch: each quantile is
//! then within [`RELATIVE_ACCURACY`] of the exact one, and its memory is
//! bounded by [`MAX_BINS`] whatever the run's length. Both take values of
//! either sign (a cross-thread slice can be a few ticks negative when two
//! cores' clocks disagree).
//!
//! Holding values first also bounds what a hostile trace can make the
//! sketch cost: a sketch's memory depends on how far apart its values are,
//! so two operations could otherwise claim a full sketch (256 KiB); a
//! sketch now takes at least [`EXACT_VALUES`] operations of input.

use sketches_ddsketch::{Config, DDSketch};

use crate::stats::quantile_sorted;

/// Relative accuracy of every pooled quantile past [`EXACT_VALUES`]: 0.1%,
/// e.g. ±20 ns on a 20 µs p99, below what one run's noise moves it.
pub const RELATIVE_ACCURACY: f64 = 0.001;

/// Values held exactly (32 KiB) before a distribution turns into a sketch.
pub const EXACT_VALUES: usize = 4_096;

/// Bins per sign before the lowest are merged: at 0.1% a bin is 0.2% wide,
/// so 16,384 bins span about 14 decades (1 ns to 10⁵ s) before any merge.
pub const MAX_BINS: u32 = 16_384;

/// Relative accuracy of a capture's per-window quantiles past
/// [`WINDOW_EXACT_VALUES`]: 0.25 %, ±0.1 µs on a 40 µs median. A capture
/// keeps one distribution per window per join thread, so a day's windows
/// must each be small: about 10 KiB (a bin is 0.5 % wide, three decades
/// of latency take ~1,400 bins) where a full one takes 25–50 KiB.
pub const WINDOW_RELATIVE_ACCURACY: f64 = 0.0025;

/// Values a window's distribution holds exactly (8 KiB) before it turns
/// into a sketch.
pub const WINDOW_EXACT_VALUES: usize = 1_024;

/// Magnitudes below this (ns) count as zero in a sketch.
const SMALLEST: f64 = 0.01;

/// Magnitudes are capped here (ns, about 11.6 days): a damaged trace's
/// tick counts cannot push a bin index out of range.
const LARGEST: f64 = 1e15;

/// Every value of one quantity over a lane's operations.
#[derive(Clone)]
pub struct Distribution {
    /// The values, ascending, while there are at most [`EXACT_VALUES`].
    exact: Vec<f64>,
    /// The values once there were more.
    sketch: Option<Box<DDSketch>>,
    config: Config,
    /// Values held exactly before the sketch takes over.
    exact_values: usize,
    /// A NaN or infinite value was offered: like [`crate::stats::Samples`],
    /// such a set has no quantiles.
    not_finite: bool,
    /// Sum of the finite values, for the mean: the one figure finer than
    /// the clock's grain a set of quantised durations can give.
    sum: f64,
}

impl std::fmt::Debug for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Distribution")
            .field("len", &self.len())
            .field("exact", &self.sketch.is_none())
            .field("not_finite", &self.not_finite)
            .finish()
    }
}

impl PartialEq for Distribution {
    /// Equal when they hold the same count and agree on every percentile:
    /// what a test of two joins of one trace needs.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.not_finite == other.not_finite
            && (0..=100).all(|q| self.quantile(f64::from(q) / 100.0) == other.quantile(f64::from(q) / 100.0))
    }
}

impl Default for Distribution {
    fn default() -> Self {
        Distribution::new()
    }
}

impl Distribution {
    /// An empty distribution.
    pub fn new() -> Distribution {
        Distribution::with(RELATIVE_ACCURACY, EXACT_VALUES)
    }

    /// An empty distribution for one window of a capture: exact up to
    /// [`WINDOW_EXACT_VALUES`], then within [`WINDOW_RELATIVE_ACCURACY`].
    pub fn for_window() -> Distribution {
        Distribution::with(WINDOW_RELATIVE_ACCURACY, WINDOW_EXACT_VALUES)
    }

    fn with(relative_accuracy: f64, exact_values: usize) -> Distribution {
        let config = Config::new(relative_accuracy, MAX_BINS, SMALLEST);
        Distribution { exact: Vec::new(), sketch: None, config, exact_values, not_finite: false, sum: 0.0 }
    }

    /// Add one value.
    pub fn add(&mut self, value: f64) {
        self.add_sorted(&[value]);
    }

    /// Add every value of `sorted` (ascending, as sorting for a median
    /// leaves them). Into a sketch this takes one bin lookup (a logarithm)
    /// per bin the values fall in rather than one per value.
    pub fn add_sorted(&mut self, sorted: &[f64]) {
        let all_finite = sorted.iter().all(|v| v.is_finite());
        self.not_finite |= !all_finite;
        self.sum += sorted.iter().filter(|v| v.is_finite()).sum::<f64>();
        let finite = |v: &&f64| v.is_finite();
        if let Some(sketch) = &mut self.sketch {
            if all_finite {
                add_runs(sketch, &self.config, sorted);
            } else {
                let values: Vec<f64> = sorted.iter().filter(finite).copied().collect();
                add_runs(sketch, &self.config, &values);
            }
            return;
        }
        let mut merged = std::mem::take(&mut self.exact);
        merged.extend(sorted.iter().filter(finite));
        // Two ascending runs: the standard sort merges them in linear time.
        merged.sort_by(f64::total_cmp);
        if merged.len() <= self.exact_values {
            self.exact = merged;
        } else {
            let mut sketch = Box::new(DDSketch::new(self.config));
            add_runs(&mut sketch, &self.config, &merged);
            self.exact = Vec::new();
            self.sketch = Some(sketch);
        }
    }

    /// Add every value `other` holds: the same quantity pooled elsewhere
    /// (a parallel join's other thread). Held values stay held while they
    /// fit; past that both become one sketch, whose bins add.
    pub fn merge(&mut self, other: &Distribution) {
        self.not_finite |= other.not_finite;
        let Some(theirs) = &other.sketch else {
            self.add_sorted(&other.exact);
            return;
        };
        let sketch = self.sketch.get_or_insert_with(|| {
            let mut sketch = Box::new(DDSketch::new(self.config));
            add_runs(&mut sketch, &self.config, &self.exact);
            sketch
        });
        self.exact = Vec::new();
        // Same configuration on both sides: the merge cannot be refused.
        let _ = sketch.merge(theirs);
        self.sum += other.sum;
    }

    /// The mean of the finite values (exact, whatever the count), or `None`
    /// when there are none.
    pub fn mean(&self) -> Option<f64> {
        let n = self.len();
        (n > 0).then(|| self.sum / n as f64)
    }

    /// Values added (finite ones).
    pub fn len(&self) -> usize {
        self.sketch.as_ref().map_or(self.exact.len(), |s| s.count())
    }

    /// Whether no value was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every value is held exactly.
    pub fn is_exact(&self) -> bool {
        self.sketch.is_none()
    }

    /// Whether quantiles can be given: at least one value, all finite.
    pub fn usable(&self) -> bool {
        !self.is_empty() && !self.not_finite
    }

    /// The `q`-quantile (0 ≤ q ≤ 1, clamped) with linear interpolation
    /// between ranks, as [`crate::stats::Samples::quantile`] defines it:
    /// exact while the values are held, else each ranked value within the
    /// relative accuracy (the smallest and largest exactly). `None` when
    /// not [`usable`](Self::usable).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if !self.usable() {
            return None;
        }
        let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
        if self.sketch.is_none() {
            return Some(quantile_sorted(&self.exact, q));
        }
        let n = self.len() as u64;
        let at = q * (n - 1) as f64;
        let (lo, hi) = (at.floor() as u64, (at.ceil() as u64).min(n - 1));
        let (low, high) = (self.value_at_rank(lo)?, self.value_at_rank(hi)?);
        Some(low + (at - lo as f64) * (high - low))
    }

    /// The value of rank `rank` (0-based, ascending).
    fn value_at_rank(&self, rank: u64) -> Option<f64> {
        let Some(sketch) = &self.sketch else { return self.exact.get(rank as usize).copied() };
        let n = sketch.count() as u64;
        // The sketch gives the exact minimum at q = 0 and maximum at q = 1,
        // and rank ⌊q·(n−1)⌋ between: aim at the middle of the rank so
        // rounding cannot land on its neighbour.
        let q = match rank {
            0 => 0.0,
            r if r + 1 >= n => 1.0,
            r => (r as f64 + 0.5) / (n - 1) as f64,
        };
        sketch.quantile(q).ok().flatten()
    }

    /// Values outside Tukey's fences (1.5 IQR beyond the quartiles): counted,
    /// never dropped; `None` when not usable.
    pub fn tukey_outliers(&self) -> Option<u64> {
        let (q1, q3) = (self.quantile(0.25)?, self.quantile(0.75)?);
        let iqr = q3 - q1;
        let (low, high) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let n = self.len() as u64;
        Some(self.first_rank(|v| v >= low) + (n - self.first_rank(|v| v > high)))
    }

    /// The first rank whose value satisfies `past` (monotone in the rank),
    /// or the count if none: a binary search over the ranks.
    fn first_rank(&self, past: impl Fn(f64) -> bool) -> u64 {
        let (mut lo, mut hi) = (0u64, self.len() as u64);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if past(self.value_at_rank(mid).unwrap_or(f64::NAN)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// Add the finite, ascending `sorted` to `sketch`, one bin's run at a time:
/// the same sketch as adding them one by one.
fn add_runs(sketch: &mut DDSketch, config: &Config, sorted: &[f64]) {
    let mut i = 0;
    while i < sorted.len() {
        let v = sorted[i];
        if !(v > SMALLEST && v < LARGEST) {
            sketch.add(v.clamp(-LARGEST, LARGEST));
            i += 1;
            continue;
        }
        // The run of values in `v`'s bin: below the next bin's lower bound,
        // checked against the sketch's own key for the last one so rounding
        // at the boundary cannot move a value.
        let key = config.key(v);
        let bound = config.pow_gamma(key + 1);
        let mut end = i + 1 + sorted[i + 1..].partition_point(|x| *x < bound && *x < LARGEST);
        while end > i + 1 && config.key(sorted[end - 1]) != key {
            end -= 1;
        }
        // First and last added themselves, so the sketch's exact minimum
        // and maximum stay exact.
        sketch.add_with_count(v, (end - i - 1) as u64);
        sketch.add(sorted[end - 1]);
        i = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Samples;

    #[test]
    fn two_halves_merged_are_the_whole() {
        for n in [10usize, 3_000, 50_000] {
            let values: Vec<f64> = (0..n).map(|i| ((i * 7919) % 10_007) as f64 + 1.0).collect();
            let whole = of(&values);
            let (mut a, b) = (of(&values[..n / 3]), of(&values[n / 3..]));
            a.merge(&b);
            assert_eq!(a.len(), whole.len());
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
                let (x, y) = (a.quantile(q).expect("usable"), whole.quantile(q).expect("usable"));
                assert!((x - y).abs() <= y * 2.0 * RELATIVE_ACCURACY, "n {n} q {q}: {x} against {y}");
            }
            assert!((a.mean().expect("mean") - whole.mean().expect("mean")).abs() < 1e-6);
        }
        let mut nan = of(&[1.0]);
        nan.merge(&of(&[f64::NAN]));
        assert!(!nan.usable(), "a NaN on either side makes the whole unusable");
    }

    fn of(values: &[f64]) -> Distribution {
        let mut d = Distribution::new();
        for v in values {
            d.add(*v);
        }
        d
    }

    /// Every percentile of `d` against the exact ones of `values`.
    fn within_accuracy(d: &Distribution, values: &[f64]) {
        within(d, values, RELATIVE_ACCURACY);
    }

    fn within(d: &Distribution, values: &[f64], accuracy: f64) {
        let samples = Samples::new(values.to_vec()).expect("samples");
        for q in (0..=1000).map(|q| f64::from(q) / 1000.0) {
            let (got, exact) = (d.quantile(q).expect("quantile"), samples.quantile(q));
            assert!((got - exact).abs() <= exact.abs() * accuracy, "q {q}: {got} vs {exact}");
        }
    }

    #[test]
    fn a_windows_distribution_is_exact_then_within_its_own_accuracy_and_small() {
        let few: Vec<f64> = (1..=WINDOW_EXACT_VALUES).map(|i| i as f64 * 3.7).collect();
        let mut d = Distribution::for_window();
        d.add_sorted(&few);
        assert!(d.is_exact());
        // Latencies over three decades, in a few sorted runs as blocks add them.
        let many: Vec<f64> = (1..=40_000u32).map(|i| 20_000.0 * 1.000_17f64.powi(i as i32 % 40_000)).collect();
        let mut d = Distribution::for_window();
        for run in many.chunks(1_500) {
            let mut run = run.to_vec();
            run.sort_by(f64::total_cmp);
            d.add_sorted(&run);
        }
        assert!(!d.is_exact());
        within(&d, &many, WINDOW_RELATIVE_ACCURACY);
        let bins = d.sketch.as_ref().map_or(0, |s| s.length());
        assert!(bins < 2_000, "{bins} bins: a window's sketch stays small");
    }

    #[test]
    fn few_values_are_exact_and_many_within_the_stated_accuracy() {
        let few: Vec<f64> = (1..=EXACT_VALUES).map(|i| i as f64 * 3.7).collect();
        let d = of(&few);
        assert!(d.is_exact());
        let samples = Samples::new(few.clone()).expect("samples");
        for q in [0.0, 0.1, 0.5, 0.99, 1.0] {
            assert_eq!(d.quantile(q), Some(samples.quantile(q)));
        }
        let many: Vec<f64> = (1..=10_000).map(|i| f64::from(i) * 3.7).collect();
        let d = of(&many);
        assert!(!d.is_exact());
        assert_eq!(d.len(), 10_000);
        within_accuracy(&d, &many);
    }

    #[test]
    fn a_heavy_tail_interpolates_like_samples() {
        // Mostly ~3 µs, a tail to 250 µs: the p99 sits between far-apart ranks.
        let values: Vec<f64> =
            (0..6_000u64).map(|i| if i % 97 == 0 { 250_000.0 + i as f64 } else { 3_000.0 + (i % 13) as f64 }).collect();
        within_accuracy(&of(&values), &values);
    }

    #[test]
    fn adding_sorted_runs_equals_adding_one_by_one() {
        let mut values: Vec<f64> = (0..20_000u64).map(|i| ((i * 7919) % 5003) as f64 * 0.41 - 30.0).collect();
        values.extend([0.0, 1e-9, 1e300, f64::MIN_POSITIVE, 12.0, 12.0, 12.0]);
        values.sort_by(f64::total_cmp);
        let one = of(&values);
        let mut runs = Distribution::new();
        runs.add_sorted(&values[..3_000]);
        runs.add_sorted(&values[3_000..]);
        assert_eq!(one.len(), runs.len());
        for q in (0..=1000).map(|q| f64::from(q) / 1000.0) {
            assert_eq!(one.quantile(q), runs.quantile(q), "q {q}");
        }
    }

    #[test]
    fn negative_zero_and_huge_values_are_kept_in_order() {
        let extremes = [-5.0, 0.0, 0.0, 7.0, 1e300];
        let d = of(&extremes);
        assert_eq!((d.quantile(0.0), d.quantile(0.5), d.quantile(1.0)), (Some(-5.0), Some(0.0), Some(1e300)));
        // In a sketch: huge values capped, the rest in order.
        let mut values: Vec<f64> = (0..EXACT_VALUES).map(|i| (i % 50) as f64).collect();
        values.extend(extremes);
        let d = of(&values);
        assert!(!d.is_exact());
        assert_eq!(d.quantile(0.0), Some(-5.0));
        assert!(d.quantile(1.0).expect("max") <= 1e15 * (1.0 + 2.0 * RELATIVE_ACCURACY));
    }

    #[test]
    fn a_non_finite_value_makes_it_unusable_like_samples() {
        let d = of(&[1.0, f64::NAN]);
        assert!(!d.usable());
        assert_eq!(d.quantile(0.5), None);
        assert_eq!(d.tukey_outliers(), None);
        assert_eq!(Distribution::new().quantile(0.5), None);
    }

    #[test]
    fn outliers_are_counted_on_both_sides_held_or_sketched() {
        let few = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 100.0, 0.5];
        // Quartiles 11.25 and 15.75, fences 4.5 and 22.5: 0.5 and 100 lie out.
        assert_eq!(of(&few).tukey_outliers(), Some(2));
        let mut many: Vec<f64> = (0..10_000).map(|i| 10.0 + f64::from(i % 8)).collect();
        many.extend([0.5, 100.0, 200.0]);
        assert_eq!(of(&many).tukey_outliers(), Some(3));
    }
}
