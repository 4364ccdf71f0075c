//! Following an open incident from cycle to cycle: its numbers over its scope against the
//! reference before its onset, and the verdict — still regressed, stale (too few runs to tell:
//! a data gap is not a fix), or recovered.
//!
//! Recovery is seen the way an onset is: a change point in the incident's runs after its onset,
//! a change for the better with at least `recovery_min_runs` runs after it, those runs within
//! what the reference allows and not worse than the reference (the most likely change, else the
//! one after the last run above what is allowed). It does not wait for the window to empty of
//! regressed runs. Without such a change the incident resolves only after
//! `clear_after` cycles in a row whose window is back within the reference.

use super::attribution::{Context, Described, onset_of};
use super::error::Result;
use super::scoped::ScopeStats;
use super::source::{CellRun, RunSource};
use crate::domain::evaluate::changepoint::{self, Run};
use crate::domain::evaluate::stats;
use crate::domain::incidents::Incident;
use crate::model::DAY;
use crate::model::{
    FixClaim, FixVerdict, Histogram, Onset, Percentile, RegressionReport, Scope, Span, Status,
    Verification, backend_family,
};

/// How long after an incident opens its onset is still refined as runs arrive.
const REFINE_ONSET_SECS: i64 = 2 * DAY;

/// A variant belongs to an incident's onset when one of its runs was worse than allowed within
/// this long after the onset's latest moment.
const ONSET_VARIANT_SECS: i64 = DAY;

/// What became of an open incident this cycle.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Verdict {
    /// Too few runs in its scope this cycle to judge.
    Stale,
    /// Back at the reference since `at` (the first run after the fix point).
    Recovered { at: i64 },
    /// Still regressed, or not yet clearly back.
    Ongoing,
}

/// An open incident, followed.
pub(super) struct Followed {
    pub verdict: Verdict,
    /// Its report this cycle (none when stale).
    pub report: Option<RegressionReport>,
    /// Cycles in a row its window was back within the reference (the slow way to resolve).
    pub clean_streak: u32,
}

/// The detections that are this incident: same family and release, overlapping scope.
pub(super) fn belongs(incident: &Incident, r: &RegressionReport) -> bool {
    incident.snapshot.family == r.family
        && incident.snapshot.release == r.release
        && incident.snapshot.scope.same_problem(&r.scope)
}

/// The first run from which the series stays back at or under `allowed`, or None.
fn back_since(runs: &[CellRun], allowed: f64) -> Option<i64> {
    let last_bad = runs.iter().rposition(|r| r.seconds as f64 > allowed);
    match last_bad {
        Some(i) => runs.get(i + 1).map(|r| r.started),
        None => runs.first().map(|r| r.started),
    }
}

/// The incident's backends and those of this cycle's detections of it, of its family only.
fn followed_backends(incident: &Incident, detections: &[&Described]) -> Vec<String> {
    let mut backends: Vec<String> = incident.snapshot.backends.clone();
    backends.extend(
        detections
            .iter()
            .flat_map(|d| d.report.backends.iter().cloned()),
    );
    backends.retain(|b| backend_family(b) == incident.snapshot.family);
    backends.sort();
    backends.dedup();
    backends
}

/// The incident's percentile and those of this cycle's detections of it.
fn followed_percentiles(incident: &Incident, detections: &[&Described]) -> Vec<Percentile> {
    let mut percentiles = vec![incident.snapshot.percentile];
    percentiles.extend(detections.iter().map(|d| d.stats.check.percentile));
    percentiles.sort();
    percentiles.dedup();
    percentiles
}

/// A recovered report's "now" is the runs since the recovery: what they say, not the window's.
fn since_recovery(report: &mut RegressionReport, runs: &[CellRun], at: i64) {
    let mut post = Histogram::new();
    for r in runs.iter().filter(|r| r.started >= at) {
        post.add(r.seconds, 1);
    }
    if post.is_empty() {
        return;
    }
    let round = |x: f64| (x * 100.0).round() / 100.0;
    for (p, pair) in report.percentiles.iter_mut() {
        pair.now = post.percentile(p.fraction()).map(round);
    }
    report.observed_seconds = round(post.percentile(report.percentile.fraction()).unwrap_or(0.0));
    report.job_runs = post.count();
    // the summary says the runs since; the evidence keeps the window's test it was judged by
    report.attribution.summary = crate::words::regression::summary(report);
}

/// An incident with a claimed fix at a known fix point resolves only by its verdict: fixed
/// resolves it from the fix point, anything else keeps it open (a fix claimed is verified, not
/// assumed). A claim still in no payload leaves recovery as it is: no longer observed.
fn with_verdict_of_fix(
    verdict: Verdict,
    claim: Option<&FixClaim>,
    v: Option<&Verification>,
) -> Verdict {
    match (claim.and_then(FixClaim::fix_point), v) {
        (Some(point), Some(v)) if v.verdict == FixVerdict::Fixed => {
            Verdict::Recovered { at: point }
        }
        (Some(_), Some(_)) if matches!(verdict, Verdict::Recovered { .. }) => Verdict::Ongoing,
        _ => verdict,
    }
}

impl<S: RunSource> Context<'_, S> {
    /// The numbers of each of the incident's backends over `scope` at each of `percentiles`,
    /// over the runs of one span: the longest whose runs all came after the onset (`onset`,
    /// Unix seconds), else the shortest with enough runs — the incident's level now, the same
    /// span from cycle to cycle. Of those the worst (a significant excess before any other,
    /// then the largest ratio of observed to allowed): judging the whole scope at only the
    /// percentile a narrower detection chose would call half a platform's runs at P50 "back".
    /// Also whether any span still shows the regression.
    fn worst_stats(
        &self,
        backends: &[String],
        scope: &Scope,
        percentiles: &[Percentile],
        onset: Option<i64>,
    ) -> Option<(ScopeStats, bool)> {
        let fdr = self.settings.false_discovery_rate;
        let significant = |s: &ScopeStats| s.check.exceeds && s.check.p_value <= fdr;
        let all: Vec<ScopeStats> = backends
            .iter()
            .flat_map(|b| percentiles.iter().map(move |p| (b, *p)))
            .flat_map(|(b, p)| {
                crate::domain::evaluate::spans(self.settings).map(move |span| (b, p, span))
            })
            .filter_map(|(b, p, span)| self.judging.stats(b, scope, p, span))
            .filter(|s| s.enough(self.settings))
            .collect();

        let regressed_now = all.iter().any(significant);
        let start = |span: Span| self.start_of(span);
        let available: Vec<Span> = crate::domain::evaluate::spans(self.settings)
            .filter(|span| all.iter().any(|s| s.check.span == *span))
            .collect();

        let after_onset = available
            .iter()
            .copied()
            .filter(|span| onset.is_none_or(|o| start(*span) >= o));

        let chosen = after_onset
            .min_by_key(|span| start(*span))
            .or_else(|| available.iter().copied().max_by_key(|span| start(*span)))?;

        let key = |s: &ScopeStats| (significant(s), s.check.observed / s.check.allowed.max(1.0));
        let stats = all
            .into_iter()
            .filter(|s| s.check.span == chosen)
            .max_by(|a, b| {
                let (ka, kb) = (key(a), key(b));
                ka.0.cmp(&kb.0)
                    .then(ka.1.total_cmp(&kb.1))
                    .then(b.backend.cmp(&a.backend))
            })?;

        Some((stats, regressed_now))
    }

    /// An early recovery: a change for the better after the onset, with enough runs after it
    /// that are within what the reference allows and not worse than it. The series' most likely
    /// change is tried first; when it is a change for the better but runs above what is allowed
    /// follow it (the last regressed payloads spared a run or two, which pulled the change back
    /// before their other runs), the change after the last run above what is allowed is tried
    /// too, held to the same test and checks.
    fn recovery(&self, runs: &[CellRun], onset: Option<&Onset>, stats: &ScopeStats) -> Option<i64> {
        let after = onset.map_or(i64::MIN, |o| o.at.timestamp());
        let series: Vec<Run> = runs
            .iter()
            .filter(|r| r.started >= after)
            .map(|r| Run {
                at: r.started,
                seconds: r.seconds,
            })
            .collect();

        let needed = self.settings.recovery_min_runs.max(3);
        let change = changepoint::most_likely_change(&series, 3, needed)?;
        if change.worse_after
            || !(change.is_real() || self.fewer_after(&series, change.index, stats))
        {
            tracing::debug!(
                backend = %stats.backend,
                runs = series.len(),
                after = series.len() - change.index,
                statistic = change.statistic,
                worse_after = change.worse_after,
                "no recovery: no change for the better"
            );
            return None;
        }
        if self.back_within(&series[change.index..], needed, stats) {
            // dated late in its interval: every run before it stays out of the windows from
            // now on, and none of the regression's own may be left in
            return Some(change.times(&series).2);
        }

        // a change for the better, but runs above what is allowed follow it: try the change
        // after the last of them
        let allowed = stats.check.allowed;
        let index = series.iter().rposition(|r| r.seconds as f64 > allowed)? + 1;
        let later = index > change.index
            && series.len() - index >= needed
            && self.fewer_after(&series, index, stats)
            && self.back_within(&series[index..], needed, stats);
        tracing::debug!(
            backend = %stats.backend,
            runs = series.len(),
            after = series.len() - index,
            later,
            "a recovery after the last run above what is allowed"
        );
        later.then(|| series[index].at)
    }

    /// Whether the runs after a change are enough (`needed`), back within what the reference
    /// allows and not significantly worse than it.
    fn back_within(&self, after: &[Run], needed: usize, stats: &ScopeStats) -> bool {
        let mut post = Histogram::new();
        for r in after {
            post.add(r.seconds, 1);
        }

        // back within what is allowed, judged as a regression is: a percentile above the bar
        // that rests on a run or two is not (one late run of an old payload after the fix is
        // the regression's, not the fix's failure)
        let (p, allowed) = (stats.check.percentile, stats.check.allowed);
        let within = post.percentile(p.fraction()).is_some_and(|v| {
            v <= allowed
                || !crate::domain::evaluate::supported(&post, p.fraction(), allowed, self.settings)
        });

        let not_worse = stats.reference_histogram.as_ref().is_none_or(|reference| {
            stats::two_part_greater(&post, reference).p > self.settings.false_discovery_rate
        });

        tracing::debug!(
            backend = %stats.backend,
            after = post.count(),
            within,
            not_worse,
            "back within what is allowed"
        );
        post.count() as usize >= needed && within && not_worse
    }

    /// Whether the runs after `index` exceed what is allowed significantly less often than the
    /// regressed runs before it: one-sided Fisher, Bonferroni-adjusted for the positions the
    /// change could have taken, at the false discovery rate. Six clean runs after a stretch
    /// disrupted in most runs are a recovery; six after a stretch disrupted in half are not.
    /// The scan's level, set for finding a change anywhere in a series that has none, asks for
    /// more runs than a return from a known regressed level needs.
    fn fewer_after(&self, series: &[Run], index: usize, stats: &ScopeStats) -> bool {
        let allowed = stats.check.allowed;
        let above =
            |runs: &[Run]| runs.iter().filter(|r| r.seconds as f64 > allowed).count() as u64;
        let (before, after) = series.split_at(index);
        let p = stats::fisher_greater(
            above(before),
            before.len() as u64,
            above(after),
            after.len() as u64,
        );
        p * series.len() as f64 <= self.settings.false_discovery_rate
    }

    /// Follows one open incident, with the detections of this cycle that are it (their scopes
    /// and its own together are its scope now).
    pub async fn follow(
        &self,
        incident: &Incident,
        detections: &[&Described],
        prior_streak: u32,
    ) -> Result<Followed> {
        let strongest = detections
            .iter()
            .min_by(|a, b| a.stats.check.p_value.total_cmp(&b.stats.check.p_value));
        let scope = self.joined_scope(incident, detections);
        let backends = followed_backends(incident, detections);
        let percentiles = followed_percentiles(incident, detections);

        if let Some(gone) = self
            .vanished(incident, &backends, &scope, prior_streak)
            .await?
        {
            return Ok(gone);
        }

        let stale = Followed {
            verdict: Verdict::Stale,
            report: None,
            clean_streak: prior_streak,
        };
        let Some((scope, stats, regressed_now)) =
            self.judged(incident, &backends, scope, &percentiles, detections)
        else {
            return Ok(stale);
        };
        if !stats.enough(self.settings) {
            return Ok(stale);
        }

        let (runs, onset) = self
            .runs_and_onset(incident, &backends, &scope, &stats)
            .await?;

        let clean_streak = if regressed_now { 0 } else { prior_streak + 1 };
        let (verdict, verification) =
            self.judge_recovery(incident, &runs, onset.as_ref(), &stats, clean_streak);
        let status = if matches!(verdict, Verdict::Recovered { .. }) {
            Status::Resolved
        } else {
            Status::Ongoing
        };

        let base = strongest.map_or(&incident.snapshot.report, |d| &d.report);
        let mut report = self.refreshed(base, &stats, &runs, onset, status).await?;
        report.scope = scope;
        report.fingerprint.clone_from(&incident.fingerprint);
        report.backends = backends;
        report.backend = (report.backends.len() == 1).then(|| report.backends[0].clone());
        crate::words::regression::said(&mut report);
        if let Verdict::Recovered { at } = verdict {
            report.recovered_at = chrono::DateTime::from_timestamp(at, 0);
            since_recovery(&mut report, &runs, at);
        }
        report.verification = verification;
        Ok(Followed {
            verdict,
            report: Some(report),
            clean_streak,
        })
    }

    /// The incident's scope joined with the scopes of this cycle's detections of it.
    ///
    /// A cycle that judges part of the scope is no news: the scope is joined with it (and
    /// narrows below only where the scope's own runs show a part spared).
    fn joined_scope(&self, incident: &Incident, detections: &[&Described]) -> Scope {
        detections
            .iter()
            .fold(incident.snapshot.scope.clone(), |a, d| {
                a.joined_over(&d.report.scope, &self.index.data.variants)
            })
            .simplified(&self.index.data.variants)
    }

    /// The shortest span a cycle judges that reaches back to the incident's onset (its point
    /// estimate, as the incident is judged): a recent span, or the window.
    fn since_onset(&self, incident: &Incident) -> Span {
        let Some(onset) = incident.onset().map(|o| o.at.timestamp()) else {
            return Span::Window;
        };
        crate::domain::evaluate::spans(self.settings)
            .filter(|s| self.start_of(*s) <= onset)
            .max_by_key(|s| self.start_of(*s))
            .unwrap_or(Span::Window)
    }

    /// When a span this cycle judges starts (each ends now).
    fn start_of(&self, span: Span) -> i64 {
        match span {
            Span::Window => self.window.from.timestamp(),
            Span::Recent { days, .. } => self.now - i64::from(days) * DAY,
        }
    }

    /// The incident's scope, narrowed where its own runs show a part spared, with its worst
    /// numbers there and whether they are regressed now. None when too few runs tell.
    fn judged(
        &self,
        incident: &Incident,
        backends: &[String],
        scope: Scope,
        percentiles: &[Percentile],
        detections: &[&Described],
    ) -> Option<(Scope, ScopeStats, bool)> {
        let onset_at = incident.onset().map(|o| o.at.timestamp());
        let (stats, regressed_now) = self.worst_stats(backends, &scope, percentiles, onset_at)?;
        let since = self.since_onset(incident);
        match self.narrowed(scope.clone(), stats.clone(), detections, since) {
            Some(narrow) if narrow != scope => {
                let (stats, regressed_now) =
                    self.worst_stats(backends, &narrow, percentiles, onset_at)?;
                Some((narrow, stats, regressed_now))
            }
            _ => Some((scope, stats, regressed_now)),
        }
    }

    /// The runs of the worst backend in `scope` since a baseline before the onset, and the
    /// incident's onset refined over the runs of all its backends.
    async fn runs_and_onset(
        &self,
        incident: &Incident,
        backends: &[String],
        scope: &Scope,
        stats: &ScopeStats,
    ) -> Result<(Vec<CellRun>, Option<Onset>)> {
        let from = incident.onset().map_or(self.window.from.timestamp(), |o| {
            o.earliest.timestamp().min(self.window.from.timestamp())
        }) - i64::from(self.settings.baseline_days) * DAY;
        let all = self.runs_of_many(backends, scope, from).await?;
        let runs: Vec<CellRun> = all
            .iter()
            .filter(|r| *r.backend == *stats.backend)
            .cloned()
            .collect();
        let onset = self.refined_onset(incident, backends, &all);
        let since = previous_recovery(incident);
        let at_onset = onset_variants(&runs, since, onset.as_ref(), stats.check.allowed);
        let onset = self
            .with_payloads(
                onset,
                &at_onset,
                (&incident.snapshot.report.release, stats.check.allowed),
            )
            .await?;
        Ok((runs, onset))
    }

    /// Whether the incident recovered over `runs` (by a change for the better, `clear_after`
    /// clean cycles, or its claimed fix verified), and the verification of that fix.
    fn judge_recovery(
        &self,
        incident: &Incident,
        runs: &[CellRun],
        onset: Option<&Onset>,
        stats: &ScopeStats,
        clean_streak: u32,
    ) -> (Verdict, Option<Verification>) {
        let verdict = match self.recovery(runs, onset, stats) {
            Some(at) => Verdict::Recovered { at },
            None if clean_streak >= self.settings.clear_after => Verdict::Recovered {
                at: back_since(runs, stats.check.allowed).unwrap_or(self.window.from.timestamp()),
            },
            None => Verdict::Ongoing,
        };
        let verification = incident
            .fix
            .as_ref()
            .map(|c| self.verify(c, runs, stats, onset));
        let verdict = with_verdict_of_fix(verdict, incident.fix.as_ref(), verification.as_ref());
        (verdict, verification)
    }

    /// An incident whose scope's runs go on (its control backend reports them) while the last
    /// `recovery_min_runs` or more of them no longer report its backends: its last report, open, saying since
    /// when there is no data. None when the runs themselves stopped (a data gap: stale).
    async fn vanished(
        &self,
        incident: &Incident,
        backends: &[String],
        scope: &Scope,
        prior_streak: u32,
    ) -> Result<Option<Followed>> {
        let from = self.window.from.timestamp() - i64::from(self.settings.baseline_days) * DAY;
        let mine = self.runs_of_many(backends, scope, from).await?;
        let Some(last) = mine.iter().map(|r| r.started).max() else {
            return Ok(None);
        };

        let controls: Vec<String> = backends
            .iter()
            .filter_map(|b| {
                crate::domain::attribute::components::control_for(&self.attribute.controls, b)
            })
            .filter(|c| !backends.contains(c))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();

        // runs of the jobs that reported the backends before: a job that never did says nothing
        let jobs: std::collections::BTreeSet<&str> = mine.iter().map(|r| &*r.job).collect();
        let since: Vec<CellRun> = self.runs_of_many(&controls, scope, last + 1).await?;
        let runs: std::collections::BTreeSet<(&str, &str)> = since
            .iter()
            .filter(|r| jobs.contains(&*r.job))
            .map(|r| (&*r.job, &*r.build_id))
            .collect();

        if runs.len() < self.settings.recovery_min_runs {
            return Ok(None);
        }

        let mut r = incident.snapshot.report.clone();
        r.no_data_runs = runs.len();
        r.no_data_since = chrono::DateTime::from_timestamp(last, 0);
        r.status = Status::Ongoing;
        crate::words::regression::said(&mut r);
        Ok(Some(Followed {
            verdict: Verdict::Ongoing,
            report: Some(r),
            clean_streak: prior_streak,
        }))
    }

    /// The incident's scope without the parts its own runs show spared, now and `since` its
    /// onset (see [`super::scoped::Judging::without_parts_spared_since`]), joined again with
    /// this cycle's detections: a first detection wider than the numbers narrows as runs
    /// arrive, and a scope that grows keeps what is detected now. None when the scope's numbers do not hold.
    fn narrowed(
        &self,
        scope: Scope,
        stats: ScopeStats,
        detections: &[&Described],
        since: Span,
    ) -> Option<Scope> {
        let fdr = self.settings.false_discovery_rate;
        let holds =
            |s: &ScopeStats| s.enough(self.settings) && s.check.exceeds && s.check.p_value <= fdr;
        if !holds(&stats) {
            return None;
        }
        let backend = stats.backend.clone();
        let (narrow, _) =
            self.judging
                .without_parts_spared_since(&backend, (scope, stats), holds, since);
        let variants = &self.index.data.variants;
        Some(
            detections
                .iter()
                .fold(narrow, |a, d| a.joined_over(&d.report.scope, variants))
                .simplified(variants),
        )
    }

    /// The incident's onset; while it is young, refined as runs arrive: the earliest of its
    /// backends' (the problem began when the first of them turned worse), after any earlier
    /// episode.
    fn refined_onset(
        &self,
        incident: &Incident,
        backends: &[String],
        all: &[CellRun],
    ) -> Option<Onset> {
        let onset_now = incident.onset();
        if self.now - incident.opened_at > REFINE_ONSET_SECS {
            return onset_now;
        }
        let since = incident.opened_at
            - i64::from(self.settings.window_days + self.settings.baseline_days) * DAY;
        let since = since.max(previous_recovery(incident));
        backends
            .iter()
            .filter_map(|b| {
                let recent: Vec<CellRun> = all
                    .iter()
                    .filter(|r| *r.backend == **b && r.started >= since)
                    .cloned()
                    .collect();
                onset_of(&recent)
            })
            .min_by_key(|o| o.at)
            .or(onset_now)
    }
}

/// When the incident's previous episode recovered (`i64::MIN` in its first episode): the runs
/// before it belong to that episode.
fn previous_recovery(incident: &Incident) -> i64 {
    incident
        .episodes
        .iter()
        .rev()
        .nth(1)
        .and_then(|e| e.recovered_at)
        .map_or(i64::MIN, |t| t.timestamp())
}

/// The runs an incident's payload window is read from: those started `since` (the previous
/// episode's recovery: a recurrence is read on its own runs, not on the episode before), of the
/// variants already worse than `allowed` within a day of its onset. A part of the scope that
/// turned worse days later (a growing scope) is a second change on the payload order; read
/// together, the two blur the first one, which is the incident's onset. All the runs since
/// when no variant qualifies.
fn onset_variants(
    runs: &[CellRun],
    since: i64,
    onset: Option<&Onset>,
    allowed: f64,
) -> Vec<CellRun> {
    let own = runs.iter().filter(|r| r.started >= since);
    let Some(o) = onset else {
        return own.cloned().collect();
    };
    let (from, until) = (
        o.earliest.timestamp(),
        o.latest.timestamp() + ONSET_VARIANT_SECS,
    );
    let early: std::collections::HashSet<i64> = own
        .clone()
        .filter(|r| r.started >= from && r.started <= until && r.seconds as f64 > allowed)
        .map(|r| r.variant_id)
        .collect();
    own.filter(|r| early.is_empty() || early.contains(&r.variant_id))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::evaluate::changepoint::{Tested, payload_change};

    /// A growing scope: variant 1 turns worse with payload 20, variant 2 (which runs three times
    /// as often) with payload 38, three days later; payloads every 4 hours.
    fn growing() -> Vec<CellRun> {
        let mut runs = Vec::new();
        for n in 0..60i64 {
            for (variant, from, times) in [(1, 20, 2), (2, 38, 6)] {
                for k in 0..times {
                    let bad = n >= from && (n + k) % 7 != 0;
                    let seconds = if bad {
                        15 + (n * 3 + k * 5) % 30
                    } else {
                        (n + k + variant) % 3
                    };
                    runs.push(CellRun {
                        backend: "image-registry-new-connections".into(),
                        variant_id: variant,
                        started: n * 14_400 + 3_600 * (k + 1),
                        seconds,
                        job: "j".into(),
                        build_id: format!("{n}-{variant}-{k}").into(),
                        url: "u".into(),
                        payload: format!("p{n:02}").into(),
                        payload_at: Some(n * 14_400),
                    });
                }
            }
        }
        runs
    }

    fn window(runs: &[CellRun]) -> (String, String) {
        let tested: Vec<Tested<'_>> = runs
            .iter()
            .map(|r| Tested {
                payload: &r.payload,
                built: r.payload_at.unwrap(),
                started: r.started,
                seconds: r.seconds,
            })
            .collect();
        let w = payload_change(&tested, 5.0, None).expect("a change");
        (w.last_good.map(|g| g.0).unwrap_or_default(), w.first_bad.0)
    }

    #[test]
    fn a_growing_scope_dates_its_payload_window_on_the_variants_worse_at_its_onset() {
        let runs = growing();
        let onset =
            Onset::from_secs(20 * 14_400 + 3_600, 19 * 14_400, 20 * 14_400 + 7_200).unwrap();
        let first = onset_variants(&runs, i64::MIN, Some(&onset), 5.0);
        assert!(
            first.iter().all(|r| r.variant_id == 1),
            "only the part worse at the onset"
        );
        let (good, bad) = window(&first);
        assert!(
            good.as_str() < "p20" && "p20" <= bad.as_str(),
            "{good}..{bad} holds p20"
        );
        assert!(
            bad.as_str() <= "p22",
            "at most three payloads: {good}..{bad}"
        );
        assert_eq!(
            onset_variants(&runs, i64::MIN, None, 5.0).len(),
            runs.len(),
            "no onset: every run"
        );
        let (good, bad) = window(&runs);
        assert!(
            !(good.as_str() < "p20" && "p20" <= bad.as_str()),
            "read together: {good}..{bad}"
        );
    }
}
