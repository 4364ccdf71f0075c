//! The files of one synthetic run, written in the format generation its release used.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Duration, Utc};

use super::{JobSpec, Rng, RunSlot, Scenario, TruthRun, timeline};
use crate::model::job_name::parse_release;
use crate::model::{DAY, Dimensions, HOUR, MechanismKind};

/// The interval-file schema generation of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// ≤ 4.13: string locators and messages; no cluster-data file.
    Strings,
    /// 4.14: strings plus `tempStructured*`, and `locator` written twice.
    Transitional,
    /// 4.15+: structured locators and messages.
    Structured,
}

/// Everything decided about one run before its files are written.
pub(super) struct RunPlan<'a> {
    job: &'a JobSpec,
    dims: Dimensions,
    build_id: String,
    started: DateTime<Utc>,
    era: Era,
    seconds: BTreeMap<String, i64>,
    regressed_condition: Option<(String, String, String, String, String)>,
    /// The backends the planted regression hit (a name prefix).
    regressed_prefix: String,
    regressed: bool,
    ci_troubled: bool,
    payload: String,
    /// The cluster never came up: no disruption, cluster-data or interval files, a failed job.
    install_failed: bool,
    /// How the planted regression's outages come about, in a regressed run.
    mechanism: Option<MechanismKind>,
    /// Whether its interval files hold the watched namespaces' pods.
    pub pod_intervals: bool,
}

pub(super) struct Written {
    pub truth: TruthRun,
    pub interval_bytes: u64,
    pub files: u64,
}

fn baseline_seconds(backend: &str, dims: &Dimensions, rng: &mut Rng) -> i64 {
    let upgrade = dims.upgrade_type != "none";
    let api = [
        "kube-api",
        "cache-kube-api",
        "openshift-api",
        "cache-openshift-api",
        "oauth-api",
        "cache-oauth-api",
    ]
    .iter()
    .any(|f| backend.starts_with(&format!("{f}-")));
    if api && dims.topology == "single" {
        // A single-node cluster loses its API while its one control-plane node reboots.
        return rng.between(150, 320);
    }
    let (p, lo, hi) = if backend.starts_with("image-registry-") {
        (if dims.platform == "metal" { 0.2 } else { 0.12 }, 1, 4)
    } else if backend.starts_with("ingress-to-") {
        (0.1, 1, 3)
    } else if api {
        (if upgrade { 0.15 } else { 0.05 }, 1, 5)
    } else if backend.starts_with("service-load-balancer") {
        (0.2, 1, 6)
    } else if backend.contains("network-liveness") {
        (0.03, 1, 10)
    } else {
        (0.3, 1, 8)
    };
    if rng.chance(0.005) {
        return rng.between(15, 90); // the heavy tail every backend has
    }
    if rng.chance(p) {
        rng.between(lo, hi)
    } else {
        0
    }
}

impl Era {
    /// The schema generation a release wrote (4.14 when the release cannot be read).
    fn of(release: &str) -> Era {
        let release = parse_release(release).unwrap_or((4, 14));
        if release <= (4, 13) {
            Era::Strings
        } else if release == (4, 14) {
            Era::Transitional
        } else {
            Era::Structured
        }
    }
}

/// The day a run's changes count from. With payloads built on a schedule, a regression ships in
/// a payload: it hits the runs of that payload and later ones, whenever they ran.
fn change_day(scenario: &Scenario, payload: &str, day_index: u32) -> u32 {
    match crate::model::payload_time(payload) {
        Some(at) if scenario.payload_every_hours > 0 => {
            (at - scenario.start).num_seconds().div_euclid(DAY).max(0) as u32
        }
        _ => day_index,
    }
}

/// A planted regression's seconds on the backends it hits: one draw for the run, a reused
/// connection up to three seconds less.
fn plant_seconds(p: &super::Planted, seconds: &mut BTreeMap<String, i64>, rng: &mut Rng) {
    let base = rng.between(p.seconds.0, p.seconds.1);
    for (b, s) in seconds.iter_mut() {
        if b.starts_with(&p.backend_prefix) {
            let jitter = if b.contains("-reused-") {
                rng.between(-3, 0)
            } else {
                0
            };
            *s = (base + jitter).max(1);
        }
    }
}

impl<'a> RunPlan<'a> {
    pub(super) fn new(scenario: &Scenario, slot: RunSlot<'a>, rng: &mut Rng) -> RunPlan<'a> {
        let RunSlot {
            job,
            dims: name_dims,
            nth,
            day_index,
            started,
            build_id,
        } = slot;
        let era = Era::of(&name_dims.release);
        let mut dims = name_dims.clone();
        if era != Era::Strings {
            // What cluster-data will say.
            dims.master_nodes_updated = if dims.upgrade_type == "none" {
                "N".into()
            } else {
                "Y".into()
            };
        }

        let mut seconds = BTreeMap::new();
        for b in &scenario.backends {
            seconds.insert(b.clone(), baseline_seconds(b, &dims, rng));
        }
        let mut regressed = false;
        let mut regressed_condition = None;
        let mut regressed_prefix = String::new();
        let mut mechanism = None;
        let payload = payload_of(scenario, &dims, started, &build_id);
        let change_day = change_day(scenario, &payload, day_index);
        for p in &scenario.planted {
            let applies = change_day >= p.from_day
                && p.until_day.is_none_or(|u| change_day < u)
                && p.matches.iter().all(|(d, v)| dims.get(*d) == v);
            if applies && rng.chance(p.share) {
                regressed = true;
                plant_seconds(p, &mut seconds, rng);
                regressed_condition.clone_from(&p.condition);
                regressed_prefix.clone_from(&p.backend_prefix);
                mechanism = Some(if p.backend_prefix.starts_with("image-registry") {
                    MechanismKind::SingleReplicaDrained
                } else {
                    MechanismKind::Unknown
                });
            }
        }

        for o in &scenario.outliers {
            if o.job == job.name && o.nth == nth {
                seconds.insert(o.backend.clone(), o.seconds);
            }
        }
        let ci_troubled = ci_trouble(scenario, &dims, started, &build_id, &mut seconds);

        RunPlan {
            job,
            dims,
            build_id,
            started,
            era,
            seconds,
            regressed_condition,
            regressed_prefix,
            regressed,
            ci_troubled,
            payload,
            install_failed: false,
            mechanism,
            pod_intervals: true,
        }
    }

    /// The plan of a run generated elsewhere (the calibrated world), to write its files: its
    /// seconds are the record's; a regressed run names the backends' prefix and the mechanism
    /// of its outages, and an image registry regression brings its operator condition with it.
    pub(super) fn from_record(
        job: &'a JobSpec,
        record: &crate::model::RunRecord,
        regressed: Option<(&str, MechanismKind)>,
        ci_troubled: bool,
    ) -> RunPlan<'a> {
        let regressed_prefix = regressed.map(|(p, _)| p);
        let era = Era::of(&record.run.dimensions.release);
        let registry = regressed_prefix.is_some_and(|p| p.starts_with("image-registry"));
        RunPlan {
            job,
            dims: record.run.dimensions.clone(),
            build_id: record.run.build_id.clone(),
            started: record.run.started_at,
            era,
            seconds: record
                .samples
                .iter()
                .map(|s| (s.backend.clone(), s.seconds))
                .collect(),
            regressed_condition: registry
                .then(|| super::metal_registry_regression(0).condition)
                .flatten(),
            regressed_prefix: regressed_prefix.unwrap_or_default().to_string(),
            regressed: regressed_prefix.is_some(),
            ci_troubled,
            payload: record.run.payload.clone(),
            install_failed: record.samples.is_empty(),
            mechanism: regressed.map(|(_, m)| m),
            pod_intervals: true,
        }
    }
}

/// The payload a run tests: with `payload_every_hours`, one of the nightlies built on that
/// schedule, taken up a while after it was built (the newest at the run's start less 0–2
/// periods); without, a tag of the run's own start (every run its own payload).
fn payload_of(
    scenario: &Scenario,
    dims: &Dimensions,
    started: DateTime<Utc>,
    build_id: &str,
) -> String {
    let step = scenario.payload_every_hours * HOUR;
    let at = if step > 0 {
        let hash = build_id.bytes().fold(0x84222325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let lag = Rng::new(scenario.seed ^ hash ^ 0xba5e).between(0, 2 * step);
        let t = started.timestamp() - lag;
        DateTime::from_timestamp(t - t.rem_euclid(step), 0).unwrap_or(started)
    } else {
        started
    };
    format!(
        "{}.0-0.nightly-{}",
        dims.release,
        at.format("%Y-%m-%d-%H%M%S")
    )
}

/// CI-infrastructure trouble in one run, drawn apart from the run's own numbers (so a scenario
/// without trouble generates exactly what it always did): the liveness probe and most backends
/// down together, for about as long as each other.
fn ci_trouble(
    scenario: &Scenario,
    dims: &Dimensions,
    started: DateTime<Utc>,
    build_id: &str,
    seconds: &mut BTreeMap<String, i64>,
) -> bool {
    let in_spell = scenario.trouble_spells.iter().any(|t| {
        started >= t.from
            && started < t.from + chrono::Duration::hours(t.hours)
            && t.matches.iter().all(|(d, v)| dims.get(*d) == v)
    });
    if !in_spell && scenario.ci_trouble_share <= 0.0 {
        return false;
    }
    let hash = build_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut rng = Rng::new(scenario.seed ^ hash ^ 0x5ca1_ab1e);
    if !in_spell && !rng.chance(scenario.ci_trouble_share) {
        return false;
    }
    let base = rng.between(20, 150);
    for (b, s) in seconds.iter_mut() {
        if b.contains("network-liveness") || rng.chance(0.85) {
            *s = (*s).max((base + rng.between(-10, 10)).max(1));
        }
    }
    true
}

impl RunPlan<'_> {
    /// Where the run's files go in the bucket.
    fn path(&self) -> String {
        format!("logs/{}/{}", self.job.name, self.build_id)
    }

    /// What was generated for this run.
    pub(super) fn truth(&self) -> TruthRun {
        TruthRun {
            job: self.job.name.clone(),
            build_id: self.build_id.clone(),
            path: self.path(),
            started_at: self.started,
            finished: true,
            dimensions: self.dims.clone(),
            seconds: self.seconds.clone(),
            regressed: self.regressed,
            ci_troubled: self.ci_troubled,
            payload: self.payload.clone(),
        }
    }

    /// The record ingest would make of this run's files.
    pub(super) fn record(&self, bucket: &str) -> crate::model::RunRecord {
        let path = format!("logs/{}/{}", self.job.name, self.build_id);
        crate::model::RunRecord {
            run: crate::model::JobRun {
                job_name: self.job.name.clone(),
                build_id: self.build_id.clone(),
                bucket: bucket.to_string(),
                url: crate::model::JobRun::prow_url(bucket, &path),
                path,
                job_type: "periodic".into(),
                started_at: self.started,
                finished_at: Some(self.started + Duration::seconds(7200)),
                state: "success".into(),
                dimensions: self.dims.clone(),
                payload: self.payload.clone(),
                from_payload: String::new(),
            },
            samples: self
                .seconds
                .iter()
                .map(|(b, s)| crate::model::Sample {
                    backend: b.clone(),
                    connection: if b.contains("-reused-") {
                        "reused".into()
                    } else {
                        "new".into()
                    },
                    seconds: *s,
                })
                .collect(),
            outages: Vec::new(),
            conditions: Vec::new(),
            interval_files: Vec::new(),
            timeline: Vec::new(),
        }
    }
}

/// Go's `time.Duration.String()` for a non-negative number of seconds.
fn go_duration(secs: f64) -> String {
    if secs == 0.0 {
        return "0s".into();
    }
    if secs < 1.0 {
        return format!("{}ms", (secs * 1000.0).round() as i64);
    }
    let whole_minutes = (secs / 60.0).floor() as i64;
    let rest = secs - whole_minutes as f64 * 60.0;
    let s = format!("{rest:.1}").trim_end_matches(".0").to_string();
    if whole_minutes >= 60 {
        format!("{}h{}m{}s", whole_minutes / 60, whole_minutes % 60, s)
    } else if whole_minutes > 0 {
        format!("{whole_minutes}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// A whole number of seconds written as a fractional duration whose ceiling is that number.
fn phase_duration(whole: i64) -> String {
    if whole == 0 {
        "0s".into()
    } else {
        go_duration(whole as f64 - 0.3)
    }
}

fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y%m%d-%H%M%S").to_string()
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// One interval, before it is written in an era's form.
pub(super) struct Interval {
    pub level: &'static str,
    pub source: &'static str,
    pub locator_type: &'static str,
    pub keys: Vec<(&'static str, String)>,
    pub reason: String,
    pub message: String,
    pub annotations: Vec<(&'static str, String)>,
    pub from: DateTime<Utc>,
    pub to: Option<DateTime<Utc>>,
}

fn write_interval(out: &mut String, era: Era, i: &Interval) {
    let locator_string = i
        .keys
        .iter()
        .map(|(k, v)| format!("{k}/{v}"))
        .collect::<Vec<_>>()
        .join(" ");

    let mut message_string: Vec<String> = i
        .annotations
        .iter()
        .map(|(k, v)| format!("{k}/{v}"))
        .collect();

    if !i.message.is_empty() {
        message_string.push(i.message.clone());
    }

    let message_string = message_string.join(" ");
    let keys_json = i
        .keys
        .iter()
        .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
        .collect::<Vec<_>>()
        .join(", ");

    let annotations_json = i
        .annotations
        .iter()
        .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
        .collect::<Vec<_>>()
        .join(", ");

    let locator_obj = format!(
        "{{\"type\": {}, \"keys\": {{{keys_json}}}}}",
        json_str(i.locator_type)
    );

    let message_obj = format!(
        "{{\"reason\": {}, \"cause\": \"\", \"humanMessage\": {}, \"annotations\": {{{annotations_json}}}}}",
        json_str(&i.reason),
        json_str(&i.message)
    );

    let to =
        i.to.map_or_else(|| "null".to_string(), |t| json_str(&rfc3339(t)));
    let from = json_str(&rfc3339(i.from));
    match era {
        Era::Strings => {
            let _ = write!(
                out,
                "{{\"level\": {}, \"locator\": {}, \"message\": {}, \"from\": {from}, \"to\": {to}}}",
                json_str(i.level),
                json_str(&locator_string),
                json_str(&message_string)
            );
        }
        Era::Transitional => {
            let _ = write!(
                out,
                "{{\"level\": {}, \"display\": true, \"source\": {src}, \"locator\": {}, \"locator\": {locator_obj}, \"message\": {}, \
                 \"tempStructuredLocator\": {locator_obj}, \"tempStructuredMessage\": {message_obj}, \"tempSource\": {src}, \
                 \"from\": {from}, \"to\": {to}}}",
                json_str(i.level),
                json_str(&locator_string),
                json_str(&message_string),
                src = json_str(i.source),
            );
        }
        Era::Structured => {
            let _ = write!(
                out,
                "{{\"level\": {}, \"source\": {}, \"display\": true, \"locator\": {locator_obj}, \"message\": {message_obj}, \
                 \"from\": {from}, \"to\": {to}}}",
                json_str(i.level),
                json_str(i.source)
            );
        }
    }
}

const OPERATORS: [&str; 8] = [
    "authentication",
    "console",
    "dns",
    "etcd",
    "image-registry",
    "ingress",
    "kube-apiserver",
    "network",
];

fn intervals(
    scenario: &Scenario,
    plan: &RunPlan<'_>,
    upgrade_start: DateTime<Utc>,
    rng: &mut Rng,
) -> Vec<Interval> {
    let mut items = operator_noise(plan, upgrade_start, rng);
    let window_start = upgrade_start + Duration::seconds(600);
    let family = |b: &str| {
        plan.regressed && !plan.regressed_prefix.is_empty() && b.starts_with(&plan.regressed_prefix)
    };

    let family_seconds = plan
        .seconds
        .iter()
        .filter(|(b, _)| family(b))
        .map(|(_, s)| *s)
        .max()
        .unwrap_or(0);

    let probe = plan
        .seconds
        .keys()
        .find(|b| b.contains("network-liveness"))
        .map_or(
            "ci-cluster-network-liveness-new-connections",
            String::as_str,
        );

    let setting = timeline::Setting {
        started: plan.started,
        upgrade_start,
        upgrading: plan.dims.upgrade_type != "none",
        on_prem: matches!(
            plan.dims.platform.as_str(),
            "metal" | "vsphere" | "openstack"
        ),
        pods: plan.pod_intervals,
        mechanism: plan.mechanism.filter(|_| plan.regressed),
        family_seconds,
        probe,
    };

    let cluster = timeline::timeline(&setting, rng);
    for (backend, &secs) in &plan.seconds {
        if secs <= 0 {
            continue;
        }
        if family(backend) && !cluster.outages.is_empty() {
            items.extend(family_outages(
                plan,
                backend,
                secs,
                family_seconds,
                &cluster.outages,
            ));
        } else {
            let from = window_start + Duration::seconds(rng.between(0, 1800));
            items.extend(outage_at(plan, backend, from, secs));
        }
    }

    items.extend(cluster.items);
    items.extend(sampler_outage(window_start, rng));
    items.extend((0..scenario.noise_intervals).map(|n| pod_noise(plan, n, rng)));
    items.sort_by_key(|i| i.from);
    items
}

/// A regressed family's outages where the mechanism put them (`outages`: from and length), a
/// backend's `secs` shared among them in proportion to their lengths.
fn family_outages(
    plan: &RunPlan<'_>,
    backend: &str,
    secs: i64,
    family_seconds: i64,
    outages: &[(DateTime<Utc>, i64)],
) -> Vec<Interval> {
    let mut items = Vec::new();
    let mut left = secs;
    for (k, (from, len)) in outages.iter().enumerate() {
        let share = if k + 1 == outages.len() {
            left
        } else {
            (len * secs / family_seconds.max(1)).clamp(1, left.max(1))
        };
        left -= share;
        if share > 0 {
            items.extend(outage_at(plan, backend, *from, share));
        }
    }
    items
}

/// Now and then, the disruption sampler itself stops responding for five seconds.
fn sampler_outage(window_start: DateTime<Utc>, rng: &mut Rng) -> Option<Interval> {
    if !rng.chance(0.05) {
        return None;
    }
    let from = window_start + Duration::seconds(rng.between(0, 1800));
    Some(Interval {
        level: "Warning",
        source: "Disruption",
        locator_type: "Disruption",
        keys: vec![
            ("backend-disruption-name", "kube-api-new-connections".into()),
            ("connection", "new".into()),
        ],
        reason: "DisruptionSamplerOutageBegan".into(),
        message: "the disruption sampler itself stopped responding".into(),
        annotations: vec![("reason", "DisruptionSamplerOutageBegan".into())],
        from,
        to: Some(from + Duration::seconds(5)),
    })
}

/// Every operator progresses during an upgrade (noise that correlates with everything), and
/// now and then one is briefly degraded.
fn operator_noise(
    plan: &RunPlan<'_>,
    upgrade_start: DateTime<Utc>,
    rng: &mut Rng,
) -> Vec<Interval> {
    let mut items = Vec::new();
    if plan.dims.upgrade_type != "none" {
        for op in OPERATORS {
            let from = upgrade_start + Duration::seconds(rng.between(0, 600));
            let to = from + Duration::seconds(rng.between(300, 1500));
            let message = format!("Working towards {}", plan.dims.release);
            items.push(operator_interval(
                op,
                "Progressing",
                "True",
                "Upgrading",
                &message,
                from,
                Some(to),
            ));
        }
    }
    if rng.chance(0.1) {
        let op = OPERATORS[rng.below(OPERATORS.len() as u64) as usize];
        let from = upgrade_start + Duration::seconds(rng.between(0, 2400));
        let to = from + Duration::seconds(rng.between(30, 300));
        items.push(operator_interval(
            op,
            "Degraded",
            "True",
            "SyncError",
            "a transient sync error",
            from,
            Some(to),
        ));
    }
    items
}

/// One backend's outage of `secs` from `from`, and the planted condition around it in a
/// regressed run.
fn outage_at(plan: &RunPlan<'_>, backend: &str, from: DateTime<Utc>, secs: i64) -> Vec<Interval> {
    let connection = if backend.contains("-reused-") {
        "reused"
    } else {
        "new"
    };
    let to = from + Duration::seconds(secs);
    let mut items = vec![Interval {
        level: "Error",
        source: "Disruption",
        locator_type: "Disruption",
        keys: vec![
            ("backend-disruption-name", backend.to_string()),
            ("connection", connection.to_string()),
            ("disruption", "openshift-tests".into()),
        ],
        reason: "DisruptionBegan".into(),
        message: format!(
            "{backend} stopped responding to GET requests over {connection} connections: 503 Service Unavailable"
        ),
        annotations: vec![("reason", "DisruptionBegan".into())],
        from,
        to: Some(to),
    }];
    if plan.regressed
        && backend.starts_with(&plan.regressed_prefix)
        && let Some((op, cond, status, reason, message)) = &plan.regressed_condition
    {
        let (from, to) = (
            from - Duration::seconds(10),
            Some(to + Duration::seconds(10)),
        );
        items.push(operator_interval(
            op, cond, status, reason, message, from, to,
        ));
    }
    items
}

/// An unrelated pod-lifecycle interval: what makes real interval files big.
fn pod_noise(plan: &RunPlan<'_>, n: usize, rng: &mut Rng) -> Interval {
    let from = plan.started + Duration::seconds(rng.between(0, 7000));
    Interval {
        level: "Info",
        source: "PodState",
        locator_type: "Pod",
        keys: vec![
            ("namespace", format!("e2e-test-{}", n % 17)),
            ("pod", format!("pod-{n}-{}", rng.below(100_000))),
            ("uid", format!("{:016x}", rng.next_u64())),
        ],
        reason: "Created".into(),
        message: "pod lifecycle event".into(),
        annotations: vec![
            ("constructed", "pod-lifecycle-constructor".into()),
            ("reason", "Created".into()),
        ],
        from,
        to: Some(from + Duration::seconds(rng.between(0, 60))),
    }
}

fn operator_interval(
    op: &str,
    cond: &str,
    status: &str,
    reason: &str,
    message: &str,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
) -> Interval {
    let level = if cond == "Progressing" {
        "Warning"
    } else {
        "Error"
    };
    Interval {
        level,
        source: "OperatorState",
        locator_type: "ClusterOperator",
        keys: vec![("clusteroperator", op.to_string())],
        reason: reason.to_string(),
        message: message.to_string(),
        annotations: vec![
            ("condition", cond.to_string()),
            ("reason", reason.to_string()),
            ("status", status.to_string()),
        ],
        from,
        to,
    }
}

fn interval_file(era: Era, items: &[Interval]) -> String {
    let mut out = String::with_capacity(items.len() * 400 + 16);
    out.push_str("{\"items\": [\n");
    for (n, i) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(",\n");
        }
        write_interval(&mut out, era, i);
    }
    out.push_str("\n]}\n");
    out
}

fn write(path: &Path, text: &str, files: &mut u64) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    *files += 1;
    std::fs::write(path, text)
}

/// Writes `prowjob.json`, `started.json`, `finished.json` and a build log.
fn write_prow_files(
    scenario: &Scenario,
    plan: &RunPlan<'_>,
    dir: &Path,
    path: &str,
    files: &mut u64,
    rng: &mut Rng,
) -> std::io::Result<()> {
    let job = &plan.job.name;
    let duration = Duration::seconds(rng.between(5400, 9000));
    let finished = plan.started + duration;
    let passed = rng.chance(0.85) && !plan.install_failed;
    let url = format!(
        "https://prow.ci.openshift.org/view/gs/{}/{path}",
        scenario.bucket
    );

    let prowjob = serde_json::json!({
        "kind": "ProwJob",
        "apiVersion": "prow.k8s.io/v1",
        "metadata": {"name": format!("{:x}", rng.next_u64()), "annotations": {
            "prow.k8s.io/job": job,
            "release.openshift.io/tag": plan.payload,
        }},
        "spec": {"type": "periodic", "agent": "kubernetes", "cluster": "build05", "job": job,
            "decoration_config": {"gcs_configuration": {"bucket": scenario.bucket, "path_strategy": "single",
                "default_org": "openshift", "default_repo": "origin"}}},
        "status": {"startTime": rfc3339(plan.started), "completionTime": rfc3339(finished),
            "state": if passed { "success" } else { "failure" }, "url": url, "build_id": plan.build_id},
    });

    write(
        &dir.join("prowjob.json"),
        &serde_json::to_string_pretty(&prowjob).unwrap_or_default(),
        files,
    )?;

    let started = format!(
        "{{\"timestamp\": {}, \"repos\": {{}}}}",
        plan.started.timestamp()
    );

    write(&dir.join("started.json"), &started, files)?;
    let finished_json = format!(
        "{{\"timestamp\": {}, \"passed\": {passed}, \"result\": \"{}\", \"revision\": \"master\", \"metadata\": {{\"work-namespace\": \"ci-op-{:x}\"}}}}",
        finished.timestamp(),
        if passed { "SUCCESS" } else { "FAILURE" },
        rng.below(1 << 20)
    );

    write(&dir.join("finished.json"), &finished_json, files)?;
    write(
        &dir.join("build-log.txt"),
        "INFO[2023-11-14T22:00:00Z] Running step e2e\n",
        files,
    )
}

/// One phase's `backend-disruption_*.json`, in the writer generation of the run's release.
fn disruption_file(era: Era, seconds: &BTreeMap<&str, i64>) -> String {
    let mut body = String::from("{\"BackendDisruptions\": {\n");
    for (i, (b, s)) in seconds.iter().enumerate() {
        if i > 0 {
            body.push_str(",\n");
        }
        let connection = if b.contains("-reused-") {
            "Reused"
        } else {
            "New"
        };
        let short = b
            .trim_end_matches("-new-connections")
            .trim_end_matches("-reused-connections");
        let d = phase_duration(*s);
        if era == Era::Strings {
            let _ = write!(
                body,
                "  {k}: {{\"Name\": {k}, \"BackendName\": {}, \"ConnectionType\": \"{connection}\", \"DisruptedDuration\": \"{d}\", \"DisruptionMessages\": null}}",
                json_str(short),
                k = json_str(b)
            );
        } else {
            let _ = write!(
                body,
                "  {k}: {{\"Name\": {k}, \"BackendName\": {k}, \"ConnectionType\": \"{connection}\", \"DisruptedDuration\": \"{d}\", \
                 \"DisruptionMessages\": {}, \"LoadBalancerType\": \"external\", \"Protocol\": \"http1\", \"TargetAPI\": \"\"}}",
                if *s > 0 {
                    "[\"stopped responding\"]"
                } else {
                    "null"
                },
                k = json_str(b)
            );
        }
    }
    body.push_str("\n}}\n");
    body
}

/// One phase's `cluster-data_*.json` (the first phase updates the control plane).
fn cluster_data_file(plan: &RunPlan<'_>, first_phase: bool) -> String {
    let mut cd = serde_json::json!({
        "Release": plan.dims.release,
        "FromRelease": plan.dims.from_release,
        "Platform": plan.dims.platform,
        "Architecture": plan.dims.architecture,
        "Network": plan.dims.network,
        "Topology": plan.dims.topology,
        "NetworkStack": match plan.dims.network_stack.as_str() {
            "ipv6" => "IPv6",
            "dual" => "Dual",
            _ => "IPv4",
        },
        "CloudRegion": "us-east-1",
        "CloudZone": "us-east-1a",
        "ClusterVersionHistory": [plan.dims.from_release, plan.dims.release],
        "MasterNodesUpdated": if first_phase { plan.dims.master_nodes_updated.as_str() } else { "N" },
    });
    if plan.era == Era::Structured {
        cd["os"] = serde_json::json!("rhcos");
    }
    cd.to_string()
}

/// Where the run's test step writes its junit artifacts.
fn junit_dir(plan: &RunPlan<'_>, dir: &Path) -> std::path::PathBuf {
    let job = &plan.job.name;
    let target = format!("e2e-{}", job.rsplit_once("-e2e-").map_or("e2e", |(_, t)| t));
    let step = if plan.dims.platform == "metal" {
        "baremetalds-e2e-test"
    } else {
        "openshift-e2e-test"
    };
    dir.join("artifacts")
        .join(&target)
        .join(step)
        .join("artifacts/junit")
}

/// Every backend's seconds split over the phases: most in the first (the upgrade).
fn split_seconds<'p>(
    plan: &'p RunPlan<'_>,
    phases: usize,
    rng: &mut Rng,
) -> Vec<BTreeMap<&'p str, i64>> {
    let mut split: Vec<BTreeMap<&str, i64>> = vec![BTreeMap::new(); phases];
    for (b, &s) in &plan.seconds {
        let second = if phases > 1 && s > 0 {
            rng.between(0, s.min(2))
        } else {
            0
        };
        split[0].insert(b, s - second);
        if phases > 1 {
            split[1].insert(b, second);
        }
    }
    split
}

pub(super) fn write_run(
    scenario: &Scenario,
    plan: &RunPlan<'_>,
    root: &Path,
    rng: &mut Rng,
) -> std::io::Result<Written> {
    let path = plan.path();
    let dir = root.join(&scenario.bucket).join(&path);
    let mut files = 0;
    write_prow_files(scenario, plan, &dir, &path, &mut files, rng)?;
    if plan.install_failed {
        return Ok(Written {
            truth: plan.truth(),
            interval_bytes: 0,
            files,
        });
    }

    let junit = junit_dir(plan, &dir);
    let phases: Vec<DateTime<Utc>> = if plan.dims.upgrade_type != "none" {
        vec![
            plan.started + Duration::seconds(1800),
            plan.started + Duration::seconds(5400),
        ]
    } else {
        vec![plan.started + Duration::seconds(1800)]
    };
    let split = split_seconds(plan, phases.len(), rng);

    let mut interval_bytes = 0;
    for (n, phase_start) in phases.iter().enumerate() {
        let ts = stamp(*phase_start);
        write(
            &junit.join(format!("backend-disruption_{ts}.json")),
            &disruption_file(plan.era, &split[n]),
            &mut files,
        )?;
        if plan.era != Era::Strings {
            write(
                &junit.join(format!("cluster-data_{ts}.json")),
                &cluster_data_file(plan, n == 0),
                &mut files,
            )?;
        }
        let items = if n == 0 {
            intervals(scenario, plan, *phase_start, rng)
        } else {
            Vec::new()
        };
        let events = interval_file(plan.era, &items);
        interval_bytes += events.len() as u64;
        write(
            &junit.join(format!("e2e-events_{ts}.json")),
            &events,
            &mut files,
        )?;
        if scenario.write_timelines {
            write(
                &junit.join(format!("e2e-timelines_everything_{ts}.json")),
                &events,
                &mut files,
            )?;
        }
    }
    Ok(Written {
        truth: plan.truth(),
        interval_bytes,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::ingest::formats::duration::parse_go_duration;

    #[test]
    fn phase_durations_round_up_to_the_whole_seconds() {
        for whole in [0, 1, 2, 31, 59, 60, 61, 125, 3601] {
            let d = phase_duration(whole);
            assert_eq!(parse_go_duration(&d).unwrap().ceil() as i64, whole, "{d}");
        }
    }
}
