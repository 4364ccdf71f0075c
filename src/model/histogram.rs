//! An exact histogram of per-run disruption seconds: how many runs had each whole-second value.
//!
//! Disruption data is mostly zeros with a heavy tail, so a cell's week of runs has few distinct
//! values; the histogram is the whole data set, not an approximation, and percentiles computed
//! from it equal those computed from the raw values.

use std::fmt;

/// `(seconds, runs)` pairs, ascending by seconds, every count above zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    bins: Vec<(i64, u64)>,
    /// The runs of all bins: a cycle asks every group's count many times.
    count: u64,
}

/// A stored histogram that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed histogram `{text}`: {why}")]
pub struct HistogramError {
    pub text: String,
    pub why: &'static str,
}

/// The largest value [`Histogram::sum_of`] counts in place.
const DENSE_VALUES: usize = 1 << 16;

impl Histogram {
    pub const fn new() -> Self {
        Histogram {
            bins: Vec::new(),
            count: 0,
        }
    }

    pub fn from_values(values: impl IntoIterator<Item = i64>) -> Self {
        let mut h = Histogram::new();
        for v in values {
            h.add(v, 1);
        }
        h
    }

    pub fn bins(&self) -> &[(i64, u64)] {
        &self.bins
    }

    /// Adds `count` runs with `seconds`.
    pub fn add(&mut self, seconds: i64, count: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        match self.bins.binary_search_by_key(&seconds, |b| b.0) {
            Ok(i) => self.bins[i].1 += count,
            Err(i) => self.bins.insert(i, (seconds, count)),
        }
    }

    /// Removes up to `count` runs with `seconds` (used when a run is re-ingested).
    pub fn remove(&mut self, seconds: i64, count: u64) {
        if let Ok(i) = self.bins.binary_search_by_key(&seconds, |b| b.0) {
            let taken = self.bins[i].1.min(count);
            self.bins[i].1 -= taken;
            self.count -= taken;
            if self.bins[i].1 == 0 {
                self.bins.remove(i);
            }
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        if other.bins.is_empty() {
            return;
        }

        self.count += other.count;
        if self.bins.is_empty() {
            self.bins.clone_from(&other.bins);
            return;
        }

        // In place: count the values `other` adds, grow once, then merge from the back.
        let (a, b) = (&self.bins, &other.bins);
        let (mut i, mut added) = (0, 0);
        for &(v, _) in b {
            while i < a.len() && a[i].0 < v {
                i += 1;
            }
            if i < a.len() && a[i].0 == v {
                i += 1;
            } else {
                added += 1;
            }
        }

        let old = self.bins.len();
        self.bins.resize(old + added, (0, 0));
        let (mut i, mut j, mut k) = (old, b.len(), old + added);
        while j > 0 {
            let theirs = b[j - 1];
            k -= 1;
            if i > 0 && self.bins[i - 1].0 > theirs.0 {
                self.bins[k] = self.bins[i - 1];
                i -= 1;
            } else if i > 0 && self.bins[i - 1].0 == theirs.0 {
                self.bins[k] = (theirs.0, self.bins[i - 1].1 + theirs.1);
                i -= 1;
                j -= 1;
            } else {
                self.bins[k] = theirs;
                j -= 1;
            }
        }
    }

    /// All of `parts` together. Disruption is mostly a few small whole seconds, so the runs
    /// are counted by value in `scratch` (left all zeros for the next call) when the values
    /// are few enough to walk, and merged pair by pair otherwise.
    pub fn sum_of<'h>(
        parts: impl Iterator<Item = &'h Histogram> + Clone,
        scratch: &mut Vec<u64>,
    ) -> Histogram {
        let (mut pairs, mut lowest, mut highest) = (0, i64::MAX, i64::MIN);
        for p in parts.clone() {
            if let (Some(first), Some(last)) = (p.bins.first(), p.bins.last()) {
                pairs += p.bins.len();
                lowest = lowest.min(first.0);
                highest = highest.max(last.0);
            }
        }

        if pairs == 0 {
            return Histogram::new();
        }

        let span = usize::try_from(highest).unwrap_or(usize::MAX);
        if lowest < 0 || span > DENSE_VALUES || span > 4 * pairs {
            let mut sum = Histogram::new();
            for p in parts {
                sum.merge(p);
            }
            return sum;
        }

        if scratch.len() <= span {
            scratch.resize(span + 1, 0);
        }

        let mut count = 0;
        for p in parts {
            for &(v, c) in &p.bins {
                scratch[v as usize] += c;
            }
            count += p.count;
        }

        let mut bins = Vec::with_capacity(pairs.min(span + 1));
        for (v, c) in scratch[..=span].iter_mut().enumerate() {
            if *c > 0 {
                bins.push((v as i64, std::mem::take(c)));
            }
        }

        Histogram { bins, count }
    }

    /// Takes away the runs of `other` (a histogram merged into this one before).
    pub fn subtract(&mut self, other: &Histogram) {
        for &(v, c) in &other.bins {
            if let Ok(i) = self.bins.binary_search_by_key(&v, |b| b.0) {
                let taken = self.bins[i].1.min(c);
                self.bins[i].1 -= taken;
                self.count -= taken;
            }
        }
        self.bins.retain(|b| b.1 > 0);
    }

    /// Number of runs.
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.bins.is_empty()
    }

    /// The bins with more than zero seconds: a suffix, since values are never negative.
    pub fn nonzero_bins(&self) -> &[(i64, u64)] {
        let first = self.bins.partition_point(|b| b.0 <= 0);
        &self.bins[first..]
    }

    /// Runs above `level` seconds.
    pub fn count_above(&self, level: f64) -> u64 {
        let first = self.bins.partition_point(|b| b.0 as f64 <= level);
        self.bins[first..].iter().map(|b| b.1).sum()
    }

    /// Runs with any disruption at all (more than zero seconds).
    pub fn disrupted(&self) -> u64 {
        self.bins.iter().filter(|b| b.0 > 0).map(|b| b.1).sum()
    }

    pub fn max(&self) -> Option<i64> {
        self.bins.last().map(|b| b.0)
    }

    pub fn mean(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| {
            self.bins
                .iter()
                .map(|b| b.0 as f64 * b.1 as f64)
                .sum::<f64>()
                / n as f64
        })
    }

    /// The continuous percentile with linear interpolation between closest ranks — the
    /// definition of SQL's `PERCENTILE_CONT` (and BigQuery's `PERCENTILE_CONT`, numpy's
    /// default): position `h = (n - 1) · p`, value `x[⌊h⌋] + (h - ⌊h⌋) · (x[⌊h⌋+1] - x[⌊h⌋])`.
    /// `p` is a fraction in `[0, 1]`. `None` for an empty histogram.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles([p])[0]
    }

    /// [`Histogram::percentile`] of several fractions, in one walk over the bins when they
    /// ascend.
    pub fn percentiles<const N: usize>(&self, fractions: [f64; N]) -> [Option<f64>; N] {
        let n = self.count();
        if n == 0 {
            return [None; N];
        }
        let mut out = [None; N];
        let (mut bin, mut below) = (0, 0);
        // The value at the 0-based `rank`, walking on from the rank asked before.
        let mut at = |rank: u64| {
            if rank < below {
                (bin, below) = (0, 0);
            }
            while bin + 1 < self.bins.len() && rank >= below + self.bins[bin].1 {
                below += self.bins[bin].1;
                bin += 1;
            }
            self.bins[bin].0 as f64
        };
        for (slot, p) in out.iter_mut().zip(fractions) {
            let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
            // ⌊h⌋: h is never negative, so truncating is flooring (and needs no call into libm)
            let rank = h as u64;
            let lo = rank as f64;
            let lower = at(rank);
            *slot = Some(if h == lo {
                lower
            } else {
                lower + (h - lo) * (at(rank + 1) - lower)
            });
        }
        out
    }

    /// The compact stored form: `seconds:runs` pairs separated by spaces, ascending.
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(self.bins.len() * 6);
        for (i, (v, c)) in self.bins.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&v.to_string());
            s.push(':');
            s.push_str(&c.to_string());
        }
        s
    }

    pub fn decode(text: &str) -> Result<Histogram, HistogramError> {
        let err = |why| HistogramError {
            text: text.chars().take(80).collect(),
            why,
        };
        let mut bins: Vec<(i64, u64)> = Vec::new();
        for pair in text.split_ascii_whitespace() {
            let (v, c) = pair
                .split_once(':')
                .ok_or_else(|| err("a pair without `:`"))?;
            let v: i64 = v.parse().map_err(|_| err("seconds are not an integer"))?;
            let c: u64 = c.parse().map_err(|_| err("a count is not an integer"))?;
            if bins.last().is_some_and(|l| l.0 >= v) {
                return Err(err("values are not ascending"));
            }
            if c > 0 {
                bins.push((v, c));
            }
        }
        let count = bins.iter().map(|b| b.1).sum();
        Ok(Histogram { bins, count })
    }
}

impl Histogram {
    /// The stored form without the zeros (`runs` counts them): most cell-days have no
    /// disruption at all, and an empty string costs a database nothing to aggregate.
    pub fn encode_nonzero(&self) -> String {
        let bins = self.bins.iter().copied().filter(|b| b.0 != 0).collect();
        Histogram { bins, count: 0 }.encode()
    }

    /// Adds the zeros implied by a total run count to a histogram of the non-zero values.
    pub fn with_zeros(mut self, total_runs: u64) -> Histogram {
        let nonzero: u64 = self.bins.iter().filter(|b| b.0 != 0).map(|b| b.1).sum();
        let zeros = total_runs.saturating_sub(nonzero);
        self.bins.retain(|b| b.0 != 0);
        self.count = nonzero;
        self.add(0, zeros);
        self
    }

    /// Reads several stored histograms joined by spaces (as SQL's `group_concat` or
    /// `string_agg` returns them): pairs in any order, counts of a value added up.
    pub fn decode_concatenated(text: &str) -> Result<Histogram, HistogramError> {
        let err = |why| HistogramError {
            text: text.chars().take(80).collect(),
            why,
        };
        let mut pairs: Vec<(i64, u64)> = Vec::new();
        for pair in text.split_ascii_whitespace() {
            let (v, c) = pair
                .split_once(':')
                .ok_or_else(|| err("a pair without `:`"))?;
            let v: i64 = v.parse().map_err(|_| err("seconds are not an integer"))?;
            let c: u64 = c.parse().map_err(|_| err("a count is not an integer"))?;
            pairs.push((v, c));
        }
        pairs.sort_unstable_by_key(|p| p.0);
        let mut bins: Vec<(i64, u64)> = Vec::with_capacity(pairs.len());
        for (v, c) in pairs {
            match bins.last_mut() {
                Some(last) if last.0 == v => last.1 += c,
                _ if c > 0 => bins.push((v, c)),
                _ => {}
            }
        }
        let count = bins.iter().map(|b| b.1).sum();
        Ok(Histogram { bins, count })
    }
}

impl fmt::Display for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_percentile_cont(values: &[i64], p: f64) -> f64 {
        let mut v: Vec<f64> = values.iter().map(|&x| x as f64).collect();
        v.sort_by(f64::total_cmp);
        let h = (v.len() - 1) as f64 * p;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(v.len() - 1);
        v[lo] + (h - lo as f64) * (v[hi] - v[lo])
    }

    #[test]
    fn percentiles_match_hand_computed_values() {
        // 1, 2, 3, 4: P50 = 2.5, P75 = 3.25, P95 = 3.85, P99 = 3.97
        let h = Histogram::from_values([4, 1, 3, 2]);
        assert_eq!(h.percentile(0.50), Some(2.5));
        assert!((h.percentile(0.75).unwrap() - 3.25).abs() < 1e-9);
        assert!((h.percentile(0.95).unwrap() - 3.85).abs() < 1e-9);
        assert!((h.percentile(0.99).unwrap() - 3.97).abs() < 1e-9);
    }

    #[test]
    fn percentiles_of_ties_one_sample_and_all_zeros() {
        let ties = Histogram::from_values([0, 0, 0, 5, 5, 5, 5, 9]);
        assert_eq!(ties.percentile(0.5), Some(5.0)); // h = 3.5 between x[3]=5 and x[4]=5
        assert_eq!(ties.percentile(0.25), Some(0.0)); // h = 1.75 between zeros
        assert!((ties.percentile(0.3).unwrap() - 0.5).abs() < 1e-9); // h = 7·0.3 = 2.1: 0 + 0.1·5
        let one = Histogram::from_values([31]);
        for p in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(one.percentile(p), Some(31.0));
        }
        let zeros = Histogram::from_values([0; 50]);
        assert_eq!(zeros.percentile(0.99), Some(0.0));
        assert_eq!(Histogram::new().percentile(0.5), None);
    }

    #[test]
    fn percentiles_equal_the_raw_computation_on_skewed_data() {
        let mut state = 7u64;
        let mut values = Vec::new();
        for _ in 0..997 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (state >> 33) % 100;
            values.push(if r < 80 { 0 } else { (r * r % 97) as i64 });
        }
        let h = Histogram::from_values(values.iter().copied());
        for p in [0.5, 0.75, 0.95, 0.99] {
            assert!((h.percentile(p).unwrap() - naive_percentile_cont(&values, p)).abs() < 1e-9);
        }
    }

    #[test]
    fn merge_add_and_remove_keep_counts() {
        let mut a = Histogram::from_values([0, 0, 3]);
        a.merge(&Histogram::from_values([0, 3, 7]));
        assert_eq!(a.bins(), &[(0, 3), (3, 2), (7, 1)]);
        a.remove(3, 1);
        a.remove(7, 1);
        assert_eq!(a.bins(), &[(0, 3), (3, 1)]);
        assert_eq!(a.count(), 4);
        assert_eq!(a.disrupted(), 1);
    }

    #[test]
    fn merging_equals_counting_the_values_together() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..2000 {
            let xs: Vec<i64> = (0..rng.usize(0..30)).map(|_| rng.i64(0..40)).collect();
            let ys: Vec<i64> = (0..rng.usize(0..30)).map(|_| rng.i64(0..40)).collect();
            let mut merged = Histogram::from_values(xs.iter().copied());
            merged.merge(&Histogram::from_values(ys.iter().copied()));
            assert_eq!(
                merged,
                Histogram::from_values(xs.iter().chain(&ys).copied()),
                "{xs:?} + {ys:?}"
            );
            merged.subtract(&Histogram::from_values(ys.iter().copied()));
            assert_eq!(
                merged,
                Histogram::from_values(xs.iter().copied()),
                "{xs:?} + {ys:?} - {ys:?}"
            );
        }
    }

    #[test]
    fn counts_and_percentiles_stay_exact_through_every_change() {
        let mut rng = fastrand::Rng::with_seed(11);
        let naive = |h: &Histogram| h.bins().iter().map(|b| b.1).sum::<u64>();
        for _ in 0..500 {
            let mut h = Histogram::from_values((0..rng.usize(0..40)).map(|_| rng.i64(0..30)));
            for _ in 0..6 {
                let other = Histogram::from_values((0..rng.usize(0..20)).map(|_| rng.i64(0..30)));
                match rng.u8(0..4) {
                    0 => h.merge(&other),
                    1 => h.subtract(&other),
                    2 => h.remove(rng.i64(0..30), rng.u64(0..3)),
                    _ => h.add(rng.i64(0..30), rng.u64(0..3)),
                }
                assert_eq!(h.count(), naive(&h), "{h:?}");
            }
            let values: Vec<i64> = h
                .bins()
                .iter()
                .flat_map(|&(v, c)| std::iter::repeat_n(v, c as usize))
                .collect();
            let fractions = [0.99, 0.5, 0.75, 0.0, 1.0, 0.95];
            for (p, got) in fractions.iter().zip(h.percentiles(fractions)) {
                let want = (!values.is_empty()).then(|| naive_percentile_cont(&values, *p));
                assert_eq!(
                    got.map(|x| (x * 1e9).round()),
                    want.map(|x| (x * 1e9).round()),
                    "P{p} of {values:?}"
                );
                assert_eq!(h.percentile(*p), got);
            }
        }
    }

    #[test]
    fn a_sum_equals_merging_one_by_one_whatever_the_values() {
        let mut rng = fastrand::Rng::with_seed(5);
        let mut scratch = Vec::new();
        for round in 0..600 {
            // small values (counted in place), wide ones (merged), and the odd negative one
            let top = [8, 400, 100_000][round % 3];
            let parts: Vec<Histogram> = (0..rng.usize(0..12))
                .map(|_| Histogram::from_values((0..rng.usize(0..15)).map(|_| rng.i64(-1..top))))
                .collect();
            let mut merged = Histogram::new();
            for p in &parts {
                merged.merge(p);
            }
            assert_eq!(
                Histogram::sum_of(parts.iter(), &mut scratch),
                merged,
                "{parts:?}"
            );
            assert!(scratch.iter().all(|c| *c == 0), "the scratch is left empty");
        }
    }

    #[test]
    fn zeros_are_stored_as_a_count() {
        let h = Histogram::from_values([0, 0, 0, 7, 0, 31]);
        assert_eq!(h.encode_nonzero(), "7:1 31:1");
        assert_eq!(
            Histogram::decode(&h.encode_nonzero())
                .unwrap()
                .with_zeros(6),
            h
        );
        assert_eq!(
            Histogram::decode("").unwrap().with_zeros(3),
            Histogram::from_values([0, 0, 0])
        );
    }

    #[test]
    fn concatenated_histograms_add_up() {
        let h = Histogram::decode_concatenated("0:2 12:1 0:3 5:1 12:2  45:1").unwrap();
        assert_eq!(h.bins(), &[(0, 5), (5, 1), (12, 3), (45, 1)]);
        assert!(Histogram::decode_concatenated("1:x").is_err());
    }

    #[test]
    fn encoding_round_trips_and_rejects_garbage() {
        let h = Histogram::from_values([0, 0, 12, 45, 45]);
        assert_eq!(h.encode(), "0:2 12:1 45:2");
        assert_eq!(Histogram::decode(&h.encode()).unwrap(), h);
        assert_eq!(Histogram::decode("").unwrap(), Histogram::new());
        assert!(Histogram::decode("3:1 1:1").is_err());
        assert!(Histogram::decode("x:1").is_err());
        assert!(Histogram::decode("3").is_err());
    }
}
