//! When a series of runs changed: the most likely single change point of per-run disruption,
//! with an interval that holds it with high probability. Pure.
//!
//! The model suits CI disruption, mostly zeros with a heavy tail: each run falls in one of a
//! few bands of seconds (none, 1–2, 3–6, 7–19, 20–54, 55 and more; roughly even steps of
//! `ln(1 + seconds)`), with a probability per band. A change before run `k` gives each side
//! its own band probabilities; `ℓ(k)` is the log-likelihood at their maximum. Bands rather than
//! a normal law for the seconds keep one wild run (every backend has a few) from looking like a
//! change of its own. The most likely change maximises `ℓ(k)`; it is real when the likelihood
//! ratio `2(ℓ(k̂) − ℓ₀)` against no change at all is one a scan of the same series without a
//! change would reach with probability at most [`SCAN_LEVEL`]: the tail of the maximum over
//! every candidate `k` (a plain χ² quantile would be too lenient for a maximum over many
//! positions), with as many degrees of freedom as the bands the series' runs occupy, less one.
//! Each series is so judged against its own spread: a series of zeros and one band of noise
//! needs less than one spread over every band, where chance alone splits more ways. The
//! interval is every `k` whose `ℓ(k)` is within `χ²₁,0.99 / 2` of the best: the
//! profile-likelihood interval of the change's position (Hinkley).

/// One run of the series: when it started, and its disruption in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub at: i64,
    pub seconds: i64,
}

/// The most likely change of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// The first run after the change.
    pub index: usize,
    /// The interval, as the first and last candidate `index`.
    pub first: usize,
    pub last: usize,
    /// `2(ℓ(k̂) − ℓ₀)`: how much better two segments explain the series than one.
    pub statistic: f64,
    /// How often a scan of a series without a change would find a ratio at least as large
    /// ([`scan_p_value`]); at most 1.
    pub p_value: f64,
    /// The runs after the change are more disrupted than the runs before.
    pub worse_after: bool,
}

impl Change {
    /// Whether the change is beyond what chance finds in a scan of the series: its p-value is
    /// at most [`SCAN_LEVEL`].
    pub fn is_real(&self) -> bool {
        self.p_value <= SCAN_LEVEL
    }

    /// `(at, earliest, latest)` in Unix seconds: the first run after the change, the last run
    /// before the earliest candidate, and the latest candidate.
    pub fn times(&self, runs: &[Run]) -> (i64, i64, i64) {
        let at = runs[self.index].at;
        let earliest = runs[self.first.saturating_sub(1)].at;
        (at, earliest.min(at), runs[self.last].at.max(at))
    }
}

/// How often a scan of a series without a change may find a real one: once in a thousand.
/// At 60–200 runs that asks a likelihood ratio of about 30 of a series over every band (five
/// degrees of freedom), about 25 of one over four bands and about 19 of zeros with one band of
/// noise (`a_scan_of_a_healthy_series_finds_a_change_as_often_as_its_p_value_says` checks that
/// the level holds).
pub const SCAN_LEVEL: f64 = 1e-3;

/// The chance that a scan of `n` runs without a change finds a likelihood ratio of at least
/// `statistic` at some position from `before` to `n − after`, for `df` degrees of freedom: the
/// approximation of James, James and Siegmund (1992, for a change in a `df`-dimensional mean) to
/// the tail of the maximum, `f(x)·x·[(1 − df/x)·ln(t₁(1 − t₀) / (t₀(1 − t₁))) + 4/x]` with `f`
/// the χ² density and `t₀`, `t₁` the first and last position as shares of the series. It is
/// meant for the far tail: a ratio no larger than `df` (or not a number) gives 1, and the result
/// is clamped to 1.
pub fn scan_p_value(statistic: f64, df: usize, n: usize, before: usize, after: usize) -> f64 {
    let (x, d) = (statistic, df.max(1) as f64);
    if n == 0 || before + after > n || x.is_nan() || x <= d {
        return 1.0;
    }
    let t0 = before.max(1) as f64 / n as f64;
    let t1 = (n - after.max(1)) as f64 / n as f64;
    let span = if t1 > t0 {
        (t1 * (1.0 - t0) / (t0 * (1.0 - t1))).ln()
    } else {
        0.0
    };
    let density_times_x =
        ((d / 2.0) * x.ln() - x / 2.0 - (d / 2.0) * 2f64.ln() - super::stats::ln_gamma(d / 2.0))
            .exp();
    (density_times_x * ((1.0 - d / x) * span + 4.0 / x)).clamp(0.0, 1.0)
}

/// `χ²₁` at 0.99: the interval holds the true position with about 99% probability.
pub const INTERVAL_CHI2: f64 = 6.635;

/// The bands' lower bounds in seconds (the first band is no disruption at all).
const BANDS: [i64; 6] = [0, 1, 3, 7, 20, 55];

fn band(seconds: i64) -> usize {
    BANDS.iter().rposition(|&lo| seconds >= lo).unwrap_or(0)
}

/// Running counts per band of a prefix of the series, and its sum of `ln(1 + seconds)`.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    n: f64,
    bands: [f64; BANDS.len()],
    level: f64,
}

impl Sums {
    fn minus(self, o: Sums) -> Sums {
        let mut bands = self.bands;
        for (b, ob) in bands.iter_mut().zip(o.bands) {
            *b -= ob;
        }
        Sums {
            n: self.n - o.n,
            bands,
            level: self.level - o.level,
        }
    }

    /// The segment's log-likelihood at its own band probabilities.
    fn log_likelihood(self) -> f64 {
        self.bands
            .iter()
            .filter(|&&c| c > 0.0)
            .map(|&c| c * (c / self.n).ln())
            .sum()
    }

    /// Mean `ln(1 + seconds)` over the segment's runs: which side is worse.
    fn level(self) -> f64 {
        if self.n > 0.0 {
            self.level / self.n
        } else {
            0.0
        }
    }
}

fn prefix_sums(runs: &[Run]) -> Vec<Sums> {
    let mut out = Vec::with_capacity(runs.len() + 1);
    let mut s = Sums::default();
    out.push(s);
    for r in runs {
        s.n += 1.0;
        s.bands[band(r.seconds.max(0))] += 1.0;
        s.level += (1.0 + r.seconds.max(0) as f64).ln();
        out.push(s);
    }
    out
}

/// The most likely single change in `runs` (ordered by time) with at least `before` runs
/// before it and `after` after it; None when the series is too short.
pub fn most_likely_change(runs: &[Run], before: usize, after: usize) -> Option<Change> {
    change_between(runs, before, after, |_| true)
}

/// The most likely change for the worse in `runs` (ordered by time), read on the runs before
/// its fix when they show one ([`runs_before_fix`]): a fix that outweighs the regression would
/// otherwise be the series' most likely change, and its clean runs blur the onset's interval.
/// None when the most likely change there is for the better, or the series is too short.
pub fn onset_before_fix(runs: &[Run], before: usize, after: usize) -> Option<Change> {
    onset_between(runs, before, after, |_| true).map(|(change, _)| change)
}

/// [`onset_before_fix`] with the change allowed only before the runs `k` for which `allowed(k)`
/// holds; with the change, how many runs it was read on (all, or those before the fix).
fn onset_between(
    runs: &[Run],
    before: usize,
    after: usize,
    allowed: impl Fn(usize) -> bool + Copy,
) -> Option<(Change, usize)> {
    let whole = change_between(runs, before, after, allowed)?;
    let read = runs_before_fix(runs, &whole, (before, after), allowed);
    let change = if read == runs.len() {
        whole
    } else {
        change_between(&runs[..read], before, after, allowed)?
    };
    change.worse_after.then_some((change, read))
}

/// [`most_likely_change`] with the change allowed only before the runs `k` for which
/// `allowed(k)` holds (a change of payload lies between two payloads, never among one's runs).
fn change_between(
    runs: &[Run],
    before: usize,
    after: usize,
    allowed: impl Fn(usize) -> bool,
) -> Option<Change> {
    let n = runs.len();
    let (before, after) = (before.max(1), after.max(1));
    if n < before + after {
        return None;
    }
    let sums = prefix_sums(runs);
    let whole = sums[n];
    let null = whole.log_likelihood();
    let split = |k: usize| sums[k].log_likelihood() + whole.minus(sums[k]).log_likelihood();
    let candidates: Vec<(usize, f64)> = (before..=n - after)
        .filter(|&k| allowed(k))
        .map(|k| (k, split(k)))
        .collect();
    let &(index, best) = candidates
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    let near: Vec<usize> = candidates
        .iter()
        .filter(|(_, l)| best - l <= INTERVAL_CHI2 / 2.0)
        .map(|(k, _)| *k)
        .collect();
    let worse_after = whole.minus(sums[index]).level() > sums[index].level();
    let statistic = 2.0 * (best - null);
    let df = whole
        .bands
        .iter()
        .filter(|&&c| c > 0.0)
        .count()
        .saturating_sub(1);
    Some(Change {
        index,
        first: near.first().copied().unwrap_or(index),
        last: near.last().copied().unwrap_or(index),
        statistic,
        p_value: scan_p_value(statistic, df, n, before, after),
        worse_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Rng;

    /// Runs every 6 hours: `quiet` like healthy metal image-registry, then `loud` regressed.
    fn series(seed: u64, quiet: usize, loud: usize) -> Vec<Run> {
        let mut rng = Rng::new(seed);
        (0..quiet + loud)
            .map(|i| {
                let seconds = if i < quiet {
                    if rng.chance(0.2) {
                        rng.between(1, 4)
                    } else {
                        0
                    }
                } else if rng.chance(0.9) {
                    rng.between(12, 45)
                } else {
                    0
                };
                Run {
                    at: i as i64 * 21_600,
                    seconds,
                }
            })
            .collect()
    }

    #[test]
    fn a_planted_onset_is_found_inside_a_narrow_interval() {
        for seed in 0..20 {
            let runs = series(seed, 80, 40);
            let c = most_likely_change(&runs, 3, 3).unwrap();
            assert!(c.is_real(), "seed {seed}: {c:?}");
            assert!(c.worse_after);
            assert!(
                c.first <= 80 && 80 <= c.last,
                "seed {seed}: the truth is in the interval: {c:?}"
            );
            assert!(c.last - c.first <= 4, "seed {seed}: narrow: {c:?}");
            let (at, earliest, latest) = c.times(&runs);
            assert!(
                earliest < 80 * 21_600 && 80 * 21_600 <= latest && earliest <= at && at <= latest
            );
        }
    }

    #[test]
    fn quiet_series_show_no_real_change() {
        for seed in 0..200 {
            let mut runs = series(1000 + seed, 150, 0);
            // the heavy tail every backend has: a few wild runs
            let mut rng = Rng::new(seed);
            for r in runs.iter_mut() {
                if rng.chance(0.01) {
                    r.seconds = rng.between(15, 90);
                }
            }
            let c = most_likely_change(&runs, 3, 3).unwrap();
            assert!(!c.is_real(), "seed {seed}: {c:?}");
            assert_eq!(cut(&runs), runs.len(), "seed {seed}");
        }
    }

    #[test]
    fn an_onset_is_read_on_the_runs_before_its_fix() {
        // 60 quiet runs, 20 regressed, then a fix and 100 quiet runs: the fix is the series'
        // most likely change, and the onset lies before it
        let mut runs = series(11, 60, 20);
        runs.extend(
            series(12, 100, 0)
                .into_iter()
                .enumerate()
                .map(|(i, r)| Run {
                    at: (80 + i as i64) * 21_600,
                    ..r
                }),
        );
        let whole = most_likely_change(&runs, 3, 3).unwrap();
        assert!(
            !whole.worse_after && (78..=82).contains(&whole.index),
            "{whole:?}"
        );
        let onset = onset_before_fix(&runs, 3, 3).unwrap();
        assert!(onset.is_real(), "{onset:?}");
        assert!(onset.first <= 60 && 60 <= onset.last, "{onset:?}");
        assert!(onset.last - onset.first <= 4, "narrow: {onset:?}");
        // with no fix, the onset is the most likely change
        let open = series(11, 60, 20);
        assert_eq!(
            onset_before_fix(&open, 3, 3),
            most_likely_change(&open, 3, 3)
        );
    }

    /// How many runs [`runs_before_fix`] keeps of `runs`, changes allowed anywhere.
    fn cut(runs: &[Run]) -> usize {
        let whole = most_likely_change(runs, 3, 3).unwrap();
        runs_before_fix(runs, &whole, (3, 3), |_| true)
    }

    /// One run per value of `parts`: `(seconds, runs)`, a run every 6 hours.
    fn runs_of(parts: &[(i64, usize)]) -> Vec<Run> {
        parts
            .iter()
            .flat_map(|&(seconds, n)| std::iter::repeat_n(seconds, n))
            .enumerate()
            .map(|(i, seconds)| Run {
                at: i as i64 * 21_600,
                seconds,
            })
            .collect()
    }

    #[test]
    fn a_regression_that_came_back_is_not_cut_at_its_first_fix() {
        // regressed, fixed, and regressed again: the onset to read is not the first episode's
        let runs = runs_of(&[(0, 10), (30, 40), (0, 30), (30, 10)]);
        assert_eq!(cut(&runs), runs.len());
        assert_eq!(
            onset_before_fix(&runs, 3, 3),
            most_likely_change(&runs, 3, 3).filter(|c| c.worse_after)
        );
    }

    #[test]
    fn a_series_regressed_from_its_first_run_then_fixed_has_no_onset_inside_it() {
        // loud from the first run (12-45 s, as a regression's runs vary), then fixed
        let runs = runs_of(&[
            (12, 3),
            (30, 2),
            (45, 3),
            (14, 2),
            (33, 4),
            (19, 6),
            (0, 100),
        ]);
        assert_eq!(cut(&runs), runs.len());
        assert_eq!(onset_before_fix(&runs, 3, 3), None, "from its first run on");
    }

    #[test]
    fn a_recovery_is_a_change_for_the_better() {
        let mut runs = series(7, 0, 60);
        runs.extend(series(8, 12, 0).into_iter().enumerate().map(|(i, r)| Run {
            at: (60 + i as i64) * 21_600,
            ..r
        }));
        let c = most_likely_change(&runs, 3, 10).unwrap();
        assert!(c.is_real() && !c.worse_after, "{c:?}");
        assert!((58..=62).contains(&c.index), "{c:?}");
        assert!(most_likely_change(&runs[..5], 3, 3).is_none(), "too short");
    }

    /// Healthy series of every shape a backend shows, each with its own noise and length.
    fn healthy(kind: usize, rng: &mut Rng) -> i64 {
        match kind {
            // zeros and one band of small noise
            0 => i64::from(rng.chance(0.3)) * rng.between(1, 2),
            // zeros, small noise and every backend's few wild runs
            1 if rng.chance(0.01) => rng.between(15, 90),
            1 => i64::from(rng.chance(0.2)) * rng.between(1, 4),
            // disrupted in most runs, as metal's registry is, with a tail
            2 if rng.chance(0.05) => rng.between(10, 60),
            2 => i64::from(rng.chance(0.6)) * rng.between(1, 8),
            // spread over every band
            _ => match rng.between(0, 99) {
                0..=49 => 0,
                50..=69 => rng.between(1, 2),
                70..=84 => rng.between(3, 6),
                85..=94 => rng.between(7, 19),
                95..=98 => rng.between(20, 54),
                _ => rng.between(55, 200),
            },
        }
    }

    #[test]
    fn a_scan_of_a_healthy_series_finds_a_change_as_often_as_its_p_value_says() {
        // the p-value is an approximation: it must hold, and not be so strict it says nothing
        for kind in 0..4 {
            for n in [30, 60, 120, 240] {
                let mut rng = Rng::new((kind * 1000 + n) as u64);
                let scans = 1000;
                let (mut at_10, mut at_1) = (0, 0);
                for _ in 0..scans {
                    let runs: Vec<Run> = (0..n)
                        .map(|i| Run {
                            at: i as i64,
                            seconds: healthy(kind, &mut rng),
                        })
                        .collect();
                    let c = most_likely_change(&runs, 3, 3).unwrap();
                    at_10 += usize::from(c.p_value <= 0.1);
                    at_1 += usize::from(c.p_value <= 0.01);
                }
                let case = format!("kind {kind}, {n} runs: {at_10} and {at_1} of {scans}");
                assert!(at_1 <= 20, "{case}: too lenient at 1%");
                assert!(at_10 <= 130, "{case}: too lenient at 10%");
                assert!(at_10 >= 20, "{case}: so strict it says nothing");
            }
        }
    }

    #[test]
    fn a_change_is_judged_against_the_spread_of_its_own_series() {
        // 40 runs, then five of six at 27-37 s: beyond chance after zeros and small noise (a
        // modest ratio, below what a series over every band asks), within it after runs
        // spread over every band
        let after = |kind: usize| {
            let mut rng = Rng::new(5);
            let mut runs: Vec<Run> = (0..40)
                .map(|i| Run {
                    at: i * 21_600,
                    seconds: healthy(kind, &mut rng),
                })
                .collect();
            for (i, seconds) in [31, 27, 0, 37, 33, 29].into_iter().enumerate() {
                runs.push(Run {
                    at: (40 + i as i64) * 21_600,
                    seconds,
                });
            }
            most_likely_change(&runs, 3, 3).unwrap()
        };
        let quiet = after(0);
        assert!(quiet.worse_after && quiet.is_real(), "{quiet:?}");
        assert!(quiet.statistic < 30.0, "a modest ratio: {quiet:?}");
        let spread = after(3);
        assert!(!spread.is_real(), "{spread:?}");
    }
}

/// A payload and when it was built.
pub type Built = (String, i64);

/// One run on the payload order: the payload it tested, when that payload was built, when the
/// run started, and its disruption.
#[derive(Debug, Clone, Copy)]
pub struct Tested<'a> {
    pub payload: &'a str,
    pub built: i64,
    pub started: i64,
    pub seconds: i64,
}

/// Where a change lies on the payload order: the window from the last payload surely before
/// it to the first surely after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadWindow {
    /// The newest payload tested by a run before every plausible change point; None when the
    /// series starts bad.
    pub last_good: Option<Built>,
    /// The payload of the run at the latest plausible change point: every plausible first bad
    /// payload is at or before it.
    pub first_bad: Built,
    /// The payloads the runs tested from the last good to the first bad, in build order.
    pub tested: Vec<String>,
}

/// A change read on payload order: runs ordered by the build time of the payload they tested
/// (then by start), the most likely change of that series (read on the runs before its fix when
/// they show one: [`runs_before_fix`]), worse after it, and the interval
/// that holds its position with about 99% probability ([`INTERVAL_CHI2`]). The window runs from
/// the newest payload before the interval (stepping back past a payload whose runs fall on
/// both sides) that its runs show clearly good ([`clearly_good`], judged against `allowed`) to
/// the payload of the run at the interval's end (the interval's own clean runs count toward
/// that proof): it holds the true first bad payload whenever the interval holds the change,
/// and narrows to one step only when the runs pin it there.
/// `onset` is the run order's onset interval (the start of the last run before the change, and
/// of the latest plausible first run after it): when a run inside it was hit on a payload no
/// newer than the last good, the two orders disagree, and the last good is taken again from
/// the payloads older than that one, among the runs started by the interval's start (kept as
/// it was when none did). None when too few runs name a payload, or nothing got worse.
pub fn payload_change(
    runs: &[Tested<'_>],
    allowed: f64,
    onset: Option<(i64, i64)>,
) -> Option<PayloadWindow> {
    let mut order: Vec<&Tested<'_>> = runs.iter().filter(|r| !r.payload.is_empty()).collect();
    order.sort_by(|a, b| (a.built, a.started, a.payload).cmp(&(b.built, b.started, b.payload)));
    let series: Vec<Run> = order
        .iter()
        .map(|r| Run {
            at: r.built,
            seconds: r.seconds,
        })
        .collect();

    let boundary = |k: usize| order[k - 1].built != order[k].built;
    // a fix's clean runs after the regression are a second change: the onset is read on the
    // runs before it
    let (change, read) = onset_between(&series, 3, 3, boundary)?;
    let series = &series[..read];
    let earliest_bad = order[change.first];
    let bad = order[change.last.max(change.index)];
    let (before_change, after) = (&order[..change.first], &series[change.index..]);
    let spared_inside = order[change.first..change.index]
        .iter()
        .filter(|r| r.seconds as f64 <= allowed)
        .count() as i32;
    let mut good = clearly_good(
        before_change,
        after,
        earliest_bad.built,
        allowed,
        spared_inside,
    );
    if let (Some(g), Some(onset)) = (good, onset)
        && let Some(hit) = hit_inside(before_change, g.built, onset, allowed)
    {
        let by_onset: Vec<&Tested<'_>> = before_change
            .iter()
            .copied()
            .filter(|r| r.started <= onset.0)
            .collect();
        good = clearly_good(&by_onset, after, hit, allowed, spared_inside).or(good);
    }

    let from = good.map_or(earliest_bad.built, |g| g.built);
    let mut tested: Vec<String> = Vec::new();
    for r in order
        .iter()
        .filter(|r| r.built >= from && r.built <= bad.built)
    {
        if tested.last().is_none_or(|t| t != r.payload) {
            tested.push(r.payload.to_string());
        }
    }

    Some(PayloadWindow {
        last_good: good.map(|g| (g.payload.to_string(), g.built)),
        first_bad: (bad.payload.to_string(), bad.built),
        tested,
    })
}

/// How many runs of `series` come before its regression's fix: the position of a real change
/// for the better after a real onset (`change`, the series' most likely change, when that is
/// for the worse, else the most likely change before it, which a fix outweighing the regression
/// hides). The series' length when there is no such fix, or when the runs turn worse again for
/// real after it: a regression that came back is read on all of its runs, as before. Each
/// change keeps `(before, after)` runs on its sides.
fn runs_before_fix(
    series: &[Run],
    change: &Change,
    (before, after): (usize, usize),
    boundary: impl Fn(usize) -> bool + Copy,
) -> usize {
    let real = |c: &Change| c.is_real();
    let whole = series.len();
    let from = |start: usize| {
        change_between(&series[start..], before, after, move |k| {
            boundary(start + k)
        })
    };
    let onset = if change.worse_after {
        Some(*change)
    } else {
        change_between(&series[..change.index], before, after, boundary).filter(|c| c.worse_after)
    };
    let Some(start) = onset.filter(real).map(|c| c.index) else {
        return whole;
    };
    let Some(fix) = from(start)
        .filter(|c| !c.worse_after && real(c))
        .map(|c| start + c.index)
    else {
        return whole;
    };
    let again = from(fix).is_some_and(|c| c.worse_after && real(&c));
    if again { whole } else { fix }
}

/// The newest payload, built no later than `good`, that a run inside the run order's onset
/// interval (started after its start, by its end) was hit on: the run order saw it bad
/// already. None when there is none, or the interval is a point (the run order found no
/// change).
fn hit_inside(
    before_change: &[&Tested<'_>],
    good: i64,
    (earliest, latest): (i64, i64),
    allowed: f64,
) -> Option<i64> {
    before_change
        .iter()
        .filter(|r| r.started > earliest && r.started <= latest)
        .filter(|r| r.built <= good && r.seconds as f64 > allowed)
        .map(|r| r.built)
        .max()
}

/// A payload counts as good when it is unlikely that its runs were all spared by chance: less
/// likely than this, with the regression's share of hit runs taken as low as its runs support at
/// this level. A trade between the two halves of a window's promise, measured on the scorecard
/// (docs/evaluation.md): 5% held the truth in 97.8% of windows and kept 80.5% within 3 tested
/// payloads, 7.5% 97.0% and 85.6%, 10% 96.5% and 87.0%.
const SPARED_BY_CHANCE: f64 = 0.075;

/// Clean runs after a regression's last hit test a fix already when a regression hitting as
/// often as before would spare them all with less than this chance.
const FIXED_BY_CHANCE: f64 = 0.05;

/// The last good payload: stepping back from the payloads before `before` (the earliest
/// plausible first bad), the newest whose runs, together with those of the payloads stepped
/// over and the `spared_inside` clean runs inside the change's interval, are clean in numbers
/// a regression would spare all of with less than [`SPARED_BY_CHANCE`]. The regression's share
/// of hit runs is the lowest its runs after the change support ([`lowest_share`]; read up to
/// the last run it hits when the clean runs after that are more than it spares by chance
/// ([`FIXED_BY_CHANCE`]): they already test a fix), not their average: a regression may hit
/// fewer runs at first than later. The interval's clean runs count because a change before the
/// interval would have spared them too. One clean run of a payload is no proof against a regression that spares
/// one run in three: that payload may already carry it, and the window keeps it. The oldest
/// payload when the runs before never make the case; None when there are none.
fn clearly_good<'t>(
    before_change: &[&Tested<'t>],
    after: &[Run],
    before: i64,
    allowed: f64,
    spared_inside: i32,
) -> Option<Tested<'t>> {
    let hit_run = |r: &Run| r.seconds as f64 > allowed;
    let hits = after.iter().filter(|r| hit_run(r)).count() as f64;
    // clean runs after the last hit, more than the share spares by chance, already test a fix:
    // the share is read up to that hit
    let last_hit = after.iter().rposition(hit_run).map_or(0, |i| i + 1);
    let tail = (after.len() - last_hit) as i32;
    let fixed = (1.0 - hits / after.len().max(1) as f64).powi(tail) < FIXED_BY_CHANCE;
    let read = if fixed { last_hit } else { after.len() };
    let hit = lowest_share(hits as u64, read as u64, SPARED_BY_CHANCE);
    let spared = (1.0 - hit).clamp(0.0, 1.0);
    let mut clean = spared_inside;
    let mut good: Option<Tested<'t>> = None;
    for r in before_change.iter().rev().filter(|r| r.built < before) {
        if good.is_some_and(|g| g.built != r.built) && spared.powi(clean) <= SPARED_BY_CHANCE {
            break;
        }
        if good.is_none_or(|g| g.built != r.built) {
            good = Some(**r);
        }
        if r.seconds as f64 <= allowed {
            clean += 1;
        }
    }
    good
}

/// The lowest share of runs a regression may hit and still hit `hits` of `runs` or more with
/// probability `level`: the exact (Clopper-Pearson) one-sided lower bound on its share.
fn lowest_share(hits: u64, runs: u64, level: f64) -> f64 {
    if hits == 0 || runs == 0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, hits as f64 / runs as f64);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if super::stats::binomial_sf(hits, runs, mid) >= level {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi
}

#[cfg(test)]
mod payload_tests {
    use super::*;

    fn tag(n: i64) -> String {
        format!(
            "4.14.0-0.nightly-2026-11-{:02}-{:02}0000",
            1 + n / 6,
            (n % 6) * 4
        )
    }

    /// A clean run of each payload `payloads` names (by its place in `tags`), started as it
    /// was built.
    fn clean_runs(tags: &[String], payloads: impl IntoIterator<Item = usize>) -> Vec<Tested<'_>> {
        payloads
            .into_iter()
            .map(|n| Tested {
                payload: &tags[n],
                built: n as i64 * 14_400,
                started: n as i64 * 14_400,
                seconds: 0,
            })
            .collect()
    }

    /// When run `k` of payload `n` starts in [`two_runs_each`]'s runs.
    fn start(n: i64, k: i64) -> i64 {
        n * 14_400 + 3_600 * (k + 1)
    }

    /// Two runs of each of `tags`, a payload built every 4 hours and its runs started one and
    /// two hours later; run `k` of payload `n` reads `seconds(n, k)`.
    fn two_runs_each(tags: &[String], seconds: impl Fn(i64, i64) -> i64) -> Vec<Tested<'_>> {
        let runs = tags.iter().enumerate().flat_map(|(n, t)| {
            let n = n as i64;
            (0..2i64).map(move |k| (t, n, k))
        });
        runs.map(|(t, n, k)| Tested {
            payload: t,
            built: n * 14_400,
            started: start(n, k),
            seconds: seconds(n, k),
        })
        .collect()
    }

    #[test]
    fn the_change_lands_on_the_payload_that_shipped_it_whatever_the_run_order() {
        // payloads every 4 hours, 3 runs each, each run taking up a payload up to 8 hours late;
        // payload 20 shipped the regression (one of its runs spared)
        let tags: Vec<String> = (0..40).map(tag).collect();
        let mut runs = Vec::new();
        for (n, t) in tags.iter().enumerate() {
            let n = n as i64;
            for k in 0..3i64 {
                let bad = n >= 20 && !(n == 20 && k == 0);
                let seconds = if bad {
                    20 + k * 7
                } else if (n + k) % 9 == 0 {
                    2
                } else {
                    0
                };
                // started late and out of payload order: later payloads' runs interleave
                runs.push(Tested {
                    payload: t,
                    built: n * 14_400,
                    started: n * 14_400 + (2 - k) * 14_400,
                    seconds,
                });
            }
        }
        let w = payload_change(&runs, 5.0, None).expect("a change");
        assert_eq!(w.first_bad.0, tags[20], "pinned to one step: {w:?}");
        assert_eq!(w.last_good.unwrap().0, tags[19]);
        assert_eq!(w.tested, vec![tags[19].clone(), tags[20].clone()]);
    }

    #[test]
    fn a_fix_after_the_regression_does_not_blur_its_onset() {
        // payloads every 4 hours, 2 runs each; 20 to 29 carry the regression (one run in six
        // spared), 30 on carry the fix: two weeks of clean runs after it. 16 hits in 20 runs
        // support a share as low as 0.62: it takes three clean runs to prove a payload good
        let tags: Vec<String> = (0..110).map(tag).collect();
        let runs = two_runs_each(&tags, |n, k| {
            let hit = (20..30).contains(&n) && (n * 2 + k) % 6 != 5;
            if hit { 20 + k * 9 } else { (n + k) % 3 }
        });
        let before_fix = payload_change(&runs[..60], 5.0, None).expect("a change");
        let w = payload_change(&runs, 5.0, None).expect("a change");
        assert_eq!(w, before_fix, "the fix's runs leave the window as it was");
        assert_eq!(w.first_bad.0, tags[20], "{w:?}");
        assert_eq!(w.last_good.as_ref().unwrap().0, tags[18], "{w:?}");
    }

    #[test]
    fn a_hit_inside_the_onset_interval_on_an_older_payload_widens_the_window_back() {
        // payloads every 4 hours, 2 runs each; payload 18 carries the change but spares one of
        // its runs, 19 spares both, 20 on are hit: the payload order alone says 19..20
        let tags: Vec<String> = (0..40).map(tag).collect();
        let runs = two_runs_each(&tags, |n, k| {
            let hit = n >= 20 || (n == 18 && k == 0);
            if hit { 20 + k * 9 } else { (n + k) % 4 }
        });
        let alone = payload_change(&runs, 5.0, None).expect("a change");
        assert_eq!(alone.last_good.as_ref().unwrap().0, tags[19], "{alone:?}");
        // the run order's onset interval holds payload 18's hit run: back to what ran by its
        // start, where one clean run of 17 is proof against a regression hitting 40 runs of 40
        // (a share as low as 93.7%: it spares one run with 6.3% chance)
        let w = payload_change(&runs, 5.0, Some((start(17, 0), start(20, 0)))).expect("a change");
        assert_eq!(w.last_good.as_ref().unwrap().0, tags[17], "{w:?}");
        assert_eq!(w.first_bad.0, tags[20]);
        assert_eq!(w.tested, tags[17..=20].to_vec());
        // an interval holding no such hit leaves the window as the payload order has it; the
        // interval's start is the last run before the change, not inside it; a point is no
        // change on the run order
        for onset in [
            (start(19, 1), start(20, 0)),
            (start(18, 0), start(20, 0)),
            (start(18, 0), start(18, 0)),
        ] {
            let w = payload_change(&runs, 5.0, Some(onset)).expect("a change");
            assert_eq!(w, alone, "{onset:?}");
        }
    }

    #[test]
    fn a_payload_the_scope_never_tested_stays_inside_the_window() {
        // payloads every 8 hours, 2 runs each; payload 20 ships the regression but the scope
        // never tests it; one run of payload 19 reads 7 s against 0-5 s of noise
        let tags: Vec<String> = (0..40).map(tag).collect();
        let mut runs = Vec::new();
        for (n, t) in tags.iter().enumerate() {
            let n = n as i64;
            if n == 20 {
                continue;
            }
            for k in 0..2i64 {
                let seconds = if n > 20 {
                    if (n + k) % 7 == 0 {
                        0
                    } else {
                        12 + (n * 5 + k * 11) % 33
                    }
                } else if n == 19 && k == 1 {
                    7
                } else {
                    (n + k) % 6
                };
                runs.push(Tested {
                    payload: t,
                    built: n * 28_800,
                    started: n * 28_800 + 3_600 * (k + 1),
                    seconds,
                });
            }
        }
        let w = payload_change(&runs, 5.0, None).expect("a change");
        let built = |t: &str| tags.iter().position(|x| x == t).unwrap();
        let (good, bad) = (
            built(&w.last_good.clone().unwrap().0),
            built(&w.first_bad.0),
        );
        assert!(
            good < 20 && bad >= 21,
            "the window {good}..{bad} holds payload 20: {w:?}"
        );
        assert!(!w.tested.contains(&tags[20]), "the scope never ran it");
    }

    #[test]
    fn a_payload_whose_few_runs_were_spared_is_not_called_good() {
        // the change is placed before payload 21; payload 20's one run was clean, 19's two too
        let tags: Vec<String> = (0..24).map(tag).collect();
        let run = |n: usize, seconds: i64| Tested {
            payload: &tags[n],
            built: n as i64 * 14_400,
            started: n as i64 * 14_400,
            seconds,
        };
        let before: Vec<Tested<'_>> =
            vec![run(18, 0), run(18, 1), run(19, 0), run(19, 2), run(20, 0)];
        let before: Vec<&Tested<'_>> = before.iter().collect();
        let at = |t: &Tested<'_>| tags.iter().position(|x| x == t.payload).unwrap();
        let after_with = |hits: i64, runs: i64| -> Vec<Run> {
            (0..runs)
                .map(|i| Run {
                    at: i,
                    // hits spread evenly, the last run hit
                    seconds: if i * hits / runs != (i + 1) * hits / runs {
                        30
                    } else {
                        0
                    },
                })
                .collect()
        };
        // a regression that hits 17 runs in 20 may spare one in three (the lowest share those
        // hits support): one clean run of payload 20 is no proof it was good, with 19's two
        // clean runs it is
        let good = clearly_good(&before, &after_with(17, 20), 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(at(&good), 19);
        // so it is when the change's interval already holds two clean runs
        let good = clearly_good(&before, &after_with(17, 20), 21 * 14_400, 5.0, 2).unwrap();
        assert_eq!(at(&good), 20);
        // one that hit all of 60 runs is disproved by a single clean run; all of 20, not yet
        let good = clearly_good(&before, &after_with(60, 60), 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(at(&good), 20);
        let good = clearly_good(&before, &after_with(20, 20), 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(at(&good), 19);
        // one that hits half the runs needs more clean runs than the series has: the oldest
        let good = clearly_good(&before, &after_with(10, 20), 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(at(&good), 18);
    }

    #[test]
    fn clean_runs_after_the_last_hit_do_not_water_down_the_share() {
        // one clean run each of payloads 17-20, the change before 21; after it 17 of 20 runs
        // hit, then 8 clean ones that test a fix
        let tags: Vec<String> = (0..24).map(tag).collect();
        let before = clean_runs(&tags, 17..=20);
        let before: Vec<&Tested<'_>> = before.iter().collect();
        let after: Vec<Run> = (0..28)
            .map(|i| Run {
                at: i,
                seconds: if i < 20 && i % 7 != 3 { 30 } else { 0 },
            })
            .collect();
        // read up to the last hit the regression may spare one run in three (two clean runs
        // are no proof that a payload was good, 0.32^2 > 7.5%, three are); over all 28 runs it
        // would seem to spare more than half, and the window reach back to 17
        let good = clearly_good(&before, &after, 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(good.payload, tags[18]);
        // a clean tail a regression of that share spares by chance is no fix: one hit, then
        // five clean runs, is a regression sparing five runs in six, and no run proves 17-20 good
        let rare: Vec<Run> = (0..6)
            .map(|i| Run {
                at: i,
                seconds: if i == 0 { 30 } else { 0 },
            })
            .collect();
        let good = clearly_good(&before, &rare, 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(good.payload, tags[17]);
    }

    #[test]
    fn the_intervals_own_clean_runs_count_toward_a_good_payload() {
        // payloads every 4 hours, 2 runs each; from 20 on, one run in three spared. The
        // change's interval holds clean runs that a regression of that share would have spared
        // had it come earlier: they count toward proving the payloads before it good, so that
        // the step back does not pay for the same doubt a second time (17..20 without them)
        let tags: Vec<String> = (0..60).map(tag).collect();
        let runs = two_runs_each(&tags, |n, k| {
            let hit = n >= 20 && (n * 2 + k) % 3 != 0;
            if hit { 20 + k * 9 } else { (n + k) % 3 }
        });
        let w = payload_change(&runs, 5.0, None).expect("a change");
        assert_eq!(w.tested, tags[18..=20].to_vec(), "{w:?}");
    }

    #[test]
    fn a_regression_that_ramps_up_keeps_its_first_payload_in_the_window() {
        // the regression ships in 20 and hits few runs at first: 20 spares both of its runs
        // (18 and 19 were clean too), then seven runs in nine are hit. Its average share would
        // call 20's two clean runs proof (0.22^2 < 7.5%: 20..21 then); the lowest share its hits
        // support (0.70) does not, and 19's two clean runs are needed as well
        let tags: Vec<String> = (0..24).map(tag).collect();
        let before = clean_runs(&tags, (18..=20).flat_map(|n| [n, n]));
        let before: Vec<&Tested<'_>> = before.iter().collect();
        let after: Vec<Run> = (0..81)
            .map(|i| Run {
                at: i,
                seconds: if matches!(i % 9, 0 | 4) { 0 } else { 30 },
            })
            .collect();
        let good = clearly_good(&before, &after, 21 * 14_400, 5.0, 0).unwrap();
        assert_eq!(good.payload, tags[19]);
    }

    #[test]
    fn the_lowest_share_is_the_one_sided_bound_on_the_hits() {
        // every run of 20 hit: 5% = h^20
        assert!((lowest_share(20, 20, 0.05) - 0.05f64.powf(1.0 / 20.0)).abs() < 1e-6);
        // 17 of 20: the exact (Clopper-Pearson) one-sided bound is 0.656
        assert!((lowest_share(17, 20, 0.05) - 0.656).abs() < 0.002);
        assert_eq!(lowest_share(0, 20, 0.05), 0.0);
        assert_eq!(lowest_share(0, 0, 0.05), 0.0);
        let more = lowest_share(170, 200, 0.05);
        assert!(more > lowest_share(17, 20, 0.05) && more < 0.85, "{more}");
    }

    #[test]
    fn unknown_payloads_and_no_change_give_nothing() {
        let runs: Vec<Tested<'_>> = (0..30)
            .map(|n| Tested {
                payload: "",
                built: n,
                started: n,
                seconds: if n > 15 { 30 } else { 0 },
            })
            .collect();
        assert_eq!(payload_change(&runs, 5.0, None), None);
        let t = tag(1);
        let flat: Vec<Tested<'_>> = (0..30)
            .map(|n| Tested {
                payload: &t,
                built: n,
                started: n,
                seconds: 0,
            })
            .collect();
        assert_eq!(payload_change(&flat, 5.0, None), None);
    }
}
