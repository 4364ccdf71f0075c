//! Statistics for zero-inflated, heavy-tailed data, computed exactly from histograms.
//!
//! Against a baseline window the question is "is the current window worse?", asked in two
//! parts as suits data that are mostly zeros: did more runs see any disruption (Fisher's exact
//! test on the share), and were the disrupted runs hit harder (a Mann–Whitney rank test on the
//! non-zero values, tie-corrected)? The two one-sided p-values are combined conservatively
//! (Bonferroni: twice the smaller). Against a fixed threshold the question is "is the true
//! q-quantile above T?": with k of n runs above T, p = P(Binomial(n, 1−q) ≥ k), exact.
//! Across a cycle, Benjamini–Hochberg keeps the false discovery rate at the configured level.

use crate::model::Histogram;

/// `erfc(x)` with fractional error below 1.2e-7 (Chebyshev fit, Numerical Recipes `erfcc`).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// P(Z > z) for a standard normal Z.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// ln n! for the run counts a cycle meets, each [`ln_gamma`]'s own value, worked out once: a
/// cycle's tens of thousands of exact tests each need nine of them.
const LN_FACTORIALS: usize = 1 << 15;

fn ln_factorial(n: u64) -> f64 {
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    match usize::try_from(n) {
        Ok(i) if i < LN_FACTORIALS => TABLE.get_or_init(|| {
            (0..LN_FACTORIALS)
                .map(|k| ln_gamma(k as f64 + 1.0))
                .collect()
        })[i],
        _ => ln_gamma(n as f64 + 1.0),
    }
}

fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// One-sided Fisher exact test: the p-value that sample 1 (x1 of n1) has a higher share than
/// sample 2 (x2 of n2). Hypergeometric upper tail P(X ≥ x1).
pub fn fisher_greater(x1: u64, n1: u64, x2: u64, n2: u64) -> f64 {
    let (n, k) = (n1 + n2, x1 + x2);
    if n1 == 0 || n2 == 0 || k == 0 {
        return 1.0;
    }
    let hi = k.min(n1);
    let lo = x1.max(k.saturating_sub(n2));
    if lo > hi {
        return 0.0;
    }
    // The first term from log-factorials, the rest by the ratio of consecutive terms:
    // P(x+1)/P(x) = (k − x)(n1 − x) / ((x + 1)(n − k − n1 + x + 1)).
    let mut term = (ln_choose(k, lo) + ln_choose(n - k, n1 - lo) - ln_choose(n, n1)).exp();
    let mut p = term;
    for x in lo..hi {
        let (xf, kf, n1f, nf) = (x as f64, k as f64, n1 as f64, n as f64);
        term *= (kf - xf) * (n1f - xf) / ((xf + 1.0) * (nf - kf - n1f + xf + 1.0));
        p += term;
        if term < p * 1e-17 {
            break;
        }
    }
    p.clamp(0.0, 1.0)
}

/// One-sided Mann–Whitney U test (normal approximation with tie and continuity corrections):
/// the p-value that values of `a` tend to be larger than values of `b`.
#[cfg(test)]
fn mann_whitney_greater(a: &Histogram, b: &Histogram) -> f64 {
    mann_whitney_bins(a.bins(), b.bins())
}

/// The one-sided Mann–Whitney U test on sorted `(value, count)` bins, without allocating.
fn mann_whitney_bins(a: &[(i64, u64)], b: &[(i64, u64)]) -> f64 {
    let na: f64 = a.iter().map(|x| x.1 as f64).sum();
    let nb: f64 = b.iter().map(|x| x.1 as f64).sum();
    if na == 0.0 || nb == 0.0 {
        return 1.0;
    }

    let n = na + nb;
    // Walk both in value order: average rank of each distinct value, and the tie term.
    let (mut i, mut j) = (0, 0);
    let (mut rank_sum_a, mut ties, mut below) = (0.0, 0.0, 0.0);
    while i < a.len() || j < b.len() {
        let value = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => break,
        };
        let ca = if a.get(i).is_some_and(|x| x.0 == value) {
            i += 1;
            a[i - 1].1 as f64
        } else {
            0.0
        };
        let cb = if b.get(j).is_some_and(|y| y.0 == value) {
            j += 1;
            b[j - 1].1 as f64
        } else {
            0.0
        };
        let t = ca + cb;
        rank_sum_a += (below + (t + 1.0) / 2.0) * ca;
        ties += t * t * t - t;
        below += t;
    }

    let u = rank_sum_a - na * (na + 1.0) / 2.0;
    let mean = na * nb / 2.0;
    let variance = na * nb / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    if variance <= 0.0 {
        return 1.0;
    }

    normal_sf((u - mean - 0.5) / variance.sqrt())
}

/// P(X ≥ k) for X ~ Binomial(n, p).
/// The one-sided 95% lower bound of a Poisson mean after `n` events (exact up to 10, the
/// normal approximation above).
pub fn poisson_lower_95(n: u64) -> f64 {
    const EXACT: [f64; 11] = [
        0.0, 0.051, 0.355, 0.818, 1.366, 1.970, 2.613, 3.285, 3.981, 4.695, 5.425,
    ];
    match EXACT.get(n as usize) {
        Some(x) => *x,
        None => {
            let n = n as f64;
            (n - 1.645 * n.sqrt()).max(0.0)
        }
    }
}

pub fn binomial_sf(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    // The first term from log-factorials, the rest by P(x+1)/P(x) = (n − x)/(x + 1) · p/(1 − p).
    let odds = p / (1.0 - p);
    let mut term = (ln_choose(n, k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp();
    let mut sum = term;
    for x in k..n {
        term *= (n - x) as f64 / (x + 1) as f64 * odds;
        sum += term;
        if term < sum * 1e-17 && (x as f64) > n as f64 * p {
            break;
        }
    }
    sum.clamp(0.0, 1.0)
}

/// The two-part test of `current` against `baseline` (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoPart {
    /// Fisher: more runs disrupted.
    pub share_p: f64,
    /// Mann–Whitney on the disrupted runs: harder hit.
    pub rank_p: f64,
    /// min(1, 2 · min(share_p, rank_p)).
    pub p: f64,
}

pub fn two_part_greater(current: &Histogram, baseline: &Histogram) -> TwoPart {
    let share_p = fisher_greater(
        current.disrupted(),
        current.count(),
        baseline.disrupted(),
        baseline.count(),
    );
    let (cur, base) = (current.nonzero_bins(), baseline.nonzero_bins());
    let count = |bins: &[(i64, u64)]| bins.iter().map(|b| b.1).sum::<u64>();
    let rank_p = if count(cur) >= 3 && count(base) >= 3 {
        mann_whitney_bins(cur, base)
    } else {
        1.0
    };
    TwoPart {
        share_p,
        rank_p,
        p: (2.0 * share_p.min(rank_p)).min(1.0),
    }
}

/// One stratum of a stratified comparison: `x1` of `n1` runs of the window and `x2` of `n2`
/// runs of the reference above the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stratum {
    pub x1: u64,
    pub n1: u64,
    pub x2: u64,
    pub n2: u64,
}

/// Above this many possible totals the exact stratified test gives way to its normal
/// approximation (Cochran–Mantel–Haenszel), which is close there and costs nothing.
const EXACT_SUPPORT: u64 = 400;

/// The stratified exceedance test: the p-value that, within strata (cells), more of the
/// window's runs are above the level than of the reference's. Each stratum compares a cell
/// with its own reference, so a change of which cells a group holds, or of how often each ran,
/// is never evidence; strata with runs on one side only say nothing and are left out.
/// Conditional on each stratum's margins the count above is hypergeometric; the total's exact
/// distribution is their convolution (one stratum: Fisher's exact test). Beyond
/// `EXACT_SUPPORT` (400) possible totals, the Cochran–Mantel–Haenszel normal approximation with a
/// continuity correction.
pub fn stratified_greater(strata: &[Stratum]) -> f64 {
    let informative: Vec<&Stratum> = strata
        .iter()
        .filter(|s| s.n1 > 0 && s.n2 > 0 && s.x1 + s.x2 > 0)
        .collect();

    let observed: u64 = informative.iter().map(|s| s.x1).sum();
    if observed == 0 {
        return 1.0;
    }

    if let [one] = informative.as_slice() {
        return fisher_greater(one.x1, one.n1, one.x2, one.n2);
    }

    let bounds = |s: &Stratum| {
        let k = s.x1 + s.x2;
        (k.saturating_sub(s.n2), k.min(s.n1))
    };

    let support: u64 = informative.iter().map(|s| bounds(s).1 - bounds(s).0).sum();
    if support > EXACT_SUPPORT {
        return cmh_greater(&informative, observed);
    }

    let base: u64 = informative.iter().map(|s| bounds(s).0).sum();
    if observed < base {
        return 1.0;
    }

    // pmf of (total − base), one stratum convolved in at a time
    let mut total = vec![1.0f64];
    for s in &informative {
        let (lo, hi) = bounds(s);
        let (n, k) = (s.n1 + s.n2, s.x1 + s.x2);
        let pmf: Vec<f64> = (lo..=hi)
            .map(|x| (ln_choose(k, x) + ln_choose(n - k, s.n1 - x) - ln_choose(n, s.n1)).exp())
            .collect();
        let mut next = vec![0.0; total.len() + pmf.len() - 1];
        for (i, a) in total.iter().enumerate() {
            for (j, b) in pmf.iter().enumerate() {
                next[i + j] += a * b;
            }
        }
        total = next;
    }

    let from = usize::try_from(observed - base).unwrap_or(usize::MAX);
    total.iter().skip(from).sum::<f64>().clamp(0.0, 1.0)
}

/// The Cochran–Mantel–Haenszel one-sided test, with a continuity correction.
fn cmh_greater(strata: &[&Stratum], observed: u64) -> f64 {
    let (mut mean, mut variance) = (0.0, 0.0);
    for s in strata {
        let (n1, n2, k) = (s.n1 as f64, s.n2 as f64, (s.x1 + s.x2) as f64);
        let n = n1 + n2;
        mean += n1 * k / n;
        if n > 1.0 {
            variance += n1 * n2 * k * (n - k) / (n * n * (n - 1.0));
        }
    }
    if variance <= 0.0 {
        return if observed as f64 > mean { 0.0 } else { 1.0 };
    }
    normal_sf((observed as f64 - mean - 0.5) / variance.sqrt())
}

/// The exact quantile test: p-value that the true `q`-quantile exceeds `threshold`.
pub fn quantile_exceeds(h: &Histogram, q: f64, threshold: f64) -> f64 {
    let above: u64 = h
        .bins()
        .iter()
        .filter(|b| b.0 as f64 > threshold)
        .map(|b| b.1)
        .sum();
    binomial_sf(above, h.count(), 1.0 - q)
}

/// Benjamini–Hochberg at level `q`: which of `p_values` are discoveries. The tests' reference
/// for the adjusted p-values the cycle uses.
#[cfg(test)]
fn benjamini_hochberg(p_values: &[f64], q: f64) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut cutoff = None;
    for (rank, &i) in order.iter().enumerate() {
        if p_values[i] <= q * (rank + 1) as f64 / m as f64 {
            cutoff = Some(rank);
        }
    }
    let mut out = vec![false; m];
    if let Some(c) = cutoff {
        for &i in &order[..=c] {
            out[i] = true;
        }
    }
    out
}

/// Whether `p` sorts below 1 in the order the adjustments sort by (`f64::total_cmp`), so that
/// the p-values left out are exactly those a full sort puts after every other: 1, more, NaN.
fn below_one(p: &f64) -> bool {
    p.total_cmp(&1.0).is_lt()
}

/// Simes' combination of p-values: the p-value of "none of these hypotheses is false",
/// `min over i of n·p₍ᵢ₎ / i` (valid under independence and positive dependence). 1 for none.
/// The p-values of 1 or more (most of a cycle's are 1: its untested checks) sort last, where
/// `n·p / i` is at least 1: they never lower the minimum, so they are counted in `n` but not
/// sorted ([`below_one`]).
pub fn simes(p_values: &[f64]) -> f64 {
    let n = p_values.len() as f64;
    let mut sorted: Vec<f64> = p_values.iter().copied().filter(below_one).collect();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted
        .iter()
        .enumerate()
        .map(|(i, p)| n * p / (i + 1) as f64)
        .fold(1.0f64, f64::min)
}

/// Benjamini–Hochberg adjusted p-values (q-values), for reporting. A p-value of 1 or more
/// (most of a cycle's are 1: its untested checks) ranks among the largest, where its q-value
/// is 1 and leaves the running minimum at 1: only the p-values below 1 ([`below_one`]) are
/// sorted, ranked below them.
pub fn bh_adjusted(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).filter(|&i| below_one(&p_values[i])).collect();
    order.sort_unstable_by(|&a, &b| p_values[b].total_cmp(&p_values[a]));
    let ones = m - order.len();
    let mut out = vec![1.0; m];
    let mut running = 1.0f64;
    for (k, &i) in order.iter().enumerate() {
        let rank = m - ones - k;
        running = running.min(p_values[i] * m as f64 / rank as f64);
        out[i] = running.min(1.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn normal_tail_and_gamma() {
        assert!(close(normal_sf(1.959_964), 0.025, 1e-6));
        assert!(close(normal_sf(0.0), 0.5, 1e-7));
        assert!(close(normal_sf(-1.644_854), 0.95, 1e-6));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-10));
        for n in [
            0,
            1,
            7,
            1_000,
            LN_FACTORIALS as u64 - 1,
            LN_FACTORIALS as u64,
            1 << 40,
        ] {
            assert_eq!(
                ln_factorial(n),
                ln_gamma(n as f64 + 1.0),
                "the table holds ln_gamma's own values ({n})"
            );
        }
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-10
        ));
    }

    #[test]
    fn fisher_matches_the_tea_tasting_example() {
        // Fisher's lady tasting tea: 3 of 4 right vs 1 of 4 → one-sided p = 17/70.
        assert!(close(fisher_greater(3, 4, 1, 4), 17.0 / 70.0, 1e-9));
        assert!(close(fisher_greater(4, 4, 0, 4), 1.0 / 70.0, 1e-9));
        assert_eq!(fisher_greater(0, 10, 0, 10), 1.0);
    }

    #[test]
    fn mann_whitney_agrees_with_a_hand_computation() {
        // a = {4,5,6}, b = {1,2,3}: U = 9, mean 4.5, var 5.25 → z = (9-4.5-0.5)/√5.25.
        let p = mann_whitney_greater(
            &Histogram::from_values([4, 5, 6]),
            &Histogram::from_values([1, 2, 3]),
        );
        assert!(close(p, normal_sf(4.0 / 5.25f64.sqrt()), 1e-9));
        // Identical samples: no evidence.
        let same = Histogram::from_values([1, 2, 2, 3, 9]);
        assert!(mann_whitney_greater(&same, &same) > 0.5);
        // All ties: no variance, no evidence.
        assert_eq!(
            mann_whitney_greater(
                &Histogram::from_values([0, 0]),
                &Histogram::from_values([0, 0, 0])
            ),
            1.0
        );
    }

    #[test]
    fn the_iterative_tails_match_the_direct_sums() {
        let direct_fisher = |x1: u64, n1: u64, x2: u64, n2: u64| {
            let (n, k) = (n1 + n2, x1 + x2);
            (x1.max(k.saturating_sub(n2))..=k.min(n1))
                .map(|x| (ln_choose(k, x) + ln_choose(n - k, n1 - x) - ln_choose(n, n1)).exp())
                .sum::<f64>()
        };
        for (x1, n1, x2, n2) in [
            (25, 28, 17, 84),
            (3, 70, 30, 210),
            (10, 30, 9, 90),
            (0, 5, 3, 9),
            (60, 60, 0, 200),
        ] {
            let (a, b) = (
                fisher_greater(x1, n1, x2, n2),
                direct_fisher(x1, n1, x2, n2).min(1.0),
            );
            assert!(
                (a - b).abs() <= 1e-12 + 1e-9 * b,
                "fisher({x1},{n1},{x2},{n2}): {a} vs {b}"
            );
        }
        let direct_binomial = |k: u64, n: u64, p: f64| {
            (k..=n)
                .map(|x| {
                    (ln_choose(n, x) + x as f64 * p.ln() + (n - x) as f64 * (1.0 - p).ln()).exp()
                })
                .sum::<f64>()
        };
        for (k, n, p) in [
            (9, 10, 0.5),
            (20, 28, 0.05),
            (3, 200, 0.01),
            (150, 300, 0.5),
        ] {
            let (a, b) = (binomial_sf(k, n, p), direct_binomial(k, n, p).min(1.0));
            assert!(
                (a - b).abs() <= 1e-12 + 1e-9 * b,
                "binomial({k},{n},{p}): {a} vs {b}"
            );
        }
    }

    #[test]
    fn binomial_tail() {
        // P(X ≥ 8), X ~ Bin(10, 0.5) = 56/1024.
        assert!(close(binomial_sf(8, 10, 0.5), 56.0 / 1024.0, 1e-12));
        assert_eq!(binomial_sf(0, 10, 0.3), 1.0);
        assert_eq!(binomial_sf(11, 10, 0.3), 0.0);
    }

    #[test]
    fn benjamini_hochberg_on_a_textbook_list() {
        let p = [0.01, 0.04, 0.03, 0.005, 0.2];
        // Sorted: .005 .01 .03 .04 .2 vs q·k/m = .01 .02 .03 .04 .05 → the first four pass.
        assert_eq!(
            benjamini_hochberg(&p, 0.05),
            vec![true, true, true, true, false]
        );
        assert_eq!(benjamini_hochberg(&[0.5, 0.9], 0.05), vec![false, false]);
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..200 {
            let ps: Vec<f64> = (0..rng.usize(1..300)).map(|_| rng.f64().powi(4)).collect();
            let by_q: Vec<bool> = bh_adjusted(&ps).iter().map(|q| *q <= 0.05).collect();
            assert_eq!(
                benjamini_hochberg(&ps, 0.05),
                by_q,
                "a discovery is an adjusted p-value within the rate"
            );
        }
        let adj = bh_adjusted(&p);
        assert!(close(adj[3], 0.025, 1e-12) && close(adj[4], 0.2, 1e-12));
    }

    #[test]
    fn simes_combines_a_family_of_p_values() {
        assert_eq!(simes(&[]), 1.0);
        assert!(close(simes(&[0.01, 0.5, 0.9]), 0.03, 1e-12));
        // two small ones among four: 4 × 0.02 / 2
        assert!(close(simes(&[0.02, 0.9, 0.015, 0.7]), 0.04, 1e-12));
    }

    /// Simes and the q-values as they were worked out before the p-values of 1 were left
    /// unsorted: every p-value sorted.
    fn sorting_all(ps: &[f64]) -> (f64, Vec<f64>) {
        let mut sorted: Vec<f64> = ps.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let simes = sorted
            .iter()
            .enumerate()
            .map(|(i, p)| n * p / (i + 1) as f64)
            .fold(1.0f64, f64::min);
        let m = ps.len();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_unstable_by(|&a, &b| ps[b].total_cmp(&ps[a]));
        let mut q = vec![1.0; m];
        let mut running = 1.0f64;
        for (k, &i) in order.iter().enumerate() {
            running = running.min(ps[i] * m as f64 / (m - k) as f64);
            q[i] = running.min(1.0);
        }
        (simes, q)
    }

    #[test]
    fn p_values_of_one_left_unsorted_change_neither_simes_nor_the_q_values_by_a_bit() {
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..300 {
            // mostly 1, as a cycle's are; and what no test returns, to keep the order's edges
            let ps: Vec<f64> = (0..rng.usize(0..200))
                .map(|_| match rng.u8(0..12) {
                    0 => rng.f64().powi(6),
                    1 => rng.f64(),
                    2 => [f64::NAN, -f64::NAN, 1.5, f64::INFINITY, 0.0, -0.0][rng.usize(0..6)],
                    _ => 1.0,
                })
                .collect();
            let (simes_all, q_all) = sorting_all(&ps);
            assert_eq!(
                simes(&ps).to_bits(),
                simes_all.to_bits(),
                "round {round}: {ps:?}"
            );
            let q: Vec<u64> = bh_adjusted(&ps).iter().map(|q| q.to_bits()).collect();
            let q_all: Vec<u64> = q_all.iter().map(|q| q.to_bits()).collect();
            assert_eq!(q, q_all, "round {round}: {ps:?}");
        }
    }

    #[test]
    fn a_planted_shift_is_found_and_no_shift_is_not() {
        let baseline =
            Histogram::from_values((0..84).map(|i| if i % 5 == 0 { 1 + i % 4 } else { 0 }));
        let regressed =
            Histogram::from_values((0..28).map(|i| if i % 10 == 0 { 0 } else { 12 + i }));
        assert!(two_part_greater(&regressed, &baseline).p < 1e-6);
        let same = Histogram::from_values((0..28).map(|i| if i % 5 == 0 { 1 + i % 4 } else { 0 }));
        assert!(two_part_greater(&same, &baseline).p > 0.3);
        // A lone outlier is not a shift.
        let mut outlier = same.clone();
        outlier.add(3000, 1);
        assert!(two_part_greater(&outlier, &baseline).p > 0.05);
    }

    fn stratum(x1: u64, n1: u64, x2: u64, n2: u64) -> Stratum {
        Stratum { x1, n1, x2, n2 }
    }

    #[test]
    fn one_stratum_is_fishers_test_and_one_sided_strata_say_nothing() {
        assert_eq!(
            stratified_greater(&[stratum(3, 4, 1, 4)]),
            fisher_greater(3, 4, 1, 4)
        );
        // a cell with runs only in the window (a new job) adds nothing, however high
        let with_new = [
            stratum(3, 4, 1, 4),
            stratum(5, 5, 0, 0),
            stratum(0, 0, 4, 9),
        ];
        assert_eq!(stratified_greater(&with_new), fisher_greater(3, 4, 1, 4));
        assert_eq!(stratified_greater(&[stratum(0, 10, 3, 30)]), 1.0);
        assert_eq!(stratified_greater(&[]), 1.0);
    }

    #[test]
    fn the_exact_stratified_test_matches_a_brute_force_sum() {
        // two strata: enumerate every pair of counts with the product of hypergeometrics
        let strata = [stratum(4, 10, 2, 30), stratum(2, 6, 1, 20)];
        let hyper = |s: &Stratum, x: u64| {
            let (n, k) = (s.n1 + s.n2, s.x1 + s.x2);
            (ln_choose(k, x) + ln_choose(n - k, s.n1 - x) - ln_choose(n, s.n1)).exp()
        };
        let mut brute = 0.0;
        for a in 0..=6u64 {
            for b in 0..=3u64 {
                if a + b >= 6 {
                    brute += hyper(&strata[0], a) * hyper(&strata[1], b);
                }
            }
        }
        assert!(close(stratified_greater(&strata), brute, 1e-12));
    }

    #[test]
    fn a_shift_of_weight_between_cells_is_not_a_regression_but_a_shift_within_them_is() {
        // a noisy cell (30% above the level) and a quiet one (1%); the window runs the noisy
        // cell far more often: pooled, the share above the level quadruples
        let shifted = [stratum(9, 30, 6, 20), stratum(0, 5, 1, 100)];
        let pooled = fisher_greater(9, 35, 7, 120);
        assert!(
            pooled < 0.01,
            "pooled the shift looks significant: {pooled}"
        );
        assert!(
            stratified_greater(&shifted) > 0.3,
            "{}",
            stratified_greater(&shifted)
        );
        // the same cells, each worse than its own reference
        let worse = [stratum(25, 30, 6, 20), stratum(4, 5, 1, 100)];
        assert!(stratified_greater(&worse) < 1e-6);
    }

    #[test]
    fn many_strata_use_the_normal_approximation_and_agree_with_the_exact_sum() {
        let strata: Vec<Stratum> = (0..60).map(|i| stratum(6 + i % 3, 20, 4, 60)).collect();
        let p = stratified_greater(&strata);
        assert!(p < 1e-6, "{p}");
        // where the exact sum is still used, the approximation is close to it (away from the
        // far tail, where only the order of magnitude matters)
        let mild: Vec<Stratum> = (0..8).map(|i| stratum(2 + i % 2, 20, 4, 60)).collect();
        let exact = stratified_greater(&mild);
        let observed = mild.iter().map(|s| s.x1).sum();
        let approx = cmh_greater(&mild.iter().collect::<Vec<_>>(), observed);
        assert!(
            (0.001..0.2).contains(&exact) && (exact - approx).abs() < 0.02,
            "{exact} vs {approx}"
        );
    }

    #[test]
    fn the_quantile_test_asks_whether_the_true_percentile_is_above_the_threshold() {
        let h = Histogram::from_values([30, 31, 25, 40, 0, 28, 33, 35, 29, 27]);
        assert!(quantile_exceeds(&h, 0.5, 5.0) < 0.02); // 9 of 10 above: P(Bin(10,.5) ≥ 9)
        assert!(quantile_exceeds(&h, 0.5, 50.0) > 0.99);
    }
}
