//! Statistics over validated samples: pure functions, no I/O, no panics.
//!
//! [`Samples::new`] refuses empty or non-finite data, so every function here
//! can assume at least one finite value. Costs are O(n log n) for anything
//! that sorts; the bootstrap is O(resamples × n log n).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// Why a set of numbers cannot be summarised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleError {
    /// No values at all.
    #[error("no samples")]
    Empty,
    /// A NaN or infinite value (the index of the first one).
    #[error("sample {0} is not a finite number")]
    NotFinite(usize),
}

/// A non-empty, finite, sorted set of values.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// Validate and sort `values`.
    pub fn new(mut values: Vec<f64>) -> Result<Samples, SampleError> {
        if values.is_empty() {
            return Err(SampleError::Empty);
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(SampleError::NotFinite(i));
        }
        values.sort_by(f64::total_cmp);
        Ok(Samples(values))
    }

    /// The values, ascending.
    pub fn values(&self) -> &[f64] {
        &self.0
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a `Samples` has at least one value.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The median (mean of the two middle values for even counts).
    pub fn median(&self) -> f64 {
        median_sorted(&self.0)
    }

    /// The `q`-quantile (0 ≤ q ≤ 1), linear interpolation between ranks.
    pub fn quantile(&self, q: f64) -> f64 {
        quantile_sorted(&self.0, q)
    }

    /// Median absolute deviation from the median (unscaled).
    pub fn mad(&self) -> f64 {
        let m = self.median();
        let mut deviations: Vec<f64> = self.0.iter().map(|v| (v - m).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        median_sorted(&deviations)
    }

    /// Arithmetic mean.
    pub fn mean(&self) -> f64 {
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }

    /// Coefficient of variation: sample standard deviation over mean; 0 for
    /// a single value or a zero mean.
    pub fn cv(&self) -> f64 {
        let n = self.0.len();
        let mean = self.mean();
        if n < 2 || mean == 0.0 {
            return 0.0;
        }
        let var = self.0.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        var.sqrt() / mean.abs()
    }

    /// Values outside Tukey's fences (1.5 IQR beyond the quartiles): counted,
    /// never dropped.
    pub fn tukey_outliers(&self) -> usize {
        let q1 = self.quantile(0.25);
        let q3 = self.quantile(0.75);
        let iqr = q3 - q1;
        let (low, high) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        self.0.iter().filter(|v| **v < low || **v > high).count()
    }

    /// Bootstrap 95% confidence interval of the median: `resamples` draws
    /// with replacement from a ChaCha8 stream seeded with `seed`, so the
    /// same data and seed always give the same interval.
    pub fn median_ci95(&self, resamples: usize, seed: u64) -> (f64, f64) {
        bootstrap_ci95(&self.0, resamples, seed, median_selected)
    }

    /// Full summary with the default bootstrap settings.
    pub fn summary(&self, seed: u64) -> Summary {
        let (lo, hi) = self.median_ci95(BOOTSTRAP_RESAMPLES, seed);
        Summary {
            n: self.len(),
            median: self.median(),
            ci95: [lo, hi],
            mad: self.mad(),
            p10: self.quantile(0.10),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            min: self.0[0],
            max: self.0[self.0.len() - 1],
            outliers: self.tukey_outliers(),
        }
    }
}

/// Bootstrap draws used by [`Samples::summary`]: enough for stable 2.5% and
/// 97.5% quantiles, cheap on block-level data.
pub const BOOTSTRAP_RESAMPLES: usize = 2_000;

/// A summary of samples, in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Bootstrap 95% CI of the median, `[low, high]`.
    pub ci95: [f64; 2],
    /// Median absolute deviation.
    pub mad: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Tukey outliers (reported, not removed).
    pub outliers: usize,
}

impl Summary {
    /// Scale every figure by `factor` (e.g. ns → µs).
    pub fn scaled(self, factor: f64) -> Summary {
        Summary {
            median: self.median * factor,
            ci95: [self.ci95[0] * factor, self.ci95[1] * factor],
            mad: self.mad * factor,
            p10: self.p10 * factor,
            p90: self.p90 * factor,
            p99: self.p99 * factor,
            min: self.min * factor,
            max: self.max * factor,
            ..self
        }
    }
}

/// Bootstrap 95% CI of `statistic` over `values` (any order).
pub fn bootstrap_ci95(values: &[f64], resamples: usize, seed: u64, statistic: fn(&mut [f64]) -> f64) -> (f64, f64) {
    if values.is_empty() || resamples == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draw = vec![0.0; values.len()];
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in draw.iter_mut() {
            // Modulo bias is below 2^-40 for any sample count used here.
            *slot = values[(rng.next_u64() % values.len() as u64) as usize];
        }
        stats.push(statistic(&mut draw));
    }
    stats.sort_by(f64::total_cmp);
    (quantile_sorted(&stats, 0.025), quantile_sorted(&stats, 0.975))
}

/// Distribution-free 95% CI of the median (the sign test's interval):
/// the order statistics `x(k)` and `x(n+1−k)` of the sorted values, with
/// `k` the largest rank whose binomial(n, ½) tail stays at or below 2.5%.
/// It costs one sort, not a bootstrap, and covers the median at ≥ 95% for
/// any continuous distribution. Fewer than six values cannot reach 95%:
/// the interval is then the whole range. `(NaN, NaN)` when empty.
pub fn median_ci95_order_statistics(values: &mut [f64]) -> (f64, f64) {
    median_ci_order_statistics(values, 0.025)
}

/// [`median_ci95_order_statistics`] with each tail at most `tail` (0.0125
/// for a 97.5% interval).
pub fn median_ci_order_statistics(values: &mut [f64], tail: f64) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    values.sort_by(f64::total_cmp);
    let k = sign_test_rank(n, tail);
    if k == 0 {
        return (values[0], values[n - 1]);
    }
    (values[k - 1], values[n - k])
}

/// The largest `k` with P(Binomial(n, ½) ≤ k − 1) ≤ `tail` (0 when even
/// k = 1 is too wide), summed in log space so any `n` is exact enough.
fn sign_test_rank(n: usize, tail: f64) -> usize {
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64; // ln C(n, 0)
    let mut cumulative = 0.0f64;
    for i in 0..n.div_ceil(2) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        cumulative += (ln_choose - ln_half_n).exp();
        // cumulative = P(B ≤ i); k − 1 = i is allowed while it stays ≤ tail.
        if cumulative > tail {
            return i;
        }
    }
    n.div_ceil(2)
}

/// A two-sided confidence level a CI is drawn at. A verdict's false-alarm
/// rate under no change is one minus it: 95% calls one clean comparison in
/// twenty, which a gate run on every merge cannot afford; 99% calls one in
/// a hundred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Confidence {
    /// 95%, the default.
    #[default]
    P95,
    /// 99%.
    P99,
}

impl Confidence {
    /// The level for `pct` (95 or 99), `None` for any other.
    pub fn from_pct(pct: f64) -> Option<Confidence> {
        match pct {
            95.0 => Some(Confidence::P95),
            99.0 => Some(Confidence::P99),
            _ => None,
        }
    }

    /// The level in percent.
    pub fn pct(self) -> f64 {
        match self {
            Confidence::P95 => 95.0,
            Confidence::P99 => 99.0,
        }
    }

    /// The half-width factor of a CI at this level: Student's t quantile
    /// with `df` degrees of freedom. Exact table values up to 4 degrees of
    /// freedom; beyond, the Cornish–Fisher expansion about the normal
    /// quantile (Hill, CACM 1970), within 0.004 of the table from 5 on.
    /// `NaN` for 0.
    pub fn t(self, df: usize) -> f64 {
        let (z, table) = match self {
            Confidence::P95 => (1.959_963_984_540_054, [12.706_204_736, 4.302_652_730, 3.182_446_305, 2.776_445_105]),
            Confidence::P99 => (2.575_829_303_548_9, [63.656_741_163, 9.924_843_201, 5.840_909_310, 4.604_094_871]),
        };
        match df {
            0 => f64::NAN,
            1..=4 => table[df - 1],
            _ => {
                let n = df as f64;
                let z2 = z * z;
                let g1 = (z2 + 1.0) * z / 4.0;
                let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
                let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
                let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92_160.0;
                z + g1 / n + g2 / n.powi(2) + g3 / n.powi(3) + g4 / n.powi(4)
            }
        }
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom: the
/// half-width factor of a two-sided 95% CI of a mean ([`Confidence::t`]).
pub fn student_t_975(df: usize) -> f64 {
    Confidence::P95.t(df)
}

/// The `gamma`-trimmed mean of `values` with its CI at `level` (Tukey and
/// McLaughlin; Yuen's for one sample): the mean of the middle values once
/// the lowest and highest `⌊gamma·n⌋` are set aside, its standard error
/// from the winsorized variance (the set-aside values pulled in to the
/// nearest kept one) over `(h/n)·√n`, `h` the values kept, and Student's
/// t on `h − 1` degrees of freedom. A few wild values widen a plain
/// mean's CI without bound; here they only lose their say. With fewer
/// than five values nothing is trimmed (the plain mean and t). `None`
/// with fewer than two values. Returns `(mean, lo, hi, winsorized sd)`.
pub fn trimmed_mean_ci(values: &[f64], gamma: f64, level: Confidence) -> Option<(f64, f64, f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let g = if n < 5 { 0 } else { (gamma.clamp(0.0, 0.49) * n as f64).floor() as usize };
    let kept = &sorted[g..n - g];
    let h = kept.len();
    let mean = kept.iter().sum::<f64>() / h as f64;
    let (low, high) = (sorted[g], sorted[n - g - 1]);
    let winsorized: Vec<f64> = sorted.iter().map(|x| x.clamp(low, high)).collect();
    let w_mean = winsorized.iter().sum::<f64>() / n as f64;
    let sd = (winsorized.iter().map(|x| (x - w_mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let se = sd / ((h as f64 / n as f64) * (n as f64).sqrt());
    let half = level.t(h - 1) * se;
    Some((mean, mean - half, mean + half, sd))
}

/// Median of values in any order (sorts in place).
pub fn median_of_unsorted(values: &mut [f64]) -> f64 {
    // Unstable: equal values are indistinguishable, and pattern-defeating
    // quicksort beats the stable merge sort on the join's hot path.
    values.sort_unstable_by(f64::total_cmp);
    median_sorted(values)
}

/// The median of `values`, the same as [`median_of_unsorted`]'s, found by
/// selection (linear) instead of a sort: a bootstrap takes thousands of
/// medians of a capture's thousands of blocks. `values` is left unordered.
fn median_selected(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let (below, middle, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let middle = *middle;
    if n % 2 == 1 {
        return middle;
    }
    // The largest of the lower half is the other middle value.
    below.iter().copied().max_by(f64::total_cmp).map_or(middle, |lower| (lower + middle) / 2.0)
}

/// The median of ascending `values` (NaN when empty).
pub(crate) fn median_sorted(values: &[f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

pub(crate) fn quantile_sorted(values: &[f64], q: f64) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    values[lo] + (values[hi] - values[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_median_found_by_selection_is_the_sorted_one() {
        for n in 0..40usize {
            // Ties, negatives and a spread of magnitudes, in a scrambled order.
            let values: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64 - 4.0) * 10f64.powi((i % 3) as i32)).collect();
            let (mut a, mut b) = (values.clone(), values.clone());
            let (sorted, selected) = (median_of_unsorted(&mut a), median_selected(&mut b));
            assert!(sorted.to_bits() == selected.to_bits(), "{n} values: {sorted} sorted, {selected} selected");
        }
    }

    #[test]
    fn refuses_empty_and_non_finite_data() {
        assert_eq!(Samples::new(vec![]), Err(SampleError::Empty));
        assert_eq!(Samples::new(vec![1.0, f64::NAN]), Err(SampleError::NotFinite(1)));
        assert_eq!(Samples::new(vec![f64::INFINITY]), Err(SampleError::NotFinite(0)));
    }

    #[test]
    fn known_values() {
        let s = Samples::new(vec![5.0, 1.0, 4.0, 2.0, 3.0]).expect("valid");
        assert_eq!(s.median(), 3.0);
        assert_eq!(s.mad(), 1.0);
        assert_eq!(s.quantile(0.0), 1.0);
        assert_eq!(s.quantile(1.0), 5.0);
        assert_eq!(s.quantile(0.25), 2.0);
        assert_eq!(s.mean(), 3.0);
        assert_eq!(Samples::new(vec![1.0, 2.0, 3.0, 4.0]).expect("valid").median(), 2.5);
    }

    #[test]
    fn tukey_counts_the_far_value() {
        let s = Samples::new(vec![10.0, 11.0, 10.5, 10.2, 10.8, 100.0]).expect("valid");
        assert_eq!(s.tukey_outliers(), 1);
        assert_eq!(s.len(), 6, "outliers are counted, not removed");
    }

    #[test]
    fn bootstrap_is_reproducible_with_its_seed_and_brackets_the_median() {
        let s = Samples::new((0..101).map(|i| (i * 37 % 101) as f64).collect()).expect("valid");
        let a = s.median_ci95(1_000, 42);
        let b = s.median_ci95(1_000, 42);
        let c = s.median_ci95(1_000, 43);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.0 <= s.median() && s.median() <= a.1, "{a:?} around {}", s.median());
        let constant = Samples::new(vec![7.0; 20]).expect("valid");
        assert_eq!(constant.median_ci95(500, 1), (7.0, 7.0));
    }

    #[test]
    fn cv_of_constant_data_is_zero() {
        assert_eq!(Samples::new(vec![3.0; 5]).expect("valid").cv(), 0.0);
        let cv = Samples::new(vec![9.0, 11.0]).expect("valid").cv();
        assert!((cv - (2.0f64).sqrt() / 10.0).abs() < 1e-12);
    }

    #[test]
    fn order_statistic_ci_matches_the_binomial_table() {
        // n = 20: P(B ≤ 5) = 0.0207 ≤ 0.025 < P(B ≤ 6) = 0.0577, so k = 6.
        assert_eq!(sign_test_rank(20, 0.025), 6);
        // n = 6: P(B ≤ 0) = 0.0156, P(B ≤ 1) = 0.109: k = 1, the range.
        assert_eq!(sign_test_rank(6, 0.025), 1);
        assert_eq!(sign_test_rank(5, 0.025), 0);
        let mut v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(median_ci95_order_statistics(&mut v), (6.0, 15.0));
        assert_eq!(median_ci95_order_statistics(&mut [3.0, 1.0]), (1.0, 3.0));
        assert!(median_ci95_order_statistics(&mut []).0.is_nan());
        // Large n: about n/2 − 0.98·√n.
        let k = sign_test_rank(10_000, 0.025);
        assert!((4_900..=4_903).contains(&k), "{k}");
    }

    #[test]
    fn students_t_matches_the_table() {
        // t(0.975; df) from the standard table.
        for (df, t) in [
            (1, 12.706),
            (2, 4.303),
            (3, 3.182),
            (4, 2.776),
            (5, 2.571),
            (6, 2.447),
            (9, 2.262),
            (19, 2.093),
            (39, 2.023),
            (120, 1.980),
        ] {
            assert!((student_t_975(df) - t).abs() < 0.002, "df {df}: {} vs {t}", student_t_975(df));
        }
        assert!(student_t_975(0).is_nan());
        assert!((student_t_975(1_000_000) - 1.95996).abs() < 1e-4);
        // t(0.995; df) from the same table: the 99% level.
        for (df, t) in [(1, 63.657), (4, 4.604), (5, 4.032), (8, 3.355), (19, 2.861), (59, 2.662), (120, 2.617)] {
            let got = Confidence::P99.t(df);
            assert!((got - t).abs() < 0.004, "df {df}: {got} vs {t}");
        }
        assert_eq!(Confidence::from_pct(99.0), Some(Confidence::P99));
        assert_eq!(Confidence::from_pct(90.0), None);
    }

    #[test]
    fn a_trimmed_mean_lets_a_few_wild_values_lose_their_say() {
        // 20 values near 0 and two wild ones: the plain mean's CI would
        // span ±0.1; the trimmed one stays with the middle.
        let mut values: Vec<f64> = (0..20).map(|i| f64::from(i % 5) * 0.01 - 0.02).collect();
        values.extend([0.9, -0.8]);
        let (mean, lo, hi, _) = trimmed_mean_ci(&values, 0.2, Confidence::P95).expect("enough values");
        assert!(mean.abs() < 0.01 && hi - lo < 0.05, "{mean} {lo}…{hi}");
        // Under five values nothing is trimmed: the plain mean.
        let (mean, ..) = trimmed_mean_ci(&[1.0, 2.0, 9.0], 0.2, Confidence::P95).expect("three values");
        assert!((mean - 4.0).abs() < 1e-12);
        assert!(trimmed_mean_ci(&[1.0], 0.2, Confidence::P95).is_none());
    }
}
