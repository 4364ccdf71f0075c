//! A regression's numbers over exactly its scope: the cells the scope names, their runs in the
//! window and in the reference, the percentile against its threshold, and the test. Whatever a
//! report says of a regression's runs, percentiles and samples is of this one set of runs.

use crate::config::EvaluateSettings;
use crate::domain::evaluate::thresholds::{HistoricalTable, previous_release};
use crate::domain::evaluate::{Candidates, Check, Common, judge_check, reference, runs_of};
use crate::model::{
    Dimension, Dimensions, GroupKey, Histogram, Percentile, Scope, Span, ThresholdSource,
    percentiles_of,
};
use crate::store::evaluations::WindowData;

/// The cells of `backend` inside `scope` with runs in either window (indices into the cells).
pub(super) fn cells_in(data: &WindowData, backend: &str, scope: &Scope) -> Vec<usize> {
    data.cells
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            data.backends[c.backend] == backend && scope.contains(&data.variants[c.variant])
        })
        .map(|(i, _)| i)
        .collect()
}

/// The same scope one release earlier (the from-release shifted too when the scope names one).
pub(super) fn previous_scope(scope: &Scope) -> Option<(String, Scope)> {
    let release = previous_release(scope.single(Dimension::Release)?)?;
    let mut out = scope.clone();
    out.set(Dimension::Release, [release.clone()]);
    if let Some(from) = scope
        .single(Dimension::FromRelease)
        .filter(|f| !f.is_empty())
    {
        out.set(Dimension::FromRelease, [previous_release(from)?]);
    }
    Some((release, out))
}

/// A regression's numbers over its scope.
#[derive(Debug, Clone)]
pub(super) struct ScopeStats {
    pub backend: String,
    pub runs: u64,
    /// Runs of the scope in the window left out for CI-infrastructure trouble.
    pub troubled: u64,
    pub reference_runs: u64,
    /// P50, P75, P95, P99 now and in the reference.
    pub current: [Option<f64>; 4],
    pub reference: [Option<f64>; 4],
    /// The judged percentile against its threshold, and the test (q-value from the cycle's
    /// adjustment, see [`ScopeStats::holds`]).
    pub check: Check,
    /// The reference distribution, when the threshold came from history.
    pub reference_histogram: Option<Histogram>,
}

impl ScopeStats {
    /// Enough runs to judge: the window's minimum, or a recent span's.
    pub fn enough(&self, settings: &EvaluateSettings) -> bool {
        let least = if self.check.span == Span::Window {
            settings.min_job_runs
        } else {
            settings.min_recent_runs
        };
        self.runs >= least
    }

    /// Enough runs, above what is allowed, and significant at the cycle's cutoff.
    pub fn holds(&self, settings: &EvaluateSettings, cutoff: f64) -> bool {
        self.enough(settings) && self.check.exceeds && self.check.p_value <= cutoff
    }
}

/// What judging a scope needs from the cycle.
pub(super) struct Judging<'a> {
    pub data: &'a WindowData,
    pub settings: &'a EvaluateSettings,
    pub historical: &'a HistoricalTable,
    pub young: &'a std::collections::HashSet<String>,
}

/// The runs of `scope` in the window left out for CI-infrastructure trouble.
fn troubled_in(data: &WindowData, scope: &Scope) -> u64 {
    data.variants
        .iter()
        .zip(&data.troubled)
        .filter(|(v, _)| scope.contains(v))
        .map(|(_, n)| *n)
        .sum()
}

/// The group key a scope's single-valued dimensions make.
fn key_of(backend: &str, scope: &Scope) -> GroupKey {
    GroupKey {
        backend: backend.into(),
        fixed: scope
            .iter()
            .filter(|(_, v)| v.len() == 1)
            .filter_map(|(d, v)| Some((d, v.iter().next()?.clone())))
            .collect(),
    }
}

impl Judging<'_> {
    /// The same scope's runs one release earlier: its baseline when it has enough runs, else
    /// its window.
    fn previous_runs(&self, backend: &str, scope: &Scope) -> Option<(String, Histogram)> {
        let data = self.data;
        previous_scope(scope).map(|(release, s)| {
            let (mut base, mut cur) = (Histogram::new(), Histogram::new());
            for c in cells_in(data, backend, &s) {
                base.merge(&data.cells[c].baseline);
                cur.merge(&data.cells[c].current);
            }
            (
                release,
                if base.count() >= self.settings.min_job_runs {
                    base
                } else {
                    cur
                },
            )
        })
    }

    /// The numbers of `backend` over `scope` for `percentile`, over the runs of `span`; None
    /// when the scope has too few runs there or nothing to compare with.
    pub fn stats(
        &self,
        backend: &str,
        scope: &Scope,
        percentile: Percentile,
        span: Span,
    ) -> Option<ScopeStats> {
        let (data, settings) = (self.data, self.settings);
        let cells = cells_in(data, backend, scope);
        let (mut current, mut baseline) = (Histogram::new(), Histogram::new());
        for &c in &cells {
            current.merge(runs_of(span, &data.cells[c]));
            baseline.merge(&data.cells[c].baseline);
        }
        let least = if span == Span::Window {
            1
        } else {
            settings.min_recent_runs
        };
        if current.is_empty() || current.count() < least {
            return None;
        }

        let previous = self.previous_runs(backend, scope);
        let cell_dims: Vec<&Dimensions> = cells
            .iter()
            .filter(|&&c| !data.cells[c].current.is_empty())
            .map(|&c| &data.variants[data.cells[c].variant])
            .collect();
        let key = key_of(backend, scope);
        let young = scope
            .single(Dimension::Release)
            .is_some_and(|r| self.young.contains(r));
        let whole = [percentiles_of(&current), percentiles_of(&baseline)];
        let common = Common::of(&cells, &data.cells, span, (&current, &baseline), whole);
        let candidates = Candidates {
            key: &key,
            baseline: &common.baseline,
            baseline_percentiles: &common.percentiles[1],
            previous: previous.as_ref().map(|(r, h)| (r.as_str(), h)),
            cell_dims: &cell_dims,
            young,
        };
        let r = reference(&candidates, percentile, settings, self.historical)?;
        let reference_histogram = r.against.cloned();
        let own_baseline = matches!(r.threshold.source, ThresholdSource::Baseline { .. });
        let previous_runs = previous.as_ref().map(|(_, h)| h);
        let mut check = judge_check(
            &common,
            (&current, &whole[0]),
            (span, percentile),
            r,
            previous_runs,
            &data.cells,
            settings,
        );
        check.q_value = check.p_value;

        // the numbers are those of the runs judged: the common cells' against a baseline
        let judged = if own_baseline {
            &*common.current
        } else {
            &current
        };
        Some(ScopeStats {
            backend: backend.to_string(),
            runs: judged.count(),
            troubled: troubled_in(data, scope),
            reference_runs: reference_histogram.as_ref().map_or(0, Histogram::count),
            current: percentiles_of(judged),
            reference: reference_histogram
                .as_ref()
                .map_or([None; 4], percentiles_of),
            check,
            reference_histogram,
        })
    }
}

impl Judging<'_> {
    /// `scope` without the parts that stayed within what they allow on runs of their own: a
    /// value of a dimension whose runs in the scope are enough to judge, with the judged
    /// percentile at or below its allowed level, leaves the scope, as long as what remains
    /// still `holds`. This is how a person reads "kube-api regressed on azure" against "micro
    /// upgrades on azure: P50 2 s over 40 runs": the groups found the regression, the parts'
    /// own runs say where it is not. The stats of the scope returned, or None when nothing left.
    pub fn without_healthy_parts(
        &self,
        backend: &str,
        (scope, stats): (Scope, ScopeStats),
        holds: impl Fn(&ScopeStats) -> bool,
    ) -> (Scope, ScopeStats) {
        let (percentile, span) = (stats.check.percentile, stats.check.span);
        let (mut scope, mut stats) = (scope, stats);
        'again: loop {
            for d in Dimension::ALL
                .into_iter()
                .filter(|d| *d != Dimension::Release)
            {
                let values = self.values_with_runs(backend, &scope, d, span);
                if values.len() < 2 {
                    continue;
                }
                for v in &values {
                    let mut part = scope.clone();
                    part.set(d, [v.clone()]);
                    let mut rest = scope.clone();
                    rest.set(d, values.iter().filter(|x| *x != v).cloned());
                    let Some(r) = self.stats(backend, &rest, percentile, span).filter(&holds)
                    else {
                        continue;
                    };
                    let healthy = self
                        .stats(backend, &part, percentile, span)
                        .is_some_and(|p| {
                            p.enough(self.settings) && p.check.observed <= p.check.allowed
                        });
                    if healthy || self.spared(backend, (&part, &rest), span, &r) {
                        (scope, stats) = (rest, r);
                        continue 'again;
                    }
                }
            }
            return (scope, stats);
        }
    }

    /// Whether a part too thin to judge on its own was spared what the rest of the scope shows:
    /// its runs' percentile within the rest's allowed level, and its runs above that level
    /// fewer than the rest's, significantly (one-sided Fisher at the false discovery rate) —
    /// six clean runs of a sparse job beside a platform disrupted in most runs.
    fn spared(
        &self,
        backend: &str,
        (part, rest): (&Scope, &Scope),
        span: Span,
        r: &ScopeStats,
    ) -> bool {
        let (p, q) = (
            self.runs_in(backend, part, span),
            self.runs_in(backend, rest, span),
        );
        let allowed = r.check.allowed;
        let within = p
            .percentile(r.check.percentile.fraction())
            .is_some_and(|x| x <= allowed);
        let fewer = crate::domain::evaluate::stats::fisher_greater(
            q.count_above(allowed),
            q.count(),
            p.count_above(allowed),
            p.count(),
        );
        within && fewer <= self.settings.false_discovery_rate
    }

    /// The runs of `backend` in `scope` over `span`, every cell's together.
    fn runs_in(&self, backend: &str, scope: &Scope, span: Span) -> Histogram {
        let mut out = Histogram::new();
        for c in cells_in(self.data, backend, scope) {
            out.merge(runs_of(span, &self.data.cells[c]));
        }
        out
    }

    /// The values of `d` among the cells of `backend` in `scope` with runs in `span`.
    fn values_with_runs(
        &self,
        backend: &str,
        scope: &Scope,
        d: Dimension,
        span: Span,
    ) -> std::collections::BTreeSet<String> {
        let data = self.data;
        cells_in(data, backend, scope)
            .into_iter()
            .filter(|&c| !runs_of(span, &data.cells[c]).is_empty())
            .map(|c| data.variants[data.cells[c].variant].get(d).to_string())
            .collect()
    }
}
