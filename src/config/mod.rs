//! Settings: `config/sheriff.toml`, then `SHERIFF__SECTION__KEY` environment variables, read once.
//!
//! Every other module receives the parts of [`Settings`] it needs; apart from the process's
//! identity (`HOSTNAME` in [`crate::process`], `USER` for who ran a command), nothing else
//! reads the environment. Secrets are never accepted from the TOML file: they come from an environment
//! variable or from a file named by a `*_file` setting (a mounted Kubernetes secret, say), and
//! they print as `[redacted]` in `Debug`, `Display` and serialized output.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize, Serializer};

/// The file read when `--config` is not given.
pub const DEFAULT_CONFIG_PATH: &str = "config/sheriff.toml";

/// The environment prefix: `SHERIFF__DATABASE__URL` sets `[database] url`.
pub const ENV_PREFIX: &str = "SHERIFF__";

/// An hour and a day in seconds, as the unsigned numbers settings are read in.
const HOUR: u64 = crate::model::HOUR.unsigned_abs();
const DAY: u64 = crate::model::DAY.unsigned_abs();

/// A secret value. Its `Debug`, `Display` and `Serialize` never show the content.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The only way to read the value: call it where the secret is used, never to log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether a credential a request carried is this secret, compared in constant time. No
    /// credential, or an empty one, never matches, not even an empty secret: a missing header
    /// must not pass for a token.
    pub fn matches(&self, given: Option<&str>) -> bool {
        match given {
            Some(g) if !g.is_empty() && !self.0.is_empty() => {
                bool::from(subtle::ConstantTimeEq::ct_eq(g.as_bytes(), self.0.as_bytes()))
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("[redacted]")
    }
}

/// Everything sheriff can be told, one section per external system or pipeline stage.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub server: ServerSettings,
    pub log: LogSettings,
    pub ingest: IngestSettings,
    pub gcs: GcsSettings,
    pub bigquery: BigQuerySettings,
    pub slack: SlackSettings,
    pub jira: JiraSettings,
    pub evaluate: EvaluateSettings,
    pub attribute: AttributeSettings,
    pub schedule: ScheduleSettings,
    pub outbox: OutboxSettings,
    pub release_controller: ReleaseControllerSettings,
    pub github: GitHubSettings,
    pub retention: RetentionSettings,
}

/// How long stored data is kept; `[retention]`. `sheriff serve` prunes on `schedule`, and
/// `sheriff prune` does it by hand.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionSettings {
    /// Runs, their samples and the per-day histograms are kept this many whole UTC days.
    pub samples_days: u32,
    /// Interval evidence (outages, condition spans) is kept this many days.
    pub intervals_days: u32,
    /// When `serve` prunes (cron, read in `schedule.timezone`). Default: daily at 03:30.
    pub schedule: String,
    /// Runs per delete transaction: what a cycle or an ingest may wait for at most.
    pub batch_runs: usize,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self { samples_days: 400, intervals_days: 60, schedule: "30 3 * * *".into(), batch_runs: 500 }
    }
}

/// The release controllers that list the changes between two payloads; `[release_controller]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReleaseControllerSettings {
    /// Base URL per architecture (`amd64 = "https://amd64.ocp.releases.ci.openshift.org"`).
    /// Empty: no changes are read, the payload window still shows.
    pub urls: std::collections::BTreeMap<String, String>,
    /// Whole-request timeout of one changelog request.
    pub timeout_secs: u64,
    /// Repositories whose pull requests rank first for a component (the attributed component or
    /// the platform's): `{ component = "Image Registry", repositories = ["openshift/image-registry"] }`.
    pub repositories: Vec<ComponentRepositories>,
}

/// The repositories of one component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRepositories {
    pub component: String,
    pub repositories: Vec<String>,
}

impl Default for ReleaseControllerSettings {
    fn default() -> Self {
        let rows: [(&str, &[&str]); 9] = [
            (
                "Image Registry",
                &[
                    "openshift/cluster-image-registry-operator",
                    "openshift/image-registry",
                    "openshift/docker-distribution",
                ],
            ),
            (
                "Bare Metal Hardware Provisioning",
                &[
                    "openshift/cluster-baremetal-operator",
                    "openshift/baremetal-operator",
                    "openshift/ironic-image",
                    "openshift/machine-config-operator",
                    "openshift/baremetal-runtimecfg",
                ],
            ),
            ("Networking / router", &["openshift/router", "openshift/cluster-ingress-operator"]),
            ("kube-apiserver", &["openshift/kubernetes", "openshift/cluster-kube-apiserver-operator"]),
            (
                "openshift-apiserver",
                &["openshift/openshift-apiserver", "openshift/cluster-openshift-apiserver-operator"],
            ),
            (
                "oauth-apiserver",
                &[
                    "openshift/oauth-apiserver",
                    "openshift/oauth-server",
                    "openshift/cluster-authentication-operator",
                ],
            ),
            (
                "Cloud Compute / Cloud Controller Manager",
                &[
                    "openshift/cloud-provider-aws",
                    "openshift/cloud-provider-gcp",
                    "openshift/cluster-cloud-controller-manager-operator",
                ],
            ),
            (
                "Cloud Compute / vSphere Provider",
                &["openshift/cloud-provider-vsphere", "openshift/machine-api-operator"],
            ),
            (
                "Networking / ovn-kubernetes",
                &["openshift/ovn-kubernetes", "openshift/cluster-network-operator"],
            ),
        ];
        ReleaseControllerSettings {
            urls: std::collections::BTreeMap::new(),
            timeout_secs: 10,
            repositories: rows
                .iter()
                .map(|(c, r)| ComponentRepositories {
                    component: (*c).into(),
                    repositories: r.iter().map(|x| (*x).to_string()).collect(),
                })
                .collect(),
        }
    }
}

/// GitHub, read for the changes outside the payload: the commits of the CI harness, the step
/// registry and origin's monitor tests merged in a regression's onset window; `[github]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitHubSettings {
    /// Read GitHub at all. Off by default, like the release controller without URLs: a sheriff
    /// that cannot reach GitHub never waits on it.
    pub enabled: bool,
    /// Base URL of the GitHub REST API; tests point it at a local fake.
    pub api_url: String,
    /// Seconds before one request times out.
    pub timeout_secs: u64,
    /// Pages of 100 commits read at most per repository and window (`Link: rel="next"`).
    pub max_pages: u32,
    /// The largest response body read, in bytes; a larger page is an error.
    pub max_response_bytes: u64,
    /// The longest rate-limit wait (`Retry-After`, `x-ratelimit-reset`) a cycle sits out before
    /// asking once more; a longer one leaves the changes pending until a later cycle.
    pub max_wait_secs: u64,
    /// A token (fine-grained, read-only) for 5,000 requests an hour instead of 60. Environment
    /// or file only; public repositories need none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The repositories outside the payload whose commits are suspects, by platform (`*`: every
    /// platform), each optionally limited to a path.
    pub repositories: Vec<OutsideRepository>,
}

/// One repository outside the payload: `{ platform = "metal", repository =
/// "openshift-metal3/dev-scripts" }`, `{ platform = "*", repository = "openshift/origin", path =
/// "pkg/monitortests" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideRepository {
    /// The platform whose CI clusters it shapes; `*` for all of them.
    pub platform: String,
    /// `owner/name`.
    pub repository: String,
    /// Only commits touching this path (GitHub's `path=`); empty: the whole repository.
    #[serde(default)]
    pub path: String,
}

impl OutsideRepository {
    /// Whether it shapes only one platform's clusters (not every platform's).
    pub fn for_one_platform(&self) -> bool {
        self.platform != "*"
    }
}

impl Default for GitHubSettings {
    fn default() -> Self {
        let repo = |platform: &str, repository: &str, path: &str| OutsideRepository {
            platform: platform.into(),
            repository: repository.into(),
            path: path.into(),
        };
        Self {
            enabled: false,
            api_url: "https://api.github.com".into(),
            timeout_secs: 10,
            max_pages: 5,
            max_response_bytes: 8 * 1024 * 1024,
            max_wait_secs: 5,
            token: None,
            token_file: None,
            repositories: vec![
                repo("metal", "openshift-metal3/dev-scripts", ""),
                repo("*", "openshift/release", "ci-operator/step-registry"),
                repo("*", "openshift/origin", "pkg/monitortests"),
            ],
        }
    }
}

/// Whom a regression belongs to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AttributeSettings {
    /// A platform-specific regression names two owners, the backend's component and the
    /// platform's; `backend` files against the first and mentions the second, `platform` the
    /// other way round.
    pub file_against: FileAgainst,
    /// The control backend of a regressed backend: the first rule whose glob matches.
    /// `{connection}` becomes `new` or `reused`, after the regressed backend.
    pub controls: Vec<ControlRule>,
    /// Backend → Jira component and ClusterOperator. Empty: the CI's own defaults.
    pub components: Vec<ComponentSetting>,
    /// Platform → the platform's own component (ci-test-mapping's variant ownership).
    pub platform_components: std::collections::BTreeMap<String, String>,
    /// Regressed and healthy sample runs read for interval evidence.
    pub evidence_runs: usize,
    /// Platform → the CI harness that sets up its test clusters, filed against when the
    /// mechanism shows the cause is the test environment (a single replica, say).
    pub harnesses: std::collections::BTreeMap<String, String>,
}

pub use crate::model::FileAgainst;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlRule {
    pub backend: String,
    pub control: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentSetting {
    pub backends: Vec<String>,
    pub component: String,
    #[serde(default)]
    pub operator: String,
}

impl Default for AttributeSettings {
    fn default() -> Self {
        Self {
            file_against: FileAgainst::Backend,
            controls: vec![
                // The console route is the control of everything except itself.
                ControlRule {
                    backend: "ingress-to-console-*".into(),
                    control: "kube-api-{connection}-connections".into(),
                },
                ControlRule {
                    backend: "*".into(),
                    control: "ingress-to-console-{connection}-connections".into(),
                },
            ],
            components: Vec::new(),
            platform_components: [
                ("metal".to_string(), "Bare Metal Hardware Provisioning".to_string()),
                ("vsphere".to_string(), "Cloud Compute / vSphere Provider".to_string()),
            ]
            .into(),
            evidence_runs: 10,
            harnesses: default_harnesses(),
        }
    }
}

/// Metal clusters come from dev-scripts; the cloud platforms from their step-registry steps.
fn default_harnesses() -> std::collections::BTreeMap<String, String> {
    let mut m: std::collections::BTreeMap<String, String> =
        [("metal".to_string(), "openshift-metal3/dev-scripts".to_string())].into();
    for p in ["aws", "azure", "gcp", "vsphere", "openstack", "ovirt", "nutanix"] {
        m.insert(p.to_string(), format!("openshift/release ci-operator/step-registry/ipi/conf/{p}"));
    }
    m
}

/// How evaluation decides what regressed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluateSettings {
    /// Days in the current window, ending at the evaluation time.
    pub window_days: u32,
    /// Days in the baseline window just before the current one.
    pub baseline_days: u32,
    /// Fewer runs than this in a group: "insufficient data", never healthy or regressed.
    pub min_job_runs: u64,
    /// Besides the window, each group is also judged on its runs of the last so many days
    /// (each a span ending at the evaluation time) against the same reference: a regression
    /// that began inside the window is seen once its own runs carry it, not once it fills the
    /// window. Empty: the window alone.
    pub recent_days: Vec<u32>,
    /// A recent span is judged from this many runs (its test, adjusted with every other of the
    /// cycle, decides; fewer runs need an overwhelming effect).
    pub min_recent_runs: u64,
    /// Percentiles checked against thresholds (all four are computed and shown).
    pub percentiles: Vec<crate::model::Percentile>,
    /// A regression must exceed its threshold by at least this many seconds …
    pub min_effect_seconds: f64,
    /// … and by at least this factor: allowed = max(T + seconds, T × ratio).
    pub min_effect_ratio: f64,
    /// Benjamini–Hochberg false discovery rate across all groups tested in one cycle.
    pub false_discovery_rate: f64,
    /// A regressed group is resolved after this many evaluations in a row at or below its threshold.
    pub clear_after: u32,
    /// Historical-table rows with fewer job runs are ignored.
    pub historical_min_runs: u64,
    /// A release whose first run is younger than this is judged against the previous
    /// release's same group: its own few days of history may already hold a regression.
    pub min_history_days: u32,
    /// Runs after a candidate fix point that must be back at the reference before an incident
    /// resolves early (before its window has emptied of regressed runs).
    pub recovery_min_runs: usize,
    /// Runs in an incident's scope after its claimed fix that a verdict (fixed, failed fix)
    /// needs; fewer is "inconclusive", naming how many more.
    pub fix_min_runs: u64,
    /// How far back an incident's reference may reach: the days before its onset are its
    /// reference however long it lasts, up to this many days before the cycle.
    pub reference_lookback_days: u32,
    /// Backends whose name contains any of these are not evaluated (the CI aggregator's list).
    pub exclude: Vec<String>,
    /// Worst and typical sample runs listed per regression.
    pub sample_worst: usize,
    pub sample_typical: usize,
    /// Configured limits, the most specific source of thresholds.
    pub limits: Vec<LimitRule>,
    /// A percentile regresses only with at least this many runs above the allowed level (and
    /// as many as its rank implies): 2 wild runs never carry a P95.
    pub min_support_runs: u64,
    /// Which runs had CI-infrastructure trouble (left out of evaluation).
    pub ci_trouble: crate::model::TroubleRules,
}

impl EvaluateSettings {
    /// The recent spans: each at least a day, shorter than the window, judged from one run on.
    fn validate_recent(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| Err(ConfigError::Invalid(format!("`{key}`: {why}")));
        if self.recent_days.iter().any(|d| *d == 0 || *d >= self.window_days) {
            return invalid(
                "evaluate.recent_days",
                "each recent span is at least one day and shorter than the window",
            );
        }
        if self.min_recent_runs == 0 {
            return invalid("evaluate.min_recent_runs", "must be at least 1");
        }
        Ok(())
    }
}

impl Default for EvaluateSettings {
    fn default() -> Self {
        Self {
            window_days: 7,
            baseline_days: 21,
            min_job_runs: 10,
            recent_days: vec![1, 2, 3],
            min_recent_runs: 4,
            percentiles: vec![crate::model::Percentile::P50, crate::model::Percentile::P95],
            min_effect_seconds: 5.0,
            min_effect_ratio: 1.5,
            false_discovery_rate: 0.05,
            clear_after: 2,
            historical_min_runs: 30,
            min_history_days: 14,
            recovery_min_runs: 6,
            fix_min_runs: 10,
            reference_lookback_days: 180,
            exclude: [
                "-network-liveness",
                "host-to-service",
                "host-to-host",
                "host-to-pod",
                "pod-to-host",
                "pod-to-pod",
                "pod-to-service",
                "-localhost-",
                "-internal-lb-",
                "kube-api-http1-external-lb",
                "kube-api-http2-external-lb",
                "openshift-api-http2-external-lb",
            ]
            .iter()
            .map(|s| (*s).to_string())
            .collect(),
            sample_worst: 3,
            sample_typical: 2,
            limits: Vec::new(),
            min_support_runs: 3,
            ci_trouble: crate::model::TroubleRules::default(),
        }
    }
}

/// One configured limit: `backend` (a glob) and any dimension values, one percentile, seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRule {
    pub backend: String,
    pub percentile: crate::model::Percentile,
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_stack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

impl LimitRule {
    /// The dimension values the rule requires.
    pub fn dimensions(&self) -> Vec<(crate::model::Dimension, String)> {
        use crate::model::Dimension as D;
        [
            (D::Release, &self.release),
            (D::FromRelease, &self.from_release),
            (D::UpgradeType, &self.upgrade_type),
            (D::Platform, &self.platform),
            (D::Architecture, &self.architecture),
            (D::Network, &self.network),
            (D::NetworkStack, &self.network_stack),
            (D::Topology, &self.topology),
        ]
        .into_iter()
        .filter_map(|(d, v)| v.clone().map(|v| (d, v)))
        .collect()
    }

    pub fn set(&mut self, d: crate::model::Dimension, value: &str) {
        use crate::model::Dimension as D;
        let slot = match d {
            D::Release => &mut self.release,
            D::FromRelease => &mut self.from_release,
            D::UpgradeType => &mut self.upgrade_type,
            D::Platform => &mut self.platform,
            D::Architecture => &mut self.architecture,
            D::Network => &mut self.network,
            D::NetworkStack => &mut self.network_stack,
            D::Topology => &mut self.topology,
            D::MasterNodesUpdated => return,
        };
        *slot = Some(value.to_string());
    }

    /// `image-registry-* platform=metal P50 ≤ 5s`
    pub fn describe(&self) -> String {
        let mut s = self.backend.clone();
        for (d, v) in self.dimensions() {
            s.push_str(&format!(" {d}={v}"));
        }
        format!("{s} {} ≤ {}s", self.percentile, self.seconds)
    }
}

/// When scheduled work runs. Cron expressions are standard 5-field Unix cron
/// (`minute hour day-of-month month day-of-week`, Sunday = 0 or 7, names allowed), read in
/// `timezone`; a 6-field expression takes seconds first.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleSettings {
    /// Evaluation cycles. Default: every 6 hours, on the hour.
    pub evaluate: String,
    /// IANA time zone the expressions are read in (daylight saving handled).
    pub timezone: String,
    /// Sources `sheriff serve` ingests on their own schedules, taking only new runs.
    pub ingest: Vec<IngestSchedule>,
}

/// One source polled by `sheriff serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestSchedule {
    /// A local folder or `gs://bucket/prefix`, as for `sheriff ingest`.
    pub source: String,
    /// Cron expression (read in `schedule.timezone`).
    pub cron: String,
    /// Only runs that started within this many days (default 14), so a poll stays cheap.
    #[serde(default = "default_ingest_days")]
    pub since_days: u32,
}

fn default_ingest_days() -> u32 {
    14
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        Self { evaluate: "0 */6 * * *".into(), timezone: "UTC".into(), ingest: Vec::new() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    /// `sqlite://PATH` (created on first use) or `postgres://USER@HOST:PORT/DB`.
    pub url: DatabaseUrl,
    /// Upper bound of pooled connections.
    pub max_connections: u32,
    /// Seconds to wait for a free connection before a query fails.
    pub acquire_timeout_secs: u64,
    /// PostgreSQL cancels a statement that runs longer than this (its `statement_timeout`): a
    /// hung server or a held lock fails as a storage error instead of waiting without end.
    pub statement_timeout_secs: u64,
    /// PostgreSQL password, when it is not in the URL. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
    /// A file holding the PostgreSQL password (its first line is used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::from_str("sqlite://sheriff.db").expect("the default URL is valid"),
            max_connections: 8,
            acquire_timeout_secs: 10,
            statement_timeout_secs: 300,
            password: None,
            password_file: None,
        }
    }
}

/// A validated database URL: the scheme picks the engine.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    raw: String,
    engine: Engine,
}

/// The two storage engines sheriff supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl DatabaseUrl {
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The URL as given, password included: only for opening the connection.
    pub fn expose(&self) -> &str {
        &self.raw
    }

    /// The URL with any password replaced, safe to print and log.
    pub fn redacted(&self) -> String {
        redact_url_password(&self.raw)
    }
}

fn redact_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // The password may hold `/` or `@`: the user information ends at the last `@`.
    let mut out = match before_query.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:[redacted]@{host}"),
            None => format!("{scheme}://{userinfo}@{host}"),
        },
        None => format!("{scheme}://{before_query}"),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.to_ascii_lowercase().contains("password") => format!("{k}=[redacted]"),
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

impl FromStr for DatabaseUrl {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        let engine = if let Some(path) = raw.strip_prefix("sqlite:") {
            let path = path.trim_start_matches("//");
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err("a sqlite URL needs a file path, e.g. sqlite://sheriff.db".into());
            }
            Engine::Sqlite
        } else if let Some(rest) =
            raw.strip_prefix("postgres://").or_else(|| raw.strip_prefix("postgresql://"))
        {
            let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
            if host.is_empty() || host.starts_with('/') {
                return Err("a postgres URL needs a host, e.g. postgres://sheriff@db:5432/sheriff".into());
            }
            Engine::Postgres
        } else {
            return Err(format!(
                "`{}` is not a database URL sheriff supports: use sqlite://PATH or postgres://USER@HOST/DB",
                redact_url_password(raw)
            ));
        };
        Ok(Self { raw: raw.to_string(), engine })
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for DatabaseUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted())
    }
}

impl<'de> Deserialize<'de> for DatabaseUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Address `sheriff serve` listens on.
    pub listen: String,
    /// Largest pushed run (`POST /api/v1/runs`) accepted, in bytes.
    pub max_body_bytes: usize,
    /// Largest Slack request (`/slack/commands`, `/slack/interactions`) accepted, in bytes. Its
    /// signature can only be checked once the body is read, so it is kept small: real ones are
    /// a few KB, a modal submission a few tens. Larger ones are refused (413) before any is read
    /// when they say their length. Other routes take no body worth speaking of (64 KiB).
    pub slack_max_body_bytes: usize,
    /// sheriff's own address as people reach it (e.g. `https://sheriff.example.com`), for
    /// "full view" links in Slack and Jira; empty: no links.
    pub public_url: String,
    /// When set, the pages and their JSON (`/`, `/incidents/…`, `/explore`, `GET /api/v1/…`)
    /// require it, as a bearer token or as the password of basic auth. Environment or file
    /// only; without it the pages are open (run them behind an authenticating proxy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_token_file: Option<PathBuf>,
    /// A request's head must arrive within this many seconds.
    pub header_timeout_secs: u64,
    /// A connection with no traffic for this many seconds is closed.
    pub idle_timeout_secs: u64,
    /// A request, its body included, is answered within this many seconds, else 408.
    pub request_timeout_secs: u64,
    /// No connection lives longer than this many seconds (HTTP/2 ones too): it is asked to
    /// close, and closed once its request in progress is answered.
    pub max_connection_secs: u64,
    /// Connections open at once, at most; the next waits in the listen queue. Well below the
    /// process's file limit, so the database's connections and health checks always have room.
    pub max_connections: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 32 * 1024 * 1024,
            slack_max_body_bytes: 256 * 1024,
            public_url: String::new(),
            pages_token: None,
            pages_token_file: None,
            header_timeout_secs: 10,
            idle_timeout_secs: 75,
            request_timeout_secs: 60,
            max_connection_secs: HOUR,
            max_connections: 1_024,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    /// `text` for people, `json` for log collectors.
    pub format: LogFormat,
    /// A tracing filter used when `RUST_LOG` is not set.
    pub level: String,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self { format: LogFormat::Text, level: "info".into() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestSettings {
    /// When interval files are read: `auto` (on demand for `gs://` sources, at ingest for
    /// local trees), `eager` (at ingest) or `on_demand` (only where a file is, at ingest; its
    /// content when attribution uses the run). `bigquery`: runs from a `bq://` source read
    /// their intervals on demand from the dataset's intervals table (`bigquery.intervals_table`);
    /// bucket sources as `auto`. Pushed runs are always read at ingest.
    pub intervals: IntervalsMode,
    /// Interval files (e2e-events, e2e-timelines) larger than this are skipped with a logged reason.
    pub max_interval_file_bytes: u64,
    /// Any other artifact larger than this is rejected as malformed.
    pub max_file_bytes: u64,
    /// Runs read in parallel.
    pub concurrency: usize,
    /// Bearer token that `POST /api/v1/runs` requires. Environment or file only; without one
    /// the push API is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_token_file: Option<PathBuf>,
    /// A push's storing (the run and its ingest log) is given up after this many seconds: the
    /// pusher gets 503 "storage unavailable, retry later" at once rather than a 408 when the
    /// database hangs.
    pub push_store_timeout_secs: u64,
    /// Pushes read and stored at once, at most: each holds its body (up to
    /// `server.max_body_bytes`) and the files decoded from it, so memory is bounded by this many
    /// bodies rather than by how many CI systems push together; one more is answered 503 with
    /// `Retry-After`.
    pub push_concurrency: usize,
}

/// When a run's interval files are read: see [`IngestSettings::intervals`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalsMode {
    #[default]
    Auto,
    Eager,
    OnDemand,
    /// From the BigQuery intervals table, on demand, for runs read from BigQuery.
    Bigquery,
}

impl IntervalsMode {
    /// Whether a source's interval files are left to be fetched on demand.
    pub fn on_demand(self, gcs_source: bool) -> bool {
        match self {
            IntervalsMode::Auto | IntervalsMode::Bigquery => gcs_source,
            IntervalsMode::Eager => false,
            IntervalsMode::OnDemand => true,
        }
    }
}

impl Default for IngestSettings {
    fn default() -> Self {
        Self {
            intervals: IntervalsMode::Auto,
            max_interval_file_bytes: 64 * 1024 * 1024,
            max_file_bytes: 8 * 1024 * 1024,
            concurrency: 8,
            push_token: None,
            push_token_file: None,
            push_store_timeout_secs: 10,
            push_concurrency: 4,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcsSettings {
    /// Base URL of the GCS JSON API; tests point it at a local fake.
    pub api_url: String,
    /// Parallel downloads.
    pub concurrency: usize,
    /// Seconds before one request times out.
    pub timeout_secs: u64,
    /// Attempts for a request answered 429 or 5xx.
    pub max_attempts: u32,
    /// OAuth access token for a private bucket. Environment or file only; public buckets need none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the access token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

impl Default for GcsSettings {
    fn default() -> Self {
        Self {
            api_url: "https://storage.googleapis.com".into(),
            concurrency: 16,
            timeout_secs: 60,
            max_attempts: 5,
            token: None,
            token_file: None,
        }
    }
}

/// The BigQuery source (`sheriff ingest bq://PROJECT/DATASET`); `[bigquery]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BigQuerySettings {
    /// Base URL of the BigQuery REST API; tests point it at an emulator or a local fake.
    pub api_url: String,
    /// The most bytes one query may bill (`maximumBytesBilled`): BigQuery refuses a query that
    /// would bill more, before it runs.
    pub max_bytes_billed: u64,
    /// Hours before the watermark an incremental ingest reads again, for rows loaded late.
    pub overlap_hours: u32,
    /// Rows asked for per page of results.
    pub page_rows: u32,
    /// The largest response body read, in bytes; a larger page is an error.
    pub max_response_bytes: u64,
    /// Seconds before one request times out.
    pub timeout_secs: u64,
    /// Attempts for a request answered 429 or 5xx (with backoff, honouring `Retry-After`).
    pub max_attempts: u32,
    /// OAuth access token. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the access token; read again for every query, so a refreshed token is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// A service-account key file (JSON): sheriff signs a JWT with its key and exchanges it at
    /// the key's `token_uri` for an access token, renewed before it expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// The intervals table read with `ingest.intervals = "bigquery"`: `TABLE` in the source's
    /// dataset, or `DATASET.TABLE` in its project (the CI loads them to `ci_data_autodl`).
    pub intervals_table: String,
    /// The most interval rows read for one run; a run with more is left without interval
    /// evidence, as an interval file over `ingest.max_interval_file_bytes` is.
    pub max_interval_rows: u64,
}

impl Default for BigQuerySettings {
    fn default() -> Self {
        Self {
            api_url: "https://bigquery.googleapis.com".into(),
            max_bytes_billed: 10 * 1024 * 1024 * 1024,
            overlap_hours: 48,
            page_rows: 10_000,
            max_response_bytes: 64 * 1024 * 1024,
            timeout_secs: 120,
            max_attempts: 5,
            token: None,
            token_file: None,
            credentials_file: None,
            intervals_table: "e2e_intervals".into(),
            max_interval_rows: 250_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlackSettings {
    /// Base URL of the Slack Web API; tests point it at a local fake.
    pub api_url: String,
    /// Channel id (or name) for summaries and incidents when no routing rule matches.
    pub channel: String,
    /// The workspace's address (`https://example.slack.com`), for links to incident threads on
    /// the pages; empty: the links open the channel.
    pub workspace_url: String,
    /// Incidents (and their summary lines) go to the first route that matches.
    pub routes: Vec<SlackRoute>,
    /// The slash command's name, as configured in the Slack app.
    pub command: String,
    /// Slack user ids (`U…`) allowed to silence, acknowledge, file and evaluate.
    pub authorized_users: Vec<String>,
    /// Slack user-group handles or ids (`S…`) whose members are allowed too. Slack sends no
    /// group membership with a request, so sheriff asks `usergroups.users.list`.
    pub authorized_groups: Vec<String>,
    /// Messages to one channel at most this often (Slack allows about one a second).
    pub min_post_interval_ms: u64,
    /// Seconds a Web API call may take (fractions allowed).
    pub timeout_secs: f64,
    /// Bot token (`xoxb-…`). Environment or file only. Without one, messages go to the console.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_token_file: Option<PathBuf>,
    /// Signing secret that verifies requests from Slack. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret_file: Option<PathBuf>,
    /// The previous signing secret, accepted too while a rotation is under way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret_previous: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret_previous_file: Option<PathBuf>,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            api_url: "https://slack.com/api".into(),
            channel: String::new(),
            workspace_url: String::new(),
            routes: Vec::new(),
            command: "/sheriff".into(),
            authorized_users: Vec::new(),
            authorized_groups: Vec::new(),
            min_post_interval_ms: 1_000,
            timeout_secs: 10.0,
            bot_token: None,
            bot_token_file: None,
            signing_secret: None,
            signing_secret_file: None,
            signing_secret_previous: None,
            signing_secret_previous_file: None,
        }
    }
}

/// Sends matching incidents to a channel. Every field given must match (globs allowed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackRoute {
    pub channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// Matches incidents specific to one platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

/// Which Jira REST API to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum JiraApi {
    /// REST v2, wiki-markup text: Jira Server and Data Center.
    #[default]
    V2,
    /// REST v3, Atlassian Document Format: Jira Cloud.
    V3,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JiraSettings {
    /// Base URL of the Jira instance, e.g. `https://issues.example.com`. Empty: Jira is off.
    pub url: String,
    /// `v2` (Server/Data Center, wiki markup) or `v3` (Cloud, Atlassian Document Format).
    pub api: JiraApi,
    /// Project key issues are filed in.
    pub project: String,
    pub issue_type: String,
    /// User (email on Jira Cloud) for basic authentication; empty means bearer-token auth.
    pub user: String,
    /// API token or personal access token. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// Labels on every issue, besides the incident's fingerprint.
    pub labels: Vec<String>,
    /// Set the issue's component to the incident's component (the project must know it).
    pub set_component: bool,
    /// The component of an issue whose cause is the test environment (the attribution files it
    /// against the CI harness): the product's component is only consulted, so it is never set.
    /// Unset: no component (the project's default applies) and the Ask names the harness.
    pub harness_component: Option<String>,
    /// Set "affects version" to the release, when the project has such a version.
    pub affects_version_prefix: Option<String>,
    /// Severity band (`<2x`, `2-5x`, `5-10x`, `>=10x`) → priority name; unlisted: no priority.
    pub priorities: std::collections::BTreeMap<String, String>,
    /// New issues per evaluation cycle, at most; the rest wait and are reported in Slack.
    pub max_created_per_cycle: usize,
    /// A recurrence within this many days of the issue's resolution reopens it; later, a new
    /// issue (linked to the old one) is filed.
    pub reopen_window_days: u32,
    /// Transition applied on resolution (e.g. "Done"); empty: comment only.
    pub resolve_transition: String,
    /// Transition that reopens (e.g. "Reopen"); empty: comment only.
    pub reopen_transition: String,
    /// Resolutions that mean "leave it": such an issue is never reopened.
    pub never_reopen: Vec<String>,
    /// After a Won't Fix, file a new linked issue on recurrence (otherwise stay silent in Jira).
    pub file_after_never_reopen: bool,
    /// Seconds a request may take (fractions allowed).
    pub timeout_secs: f64,
    /// Statuses that claim a fix (any case). A done status claims one only with a resolution
    /// of `fix_resolutions`.
    pub fix_statuses: Vec<String>,
    pub fix_resolutions: Vec<String>,
    /// The issue field that lists linked pull requests (Red Hat's "Git Pull Request"); empty:
    /// remote links only.
    pub pull_request_field: String,
    /// Transition applied after a failed fix (e.g. "ASSIGNED"); empty: comment only.
    pub failed_fix_transition: String,
}

impl Default for JiraSettings {
    fn default() -> Self {
        Self {
            url: String::new(),
            api: JiraApi::V2,
            project: String::new(),
            issue_type: "Bug".into(),
            user: String::new(),
            token: None,
            token_file: None,
            labels: vec!["sheriff".into()],
            set_component: true,
            harness_component: None,
            affects_version_prefix: None,
            priorities: std::collections::BTreeMap::new(),
            max_created_per_cycle: 3,
            reopen_window_days: 14,
            resolve_transition: String::new(),
            reopen_transition: String::new(),
            never_reopen: vec!["Won't Fix".into(), "Not a Bug".into(), "Won't Do".into()],
            file_after_never_reopen: false,
            timeout_secs: 30.0,
            fix_statuses: vec!["MODIFIED".into(), "ON_QA".into(), "Verified".into()],
            fix_resolutions: vec!["Done".into(), "Fixed".into(), "Done-Errata".into()],
            pull_request_field: "customfield_12310220".into(),
            failed_fix_transition: String::new(),
        }
    }
}

impl JiraSettings {
    /// Jira is used when a URL and a project are configured.
    pub fn enabled(&self) -> bool {
        !self.url.is_empty() && !self.project.is_empty()
    }
}

/// Delivery of side effects (Slack, Jira).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutboxSettings {
    /// Attempts before an entry is dead-lettered (`sheriff status` shows it; `sheriff outbox
    /// retry` revives it).
    pub max_attempts: u32,
    /// Exponential backoff between attempts, with full jitter, capped; a `Retry-After` wins.
    pub backoff_base_secs: u64,
    pub backoff_max_secs: u64,
    /// How long a worker holds an entry it is delivering; a worker that dies releases it when
    /// this runs out.
    pub lease_secs: u64,
    /// `sheriff evaluate` delivers for at most this long before it exits; the rest waits for the
    /// next run or for `sheriff serve`.
    pub evaluate_timeout_secs: u64,
}

impl Default for OutboxSettings {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            backoff_base_secs: 5,
            backoff_max_secs: 900,
            lease_secs: 120,
            evaluate_timeout_secs: 60,
        }
    }
}

/// The settings that hold secrets, as `(section, key)`; each has a `KEY_file` companion.
const SECRET_KEYS: &[(&str, &str)] = &[
    ("database", "password"),
    ("gcs", "token"),
    ("bigquery", "token"),
    ("ingest", "push_token"),
    ("server", "pages_token"),
    ("slack", "bot_token"),
    ("slack", "signing_secret"),
    ("slack", "signing_secret_previous"),
    ("jira", "token"),
    ("github", "token"),
];

/// Why the configuration could not be loaded. The message names the key at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error(
        "`{section}.{key}` is a secret and may not be written in {path}; set {ENV_PREFIX}{upper_section}__{upper_key} or `{section}.{key}_file` instead",
        upper_section = section.to_uppercase(),
        upper_key = key.to_uppercase()
    )]
    SecretInFile { path: PathBuf, section: String, key: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error("cannot read secret file for `{key}` at {}: {source}", shown_path(path))]
    SecretFile { key: String, path: PathBuf, source: std::io::Error },
    /// An empty secret is a deployment accident (a missing Secret key, an unset `${VAR}` in a
    /// template), never a wish for no secret: it would let an empty credential in.
    #[error(
        "`{key}` is set but empty; give the secret, or unset {ENV_PREFIX}{var} to do without it",
        var = key.replace('.', "__").to_uppercase()
    )]
    EmptySecret { key: String },
    #[error("`{key}_file` names a file whose first line is empty; the secret must be on its first line")]
    EmptySecretFile { key: String },
}

/// A secret file's path as errors show it. A value whose folder does not exist is most likely
/// the secret itself, put in the `_FILE` variable by mistake (base64 tokens hold `/`), and is
/// not echoed; neither is one right under `/`, which a token starting with `/` would look like.
fn shown_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let in_a_real_folder =
        path.parent().is_some_and(|p| !p.as_os_str().is_empty() && p != Path::new("/") && p.is_dir());
    if in_a_real_folder {
        text.into_owned()
    } else {
        format!(
            "a value of {} characters that is not a path (is the secret itself in the _FILE variable?)",
            text.chars().count()
        )
    }
}

impl Settings {
    /// Reads `path` (when it exists, or always when `explicit`), then the process environment.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::load_from(path, &vars)
    }

    /// Like [`Settings::load`] with an explicit environment, so tests do not touch the process's.
    pub fn load_from(path: Option<&Path>, env: &[(String, String)]) -> Result<Self, ConfigError> {
        let (file, required) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_CONFIG_PATH), false),
        };
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if required || file.exists() {
            let text = std::fs::read_to_string(&file)
                .map_err(|source| ConfigError::Read { path: file.clone(), source })?;
            check_no_secrets_in_file(&file, &text)?;
            figment = figment.merge(Toml::string(&text));
        }
        let env_pairs: Vec<(String, String)> =
            env.iter().filter(|(k, _)| k.starts_with(ENV_PREFIX)).cloned().collect();
        let env_keys: Vec<String> = env_pairs.iter().map(|(k, _)| k.clone()).collect();
        figment = figment.merge(env_provider(env_pairs));
        let mut settings: Settings = figment.extract().map_err(|e| {
            ConfigError::Invalid(
                e.into_iter()
                    .map(|e| describe_figment_error(&e, &file, &env_keys))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        settings.resolve_secret_files()?;
        settings.validate()?;
        Ok(settings)
    }

    fn resolve_secret_files(&mut self) -> Result<(), ConfigError> {
        fn resolve(key: &str, value: &mut Option<Secret>, file: &Option<PathBuf>) -> Result<(), ConfigError> {
            if let Some(v) = value {
                if v.0.trim().is_empty() {
                    return Err(ConfigError::EmptySecret { key: key.into() });
                }
                return Ok(());
            }
            if let Some(path) = file {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::SecretFile {
                    key: key.into(),
                    path: path.clone(),
                    source,
                })?;
                let first = text.lines().next().unwrap_or_default().trim().to_string();
                if first.is_empty() {
                    return Err(ConfigError::EmptySecretFile { key: key.into() });
                }
                *value = Some(Secret(first));
            }
            Ok(())
        }
        resolve("database.password", &mut self.database.password, &self.database.password_file)?;
        resolve("gcs.token", &mut self.gcs.token, &self.gcs.token_file)?;
        resolve("bigquery.token", &mut self.bigquery.token, &self.bigquery.token_file)?;
        resolve("ingest.push_token", &mut self.ingest.push_token, &self.ingest.push_token_file)?;
        resolve("server.pages_token", &mut self.server.pages_token, &self.server.pages_token_file)?;
        resolve("slack.bot_token", &mut self.slack.bot_token, &self.slack.bot_token_file)?;
        resolve("slack.signing_secret", &mut self.slack.signing_secret, &self.slack.signing_secret_file)?;
        let previous = &mut self.slack.signing_secret_previous;
        resolve("slack.signing_secret_previous", previous, &self.slack.signing_secret_previous_file)?;
        resolve("jira.token", &mut self.jira.token, &self.jira.token_file)?;
        resolve("github.token", &mut self.github.token, &self.github.token_file)?;
        Ok(())
    }

    /// `bigquery.intervals_table` goes into the SQL as a table path (identifiers cannot be query
    /// parameters): `TABLE` or `DATASET.TABLE`, each a plain BigQuery name.
    fn validate_intervals_table(&self) -> Result<(), ConfigError> {
        let table = &self.bigquery.intervals_table;
        let parts: Vec<&str> = table.split('.').collect();
        let plain = |p: &&str| {
            (1..=1024).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if parts.len() > 2 || !parts.iter().all(plain) {
            let why = format!("`{table}` is not TABLE or DATASET.TABLE (letters, digits and `_`)");
            return Err(ConfigError::Invalid(format!("`bigquery.intervals_table`: {why}")));
        }
        Ok(())
    }

    /// Checks values that types alone cannot.
    fn validate_retention(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| Err(ConfigError::Invalid(format!("`{key}`: {why}")));
        let r = &self.retention;
        let windows = self.evaluate.window_days.saturating_add(self.evaluate.baseline_days);
        if r.samples_days < windows.max(28) {
            return invalid(
                "retention.samples_days",
                "must cover the evaluation's window and baseline, and at least 28 days",
            );
        }
        if r.intervals_days == 0 || r.intervals_days > r.samples_days {
            return invalid("retention.intervals_days", "must be between 1 and retention.samples_days");
        }
        if !(1..=5_000).contains(&r.batch_runs) {
            return invalid("retention.batch_runs", "must be between 1 and 5000");
        }
        if let Err(why) = crate::cron::Schedule::parse(&r.schedule, &self.schedule.timezone) {
            return invalid("retention.schedule", &why);
        }
        Ok(())
    }

    /// GitHub's numbers within range, and each outside repository `owner/name` with a relative
    /// path, so neither can leave the `/repos/{owner}/{repo}/commits` request it is put in.
    fn validate_github(&self) -> Result<(), ConfigError> {
        let gh = &self.github;
        let ranges: [(&str, u64, u64, u64); 4] = [
            ("github.timeout_secs", gh.timeout_secs, 1, HOUR),
            ("github.max_pages", gh.max_pages.into(), 1, 100),
            ("github.max_response_bytes", gh.max_response_bytes, 1_024, 1 << 30),
            ("github.max_wait_secs", gh.max_wait_secs, 0, 600),
        ];
        if let Some((key, _, min, max)) = ranges.iter().find(|(_, v, min, max)| !(min..=max).contains(&v)) {
            return Err(ConfigError::Invalid(format!("`{key}`: must be between {min} and {max}")));
        }
        let plain =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        for r in &self.github.repositories {
            let named = r.repository.split_once('/').is_some_and(|(o, n)| plain(o) && plain(n) && n != "..");
            let path_ok = r.path.is_empty()
                || (!r.path.starts_with('/') && r.path.split('/').all(|p| plain(p) && p != ".." && p != "."));
            let why = if !named {
                "a repository is owner/name"
            } else if !path_ok {
                "a path is relative, like ci-operator/step-registry"
            } else if r.platform.trim().is_empty() {
                "a platform is named, or * for every platform"
            } else {
                continue;
            };
            return Err(ConfigError::Invalid(format!("`github.repositories` ({}): {why}", r.repository)));
        }
        Ok(())
    }

    /// Every number within a range sheriff works with: a value that passes here never makes
    /// a date, a timer or an allocation overflow later.
    // Long: one table of every numeric setting with its range, read in one place.
    fn validate_ranges(&self) -> Result<(), ConfigError> {
        const YEARS: u64 = 36_500;
        let (e, r, o) = (&self.evaluate, &self.retention, &self.outbox);
        let bq = &self.bigquery;
        let whole: [(&str, u64, u64, u64); 49] = [
            ("database.max_connections", self.database.max_connections.into(), 1, 10_000),
            ("database.acquire_timeout_secs", self.database.acquire_timeout_secs, 1, HOUR),
            ("database.statement_timeout_secs", self.database.statement_timeout_secs, 1, DAY),
            ("ingest.push_store_timeout_secs", self.ingest.push_store_timeout_secs, 1, HOUR),
            ("server.max_body_bytes", self.server.max_body_bytes as u64, 1, 1 << 30),
            ("server.slack_max_body_bytes", self.server.slack_max_body_bytes as u64, 1_024, 16 << 20),
            ("server.header_timeout_secs", self.server.header_timeout_secs, 1, DAY),
            ("server.idle_timeout_secs", self.server.idle_timeout_secs, 1, DAY),
            ("server.request_timeout_secs", self.server.request_timeout_secs, 1, DAY),
            ("server.max_connection_secs", self.server.max_connection_secs, 1, 7 * DAY),
            ("server.max_connections", self.server.max_connections as u64, 1, 100_000),
            ("ingest.max_interval_file_bytes", self.ingest.max_interval_file_bytes, 1, 1 << 32),
            ("ingest.max_file_bytes", self.ingest.max_file_bytes, 1, 1 << 32),
            ("ingest.concurrency", self.ingest.concurrency as u64, 1, 1_024),
            ("ingest.push_concurrency", self.ingest.push_concurrency as u64, 1, 1_024),
            ("gcs.concurrency", self.gcs.concurrency as u64, 1, 1_024),
            ("gcs.timeout_secs", self.gcs.timeout_secs, 1, HOUR),
            ("gcs.max_attempts", self.gcs.max_attempts.into(), 1, 100),
            ("bigquery.max_bytes_billed", bq.max_bytes_billed, 1, 1 << 50),
            ("bigquery.overlap_hours", bq.overlap_hours.into(), 0, 24 * 366),
            ("bigquery.page_rows", bq.page_rows.into(), 1, 100_000),
            ("bigquery.max_response_bytes", bq.max_response_bytes, 1_024, 1 << 31),
            ("bigquery.timeout_secs", bq.timeout_secs, 1, HOUR),
            ("bigquery.max_attempts", bq.max_attempts.into(), 1, 100),
            ("bigquery.max_interval_rows", bq.max_interval_rows, 1, 10_000_000),
            ("slack.min_post_interval_ms", self.slack.min_post_interval_ms, 0, 600_000),
            ("jira.max_created_per_cycle", self.jira.max_created_per_cycle as u64, 0, 10_000),
            ("jira.reopen_window_days", self.jira.reopen_window_days.into(), 0, YEARS),
            ("release_controller.timeout_secs", self.release_controller.timeout_secs, 1, HOUR),
            ("attribute.evidence_runs", self.attribute.evidence_runs as u64, 0, 1_000),
            ("evaluate.window_days", e.window_days.into(), 1, 366),
            ("evaluate.baseline_days", e.baseline_days.into(), 1, 3_660),
            ("evaluate.min_job_runs", e.min_job_runs, 1, 1_000_000),
            ("evaluate.min_recent_runs", e.min_recent_runs, 1, 1_000_000),
            ("evaluate.clear_after", e.clear_after.into(), 0, 10_000),
            ("evaluate.historical_min_runs", e.historical_min_runs, 0, 1_000_000),
            ("evaluate.min_history_days", e.min_history_days.into(), 0, 3_660),
            ("evaluate.recovery_min_runs", e.recovery_min_runs as u64, 0, 1_000_000),
            ("evaluate.fix_min_runs", e.fix_min_runs, 0, 1_000_000),
            ("evaluate.reference_lookback_days", e.reference_lookback_days.into(), 0, 3_660),
            ("evaluate.sample_worst", e.sample_worst as u64, 0, 1_000),
            ("evaluate.sample_typical", e.sample_typical as u64, 0, 1_000),
            ("evaluate.min_support_runs", e.min_support_runs, 0, 1_000_000),
            ("retention.samples_days", r.samples_days.into(), 1, YEARS),
            ("outbox.max_attempts", o.max_attempts.into(), 1, 1_000),
            ("outbox.backoff_base_secs", o.backoff_base_secs, 0, DAY),
            ("outbox.backoff_max_secs", o.backoff_max_secs, 0, 7 * DAY),
            ("outbox.lease_secs", o.lease_secs, 1, DAY),
            ("outbox.evaluate_timeout_secs", o.evaluate_timeout_secs, 1, DAY),
        ];
        for (key, value, min, max) in whole {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::Invalid(format!("`{key}`: must be between {min} and {max}")));
            }
        }
        let seconds: [(&str, f64, f64, f64); 4] = [
            ("slack.timeout_secs", self.slack.timeout_secs, 0.01, 600.0),
            ("jira.timeout_secs", self.jira.timeout_secs, 0.01, 600.0),
            ("evaluate.min_effect_seconds", e.min_effect_seconds, 0.0, DAY as f64),
            ("evaluate.min_effect_ratio", e.min_effect_ratio, 1.0, 1_000.0),
        ];
        for (key, value, min, max) in seconds {
            // NaN is in no range
            if !(min..=max).contains(&value) {
                return Err(ConfigError::Invalid(format!("`{key}`: must be between {min} and {max}")));
            }
        }
        if let Some(d) = self.schedule.ingest.iter().find(|i| u64::from(i.since_days) > YEARS) {
            return Err(ConfigError::Invalid(format!(
                "`schedule.ingest.since_days`: {}: must be at most {YEARS}",
                d.source
            )));
        }
        Ok(())
    }

    /// The CI-trouble rules and the configured limits within range: they are bound into SQL
    /// arithmetic (a day count subtracted from a day) and compared with seconds, so a value out
    /// of range would fail every ingest on PostgreSQL ("bigint out of range", counted as bad
    /// runs) or quietly leave every run out of evaluation.
    fn validate_trouble_and_limits(&self) -> Result<(), ConfigError> {
        let t = &self.evaluate.ci_trouble;
        let whole: [(&str, i128, i128, i128); 5] = [
            (
                "evaluate.ci_trouble.liveness_allowance_seconds",
                t.liveness_allowance_seconds.into(),
                0,
                DAY.into(),
            ),
            ("evaluate.ci_trouble.all_backends_min_families", t.all_backends_min_families as i128, 0, 10_000),
            ("evaluate.ci_trouble.broken_min_runs", t.broken_min_runs.into(), 0, 1_000_000),
            ("evaluate.ci_trouble.broken_min_days", t.broken_min_days.into(), 0, 3_660),
            ("evaluate.ci_trouble.broken_horizon_days", t.broken_horizon_days.into(), 1, 3_660),
        ];
        for (key, value, min, max) in whole {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::Invalid(format!("`{key}`: must be between {min} and {max}")));
            }
        }
        let shares = [
            ("evaluate.ci_trouble.all_backends_share", t.all_backends_share),
            ("evaluate.ci_trouble.broken_share", t.broken_share),
        ];
        // NaN is in no range
        if let Some((key, _)) = shares.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
            return Err(ConfigError::Invalid(format!("`{key}`: must be between 0 and 1")));
        }
        if let Some(l) = self.evaluate.limits.iter().find(|l| !(0.0..=DAY as f64).contains(&l.seconds)) {
            return Err(ConfigError::Invalid(format!(
                "`evaluate.limits.seconds`: {}: must be between 0 and 86400",
                l.backend
            )));
        }
        Ok(())
    }

    /// The URLs sheriff links to or calls: http(s) with a host; https where a credential is
    /// sent, except to this machine (a local proxy or a test's fake).
    fn validate_urls(&self) -> Result<(), ConfigError> {
        let credentials = |s: &Option<Secret>| s.is_some();
        let urls: Vec<(String, &str, bool)> = [
            ("gcs.api_url".to_string(), self.gcs.api_url.as_str(), credentials(&self.gcs.token)),
            (
                "bigquery.api_url".to_string(),
                self.bigquery.api_url.as_str(),
                credentials(&self.bigquery.token),
            ),
            ("slack.api_url".to_string(), self.slack.api_url.as_str(), credentials(&self.slack.bot_token)),
            ("jira.url".to_string(), self.jira.url.as_str(), credentials(&self.jira.token)),
            ("github.api_url".to_string(), self.github.api_url.as_str(), credentials(&self.github.token)),
            ("server.public_url".to_string(), self.server.public_url.as_str(), false),
            ("slack.workspace_url".to_string(), self.slack.workspace_url.as_str(), false),
        ]
        .into_iter()
        .chain(
            self.release_controller
                .urls
                .iter()
                .map(|(arch, url)| (format!("release_controller.urls.{arch}"), url.as_str(), false)),
        )
        .collect();
        let optional = ["jira.url", "server.public_url", "slack.workspace_url"];
        for (key, url, secret) in urls {
            if url.is_empty() && optional.contains(&key.as_str()) {
                continue;
            }
            if let Err(why) = check_url(url, secret) {
                return Err(ConfigError::Invalid(format!("`{key}`: {why}")));
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| Err(ConfigError::Invalid(format!("`{key}`: {why}")));
        if let Err(why) = crate::cron::Schedule::parse("0 0 * * *", &self.schedule.timezone) {
            return invalid("schedule.timezone", &why);
        }
        self.validate_ranges()?;
        self.validate_trouble_and_limits()?;
        self.validate_urls()?;
        if self.database.max_connections == 0 {
            return invalid("database.max_connections", "must be at least 1");
        }
        if self.server.listen.parse::<std::net::SocketAddr>().is_err() {
            return invalid("server.listen", "must be an address like 127.0.0.1:8080");
        }
        if self.ingest.concurrency == 0 {
            return invalid("ingest.concurrency", "must be at least 1");
        }
        if self.gcs.concurrency == 0 {
            return invalid("gcs.concurrency", "must be at least 1");
        }
        if !self.jira.url.is_empty() && self.jira.project.is_empty() {
            return invalid("jira.project", "a project key is needed when jira.url is set");
        }
        for band in self.jira.priorities.keys() {
            if !crate::model::regression::SEVERITY_BANDS.contains(&band.as_str()) {
                return invalid("jira.priorities", "keys are the severity bands <2x, 2-5x, 5-10x, >=10x");
            }
        }
        if self.outbox.max_attempts == 0 || self.outbox.lease_secs == 0 {
            return invalid("outbox.max_attempts", "attempts and lease must be at least 1");
        }
        if self.slack.routes.iter().any(|r| r.channel.is_empty()) {
            return invalid("slack.routes", "every route needs a channel");
        }
        self.validate_retention()?;
        self.validate_github()?;
        self.validate_intervals_table()?;
        let e = &self.evaluate;
        if e.window_days == 0 || e.baseline_days == 0 {
            return invalid("evaluate.window_days", "windows must be at least one day");
        }
        e.validate_recent()?;
        if !(e.false_discovery_rate > 0.0 && e.false_discovery_rate < 1.0) {
            return invalid("evaluate.false_discovery_rate", "must be between 0 and 1");
        }
        if e.min_effect_ratio < 1.0 || e.min_effect_seconds < 0.0 {
            return invalid(
                "evaluate.min_effect_ratio",
                "the ratio must be at least 1 and the seconds not negative",
            );
        }
        if e.percentiles.is_empty() {
            return invalid("evaluate.percentiles", "name at least one of P50, P75, P95, P99");
        }
        if e.min_job_runs == 0 {
            return invalid("evaluate.min_job_runs", "must be at least 1");
        }
        if let Err(why) = crate::cron::Schedule::parse(&self.schedule.evaluate, &self.schedule.timezone) {
            let key = if why.contains("time zone") { "schedule.timezone" } else { "schedule.evaluate" };
            return invalid(key, &why);
        }
        for i in &self.schedule.ingest {
            if let Err(why) = crate::cron::Schedule::parse(&i.cron, &self.schedule.timezone) {
                return invalid("schedule.ingest.cron", &format!("{}: {why}", i.source));
            }
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return invalid("log.level", &format!("not a tracing filter: {e}"));
        }
        Ok(())
    }

    /// What is missing for Slack and Jira to work, when either is half configured: one line
    /// per setting to add, naming it. Nothing configured is fine (messages go to the console,
    /// no issues are filed), and so is everything; between the two, `config check` and `serve`
    /// refuse, rather than post nowhere or refuse every slash command without a word.
    pub fn half_configured(&self) -> Vec<String> {
        let (slack, jira) = (&self.slack, &self.jira);
        let mut missing = Vec::new();
        let mut need = |key: &str, how: &str, because: &str| {
            missing.push(format!("`{key}` is missing ({how}): {because}"));
        };
        let token = slack.bot_token.is_some();
        let channel = !slack.channel.is_empty() || !slack.routes.is_empty();
        let signing = slack.signing_secret.is_some();
        if token && slack.channel.is_empty() {
            need(
                "slack.channel",
                "SHERIFF__SLACK__CHANNEL",
                "a Slack bot token is set, but no channel to post incidents to",
            );
        }
        if !token && (channel || signing) {
            let given = if channel { "a Slack channel" } else { "a Slack signing secret" };
            need(
                "slack.bot_token",
                "SHERIFF__SLACK__BOT_TOKEN or slack.bot_token_file",
                &format!("{given} is set, but without a bot token nothing is posted"),
            );
        }
        if token && !signing {
            need(
                "slack.signing_secret",
                "SHERIFF__SLACK__SIGNING_SECRET or slack.signing_secret_file",
                "a Slack bot token is set, and `serve` answers the slash command and buttons, \
                 but refuses every request it cannot verify",
            );
        }
        let url = !jira.url.is_empty();
        if !url && (!jira.project.is_empty() || jira.token.is_some()) {
            let given = if jira.token.is_some() { "a Jira token" } else { "a Jira project" };
            need("jira.url", "SHERIFF__JIRA__URL", &format!("{given} is set, but no Jira to file in"));
        }
        if url && jira.token.is_none() {
            need(
                "jira.token",
                "SHERIFF__JIRA__TOKEN or jira.token_file",
                "jira.url is set, but without a token no issue can be filed",
            );
        }
        if url && jira.api == JiraApi::V3 && jira.user.trim().is_empty() {
            need(
                "jira.user",
                "SHERIFF__JIRA__USER",
                "jira.api is \"v3\" (Jira Cloud), which takes the token with the account's email only",
            );
        }
        missing
    }

    /// The effective configuration as TOML, every secret shown as `[redacted]`.
    pub fn to_redacted_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render settings: {e}\n"))
    }
}

/// Whether `url` is an http(s) URL with a host; with `credentials` (a token travels to it),
/// https, or http to this machine only.
fn check_url(url: &str, credentials: bool) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("must be an http:// or https:// URL".into());
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err("must be an http:// or https:// URL".into());
    }
    // The host as the HTTP client will read it (a `\` ends the authority as a `/` does, so
    // `http://example.com\@localhost` goes to example.com), not as the text seems to say.
    let parsed = reqwest::Url::parse(url).ok();
    let host = parsed.as_ref().and_then(|u| u.host_str()).filter(|h| !h.is_empty() && !rest.is_empty());
    let Some(host) = host.filter(|_| !url.chars().any(|c| c.is_whitespace() || c.is_control())) else {
        return Err("must be an http:// or https:// URL with a host".into());
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let local = bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if credentials && scheme == "http" && !local {
        return Err("must be https:// (a credential is sent to it), or http:// to this machine".into());
    }
    Ok(())
}

/// `SHERIFF__SLACK__BOT_TOKEN=x` becomes `slack.bot_token = "x"`. A value that reads as a TOML
/// number or boolean is passed as one (the target type decides), except for secrets, which are
/// always strings, so a token that looks like a number stays a token. A list setting takes
/// comma-separated values (see [`list_from_env`]).
fn env_provider(pairs: Vec<(String, String)>) -> Serialized<toml::Table> {
    // Which keys are lists, and of what, is read off the defaults: every list setting has one.
    let defaults = toml::Table::try_from(Settings::default()).unwrap_or_default();
    let mut root = toml::Table::new();
    for (key, raw) in pairs {
        let path: Vec<String> = key[ENV_PREFIX.len()..].split("__").map(|p| p.to_lowercase()).collect();
        let is_secret = path.len() == 2 && SECRET_KEYS.iter().any(|(s, k)| path[0] == *s && path[1] == *k);
        let value = match default_at(&defaults, &path) {
            _ if is_secret => toml::Value::String(raw),
            Some(toml::Value::Array(items)) => list_from_env(&raw, items.first()),
            _ => scalar_from_env(&raw),
        };
        let mut table = &mut root;
        for (i, part) in path.iter().enumerate() {
            if i + 1 == path.len() {
                table.insert(part.clone(), value.clone());
            } else {
                let entry =
                    table.entry(part.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if !entry.is_table() {
                    *entry = toml::Value::Table(toml::Table::new());
                }
                table = entry.as_table_mut().expect("just made a table");
            }
        }
    }
    Serialized::defaults(root)
}

/// The default value at `path` (`["slack", "authorized_users"]`), if the defaults have one.
fn default_at<'a>(defaults: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut table = defaults;
    for part in parents {
        table = table.get(part)?.as_table()?;
    }
    table.get(last)
}

/// A list setting from the environment: `U01,U02` (comma-separated, each value trimmed, empty
/// ones dropped, so an empty variable is an empty list), or a TOML array (`[{ channel = "C1",
/// platform = "metal" }]`) for a list of tables such as `slack.routes`. Values are strings
/// unless the default list holds numbers (`evaluate.recent_days = 1,2,3`).
fn list_from_env(raw: &str, default_item: Option<&toml::Value>) -> toml::Value {
    if raw.trim_start().starts_with('[')
        && let Ok(mut t) = format!("v = {raw}").parse::<toml::Table>()
        && let Some(array @ toml::Value::Array(_)) = t.remove("v")
    {
        return array;
    }
    let numeric = matches!(
        default_item,
        Some(toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_))
    );
    let items = raw.split(',').map(str::trim).filter(|v| !v.is_empty());
    toml::Value::Array(
        items
            .map(|v| if numeric { scalar_from_env(v) } else { toml::Value::String(v.to_string()) })
            .collect(),
    )
}

/// `a = 1` parses as a TOML document, not a scalar; try the value on its own line.
fn scalar_from_env(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(v @ (toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_))) => v,
            _ => toml::Value::String(raw.to_string()),
        },
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// `database.url: <what is wrong> (from SHERIFF__DATABASE__URL)`: the key, the problem and
/// where the bad value came from.
fn describe_figment_error(e: &figment::Error, file: &Path, env_keys: &[String]) -> String {
    let key = e.path.join(".");
    // A list's element (`evaluate.recent_days.1`) came from the variable of the whole list.
    let var = (1..=e.path.len())
        .rev()
        .map(|n| format!("{ENV_PREFIX}{}", e.path[..n].join("__").to_uppercase()))
        .find(|var| env_keys.contains(var));
    let origin = if e.path.is_empty() {
        String::new()
    } else if let Some(var) = var {
        format!(" (from {var})")
    } else {
        format!(" (from {})", file.display())
    };
    // The value itself is never repeated: it may be a secret put in the wrong place.
    let kind = match &e.kind {
        figment::error::Kind::InvalidType(_, expected) => {
            format!("a value of the wrong type, expected {expected}")
        }
        figment::error::Kind::InvalidValue(_, expected) => format!("an invalid value, expected {expected}"),
        figment::error::Kind::Unsupported(_) => "a value of a type settings cannot hold".to_string(),
        other => other.to_string(),
    };
    if key.is_empty() { kind } else { format!("`{key}`: {kind}{origin}") }
}

fn check_no_secrets_in_file(path: &Path, text: &str) -> Result<(), ConfigError> {
    let value: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Syntax {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })?;
    for (section, key) in SECRET_KEYS {
        let present = value.get(*section).and_then(|s| s.as_table()).is_some_and(|t| t.contains_key(*key));
        if present {
            return Err(ConfigError::SecretInFile {
                path: path.to_path_buf(),
                section: (*section).into(),
                key: (*key).into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    fn write(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn a_secret_given_as_a_whole_section_is_not_echoed() {
        let e = Settings::load_from(Some(write("").path()), &env(&[("SHERIFF__SLACK", "xoxb-123-secret")]))
            .unwrap_err()
            .to_string();
        assert!(!e.contains("xoxb-123-secret"), "{e}");
        assert!(e.contains("slack") && e.contains("SHERIFF__SLACK"), "{e}");
    }

    #[test]
    fn list_settings_are_read_from_the_environment_comma_separated() {
        let s = Settings::load_from(
            None,
            &env(&[
                ("SHERIFF__SLACK__AUTHORIZED_USERS", "U01ALICE, U02BOB,,"),
                ("SHERIFF__SLACK__AUTHORIZED_GROUPS", "S0RELEASE"),
                ("SHERIFF__JIRA__FIX_STATUSES", "MODIFIED,ON_QA"),
                ("SHERIFF__JIRA__LABELS", ""),
                ("SHERIFF__EVALUATE__RECENT_DAYS", "1, 3"),
                ("SHERIFF__EVALUATE__PERCENTILES", "P50,P99"),
                ("SHERIFF__EVALUATE__CI_TROUBLE__LIVENESS", "*-liveness-*"),
                ("SHERIFF__SLACK__ROUTES", r#"[{ channel = "C0METAL", platform = "metal" }]"#),
            ]),
        )
        .unwrap();
        assert_eq!(s.slack.authorized_users, ["U01ALICE", "U02BOB"]);
        assert_eq!(s.slack.authorized_groups, ["S0RELEASE"]);
        assert_eq!(s.jira.fix_statuses, ["MODIFIED", "ON_QA"]);
        assert!(s.jira.labels.is_empty());
        assert_eq!(s.evaluate.recent_days, [1, 3]);
        assert_eq!(s.evaluate.percentiles, [crate::model::Percentile::P50, crate::model::Percentile::P99]);
        assert_eq!(s.evaluate.ci_trouble.liveness, ["*-liveness-*"]);
        assert_eq!(s.slack.routes.len(), 1);
        assert_eq!(
            (s.slack.routes[0].channel.as_str(), s.slack.routes[0].platform.as_deref()),
            ("C0METAL", Some("metal"))
        );
        // a user id that reads as a number stays a string
        let s = Settings::load_from(None, &env(&[("SHERIFF__JIRA__NEVER_REOPEN", "42,Won't Fix")])).unwrap();
        assert_eq!(s.jira.never_reopen, ["42", "Won't Fix"]);
        // a bad element is named with its variable
        let err = Settings::load_from(None, &env(&[("SHERIFF__EVALUATE__RECENT_DAYS", "1,two")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("evaluate.recent_days") && err.contains("SHERIFF__EVALUATE__RECENT_DAYS"),
            "{err}"
        );
    }

    #[test]
    fn half_configured_slack_or_jira_names_the_missing_setting() {
        let missing =
            |pairs: &[(&str, &str)]| Settings::load_from(None, &env(pairs)).unwrap().half_configured();
        let token = ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-1");
        let channel = ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT");
        let signing = ("SHERIFF__SLACK__SIGNING_SECRET", "s3cret");
        let jira_url = ("SHERIFF__JIRA__URL", "https://issues.example.com");
        let project = ("SHERIFF__JIRA__PROJECT", "OCPBUGS");
        let jira_token = ("SHERIFF__JIRA__TOKEN", "t0ken");
        assert!(missing(&[]).is_empty());
        assert!(missing(&[token, channel, signing, jira_url, project, jira_token]).is_empty());
        for (given, key) in [
            (vec![token, signing], "`slack.channel`"),
            (vec![channel], "`slack.bot_token`"),
            (vec![signing], "`slack.bot_token`"),
            (vec![token, channel], "`slack.signing_secret`"),
            (vec![project], "`jira.url`"),
            (vec![jira_token], "`jira.url`"),
            (vec![jira_url, project], "`jira.token`"),
            (vec![jira_url, project, jira_token, ("SHERIFF__JIRA__API", "v3")], "`jira.user`"),
        ] {
            let found = missing(&given);
            assert_eq!(found.len(), 1, "{given:?}: {found:?}");
            assert!(found[0].contains(key), "{given:?}: {found:?}");
        }
        // a route is a channel too, but the default channel is still needed for the rest
        let routes = ("SHERIFF__SLACK__ROUTES", r#"[{ channel = "C0METAL", platform = "metal" }]"#);
        assert!(missing(&[routes])[0].contains("`slack.bot_token`"));
        assert!(missing(&[routes, token, signing])[0].contains("`slack.channel`"));
        let shown = missing(&[token]).join("\n");
        assert!(!shown.contains("xoxb-1"), "{shown}");
    }

    #[test]
    fn defaults_use_a_sqlite_file() {
        let s = Settings::load_from(Some(write("").path()), &[]).unwrap();
        assert_eq!(s.database.url.engine(), Engine::Sqlite);
        assert_eq!(s.server.listen, "127.0.0.1:8080");
    }

    #[test]
    fn environment_overrides_the_file() {
        let f = write("[server]\nlisten = \"127.0.0.1:9000\"\n");
        let s = Settings::load_from(
            Some(f.path()),
            &env(&[
                ("SHERIFF__SERVER__LISTEN", "0.0.0.0:8081"),
                ("SHERIFF__DATABASE__URL", "postgres://sheriff@db:5432/sheriff"),
            ]),
        )
        .unwrap();
        assert_eq!(s.server.listen, "0.0.0.0:8081");
        assert_eq!(s.database.url.engine(), Engine::Postgres);
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it() {
        let err = Settings::load_from(Some(write("[database]\nurll = \"x\"\n").path()), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("urll"), "{err}");
        let err =
            Settings::load_from(None, &env(&[("SHERIFF__SLACK__CHANEL", "x")])).unwrap_err().to_string();
        assert!(err.contains("chanel"), "{err}");
    }

    #[test]
    fn an_invalid_database_url_is_an_error_naming_the_key() {
        let err = Settings::load_from(None, &env(&[("SHERIFF__DATABASE__URL", "mysql://x/y")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("database.url"), "{err}");
        assert!(err.contains("mysql://x/y"), "{err}");
    }

    #[test]
    fn a_secret_in_the_file_is_refused() {
        let err = Settings::load_from(Some(write("[slack]\nbot_token = \"xoxb-1\"\n").path()), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("slack.bot_token"), "{err}");
        assert!(!err.contains("xoxb-1"), "{err}");
    }

    #[test]
    fn secrets_never_print() {
        let secret_file = write("from-a-file\n");
        let s = Settings::load_from(
            None,
            &env(&[
                ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-very-secret"),
                ("SHERIFF__JIRA__TOKEN", "12345"),
                ("SHERIFF__SLACK__SIGNING_SECRET_FILE", secret_file.path().to_str().unwrap()),
                ("SHERIFF__DATABASE__URL", "postgres://u:hunter2@db/sheriff"),
            ]),
        )
        .unwrap();
        assert_eq!(s.slack.bot_token.as_ref().unwrap().expose(), "xoxb-very-secret");
        assert_eq!(s.jira.token.as_ref().unwrap().expose(), "12345");
        assert_eq!(s.slack.signing_secret.as_ref().unwrap().expose(), "from-a-file");
        let shown = format!("{}\n{:?}", s.to_redacted_toml(), s);
        for secret in ["xoxb-very-secret", "12345", "from-a-file", "hunter2"] {
            assert!(!shown.contains(secret), "{secret} leaked:\n{shown}");
        }
        assert!(shown.contains("[redacted]"));
    }

    #[test]
    fn control_backends_follow_the_connection_type_and_never_control_themselves() {
        let a = AttributeSettings::default();
        assert_eq!(
            crate::attribute::components::control_for(&a.controls, "image-registry-new-connections")
                .as_deref(),
            Some("ingress-to-console-new-connections")
        );
        assert_eq!(
            crate::attribute::components::control_for(&a.controls, "image-registry-reused-connections")
                .as_deref(),
            Some("ingress-to-console-reused-connections")
        );
        assert_eq!(
            crate::attribute::components::control_for(&a.controls, "ingress-to-console-new-connections")
                .as_deref(),
            Some("kube-api-new-connections")
        );
        let s = Settings::load_from(
            Some(write("[attribute]\nfile_against = \"platform\"\n[[attribute.controls]]\nbackend = \"*\"\ncontrol = \"ingress-to-console-new-connections\"\n").path()),
            &[],
        )
        .unwrap();
        assert_eq!(s.attribute.file_against, FileAgainst::Platform);
        assert_eq!(
            crate::attribute::components::control_for(
                &s.attribute.controls,
                "ingress-to-console-new-connections"
            ),
            None
        );
    }

    #[test]
    fn a_bad_value_names_its_key() {
        let err = Settings::load_from(None, &env(&[("SHERIFF__DATABASE__MAX_CONNECTIONS", "lots")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("database.max_connections"), "{err}");
        let err = Settings::load_from(None, &env(&[("SHERIFF__SERVER__LISTEN", "nowhere")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.listen"), "{err}");
    }

    #[test]
    fn passwords_in_any_part_of_a_database_url_are_redacted() {
        for (url, leak) in [
            ("postgres://u:s3cr3t@h:5432/db", "s3cr3t"),
            ("postgres://u@127.0.0.1:1/db?password=LEAK&sslmode=disable", "LEAK"),
            ("postgres://sheriff:s3cr3t/pw@h/db", "s3cr3t/pw"),
            ("postgres://sheriff:p@ss@h/db", "p@ss"),
        ] {
            let shown = redact_url_password(url);
            assert!(!shown.contains(leak), "{url} shows {shown}");
            assert!(shown.contains("[redacted]"), "{shown}");
        }
        assert_eq!(
            redact_url_password("postgres://u@h/db?sslmode=disable"),
            "postgres://u@h/db?sslmode=disable"
        );
        assert_eq!(redact_url_password("sqlite://sheriff.db"), "sqlite://sheriff.db");
    }

    #[test]
    fn a_secret_put_in_a_file_variable_is_not_echoed() {
        let err = Settings::load_from(None, &env(&[("SHERIFF__SLACK__BOT_TOKEN_FILE", "xoxb-oops-1234")]))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("xoxb-oops-1234"), "{err}");
        assert!(err.contains("slack.bot_token"), "{err}");
    }

    #[test]
    fn a_missing_or_empty_credential_never_matches_a_secret() {
        let empty = Secret::new("");
        assert!(!empty.matches(None));
        assert!(!empty.matches(Some("")));
        let token = Secret::new("tok");
        assert!(!token.matches(None));
        assert!(!token.matches(Some("")));
        assert!(!token.matches(Some("to")));
        assert!(token.matches(Some("tok")));
    }

    #[test]
    fn a_base64_token_with_slashes_put_in_a_file_variable_is_not_echoed() {
        for token in ["LEAK3/Zm9vYmFy+/==", "/Zm9vYmFyYmF6", "./Zm9v/YmFy"] {
            let err = Settings::load_from(None, &env(&[("SHERIFF__JIRA__TOKEN_FILE", token)]))
                .unwrap_err()
                .to_string();
            assert!(!err.contains(token), "{err}");
            assert!(err.contains("jira.token"), "{err}");
        }
        // a real path in a real folder is still shown, so a typo can be found
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("tokn");
        let err =
            Settings::load_from(None, &env(&[("SHERIFF__JIRA__TOKEN_FILE", missing.to_str().unwrap())]))
                .unwrap_err()
                .to_string();
        assert!(err.contains(missing.to_str().unwrap()), "{err}");
    }

    #[test]
    fn an_empty_secret_is_an_error_naming_its_key() {
        for (var, key) in [
            ("SHERIFF__INGEST__PUSH_TOKEN", "ingest.push_token"),
            ("SHERIFF__SERVER__PAGES_TOKEN", "server.pages_token"),
            ("SHERIFF__SLACK__SIGNING_SECRET", "slack.signing_secret"),
            ("SHERIFF__DATABASE__PASSWORD", "database.password"),
        ] {
            for value in ["", "  "] {
                let err = Settings::load_from(None, &env(&[(var, value)])).unwrap_err();
                assert!(matches!(err, ConfigError::EmptySecret { .. }), "{var}={value:?}: {err}");
                let text = err.to_string();
                assert!(text.contains(key) && text.contains(var), "{text}");
            }
        }
    }

    #[test]
    fn an_empty_secret_file_or_one_with_a_blank_first_line_is_an_error_naming_its_key() {
        for content in ["", "\n", "   \nthe-token\n"] {
            let file = write(content);
            let err = Settings::load_from(
                None,
                &env(&[("SHERIFF__SERVER__PAGES_TOKEN_FILE", file.path().to_str().unwrap())]),
            )
            .unwrap_err();
            assert!(matches!(err, ConfigError::EmptySecretFile { .. }), "{content:?}: {err}");
            assert!(err.to_string().contains("server.pages_token_file"), "{err}");
        }
        let file = write("the-token\n");
        let s = Settings::load_from(
            None,
            &env(&[("SHERIFF__SERVER__PAGES_TOKEN_FILE", file.path().to_str().unwrap())]),
        )
        .unwrap();
        assert_eq!(s.server.pages_token.unwrap().expose(), "the-token");
    }

    #[test]
    fn numbers_that_would_overflow_a_date_or_a_timer_are_refused_naming_their_key() {
        for (var, value, key) in [
            ("SHERIFF__EVALUATE__WINDOW_DAYS", "4294967295", "evaluate.window_days"),
            ("SHERIFF__EVALUATE__BASELINE_DAYS", "4294967295", "evaluate.baseline_days"),
            ("SHERIFF__SERVER__IDLE_TIMEOUT_SECS", "9223372036854775807", "server.idle_timeout_secs"),
            ("SHERIFF__SERVER__HEADER_TIMEOUT_SECS", "9223372036854775807", "server.header_timeout_secs"),
            ("SHERIFF__SLACK__TIMEOUT_SECS", "inf", "slack.timeout_secs"),
            ("SHERIFF__SLACK__TIMEOUT_SECS", "nan", "slack.timeout_secs"),
            ("SHERIFF__JIRA__TIMEOUT_SECS", "-5", "jira.timeout_secs"),
            ("SHERIFF__OUTBOX__LEASE_SECS", "9223372036854775807", "outbox.lease_secs"),
        ] {
            let err = Settings::load_from(None, &env(&[(var, value)])).unwrap_err().to_string();
            assert!(err.contains(key), "{var}={value}: {err}");
        }
    }

    #[test]
    fn the_intervals_table_is_read_from_bigquery_only_as_a_plain_table_path() {
        let ok = env(&[
            ("SHERIFF__INGEST__INTERVALS", "bigquery"),
            ("SHERIFF__BIGQUERY__INTERVALS_TABLE", "ci_data_autodl.e2e_intervals"),
        ]);
        let settings = Settings::load_from(None, &ok).unwrap();
        assert_eq!(settings.ingest.intervals, IntervalsMode::Bigquery);
        assert!(!settings.ingest.intervals.on_demand(false) && settings.ingest.intervals.on_demand(true));
        for table in ["p.d.t", "d.t`; DROP TABLE x", "", "d."] {
            let err = Settings::load_from(None, &env(&[("SHERIFF__BIGQUERY__INTERVALS_TABLE", table)]))
                .unwrap_err()
                .to_string();
            assert!(err.contains("`bigquery.intervals_table`"), "{table}: {err}");
        }
    }

    #[test]
    fn ci_trouble_rules_and_limits_out_of_range_are_refused_naming_their_key() {
        for (var, value, key) in [
            (
                "SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_HORIZON_DAYS",
                "-9223372036854775807",
                "evaluate.ci_trouble.broken_horizon_days",
            ),
            (
                "SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_HORIZON_DAYS",
                "0",
                "evaluate.ci_trouble.broken_horizon_days",
            ),
            (
                "SHERIFF__EVALUATE__CI_TROUBLE__LIVENESS_ALLOWANCE_SECONDS",
                "-5",
                "evaluate.ci_trouble.liveness_allowance_seconds",
            ),
            (
                "SHERIFF__EVALUATE__CI_TROUBLE__ALL_BACKENDS_SHARE",
                "5",
                "evaluate.ci_trouble.all_backends_share",
            ),
            ("SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_SHARE", "-0.5", "evaluate.ci_trouble.broken_share"),
        ] {
            let err = Settings::load_from(None, &env(&[(var, value)])).unwrap_err().to_string();
            assert!(err.contains(key), "{var}={value}: {err}");
        }
        for text in [
            "[evaluate.ci_trouble]\nbroken_share = nan\n",
            "[[evaluate.limits]]\nbackend = \"x\"\npercentile = \"P50\"\nseconds = nan\n",
            "[[evaluate.limits]]\nbackend = \"x\"\npercentile = \"P50\"\nseconds = -1.0\n",
        ] {
            let file = write(text);
            let err = Settings::load_from(Some(file.path()), &[]).unwrap_err().to_string();
            assert!(err.contains("broken_share") || err.contains("evaluate.limits.seconds"), "{text}: {err}");
        }
        Settings::load_from(None, &env(&[("SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_HORIZON_DAYS", "28")]))
            .unwrap();
    }

    #[test]
    fn a_bad_time_zone_is_reported_under_its_own_key() {
        let err = Settings::load_from(None, &env(&[("SHERIFF__SCHEDULE__TIMEZONE", "Mars/Olympus")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`schedule.timezone`"), "{err}");
        for (var, key) in [
            ("SHERIFF__SCHEDULE__EVALUATE", "`schedule.evaluate`"),
            ("SHERIFF__RETENTION__SCHEDULE", "`retention.schedule`"),
        ] {
            let err = Settings::load_from(None, &env(&[(var, "0 0 30 2 *")])).unwrap_err().to_string();
            assert!(err.contains(key) && err.contains("never fires"), "{var}: {err}");
        }
    }

    #[test]
    fn urls_are_http_with_a_host_and_https_where_a_credential_goes() {
        for (var, value, key) in [
            ("SHERIFF__SLACK__API_URL", "http://", "slack.api_url"),
            ("SHERIFF__SERVER__PUBLIC_URL", "javascript:alert(1)", "server.public_url"),
            ("SHERIFF__SLACK__WORKSPACE_URL", "javascript:alert(1)", "slack.workspace_url"),
            ("SHERIFF__RELEASE_CONTROLLER__URLS__AMD64", "ftp://x", "release_controller.urls.amd64"),
        ] {
            let err = Settings::load_from(None, &env(&[(var, value)])).unwrap_err().to_string();
            assert!(err.contains(key), "{var}={value}: {err}");
        }
        let with_token = |url: &str| {
            Settings::load_from(
                None,
                &env(&[("SHERIFF__SLACK__API_URL", url), ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-1")]),
            )
        };
        assert!(with_token("http://slack.example.com/api").unwrap_err().to_string().contains("https"));
        with_token("https://slack.example.com/api").unwrap();
        with_token("http://127.0.0.1:9000/api").unwrap();
        with_token("http://localhost:9000/api").unwrap();
        with_token("http://[::1]:9000/api").unwrap();
        // the client sends these to slack.example.com, over plain http
        for disguised in
            ["http://slack.example.com\\@localhost/api", "http://slack.example.com\\@127.0.0.1/api"]
        {
            let err = with_token(disguised).unwrap_err().to_string();
            assert!(err.contains("https"), "{disguised}: {err}");
        }
        // without a credential, plain http is fine (a proxy inside the cluster)
        Settings::load_from(None, &env(&[("SHERIFF__SLACK__API_URL", "http://slack-proxy/api")])).unwrap();
    }

    #[test]
    fn github_takes_its_token_from_the_environment_or_a_file_over_https_and_checks_its_repositories() {
        let s = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TOKEN", "ghp_x")])).unwrap();
        assert_eq!(s.github.token.as_ref().map(Secret::expose), Some("ghp_x"));
        assert!(!s.github.enabled, "off until turned on");
        assert_eq!(s.github.api_url, "https://api.github.com");
        assert_eq!(s.github.repositories[0].repository, "openshift-metal3/dev-scripts");
        let file = write("ghp_from_file\n");
        let path = file.path().to_string_lossy().to_string();
        let s = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TOKEN_FILE", &path)])).unwrap();
        assert_eq!(s.github.token.as_ref().map(Secret::expose), Some("ghp_from_file"));
        let err = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TOKEN", " ")])).unwrap_err();
        assert!(matches!(err, ConfigError::EmptySecret { .. }), "{err}");
        let in_file = Settings::load_from(Some(write("[github]\ntoken = \"ghp_x\"\n").path()), &[]);
        assert!(in_file.unwrap_err().to_string().contains("github.token"));
        let plain = env(&[
            ("SHERIFF__GITHUB__API_URL", "http://github.example.com"),
            ("SHERIFF__GITHUB__TOKEN", "ghp_x"),
        ]);
        assert!(Settings::load_from(None, &plain).unwrap_err().to_string().contains("github.api_url"));
        let slow = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TIMEOUT_SECS", "0")]));
        assert!(slow.unwrap_err().to_string().contains("github.timeout_secs"));
        for bad in [
            "[[github.repositories]]\nplatform = \"metal\"\nrepository = \"dev-scripts\"\n",
            "[[github.repositories]]\nplatform = \"*\"\nrepository = \"o/r\"\npath = \"../x\"\n",
            "[[github.repositories]]\nplatform = \"\"\nrepository = \"o/r\"\n",
        ] {
            let err = Settings::load_from(Some(write(bad).path()), &[]).unwrap_err().to_string();
            assert!(err.contains("github.repositories"), "{bad}: {err}");
        }
    }
}
