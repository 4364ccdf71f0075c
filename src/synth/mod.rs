//! Synthetic CI data: a deterministic generator of bucket trees in the real artifact formats.
//!
//! `sheriff demo`, the integration tests and the benchmarks all use it. Given a seed it writes
//! the same files every time, and returns the truth (every run's dimensions and per-backend
//! seconds) so a test can check what ingest and evaluation made of them. Disruption is mostly
//! zeros with a heavy tail, as in real CI; regressions can be planted on chosen cells.

mod artifacts;
mod rng;
mod timeline;
pub mod world;

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Duration, TimeZone, Utc};

pub use rng::Rng;

use crate::model::Dimensions;
use crate::model::job_name::dimensions_from_job_name;

/// A CI job and how often it runs.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub name: String,
    pub runs_per_day: f64,
    /// Stop after this many runs in all (a job that barely ran).
    pub max_runs: Option<usize>,
    /// The first day (0-based) the job runs.
    pub from_day: u32,
}

impl JobSpec {
    pub fn new(name: &str, runs_per_day: f64) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            runs_per_day,
            max_runs: None,
            from_day: 0,
        }
    }
}

/// A regression planted on matching runs from `from_day` on.
#[derive(Debug, Clone)]
pub struct Planted {
    /// Backends whose name starts with this (e.g. `image-registry-`).
    pub backend_prefix: String,
    /// Dimension values a run must have (`platform` → `metal`, …); empty matches every run.
    pub matches: Vec<(crate::model::Dimension, String)>,
    pub from_day: u32,
    /// The first day it no longer applies (the fix landed); None: to the end.
    pub until_day: Option<u32>,
    /// Share of matching runs that are hit.
    pub share: f64,
    /// Seconds of disruption of a hit run, uniform in this range.
    pub seconds: (i64, i64),
    /// The ClusterOperator condition that goes bad during the outage, if any:
    /// (operator, condition, status, reason, message).
    pub condition: Option<(String, String, String, String, String)>,
}

/// One run with an outlying value: `seconds` on `backend` in the `nth` run of `job`.
#[derive(Debug, Clone)]
pub struct Outlier {
    pub job: String,
    pub nth: usize,
    pub backend: String,
    pub seconds: i64,
}

/// A spell of CI-infrastructure trouble: runs starting in `[from, from + hours)` with these
/// dimension values (every run when empty) lose the CI's network-liveness probe and most
/// backends together.
#[derive(Debug, Clone)]
pub struct TroubleSpell {
    pub from: DateTime<Utc>,
    pub hours: i64,
    pub matches: Vec<(crate::model::Dimension, String)>,
}

/// Everything the generator is told.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub bucket: String,
    /// Midnight UTC of the first day.
    pub start: DateTime<Utc>,
    pub days: u32,
    pub jobs: Vec<JobSpec>,
    pub backends: Vec<String>,
    pub planted: Vec<Planted>,
    pub outliers: Vec<Outlier>,
    /// Unrelated intervals per interval file (pod lifecycle, e2e tests, …), for realistic size.
    pub noise_intervals: usize,
    /// Also write `e2e-timelines_*` files beside `e2e-events_*`, as the CI does.
    pub write_timelines: bool,
    /// Jobs still running at the end (no finished.json) — one per job when set.
    pub leave_last_run_running: bool,
    /// Share of all runs hit by CI-infrastructure trouble at random.
    pub ci_trouble_share: f64,
    /// Spells of CI-infrastructure trouble.
    pub trouble_spells: Vec<TroubleSpell>,
    /// Nightly payloads are built every so many hours (0: every run tests a payload of its own
    /// start). With a schedule, a planted regression ships in the first payload of its day.
    pub payload_every_hours: i64,
}

/// What was written for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruthRun {
    pub job: String,
    pub build_id: String,
    pub path: String,
    pub started_at: DateTime<Utc>,
    pub finished: bool,
    pub dimensions: Dimensions,
    /// backend → per-run seconds (sum of ceil over the phase files).
    pub seconds: BTreeMap<String, i64>,
    /// Whether a planted regression hit this run.
    pub regressed: bool,
    /// Whether CI-infrastructure trouble hit this run.
    pub ci_troubled: bool,
    /// The payload it tested.
    pub payload: String,
}

/// What the generator wrote.
#[derive(Debug, Clone, Default)]
pub struct Truth {
    pub runs: Vec<TruthRun>,
    /// Bytes of interval files written.
    pub interval_bytes: u64,
    pub files: u64,
}

impl Truth {
    pub fn finished_runs(&self) -> impl Iterator<Item = &TruthRun> {
        self.runs.iter().filter(|r| r.finished)
    }
}

/// The backends OpenShift upgrade jobs monitor (a representative set).
pub(crate) fn standard_backends() -> Vec<String> {
    let families = [
        "image-registry",
        "ingress-to-console",
        "ingress-to-oauth-server",
        "kube-api",
        "cache-kube-api",
        "openshift-api",
        "cache-openshift-api",
        "oauth-api",
        "cache-oauth-api",
        "service-load-balancer-with-pdb",
        "ci-cluster-network-liveness",
        "host-to-service",
    ];
    families
        .iter()
        .flat_map(|f| {
            [
                format!("{f}-new-connections"),
                format!("{f}-reused-connections"),
            ]
        })
        .collect()
}

/// Upgrade jobs across platforms, networks and upgrade types, around release 4.14.
pub(crate) fn standard_jobs() -> Vec<JobSpec> {
    let p = "periodic-ci-openshift-release-master";
    vec![
        JobSpec::new(&format!("{p}-ci-4.14-e2e-aws-ovn-upgrade"), 8.0),
        JobSpec::new(
            &format!("{p}-ci-4.14-upgrade-from-stable-4.13-e2e-aws-ovn-upgrade"),
            6.0,
        ),
        JobSpec::new(
            &format!("{p}-ci-4.14-upgrade-from-stable-4.13-e2e-aws-sdn-upgrade"),
            3.0,
        ),
        JobSpec::new(&format!("{p}-ci-4.14-e2e-gcp-ovn-upgrade"), 5.0),
        JobSpec::new(
            &format!("{p}-ci-4.14-upgrade-from-stable-4.13-e2e-gcp-ovn-upgrade"),
            3.0,
        ),
        JobSpec::new(&format!("{p}-ci-4.14-e2e-azure-ovn-upgrade"), 4.0),
        JobSpec::new(
            &format!("{p}-ci-4.14-upgrade-from-stable-4.13-e2e-azure-sdn-upgrade"),
            2.0,
        ),
        JobSpec::new(&format!("{p}-nightly-4.14-e2e-vsphere-ovn-upgrade"), 2.0),
        JobSpec::new(&format!("{p}-nightly-4.14-e2e-metal-ipi-ovn-upgrade"), 1.0),
        JobSpec::new(&format!("{p}-nightly-4.14-e2e-metal-ipi-sdn-upgrade"), 1.0),
        JobSpec::new(
            &format!("{p}-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-ovn-upgrade"),
            1.0,
        ),
        JobSpec::new(
            &format!("{p}-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade"),
            1.0,
        ),
        JobSpec::new(
            &format!("{p}-nightly-4.14-e2e-aws-ovn-upgrade-single-node"),
            1.0,
        ),
        JobSpec::new(&format!("{p}-ci-4.15-e2e-aws-ovn-upgrade"), 4.0),
        JobSpec::new(&format!("{p}-ci-4.13-e2e-aws-sdn-upgrade"), 2.0),
    ]
}

/// The case that started sheriff: image-registry on metal 4.14, both networks, micro and minor, in the
/// last week of the month, with the operator reporting no replicas.
pub fn metal_registry_regression(from_day: u32) -> Planted {
    use crate::model::Dimension;
    Planted {
        backend_prefix: "image-registry-".into(),
        matches: vec![
            (Dimension::Platform, "metal".into()),
            (Dimension::Release, "4.14".into()),
        ],
        from_day,
        until_day: None,
        share: 0.9,
        seconds: (12, 45),
        condition: Some((
            "image-registry".into(),
            "Available".into(),
            "False".into(),
            "NoReplicasAvailable".into(),
            "The deployment does not have available replicas".into(),
        )),
    }
}

impl Scenario {
    /// A month of the standard jobs ending at `end` (exclusive, midnight UTC), nothing planted.
    pub fn month(seed: u64, end: DateTime<Utc>) -> Scenario {
        Scenario {
            seed,
            bucket: "test-platform-results".into(),
            start: end - Duration::days(28),
            days: 28,
            jobs: standard_jobs(),
            backends: standard_backends(),
            planted: Vec::new(),
            outliers: Vec::new(),
            noise_intervals: 20,
            write_timelines: false,
            leave_last_run_running: false,
            ci_trouble_share: 0.0,
            trouble_spells: Vec::new(),
            payload_every_hours: 0,
        }
    }

    /// The scenario of `sheriff demo`: a month with the metal registry regression in its last week.
    pub fn demo(end: DateTime<Utc>) -> Scenario {
        let mut s = Scenario::month(20231114, end);
        s.planted.push(metal_registry_regression(21));
        s
    }
}

/// Midnight UTC of a date, for scenarios.
pub fn day(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0)
        .single()
        .expect("a valid date")
}

/// Where one run falls: its job, the job's dimensions, its index within the job, its day, its
/// start and its build id.
pub(crate) struct RunSlot<'a> {
    pub job: &'a JobSpec,
    pub dims: &'a Dimensions,
    pub nth: usize,
    pub day_index: u32,
    pub started: DateTime<Utc>,
    pub build_id: String,
}

/// Visits every run of the scenario in order, build ids from a running counter.
fn for_each_run(
    scenario: &Scenario,
    rng: &mut Rng,
    build_id: impl Fn(u64) -> String,
    mut visit: impl FnMut(RunSlot<'_>, &mut Rng) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut build_counter: u64 = 0;
    for job in &scenario.jobs {
        let dims = dimensions_from_job_name(&job.name);
        let mut job_runs = 0usize;
        let mut expected = 0.0f64;
        for day_index in job.from_day..scenario.days {
            expected += job.runs_per_day;
            while (job_runs as f64) < expected.floor() && job.max_runs.is_none_or(|m| job_runs < m)
            {
                let offset = rng.below(86_000) as i64;
                let started = scenario.start
                    + Duration::days(i64::from(day_index))
                    + Duration::seconds(offset);
                build_counter += 1;
                let slot = RunSlot {
                    job,
                    dims: &dims,
                    nth: job_runs,
                    day_index,
                    started,
                    build_id: build_id(build_counter),
                };
                visit(slot, rng)?;
                job_runs += 1;
            }
        }
    }
    Ok(())
}

/// Writes the scenario's bucket tree under `root` and returns what it wrote.
pub fn write_tree(scenario: &Scenario, root: &Path) -> std::io::Result<Truth> {
    let mut rng = Rng::new(scenario.seed);
    let mut truth = Truth::default();
    let seed = scenario.seed;
    let build_id = |n: u64| format!("{}", 1_700_000_000_000_000_000u64 + n * 7919 + seed % 1000);
    for_each_run(scenario, &mut rng, build_id, |slot, rng| {
        let run = artifacts::RunPlan::new(scenario, slot, rng);
        let written = artifacts::write_run(scenario, &run, root, rng)?;
        truth.interval_bytes += written.interval_bytes;
        truth.files += written.files;
        truth.runs.push(written.truth);
        Ok(())
    })?;
    if scenario.leave_last_run_running {
        for job in &scenario.jobs {
            if let Some(last) = truth.runs.iter_mut().rev().find(|r| r.job == job.name) {
                std::fs::remove_file(
                    root.join(&scenario.bucket)
                        .join(&last.path)
                        .join("finished.json"),
                )?;
                last.finished = false;
            }
        }
    }
    Ok(truth)
}

/// Many jobs across platforms, networks, upgrade types, releases, architectures and
/// topologies (`variants` of them), `runs` runs in all over `days` days, and `backends`
/// backends: the shape of a month of OpenShift CI, for benchmarks.
pub fn large(
    runs: usize,
    variants: usize,
    backends: usize,
    days: u32,
    end: DateTime<Utc>,
) -> Scenario {
    let mut jobs = Vec::new();
    let platforms = [
        "aws",
        "gcp",
        "azure",
        "metal",
        "vsphere",
        "openstack",
        "ovirt",
        "nutanix",
    ];

    'outer: for release in ["4.14", "4.15", "4.16", "4.13"] {
        let prev =
            crate::domain::evaluate::thresholds::previous_release(release).unwrap_or_default();
        for platform in platforms {
            for network in ["ovn", "sdn"] {
                for upgrade in ["micro", "minor", "none"] {
                    for arch in ["", "-arm64"] {
                        for topology in ["", "-single-node"] {
                            let name = match upgrade {
                                "micro" => format!(
                                    "periodic-ci-openshift-release-master-ci-{release}-e2e-{platform}-{network}-upgrade{arch}{topology}"
                                ),
                                "minor" => format!(
                                    "periodic-ci-openshift-release-master-ci-{release}-upgrade-from-stable-{prev}-e2e-{platform}-{network}-upgrade{arch}{topology}"
                                ),
                                _ => format!(
                                    "periodic-ci-openshift-release-master-ci-{release}-e2e-{platform}-{network}{arch}{topology}"
                                ),
                            };
                            jobs.push(JobSpec::new(&name, 0.0));
                            if jobs.len() >= variants {
                                break 'outer;
                            }
                        }
                    }
                }
            }
        }
    }

    let per_job = runs as f64 / jobs.len() as f64 / f64::from(days);
    for j in &mut jobs {
        j.runs_per_day = per_job;
    }

    let mut names = standard_backends();
    let mut extra = 0;
    while names.len() < backends {
        names.push(format!("extra-backend-{extra}-new-connections"));
        names.push(format!("extra-backend-{extra}-reused-connections"));
        extra += 1;
    }

    names.truncate(backends);
    Scenario {
        seed: 1_000_000,
        bucket: "test-platform-results".into(),
        start: end - Duration::days(i64::from(days)),
        days,
        jobs,
        backends: names,
        planted: vec![metal_registry_regression(days.saturating_sub(7))],
        outliers: Vec::new(),
        noise_intervals: 0,
        write_timelines: false,
        leave_last_run_running: false,
        ci_trouble_share: 0.0,
        trouble_spells: Vec::new(),
        payload_every_hours: 0,
    }
}

/// The scenario's runs as records, without writing files (for bulk loads and benchmarks).
pub fn run_records(scenario: &Scenario) -> Vec<crate::model::RunRecord> {
    let mut rng = Rng::new(scenario.seed);
    let mut out = Vec::new();
    let build_id = |n: u64| format!("{}", 1_800_000_000_000_000_000u64 + n);
    let visited = for_each_run(scenario, &mut rng, build_id, |slot, rng| {
        out.push(artifacts::RunPlan::new(scenario, slot, rng).record(&scenario.bucket));
        Ok(())
    });
    debug_assert!(visited.is_ok(), "building records does no I/O");
    out
}

/// The truth of [`run_records`]' runs, in the same order.
pub fn truth_of(scenario: &Scenario) -> Vec<TruthRun> {
    let mut rng = Rng::new(scenario.seed);
    let mut out = Vec::new();
    let build_id = |n: u64| format!("{}", 1_800_000_000_000_000_000u64 + n);
    let visited = for_each_run(scenario, &mut rng, build_id, |slot, rng| {
        out.push(artifacts::RunPlan::new(scenario, slot, rng).truth());
        Ok(())
    });
    debug_assert!(visited.is_ok(), "building the truth does no I/O");
    out
}

/// A mechanism of `kind` that explains 9 of 10 sample runs and no healthy run, one replica
/// ready when drained against two in healthy runs, with no sentence yet: for tests of what
/// says or files it.
pub fn example_mechanism(kind: crate::model::MechanismKind) -> crate::model::Mechanism {
    crate::model::Mechanism {
        kind,
        summary: String::new(),
        unknown_because: None,
        runs_explained: 9,
        runs_examined: 10,
        healthy_explained: 0,
        healthy_examined: 10,
        replicas_regressed: Some(1.0),
        replicas_healthy: Some(2.0),
        claims: Vec::new(),
        others: Vec::new(),
    }
}

/// The registry's `Available=False` (`NoReplicasAvailable`) over 90% of the outage seconds of
/// 9 of 10 sample runs and in no healthy run: for tests of what says or weighs a condition.
pub fn example_condition() -> crate::model::ConditionEvidence {
    crate::model::ConditionEvidence {
        operator: "image-registry".into(),
        condition: "Available".into(),
        status: "False".into(),
        reason: "NoReplicasAvailable".into(),
        message: "The deployment does not have available replicas".into(),
        covered_share: 0.9,
        runs_with: 9,
        runs: 10,
        healthy_with: 0,
        healthy_runs: 10,
        score: 0.9,
    }
}

/// The console route as a healthy control: P50 0 s now and in the reference, over 28 runs.
pub fn example_control() -> crate::model::ControlEvidence {
    crate::model::ControlEvidence {
        backend: "ingress-to-console-new-connections".into(),
        percentile: crate::model::Percentile::P50,
        now: Some(0.0),
        baseline: Some(0.0),
        runs: 28,
        healthy: true,
    }
}

/// A complete regression report of image-registry on `scope`, as a cycle would write it: for
/// tests of what reads reports (incidents, messages, pages) without running a cycle.
// Long: one literal that sets every field of a report, so a new field cannot be missed
pub fn example_report(
    scope: crate::model::Scope,
    observed: f64,
    threshold: f64,
) -> crate::model::RegressionReport {
    use crate::model::{
        Attribution, Confidence, Dimension, FileAgainst, Percentile, PercentilePair,
        RegressionReport, SampleJob, SampleKind, Status, fingerprint,
    };

    let release = scope
        .single(Dimension::Release)
        .unwrap_or("4.14")
        .to_string();

    let platform = scope.single(Dimension::Platform).map(str::to_string);
    let words = format!(
        "{} {release}",
        platform.as_deref().unwrap_or("every platform")
    );

    let summary = format!(
        "image-registry disruption regressed on {words}: P50 {} against {} over 28 runs.",
        crate::model::secs(observed),
        crate::model::secs(threshold)
    );

    let job = "periodic-ci-openshift-release-master-nightly-4.14-e2e-metal-ipi-ovn-upgrade";
    RegressionReport {
        fingerprint: fingerprint("image-registry", &release, &scope.joined()),
        backend: None,
        backends: vec![
            "image-registry-new-connections".into(),
            "image-registry-reused-connections".into(),
        ],
        family: "image-registry".into(),
        component: "Image Registry".into(),
        release,
        scope,
        not_specific_to: vec!["network".into(), "upgrade_type".into()],
        percentile: Percentile::P50,
        observed_seconds: observed,
        threshold_seconds: threshold,
        threshold_source: "baseline window (84 runs)".into(),
        allowed_seconds: (threshold + 5.0).max(threshold * 1.5),
        baseline_seconds: Some(threshold),
        job_runs: 28,
        span_days: None,
        ci_troubled_runs: 0,
        suspect_changes: Vec::new(),
        changes_pending: false,
        outside_pending: false,
        verification: None,
        baseline_runs: 84,
        p_value: 1e-9,
        q_value: 1e-7,
        percentiles: Percentile::ALL
            .iter()
            .map(|p| {
                (
                    *p,
                    PercentilePair {
                        now: Some(observed),
                        baseline: Some(threshold),
                    },
                )
            })
            .collect(),
        attribution: Attribution {
            component: "Image Registry".into(),
            platform,
            platform_component: None,
            owners: vec!["Image Registry".into()],
            file_against: FileAgainst::Backend,
            scope: words,
            summary,
            independence: vec![
                "not specific to a network plugin: ovn and sdn both regressed".into(),
            ],
            thin_evidence: Vec::new(),
            control: None,
            conditions: Vec::new(),
            confidence: Confidence::High,
            separates: Some(true),
            evidence: vec![format!(
                "P50 is {} against a reference of {}",
                observed, threshold
            )],
            evidence_pending: 0,
            evidence_read: 0,
            mechanism: None,
            harness: None,
            contrast: Vec::new(),
        },
        sample_jobs: vec![SampleJob {
            url: format!(
                "https://prow.ci.openshift.org/view/gs/test-platform-results/logs/{job}/1"
            ),
            job: job.into(),
            build_id: "1".into(),
            seconds: observed as i64,
            kind: SampleKind::Worst,
            ci_infrastructure_trouble: false,
            variant: "ovn · micro".into(),
        }],
        status: Status::New,
        since: None,
        groups: vec!["image-registry-new-connections release=4.14 platform=metal".into()],
        weekly: vec![Some(threshold), Some(observed)],
        onset: None,
        recovered_at: None,
        no_data_since: None,
        no_data_runs: 0,
    }
}

/// The pull request that ships a scenario's first planted regression, in its changelog.
pub const CULPRIT_PR: u64 = 9120;
/// The pull request that fixes it (shipped in the first payload of the planted regression's
/// `until_day`).
pub const FIX_PR: u64 = 9180;

/// Repositories whose pull requests fill a generated changelog around the culprit.
const OTHER_REPOSITORIES: [&str; 8] = [
    "openshift/cluster-monitoring-operator",
    "openshift/console",
    "openshift/ovn-kubernetes",
    "openshift/cluster-version-operator",
    "openshift/oc",
    "openshift/cluster-storage-operator",
    "openshift/installer",
    "openshift/origin",
];

/// The nightly payloads of a release the scenario builds (with `payload_every_hours`), oldest first.
pub fn payload_tags(scenario: &Scenario, release: &str) -> Vec<(String, DateTime<Utc>)> {
    let step = scenario.payload_every_hours;
    if step <= 0 {
        return Vec::new();
    }
    let mut t = scenario.start - Duration::hours(2 * step);
    let mut out = Vec::new();
    while t < scenario.start + Duration::days(i64::from(scenario.days)) {
        out.push((
            format!("{release}.0-0.nightly-{}", t.format("%Y-%m-%d-%H%M%S")),
            t,
        ));
        t += Duration::hours(step);
    }
    out
}

/// A payload tag the scenario never built; the text is what the release controller answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not find tag: {0}")]
pub struct UnknownTag(pub String);

/// The changelog between two of the scenario's payloads, as the release controller's
/// `/changelog?format=json` answers: one to three unrelated pull requests per payload, and in
/// the payload that shipped the first planted regression the culprit, in
/// openshift/cluster-image-registry-operator. `Err` names a tag the scenario never built.
pub fn release_changelog(
    scenario: &Scenario,
    from: &str,
    to: &str,
) -> Result<serde_json::Value, UnknownTag> {
    let release = to.split('.').take(2).collect::<Vec<_>>().join(".");
    let tags = payload_tags(scenario, &release);
    let index = |t: &str| {
        tags.iter()
            .position(|(x, _)| x == t)
            .ok_or_else(|| UnknownTag(t.to_string()))
    };

    let (a, b) = (index(from)?, index(to)?);
    let culprit = scenario
        .planted
        .first()
        .map(|p| scenario.start + Duration::days(i64::from(p.from_day)));

    let fix = scenario
        .planted
        .first()
        .and_then(|p| Some(scenario.start + Duration::days(i64::from(p.until_day?))));

    let mut images: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for (n, (tag, built)) in tags.iter().enumerate().take(b + 1).skip(a + 1) {
        let mut rng = Rng::new(scenario.seed ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for _ in 0..rng.between(1, 3) {
            let repo = OTHER_REPOSITORIES[rng.below(OTHER_REPOSITORIES.len() as u64) as usize];
            let number = 1000 + rng.below(9000);
            images.entry(repo.to_string()).or_default().push(serde_json::json!({
                "subject": format!("Routine change {number} in {tag}"), "pullID": number,
                "pullURL": format!("https://github.com/{repo}/pull/{number}"), "commitID": format!("{:040x}", rng.next_u64())}));
        }
        if culprit.is_some_and(|c| *built == c) {
            let repo = "openshift/cluster-image-registry-operator";
            images.entry(repo.to_string()).or_default().push(serde_json::json!({
                "subject": "Scale the registry to zero replicas while nodes drain", "pullID": CULPRIT_PR,
                "pullURL": format!("https://github.com/{repo}/pull/{CULPRIT_PR}"), "commitID": "c0ffee"}));
        }
        if fix.is_some_and(|f| *built == f) {
            let repo = "openshift/cluster-image-registry-operator";
            images.entry(repo.to_string()).or_default().push(serde_json::json!({
                "subject": "Keep a registry replica running while nodes drain", "pullID": FIX_PR,
                "pullURL": format!("https://github.com/{repo}/pull/{FIX_PR}"), "commitID": "f1xed"}));
        }
    }

    let updated: Vec<serde_json::Value> = images
        .into_iter()
        .map(|(repo, commits)| {
            let name = repo.rsplit('/').next().unwrap_or_default().to_string();
            serde_json::json!({"name": name, "path": format!("https://github.com/{repo}"), "commits": commits})
        })
        .collect();

    let info = |i: usize| serde_json::json!({"name": tags[i].0, "created": tags[i].1.to_rfc3339(), "digest": "sha256:0"});
    Ok(
        serde_json::json!({"from": info(a), "to": info(b), "components": [], "updatedImages": updated}),
    )
}
