//! Turning reported groups into regressions with an attribution: the scope that explains them,
//! what they do not depend on, the control backend, the components, and the interval evidence
//! of sample runs. The pure reasoning is in `attribute`; this file fetches what it needs.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::Result;
use chrono::DateTime;

use super::{Attribution, PercentilePair, RegressionReport, SampleJob, Window};
use crate::attribute::components::{ComponentTable, control_for};
use crate::attribute::evidence::{self, ConditionEvidence, RunIntervals};
use crate::attribute::scope::{self, CellEvidence, ScopeFinding, ValueEvidence, Verdict};
use crate::config::{AttributeSettings, EvaluateSettings, FileAgainst};
use crate::evaluate::{Evaluation, GroupResult, GroupStatus};
use crate::model::secs;
use crate::model::{
    Confidence, ControlEvidence, Dimension, GroupKey, Percentile, SampleKind, Scope, Status, fingerprint,
};
use crate::store::Store;
use crate::store::evaluations::WindowData;

/// The context dimensions every group of one cluster shares: never merged over.
const CONTEXT: [Dimension; 3] = [Dimension::Release, Dimension::Architecture, Dimension::Topology];

/// Lookups over one cycle's groups.
pub(super) struct Index<'a> {
    pub evaluation: &'a Evaluation,
    pub data: &'a WindowData,
    by_key: HashMap<&'a GroupKey, usize>,
    /// Groups containing each cell.
    groups_of_cell: Vec<Vec<usize>>,
}

impl<'a> Index<'a> {
    pub fn new(evaluation: &'a Evaluation, data: &'a WindowData) -> Index<'a> {
        let by_key = evaluation.groups.iter().enumerate().map(|(i, g)| (&g.key, i)).collect();
        let mut groups_of_cell = vec![Vec::new(); data.cells.len()];
        for (gi, g) in evaluation.groups.iter().enumerate() {
            for &c in &g.cells {
                groups_of_cell[c].push(gi);
            }
        }
        Index { evaluation, data, by_key, groups_of_cell }
    }

    fn group(&self, key: &GroupKey) -> Option<&'a GroupResult> {
        self.by_key.get(key).map(|&i| &self.evaluation.groups[i])
    }

    fn enough(&self, g: &GroupResult, settings: &EvaluateSettings) -> bool {
        g.runs >= settings.min_job_runs
    }

    /// Whether a cell is healthy on evidence of its own: its cell, or a platform-keeping group
    /// around it, had enough runs and did not regress — and holds none of `regressed` cells.
    fn healthy(&self, cell: usize, regressed: &BTreeSet<usize>, settings: &EvaluateSettings) -> bool {
        self.groups_of_cell[cell].iter().map(|&gi| &self.evaluation.groups[gi]).any(|g| {
            g.level <= 3
                && self.enough(g, settings)
                && !g.significant
                && g.cells.iter().all(|c| !regressed.contains(c))
        })
    }
}

/// The found scope of one reported group: its cells' verdicts, then the smallest description.
pub(super) fn scope_for(
    index: &Index<'_>,
    lead: &GroupResult,
    other_regressed: &BTreeSet<usize>,
    settings: &EvaluateSettings,
) -> (ScopeFinding, BTreeMap<Dimension, String>) {
    let context: BTreeMap<Dimension, String> =
        CONTEXT.iter().filter_map(|d| lead.key.get(*d).map(|v| (*d, v.to_string()))).collect();
    let mine: BTreeSet<usize> = lead.cells.iter().copied().collect();
    let mut cells = Vec::new();
    for g in index.evaluation.groups.iter().filter(|g| g.level == 0 && g.key.backend == lead.key.backend) {
        let Some(&c) = g.cells.first() else { continue };
        let dims = &index.data.variants[index.data.cells[c].variant];
        if context.iter().any(|(d, v)| dims.get(*d) != v) || index.data.cells[c].current.is_empty() {
            continue;
        }
        let verdict = if mine.contains(&c) {
            // A finer group inside this one that stayed healthy on its own says otherwise.
            let healthy_inside =
                index.groups_of_cell[c].iter().map(|&gi| &index.evaluation.groups[gi]).any(|f| {
                    f.level <= 2
                        && f.level > 0
                        && index.enough(f, settings)
                        && !f.significant
                        && f.cells.iter().all(|x| mine.contains(x))
                });
            if healthy_inside { Verdict::Healthy } else { Verdict::Regressed }
        } else if other_regressed.contains(&c) {
            Verdict::Unknown
        } else if index.healthy(c, &mine, settings) {
            Verdict::Healthy
        } else {
            Verdict::Unknown
        };
        cells.push(CellEvidence { dims: dims.clone(), verdict });
    }
    let finding = scope::smallest_scope(&cells, &scope::SEARCHABLE).unwrap_or(ScopeFinding {
        constraints: lead
            .key
            .fixed
            .iter()
            .filter(|(d, _)| !CONTEXT.contains(d))
            .map(|(d, v)| (*d, [v.clone()].into()))
            .collect(),
        spans: BTreeMap::new(),
        separates: false,
    });
    (finding, context)
}

/// The scope: the context dimensions and the finding's constraints.
pub(super) fn scope_key(context: &BTreeMap<Dimension, String>, finding: &ScopeFinding) -> Scope {
    let mut out: Scope = context.iter().map(|(d, v)| (*d, [v.clone()].into())).collect();
    for (d, values) in &finding.constraints {
        out.set(*d, values.iter().cloned());
    }
    out
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Everything one regression says.
#[allow(clippy::too_many_arguments)]
pub(super) async fn describe(
    store: &Store,
    settings: &EvaluateSettings,
    attribute: &AttributeSettings,
    components: &ComponentTable,
    index: &Index<'_>,
    window: Window,
    baseline_window: Window,
    family: &str,
    scope_map: &Scope,
    finding: &ScopeFinding,
    groups: &[&GroupResult],
) -> Result<RegressionReport> {
    let p = |g: &GroupResult| g.leading_check().map_or(1.0, |c| c.p_value);
    let lead = *groups
        .iter()
        .min_by(|a, b| p(a).total_cmp(&p(b)).then(a.key.backend.cmp(&b.key.backend)))
        .expect("a cluster has a group");
    let check = lead.leading_check().cloned();
    let mut backends: Vec<String> = groups.iter().map(|g| g.key.backend.clone()).collect();
    backends.sort();
    backends.dedup();
    let release = scope_map.single(Dimension::Release).unwrap_or_default().to_string();
    let platform = finding
        .constraints
        .get(&Dimension::Platform)
        .filter(|v| v.len() == 1)
        .and_then(|v| v.iter().next().cloned());
    let status = if groups.iter().all(|g| g.status == GroupStatus::Resolved) {
        Status::Resolved
    } else if groups.iter().any(|g| g.is_new) {
        Status::New
    } else {
        Status::Ongoing
    };
    let (percentile, observed, threshold, allowed, source, p_value, q_value) = match &check {
        Some(c) => (
            c.percentile,
            c.observed,
            c.threshold.seconds,
            c.allowed,
            c.threshold.source.describe(),
            c.p_value,
            c.q_value,
        ),
        None => (Percentile::P50, 0.0, 0.0, 0.0, String::new(), 1.0, 1.0),
    };
    let pi = Percentile::ALL.iter().position(|x| *x == percentile).unwrap_or(0);

    // Owners.
    let backend_component = components.component(&lead.key.backend);
    let platform_component =
        platform.as_deref().and_then(|p| components.platform_component(p)).map(str::to_string);
    let component = match (attribute.file_against, &platform_component) {
        (FileAgainst::Platform, Some(pc)) => pc.clone(),
        _ => backend_component.clone(),
    };
    let mut owners = vec![backend_component.clone()];
    owners.extend(platform_component.clone());

    // What it does not depend on, value by value.
    let mut independence = Vec::new();
    let mut thin = Vec::new();
    for d in [Dimension::Platform, Dimension::Network, Dimension::UpgradeType] {
        let Some(values) = finding.spans.get(&d) else { continue };
        let mut evidence = BTreeMap::new();
        for v in values {
            let mut key = lead.key.clone();
            key.fixed.insert(d, v.clone());
            let e = match index.group(&key) {
                Some(g) if g.significant => ValueEvidence::Regressed,
                Some(g) if g.runs >= settings.min_job_runs => ValueEvidence::Healthy,
                _ => ValueEvidence::Thin,
            };
            if e == ValueEvidence::Thin {
                thin.push(format!("{d}={v}"));
            }
            evidence.insert(v.clone(), e);
        }
        independence.extend(scope::describe_independence(d, &evidence));
    }

    // The control backend on the same cells.
    let control = control_for(&attribute.controls, &lead.key.backend).and_then(|name| {
        let mut key = lead.key.clone();
        key.backend.clone_from(&name);
        index.group(&key).map(|g| ControlEvidence {
            backend: name,
            percentile,
            now: g.current[pi].map(round),
            baseline: g.baseline[pi].map(round),
            runs: g.runs,
            healthy: !g.significant && g.status != GroupStatus::Regressed,
        })
    });

    // Sample jobs and the runs read for interval evidence.
    let mut variant_ids: Vec<i64> =
        lead.cells.iter().map(|&c| index.data.variant_ids[index.data.cells[c].variant]).collect();
    variant_ids.sort_unstable();
    variant_ids.dedup();
    let rows = store.group_samples(&lead.key.backend, &variant_ids, window_secs(window)).await?;
    let sample = |r: &(String, String, String, i64, i64), kind| SampleJob {
        url: r.2.clone(),
        job: r.0.clone(),
        build_id: r.1.clone(),
        seconds: r.3,
        kind,
        ci_infrastructure_trouble: false,
    };
    let mut sample_jobs: Vec<SampleJob> = rows
        .iter()
        .filter(|r| r.3 > 0)
        .take(settings.sample_worst)
        .map(|r| sample(r, SampleKind::Worst))
        .collect();
    let start = (rows.len() / 2).saturating_sub(settings.sample_typical / 2);
    for r in rows.iter().skip(start).take(settings.sample_typical) {
        if !sample_jobs.iter().any(|s| s.build_id == r.1) {
            sample_jobs.push(sample(r, SampleKind::Typical));
        }
    }
    let disrupted: Vec<&(String, String, String, i64, i64)> =
        rows.iter().filter(|r| r.3 > 0).take(attribute.evidence_runs).collect();
    let healthy_rows =
        store.group_samples(&lead.key.backend, &variant_ids, window_secs(baseline_window)).await?;
    let healthy_runs: Vec<&(String, String, String, i64, i64)> =
        healthy_rows.iter().rev().take(attribute.evidence_runs).collect();
    let family_backends: BTreeSet<&str> = backends.iter().map(String::as_str).collect();
    let mut regressed_intervals = Vec::new();
    let mut liveness_trouble = BTreeSet::new();
    for r in &disrupted {
        if let Some(record) = store.run(&r.0, &r.1).await? {
            if record.samples.iter().any(|s| s.backend.contains("-network-liveness") && s.seconds > 0) {
                liveness_trouble.insert(r.1.clone());
            }
            regressed_intervals.push(RunIntervals {
                outages: record
                    .outages
                    .into_iter()
                    .filter(|o| family_backends.contains(o.backend.as_str()))
                    .collect(),
                conditions: record.conditions,
            });
        }
    }
    let mut healthy_intervals = Vec::new();
    for r in &healthy_runs {
        if let Some(record) = store.run(&r.0, &r.1).await? {
            healthy_intervals.push(RunIntervals { outages: Vec::new(), conditions: record.conditions });
        }
    }
    for s in &mut sample_jobs {
        s.ci_infrastructure_trouble = liveness_trouble.contains(&s.build_id);
    }
    let conditions: Vec<ConditionEvidence> = evidence::correlate(&regressed_intervals, &healthy_intervals)
        .into_iter()
        .filter(|e| e.score > 0.0)
        .take(3)
        .collect();

    // Words.
    let scope_words = describe_scope(finding, platform.as_deref(), &release);
    let verb = if status.is_active() { "regressed" } else { "recovered" };
    let mut summary = format!(
        "{family} disruption {verb} on {scope_words}: {percentile} {} against {} over {} runs.",
        secs(observed),
        secs(threshold),
        lead.runs
    );
    if !independence.is_empty() {
        summary.push_str(&format!(" It is {}.", independence.join("; ")));
    }
    if let Some(c) = &control {
        if c.healthy {
            summary.push_str(&format!(
                " The control {} stayed at {} {} on the same kind of runs, so the clusters as a whole were reachable.",
                c.backend,
                percentile,
                c.now.map_or("-".to_string(), secs)
            ));
        } else {
            summary.push_str(&format!(
                " The control {} regressed as well: this looks wider than {family}.",
                c.backend
            ));
        }
    }
    if let Some(top) = conditions.first() {
        summary.push_str(&format!(
            " In {} of {} sample runs the outage overlapped {} {}={}{}, covering {:.0}% of the outage seconds.",
            top.runs_with,
            top.runs,
            top.operator,
            top.condition,
            top.status,
            if top.reason.is_empty() { String::new() } else { format!(" ({})", top.reason) },
            top.covered_share * 100.0
        ));
    }
    summary.push_str(&format!(" File against {component}"));
    match (&platform_component, attribute.file_against) {
        (Some(pc), FileAgainst::Backend) => {
            summary.push_str(&format!("; {pc} is named as the platform's owner."))
        }
        (Some(_), FileAgainst::Platform) => {
            summary.push_str(&format!("; {backend_component} is named as the backend's owner."))
        }
        (None, _) => summary.push('.'),
    }

    let mut evidence = vec![
        format!(
            "{percentile} is {} against a threshold of {} from the {source}; a regression needs more than {}",
            secs(observed),
            secs(threshold),
            secs(allowed)
        ),
        format!(
            "one-sided test p = {p_value:.2e}, false-discovery-adjusted q = {q_value:.2e}, over {} runs",
            lead.runs
        ),
    ];
    if let Some(b) = lead.baseline[pi] {
        evidence.push(format!(
            "{percentile} in the baseline window was {} over {} runs",
            secs(b),
            lead.baseline_runs
        ));
    }
    evidence.extend(independence.iter().cloned());
    if !finding.separates {
        evidence.push("no description in dimension values separates it from every healthy cell: the scope is as narrow as the data allow".into());
    }
    if backends.len() > 1 {
        evidence.push(format!("new and reused connections regressed together: {}", backends.join(", ")));
    }
    if let Some(c) = &control {
        evidence.push(format!(
            "control {}: {percentile} {} (baseline {}) over {} runs — {}",
            c.backend,
            c.now.map_or("-".into(), secs),
            c.baseline.map_or("-".into(), secs),
            c.runs,
            if c.healthy { "healthy" } else { "regressed too" }
        ));
    }
    evidence.extend(conditions.iter().map(ConditionEvidence::quote));
    if !liveness_trouble.is_empty() {
        evidence.push(format!(
            "{} of {} sample runs also lost CI network liveness: CI-infrastructure trouble in those runs",
            liveness_trouble.len(),
            disrupted.len()
        ));
    }
    if let Some(pc) = &platform_component {
        evidence.push(format!("platform-specific: owners {backend_component} (backend) and {pc} (platform)"));
    }
    let confidence = if p_value < 1e-6
        && finding.separates
        && thin.is_empty()
        && (conditions.first().is_some_and(|c| c.covered_share >= 0.5)
            || control.as_ref().is_some_and(|c| c.healthy))
    {
        Confidence::High
    } else if p_value < 1e-3 && finding.separates {
        Confidence::Medium
    } else {
        Confidence::Low
    };

    let not_specific_to: Vec<String> =
        finding.spans.iter().filter(|(_, v)| v.len() > 1).map(|(d, _)| d.as_str().to_string()).collect();
    Ok(RegressionReport {
        fingerprint: fingerprint(family, &release, &scope_map.joined()),
        backend: (backends.len() == 1).then(|| backends[0].clone()),
        backends,
        family: family.to_string(),
        component: component.clone(),
        release,
        scope: scope_map.clone(),
        not_specific_to,
        percentile,
        observed_seconds: round(observed),
        threshold_seconds: round(threshold),
        threshold_source: source,
        allowed_seconds: round(allowed),
        baseline_seconds: lead.baseline[pi].map(round),
        job_runs: lead.runs,
        baseline_runs: lead.baseline_runs,
        p_value,
        q_value,
        percentiles: Percentile::ALL
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    *p,
                    PercentilePair { now: lead.current[i].map(round), baseline: lead.baseline[i].map(round) },
                )
            })
            .collect(),
        attribution: Attribution {
            component,
            platform,
            platform_component,
            owners,
            file_against: attribute.file_against,
            scope: scope_words,
            summary,
            independence,
            thin_evidence: thin,
            control,
            conditions,
            confidence,
            evidence,
        },
        sample_jobs,
        status,
        since: lead.state.since.and_then(|s| DateTime::from_timestamp(s, 0)),
        groups: groups.iter().map(|g| g.key.label()).collect(),
        weekly: Vec::new(),
    })
}

fn window_secs(w: Window) -> (i64, i64) {
    (w.from.timestamp(), w.to.timestamp())
}

/// "metal 4.14", "4.14 on every platform, network=ovn", …
fn describe_scope(finding: &ScopeFinding, platform: Option<&str>, release: &str) -> String {
    let mut words = match platform {
        Some(p) => format!("{p} {release}"),
        None if finding.constraints.contains_key(&Dimension::Platform) => release.to_string(),
        None => format!("{release}, every platform"),
    };
    for (d, values) in &finding.constraints {
        if *d == Dimension::Platform && platform.is_some() {
            continue;
        }
        words.push_str(&format!(", {d}={}", values.iter().cloned().collect::<Vec<_>>().join("|")));
    }
    words
}
