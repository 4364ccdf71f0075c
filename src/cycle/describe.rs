//! Turning reported groups into regressions with an attribution: the scope that explains them,
//! what they do not depend on, the control backend, the components, and the interval evidence
//! of sample runs. The pure reasoning is in `attribute`; this file fetches what it needs.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::Result;
use chrono::DateTime;

use super::{Attribution, PercentilePair, RegressionReport, SampleJob, Window};
use crate::attribute::components::{ComponentTable, control_for};
use crate::attribute::describe::{self as words, Facts, Owners};
use crate::attribute::evidence::{self, ConditionEvidence, RunIntervals};
use crate::attribute::scope::{self, CellEvidence, ScopeFinding, ValueEvidence, Verdict};
use crate::config::{AttributeSettings, EvaluateSettings, FileAgainst};
use crate::evaluate::{Check, Evaluation, GroupResult, GroupStatus};
use crate::model::{
    ControlEvidence, Dimension, GroupKey, Percentile, SampleKind, Scope, Status, fingerprint,
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

    pub fn group(&self, key: &GroupKey) -> Option<&'a GroupResult> {
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

/// What a cycle's descriptions share.
pub(super) struct Context<'a> {
    pub store: &'a Store,
    pub settings: &'a EvaluateSettings,
    pub attribute: &'a AttributeSettings,
    pub components: &'a ComponentTable,
    pub index: &'a Index<'a>,
    pub window: Window,
    pub baseline: Window,
}

/// The groups of one backend family with one scope: one regression.
pub(super) struct Cluster<'a> {
    pub family: &'a str,
    pub scope: &'a Scope,
    pub finding: &'a ScopeFinding,
    pub groups: &'a [&'a GroupResult],
}

/// A sample run as the store lists it.
type SampleRow = (String, String, String, i64, i64);

/// What the runs themselves say: sample jobs, and the interval evidence of the disrupted ones
/// against healthy ones.
struct RunEvidence {
    sample_jobs: Vec<SampleJob>,
    conditions: Vec<ConditionEvidence>,
    /// Disrupted runs read, and how many of them also lost CI network liveness.
    liveness_trouble: (usize, usize),
}

/// The group that makes a cluster's case (the most significant), its leading check, and the
/// cluster's backends.
fn lead_of<'a>(cluster: &Cluster<'a>) -> (&'a GroupResult, Option<Check>, Vec<String>) {
    let p = |g: &GroupResult| g.leading_check().map_or(1.0, |c| c.p_value);
    let lead = *cluster
        .groups
        .iter()
        .min_by(|a, b| p(a).total_cmp(&p(b)).then(a.key.backend.cmp(&b.key.backend)))
        .expect("a cluster has a group");
    let mut backends: Vec<String> = cluster.groups.iter().map(|g| g.key.backend.clone()).collect();
    backends.sort();
    backends.dedup();
    (lead, lead.leading_check().cloned(), backends)
}

fn status_of(cluster: &Cluster<'_>) -> Status {
    if cluster.groups.iter().all(|g| g.status == GroupStatus::Resolved) {
        Status::Resolved
    } else if cluster.groups.iter().any(|g| g.is_new) {
        Status::New
    } else {
        Status::Ongoing
    }
}

/// Everything one regression says.
pub(super) async fn describe(cx: &Context<'_>, cluster: &Cluster<'_>) -> Result<RegressionReport> {
    let (lead, check, backends) = lead_of(cluster);
    let release = cluster.scope.single(Dimension::Release).unwrap_or_default().to_string();
    let platform = cluster
        .finding
        .constraints
        .get(&Dimension::Platform)
        .filter(|v| v.len() == 1)
        .and_then(|v| v.iter().next().cloned());
    let status = status_of(cluster);
    let percentile = check.as_ref().map_or(Percentile::P50, |c| c.percentile);
    let pi = Percentile::ALL.iter().position(|x| *x == percentile).unwrap_or(0);
    let owners = owners(cx, &lead.key.backend, platform.as_deref());
    let (independence, thin) = independence(cx, lead, cluster.finding);
    let control = control(cx, lead, percentile, pi);
    let runs = run_evidence(cx, lead, &backends).await?;
    let scope_words = describe_scope(cluster.finding, platform.as_deref(), &release);
    let source = check.as_ref().map(|c| c.threshold.source.describe()).unwrap_or_default();
    let facts = Facts {
        family: cluster.family,
        scope_words: &scope_words,
        regressed: status.is_active(),
        percentile,
        observed: check.as_ref().map_or(0.0, |c| c.observed),
        threshold: check.as_ref().map_or(0.0, |c| c.threshold.seconds),
        allowed: check.as_ref().map_or(0.0, |c| c.allowed),
        source: &source,
        p_value: check.as_ref().map_or(1.0, |c| c.p_value),
        q_value: check.as_ref().map_or(1.0, |c| c.q_value),
        runs: lead.runs,
        reference: lead.baseline[pi].map(|b| (b, lead.baseline_runs)),
        independence: &independence,
        thin: thin.len(),
        separates: cluster.finding.separates,
        backends: &backends,
        control: control.as_ref(),
        conditions: &runs.conditions,
        liveness_trouble: runs.liveness_trouble,
        owners: &owners,
    };
    let attribution = Attribution {
        component: owners.component.clone(),
        platform,
        platform_component: owners.platform_component.clone(),
        owners: std::iter::once(owners.backend_component.clone())
            .chain(owners.platform_component.clone())
            .collect(),
        file_against: owners.file_against,
        scope: scope_words.clone(),
        summary: words::summary(&facts),
        independence: independence.clone(),
        thin_evidence: thin.clone(),
        control: control.clone(),
        conditions: runs.conditions.clone(),
        confidence: words::confidence(&facts),
        evidence: words::evidence(&facts),
    };
    Ok(report(cluster, lead, &facts, attribution, runs.sample_jobs, status, release))
}

/// The report of a described cluster.
fn report(
    cluster: &Cluster<'_>,
    lead: &GroupResult,
    facts: &Facts<'_>,
    attribution: Attribution,
    sample_jobs: Vec<SampleJob>,
    status: Status,
    release: String,
) -> RegressionReport {
    let pi = Percentile::ALL.iter().position(|x| *x == facts.percentile).unwrap_or(0);
    let backends = facts.backends.to_vec();
    RegressionReport {
        fingerprint: fingerprint(cluster.family, &release, &cluster.scope.joined()),
        backend: (backends.len() == 1).then(|| backends[0].clone()),
        family: cluster.family.to_string(),
        component: attribution.component.clone(),
        release,
        scope: cluster.scope.clone(),
        not_specific_to: cluster
            .finding
            .spans
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(d, _)| d.as_str().to_string())
            .collect(),
        percentile: facts.percentile,
        observed_seconds: round(facts.observed),
        threshold_seconds: round(facts.threshold),
        threshold_source: facts.source.to_string(),
        allowed_seconds: round(facts.allowed),
        baseline_seconds: lead.baseline[pi].map(round),
        job_runs: lead.runs,
        baseline_runs: lead.baseline_runs,
        p_value: facts.p_value,
        q_value: facts.q_value,
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
        attribution,
        sample_jobs,
        status,
        since: lead.state.since.and_then(|s| DateTime::from_timestamp(s, 0)),
        groups: cluster.groups.iter().map(|g| g.key.label()).collect(),
        weekly: Vec::new(),
        backends,
    }
}

/// The backend's component and, for a platform-specific regression, the platform's.
fn owners(cx: &Context<'_>, backend: &str, platform: Option<&str>) -> Owners {
    let backend_component = cx.components.component(backend);
    let platform_component = platform.and_then(|p| cx.components.platform_component(p)).map(str::to_string);
    let component = match (cx.attribute.file_against, &platform_component) {
        (FileAgainst::Platform, Some(pc)) => pc.clone(),
        _ => backend_component.clone(),
    };
    Owners { component, backend_component, platform_component, file_against: cx.attribute.file_against }
}

/// What it does not depend on, value by value from the finer groups, and the values whose own
/// runs were too few to tell.
fn independence(cx: &Context<'_>, lead: &GroupResult, finding: &ScopeFinding) -> (Vec<String>, Vec<String>) {
    let mut independence = Vec::new();
    let mut thin = Vec::new();
    for d in [Dimension::Platform, Dimension::Network, Dimension::UpgradeType] {
        let Some(values) = finding.spans.get(&d) else { continue };
        let mut evidence = BTreeMap::new();
        for v in values {
            let mut key = lead.key.clone();
            key.fixed.insert(d, v.clone());
            let e = match cx.index.group(&key) {
                Some(g) if g.significant => ValueEvidence::Regressed,
                Some(g) if g.runs >= cx.settings.min_job_runs => ValueEvidence::Healthy,
                _ => ValueEvidence::Thin,
            };
            if e == ValueEvidence::Thin {
                thin.push(format!("{d}={v}"));
            }
            evidence.insert(v.clone(), e);
        }
        independence.extend(scope::describe_independence(d, &evidence));
    }
    (independence, thin)
}

/// The control backend on the same cells.
fn control(
    cx: &Context<'_>,
    lead: &GroupResult,
    percentile: Percentile,
    pi: usize,
) -> Option<ControlEvidence> {
    let name = control_for(&cx.attribute.controls, &lead.key.backend)?;
    let mut key = lead.key.clone();
    key.backend.clone_from(&name);
    cx.index.group(&key).map(|g| ControlEvidence {
        backend: name,
        percentile,
        now: g.current[pi].map(round),
        baseline: g.baseline[pi].map(round),
        runs: g.runs,
        healthy: !g.significant && g.status != GroupStatus::Regressed,
    })
}

/// Sample jobs of the lead group, and the interval evidence of its disrupted runs against
/// healthy runs of the same cells in the baseline window.
async fn run_evidence(cx: &Context<'_>, lead: &GroupResult, backends: &[String]) -> Result<RunEvidence> {
    let (settings, data) = (cx.settings, cx.index.data);
    let mut variant_ids: Vec<i64> =
        lead.cells.iter().map(|&c| data.variant_ids[data.cells[c].variant]).collect();
    variant_ids.sort_unstable();
    variant_ids.dedup();
    let rows = cx.store.group_samples(&lead.key.backend, &variant_ids, cx.window.secs()).await?;
    let sample = |r: &SampleRow, kind| SampleJob {
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
    let disrupted: Vec<&SampleRow> =
        rows.iter().filter(|r| r.3 > 0).take(cx.attribute.evidence_runs).collect();
    let healthy_rows = cx.store.group_samples(&lead.key.backend, &variant_ids, cx.baseline.secs()).await?;
    let healthy_runs: Vec<&SampleRow> = healthy_rows.iter().rev().take(cx.attribute.evidence_runs).collect();
    let family: BTreeSet<&str> = backends.iter().map(String::as_str).collect();
    let mut regressed = Vec::new();
    let mut liveness = BTreeSet::new();
    for r in &disrupted {
        if let Some(record) = cx.store.run(&r.0, &r.1).await? {
            if record.samples.iter().any(|s| s.backend.contains("-network-liveness") && s.seconds > 0) {
                liveness.insert(r.1.clone());
            }
            let outages =
                record.outages.into_iter().filter(|o| family.contains(o.backend.as_str())).collect();
            regressed.push(RunIntervals { outages, conditions: record.conditions });
        }
    }
    let mut healthy = Vec::new();
    for r in &healthy_runs {
        if let Some(record) = cx.store.run(&r.0, &r.1).await? {
            healthy.push(RunIntervals { outages: Vec::new(), conditions: record.conditions });
        }
    }
    for s in &mut sample_jobs {
        s.ci_infrastructure_trouble = liveness.contains(&s.build_id);
    }
    let conditions =
        evidence::correlate(&regressed, &healthy).into_iter().filter(|e| e.score > 0.0).take(3).collect();
    Ok(RunEvidence { sample_jobs, conditions, liveness_trouble: (liveness.len(), disrupted.len()) })
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
