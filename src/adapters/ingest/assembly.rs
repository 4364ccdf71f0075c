//! One run's files in, one [`RunRecord`] out: the pure heart of ingest.

use chrono::{DateTime, Utc};

use super::formats::{cluster_data, disruption, interval_files, job_name, prow};
use super::layout::{Classified, FileKind, classify};
use super::parse_error::{ParseError, Problem};
use crate::model::{DAY, Dimensions, JobRun, RunRecord, Sample};

/// A run folder and the files read from it.
#[derive(Debug, Default)]
pub struct RunFiles {
    /// Bucket the folder was found in; `prowjob.json`'s bucket wins when present.
    pub bucket: String,
    /// The run folder relative to the bucket root, e.g. `logs/<job>/<build>`.
    pub path: String,
    pub files: Vec<RunFile>,
}

/// One file of a run: its path relative to the run folder and its content, or why it could
/// not be read (too large, a read error).
#[derive(Debug)]
pub struct RunFile {
    pub name: String,
    pub content: Result<Content, ParseError>,
}

/// A file's content: in memory, or on disk to be read as a stream (interval files, which can
/// be hundreds of MB).
#[derive(Debug, Clone)]
pub enum Content {
    Bytes(Vec<u8>),
    /// Read when parsed, no further than `max_bytes`.
    File {
        path: std::path::PathBuf,
        max_bytes: u64,
        /// A download spooled to a temporary file, removed when the last clone is dropped.
        spool: Option<std::sync::Arc<tempfile::TempPath>>,
    },
}

impl Content {
    /// Whether the file has nothing in it (one that cannot be read is for its parser to say).
    fn is_empty(&self) -> bool {
        match self {
            Content::Bytes(bytes) => bytes.is_empty(),
            Content::File { path, .. } => std::fs::metadata(path).is_ok_and(|m| m.len() == 0),
        }
    }

    /// The content of the file `name` as bytes, reading a file whole.
    fn bytes(&self, name: &str) -> Result<std::borrow::Cow<'_, [u8]>, ParseError> {
        match self {
            Content::Bytes(bytes) => Ok(bytes.as_slice().into()),
            Content::File { path, .. } => std::fs::read(path)
                .map(Into::into)
                .map_err(|e| ParseError::new(name, Problem::Unreadable(e))),
        }
    }

    /// The interval file `name` this is, read as a stream.
    fn read_intervals(&self, name: &str) -> Result<interval_files::IntervalEvidence, ParseError> {
        let watch = interval_files::Watch::default();
        let read = match self {
            Content::Bytes(bytes) => {
                interval_files::read_intervals(bytes.as_slice(), u64::MAX, &watch)
            }
            Content::File {
                path, max_bytes, ..
            } => {
                let file = std::fs::File::open(path)
                    .map_err(|e| ParseError::new(name, Problem::Unreadable(e)))?;
                interval_files::read_intervals(file, *max_bytes, &watch)
            }
        };
        read.map_err(|e| ParseError::new(name, e))
    }
}

/// A problem with one file (or, with an empty `file`, with the run as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    pub file: String,
    pub error: String,
}

/// What became of a run.
#[derive(Debug, Clone)]
pub enum Assembly {
    /// Ready to store; `warnings` name files that were skipped or only partly usable.
    Ready {
        record: Box<RunRecord>,
        warnings: Vec<FileProblem>,
    },
    /// No `finished.json` yet: the job is still running; take it on a later ingest.
    StillRunning,
    /// Not storable; the first problem is the reason.
    Failed { problems: Vec<FileProblem> },
}

/// Backends one run may carry, at most.
pub(crate) const MAX_BACKENDS_PER_RUN: usize = 2_000;

/// How far ahead of this machine's clock a run's times may be (clocks disagree a little).
pub(crate) const MAX_CLOCK_SKEW_SECS: i64 = DAY;

/// The earliest start a run may have: 2000-01-01 UTC, long before any CI system sheriff reads
/// (a start in the year −1199 is a broken file, not history).
pub(crate) const EARLIEST_START_SECS: i64 = 946_684_800;

fn problem(file: &str, error: impl Into<String>) -> FileProblem {
    FileProblem {
        file: file.to_string(),
        error: error.into(),
    }
}

impl From<&ParseError> for FileProblem {
    fn from(e: &ParseError) -> FileProblem {
        problem(&e.file, e.to_string())
    }
}

impl From<ParseError> for FileProblem {
    fn from(e: ParseError) -> FileProblem {
        FileProblem::from(&e)
    }
}

/// A run's files, each read by its parser, and what went wrong on the way.
#[derive(Default)]
struct Parsed<'a> {
    prowjob: Option<prow::ProwJob>,
    started: Option<prow::Started>,
    finished: Option<prow::Finished>,
    finished_present: bool,
    disruption_files: Vec<Vec<disruption::BackendDisruption>>,
    cluster_files: Vec<cluster_data::ClusterData>,
    interval_files: Vec<(&'a RunFile, FileKind)>,
    warnings: Vec<FileProblem>,
    /// Problems that keep the run from being stored.
    failures: Vec<FileProblem>,
}

impl<'a> Parsed<'a> {
    /// A file that could not be used: fatal for a disruption file (a partial sum would
    /// understate the run), a warning for anything else.
    fn unusable(&mut self, kind: FileKind, p: FileProblem) {
        if kind == FileKind::Disruption {
            self.failures.push(p)
        } else {
            self.warnings.push(p)
        }
    }

    fn parse(&mut self, f: &'a RunFile, kind: FileKind, content: &Content) {
        // interval files are read as a stream where they are parsed, on demand too
        if matches!(
            kind,
            FileKind::Events | FileKind::TimelineEverything | FileKind::Timeline
        ) {
            return self.interval_files.push((f, kind));
        }

        let bytes = match content.bytes(&f.name) {
            Ok(bytes) => bytes,
            Err(e) => return self.unusable(kind, e.into()),
        };

        let bytes = bytes.as_ref();
        if super::formats::refused_text(bytes).is_some() {
            return self.unusable(kind, ParseError::new(&f.name, Problem::Nul).into());
        }

        let error = |e: Problem| ParseError::new(&f.name, e);
        match kind {
            FileKind::ProwJob => match prow::parse_prowjob(bytes) {
                Ok(p) => self.prowjob = Some(p),
                Err(e) => self.warnings.push(error(e.into()).into()),
            },
            FileKind::Started => match prow::parse_started(bytes) {
                Ok(s) => self.started = Some(s),
                Err(e) => self.warnings.push(error(e.into()).into()),
            },
            FileKind::Finished => match prow::parse_finished(bytes) {
                Ok(s) => self.finished = Some(s),
                Err(e) => self.warnings.push(error(e.into()).into()),
            },
            FileKind::Disruption => match disruption::parse_backend_disruption(bytes) {
                Ok(d) => self.disruption_files.push(d),
                Err(e) => self.failures.push(error(e.into()).into()),
            },
            FileKind::ClusterData => match cluster_data::parse_cluster_data(bytes) {
                Ok(c) => self.cluster_files.push(c),
                Err(e) => {
                    let e = error(e.into());
                    self.warnings.push(problem(
                        &e.file,
                        format!("{e}; dimensions taken from the job name"),
                    ))
                }
            },
            FileKind::Events | FileKind::TimelineEverything | FileKind::Timeline => {}
        }
    }
}

/// Reads every file of the run that sheriff uses.
fn parse_files(run: &RunFiles) -> Parsed<'_> {
    let mut parsed = Parsed::default();
    // A phase's disruption file is named by its timestamp; a copy of it in another folder (a
    // gather step copying junit/) is the same phase and must not be counted twice.
    let mut disruption_names = std::collections::HashSet::new();
    for f in &run.files {
        let kind = match classify(&f.name) {
            Classified::Read(kind) => kind,
            Classified::Odd(why) => {
                parsed.warnings.push(problem(&f.name, why));
                continue;
            }
            Classified::Ignore => continue,
        };
        parsed.finished_present |= kind == FileKind::Finished;
        if kind == FileKind::Disruption
            && !disruption_names.insert(super::layout::basename(&f.name))
        {
            tracing::debug!(run = %run.path, file = %f.name, "a copy of a disruption file already read; not counted again");
            continue;
        }
        match &f.content {
            Err(e) => parsed.unusable(kind, e.into()),
            Ok(content) if content.is_empty() => {
                parsed.unusable(kind, ParseError::new(&f.name, Problem::Empty).into())
            }
            Ok(content) => parsed.parse(f, kind, content),
        }
    }
    parsed
}

/// Builds the record of one finished run from its files.
pub fn assemble(run: &RunFiles) -> Assembly {
    let mut parsed = parse_files(run);
    if !parsed.finished_present {
        return Assembly::StillRunning;
    }

    let (job_name, build_id) = parsed.job_and_build(run);
    let latest = Utc::now() + chrono::Duration::seconds(MAX_CLOCK_SKEW_SECS);
    let started_at = parsed.start_time(latest);
    if !parsed.failures.is_empty() {
        let mut problems = std::mem::take(&mut parsed.failures);
        problems.extend(parsed.warnings);
        return Assembly::Failed { problems };
    }

    let mut job = job_run(
        run,
        &parsed,
        job_name,
        build_id,
        started_at.unwrap_or_default(),
    );
    parsed.clamp_finish(&mut job, latest);
    let samples = match parsed.samples() {
        Ok(samples) => samples,
        Err(too_many) => {
            return Assembly::Failed {
                problems: vec![too_many],
            };
        }
    };

    let read = interval_evidence(&parsed.interval_files, &mut parsed.warnings);
    let record = RunRecord {
        run: job,
        samples,
        outages: read.outages,
        conditions: read.conditions,
        interval_files: Vec::new(),
        timeline: read.timeline,
    };
    Assembly::Ready {
        record: Box::new(record),
        warnings: parsed.warnings,
    }
}

impl Parsed<'_> {
    /// The run's job name and build id, from prowjob.json or else its path; a failure when
    /// neither tells.
    fn job_and_build(&mut self, run: &RunFiles) -> (String, String) {
        let prowjob = self.prowjob.as_ref();
        let (path_job, path_build) = super::layout::job_and_build(&run.path);
        let job_name = prowjob
            .map(|p| p.job.clone())
            .filter(|j| !j.is_empty())
            .unwrap_or(path_job);
        let build_id = prowjob
            .map(|p| p.build_id.clone())
            .filter(|b| !b.is_empty())
            .unwrap_or(path_build);
        if job_name.is_empty() || build_id.is_empty() {
            let why =
                "cannot tell the job name and build id (no prowjob.json and no <job>/<build> path)";
            self.failures.insert(0, problem("", why));
        }
        (job_name, build_id)
    }

    /// When the run started; a failure when no file tells, or when it is later than `latest`
    /// or before the year 2000.
    fn start_time(&mut self, latest: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let started_at: Option<DateTime<Utc>> = self
            .started
            .as_ref()
            .map(|s| s.timestamp)
            .or_else(|| self.prowjob.as_ref().and_then(|p| p.start_time));
        if started_at.is_none() {
            let why =
                "no start time: started.json is missing or unreadable and prowjob.json has none";
            self.failures.insert(0, problem("started.json", why));
        }
        if let Some(t) = started_at.filter(|t| *t > latest) {
            let why = format!(
                "timestamp: the start time {} is in the future (more than a day from now); a run is stored once it has happened",
                t.to_rfc3339()
            );
            self.failures.insert(0, problem("started.json", why));
        }
        if let Some(t) = started_at.filter(|t| t.timestamp() < EARLIEST_START_SECS) {
            let why = format!(
                "timestamp: the start time {} is before the year 2000",
                t.to_rfc3339()
            );
            self.failures.insert(0, problem("started.json", why));
        }
        started_at
    }

    /// A finish before the start or after `latest` is taken as the start, with a warning.
    fn clamp_finish(&mut self, job: &mut JobRun, latest: DateTime<Utc>) {
        if let Some(f) = job
            .finished_at
            .filter(|f| *f < job.started_at || *f > latest)
        {
            let why = format!(
                "timestamp: finished at {}, {} it started ({}); taken as finished when it started",
                f.to_rfc3339(),
                if f < job.started_at {
                    "before"
                } else {
                    "more than a day after now, long after"
                },
                job.started_at.to_rfc3339()
            );
            self.warnings.push(problem("finished.json", why));
            job.finished_at = Some(job.started_at);
        }
    }

    /// The run's disruption seconds per backend and connection; the problem that fails the run
    /// when there are more backends than a run can hold.
    fn samples(&mut self) -> Result<Vec<Sample>, FileProblem> {
        if self.disruption_files.is_empty() {
            let why = "no backend-disruption_*.json files: the run has no disruption data and is stored without samples";
            self.warnings
                .push(problem("backend-disruption_*.json", why));
        }
        let samples: Vec<Sample> =
            disruption::per_run_seconds(self.disruption_files.iter().map(Vec::as_slice))
                .into_iter()
                .map(|(backend, connection, seconds)| Sample {
                    backend,
                    connection,
                    seconds,
                })
                .collect();
        if samples.len() > MAX_BACKENDS_PER_RUN {
            let why = format!(
                "{} backends in the disruption files, more than the {MAX_BACKENDS_PER_RUN} a run can hold (real runs have a few dozen)",
                samples.len()
            );
            return Err(problem("backend-disruption_*.json", why));
        }
        Ok(samples)
    }
}

/// The run's identity, times, state, link and dimensions.
fn job_run(
    run: &RunFiles,
    parsed: &Parsed<'_>,
    job_name: String,
    build_id: String,
    started_at: DateTime<Utc>,
) -> JobRun {
    let prowjob = parsed.prowjob.as_ref();
    let finished = parsed.finished.as_ref();
    let finished_at = finished
        .and_then(|f| f.timestamp)
        .or_else(|| prowjob.and_then(|p| p.completion_time));

    let state = prowjob
        .map(|p| p.state.to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .or_else(|| {
            finished
                .map(|f| f.result.to_ascii_lowercase())
                .filter(|s| !s.is_empty())
        })
        .or_else(|| {
            finished
                .and_then(|f| f.passed)
                .map(|p| if p { "success" } else { "failure" }.to_string())
        })
        .unwrap_or_else(|| "unknown".into());

    let bucket = prowjob
        .map(|p| p.bucket.clone())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| {
            if run.bucket.is_empty() {
                "local".into()
            } else {
                run.bucket.clone()
            }
        });

    // the artifact's link only when it is a plain web address: it is shown as "the Prow run"
    let url = prowjob
        .and_then(|p| crate::support::render::web_link(&p.url))
        .map(str::to_string)
        .unwrap_or_else(|| JobRun::prow_url(&bucket, &run.path));

    let job_type = prowjob
        .map(|p| p.job_type.clone())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| {
            if run.path.starts_with("pr-logs/") {
                "presubmit".into()
            } else {
                "periodic".into()
            }
        });

    let cluster = cluster_data::merge(&parsed.cluster_files);
    let dimensions = dimensions(
        &job_name,
        &cluster,
        !parsed.cluster_files.is_empty(),
        prowjob,
    );

    let (payload, from_payload) = payloads(&cluster, prowjob);
    JobRun {
        payload,
        from_payload,
        job_name,
        build_id,
        bucket,
        path: run.path.clone(),
        url,
        job_type,
        started_at,
        finished_at,
        state,
        dimensions,
    }
}

/// The payload a run tested and the one it upgraded from: `prowjob.json`'s release annotations,
/// else the tag of `RELEASE_IMAGE_LATEST` in its env, else cluster-data's current version.
fn payloads(
    cluster: &cluster_data::ClusterData,
    prowjob: Option<&prow::ProwJob>,
) -> (String, String) {
    let payload = prowjob
        .map(|p| p.release_tag.clone())
        .filter(|t| !t.is_empty())
        .or_else(|| {
            prowjob
                .map(|p| p.env_release_tag.clone())
                .filter(|t| !t.is_empty())
        })
        .or_else(|| cluster.cluster_version_history.first().cloned())
        .unwrap_or_default();
    let from = prowjob.map(|p| p.from_tag.clone()).unwrap_or_default();
    (payload, from)
}

/// Outages and bad conditions from one view of the intervals: e2e-events holds every
/// interval; the timelines are views of the same ones.
fn interval_evidence(
    files: &[(&RunFile, FileKind)],
    warnings: &mut Vec<FileProblem>,
) -> RunIntervals {
    let preferred = [
        FileKind::Events,
        FileKind::TimelineEverything,
        FileKind::Timeline,
    ]
    .into_iter()
    .find(|k| files.iter().any(|(_, kind)| kind == k));
    let read = files
        .iter()
        .filter(|(_, kind)| Some(*kind) == preferred)
        .filter_map(|(f, _)| {
            f.content
                .as_ref()
                .ok()
                .map(|content| (f.name.as_str(), content))
        });
    parse_interval_files(read, warnings)
}

/// What a run's interval files hold, merged over its files.
#[derive(Debug, Default)]
pub(crate) struct RunIntervals {
    pub outages: Vec<crate::model::Outage>,
    pub conditions: Vec<crate::model::ConditionSpan>,
    pub timeline: Vec<crate::model::TimelineSpan>,
}

/// The outages, condition spans and timeline of a run's interval files (views of one kind),
/// sorted and without duplicates; a file that does not parse (or holds a NUL, or is over its
/// limit) is a warning naming it, and is not used. A timeline span names the file and item it
/// came from (the first, when two files hold it). Each file is read as a stream.
pub(crate) fn parse_interval_files<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a Content)>,
    warnings: &mut Vec<FileProblem>,
) -> RunIntervals {
    let mut out = RunIntervals::default();
    for (name, content) in files {
        match content.read_intervals(name) {
            Ok(ev) => {
                out.outages.extend(ev.outages);
                out.conditions.extend(ev.conditions);
                out.timeline.extend(ev.timeline.into_iter().map(|mut t| {
                    t.at.file = name.to_string();
                    t
                }));
            }
            Err(e) => warnings.push(problem(name, format!("{e}; its evidence is not used"))),
        }
    }
    out.outages
        .sort_by(|a, b| (a.from, &a.backend, a.to).cmp(&(b.from, &b.backend, b.to)));
    out.outages.dedup();
    out.conditions.sort_by(|a, b| {
        (a.from, &a.operator, &a.condition, a.to, &a.reason).cmp(&(
            b.from,
            &b.operator,
            &b.condition,
            b.to,
            &b.reason,
        ))
    });
    out.conditions.dedup();
    out.timeline.sort_by(|a, b| {
        (a.from, a.kind, &a.subject, a.to).cmp(&(b.from, b.kind, &b.subject, b.to))
    });
    out.timeline.dedup_by(|b, a| {
        (a.from, a.kind, &a.subject, a.to, &a.node) == (b.from, b.kind, &b.subject, b.to, &b.node)
    });
    out
}

/// The run's dimensions: cluster-data first, the job name for whatever it leaves out.
pub(crate) fn dimensions(
    job: &str,
    cd: &cluster_data::ClusterData,
    has_cluster_data: bool,
    prowjob: Option<&prow::ProwJob>,
) -> Dimensions {
    let from_name = job_name::dimensions_from_job_name(job);
    let lower = |s: &str| s.trim().to_ascii_lowercase();
    let release_of = |s: &str| job_name::parse_release(s).map(|(a, b)| format!("{a}.{b}"));
    let release = release_of(&cd.release)
        .or_else(|| prowjob.and_then(|p| release_of(&p.release_tag)))
        .unwrap_or_else(|| from_name.release.clone());

    let is_upgrade_job = from_name.upgrade_type != "none";
    let from_release = if !has_cluster_data {
        from_name.from_release.clone()
    } else {
        release_of(&cd.from_release)
            .or_else(|| prowjob.and_then(|p| release_of(&p.from_tag)))
            .unwrap_or_default()
    };

    let upgrade_type = if from_name.upgrade_type == "micro-downgrade" {
        "micro-downgrade".to_string()
    } else if from_release.is_empty() {
        if is_upgrade_job && !has_cluster_data {
            from_name.upgrade_type.clone()
        } else {
            "none".into()
        }
    } else {
        match (
            job_name::parse_release(&from_release),
            job_name::parse_release(&release),
        ) {
            (Some(f), Some(t)) => job_name::upgrade_type(f, t).into(),
            _ => from_name.upgrade_type.clone(),
        }
    };

    let or = |v: String, fallback: &str| {
        if v.is_empty() {
            fallback.to_string()
        } else {
            v
        }
    };

    let stack = match lower(&cd.network_stack).as_str() {
        "" => from_name.network_stack.clone(),
        s => s.to_string(),
    };

    Dimensions {
        release,
        from_release,
        upgrade_type,
        platform: or(lower(&cd.platform), &from_name.platform),
        architecture: or(lower(&cd.architecture), &from_name.architecture),
        network: or(lower(&cd.network), &from_name.network),
        network_stack: stack,
        topology: or(lower(&cd.topology), &from_name.topology),
        master_nodes_updated: cd.master_nodes_updated.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade";

    fn file(name: &str, text: &str) -> RunFile {
        RunFile {
            name: name.into(),
            content: Ok(Content::Bytes(text.as_bytes().to_vec())),
        }
    }

    fn junit(name: &str) -> String {
        format!(
            "artifacts/e2e-metal-ipi-sdn-bm-upgrade/baremetalds-e2e-test/artifacts/junit/{name}"
        )
    }

    fn run(files: Vec<RunFile>) -> RunFiles {
        RunFiles {
            bucket: "test-platform-results".into(),
            path: format!("logs/{JOB}/1700000000000000001"),
            files,
        }
    }

    fn base_files() -> Vec<RunFile> {
        vec![
            file("started.json", r#"{"timestamp": 1700000000}"#),
            file(
                "finished.json",
                r#"{"timestamp": 1700007200, "passed": true, "result": "SUCCESS"}"#,
            ),
            file(
                &junit("backend-disruption_20231114-220000.json"),
                r#"{"BackendDisruptions": {"image-registry-new-connections": {"Name": "image-registry-new-connections", "ConnectionType": "New", "DisruptedDuration": "12.2s"}}}"#,
            ),
            file(
                &junit("backend-disruption_20231114-230000.json"),
                r#"{"BackendDisruptions": {"image-registry-new-connections": {"Name": "image-registry-new-connections", "ConnectionType": "New", "DisruptedDuration": "19s"}}}"#,
            ),
        ]
    }

    #[test]
    fn a_run_without_cluster_data_takes_its_dimensions_from_the_job_name() {
        let Assembly::Ready { record, warnings } = assemble(&run(base_files())) else {
            panic!("not ready")
        };
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(record.run.job_name, JOB);
        assert_eq!(record.run.build_id, "1700000000000000001");
        assert_eq!(record.run.state, "success");
        assert_eq!(
            record.samples,
            vec![Sample {
                backend: "image-registry-new-connections".into(),
                connection: "new".into(),
                seconds: 32
            }]
        );
        let d = &record.run.dimensions;
        assert_eq!(
            (
                d.release.as_str(),
                d.from_release.as_str(),
                d.upgrade_type.as_str()
            ),
            ("4.14", "4.13", "minor")
        );
        assert_eq!(
            (
                d.platform.as_str(),
                d.network.as_str(),
                d.network_stack.as_str()
            ),
            ("metal", "sdn", "ipv4")
        );
        assert_eq!(
            record.run.url,
            format!(
                "https://prow.ci.openshift.org/view/gs/test-platform-results/logs/{JOB}/1700000000000000001"
            )
        );
    }

    fn prowjob(annotations: &str, env: &str) -> RunFile {
        file(
            "prowjob.json",
            &format!(
                r#"{{"metadata": {{"annotations": {{{annotations}}}}},
                    "spec": {{"job": "{JOB}", "type": "periodic",
                              "pod_spec": {{"containers": [{{"env": [{env}]}}]}}}},
                    "status": {{"state": "success", "build_id": "1700000000000000001"}}}}"#
            ),
        )
    }

    fn payload_of(files: Vec<RunFile>) -> (String, String) {
        let Assembly::Ready { record, .. } = assemble(&run(files)) else {
            panic!("not ready")
        };
        (record.run.payload, record.run.from_payload)
    }

    #[test]
    fn the_payload_comes_from_the_annotation_else_the_env_else_cluster_data() {
        let cluster = || {
            file(
                &junit("cluster-data_20231114-220000.json"),
                r#"{"Release": "4.14", "Platform": "metal", "ClusterVersionHistory": ["4.14.0-0.nightly-2023-11-14-090000", "4.13.21"]}"#,
            )
        };
        let env = r#"{"name": "RELEASE_IMAGE_LATEST", "value": "registry.ci.openshift.org/ocp/release:4.14.0-0.nightly-2023-11-14-080000"}"#;
        let annotated = r#""release.openshift.io/tag": "4.14.0-0.nightly-2023-11-14-070000", "release.openshift.io/from-tag": "4.13.21""#;
        let mut files = base_files();
        files.extend([prowjob(annotated, env), cluster()]);
        assert_eq!(
            payload_of(files),
            (
                "4.14.0-0.nightly-2023-11-14-070000".into(),
                "4.13.21".into()
            )
        );
        let mut files = base_files();
        files.extend([prowjob("", env), cluster()]);
        assert_eq!(payload_of(files).0, "4.14.0-0.nightly-2023-11-14-080000");
        let mut files = base_files();
        files.extend([
            prowjob(
                "",
                r#"{"name": "RELEASE_IMAGE_LATEST", "value": "quay.io/x/release@sha256:abc"}"#,
            ),
            cluster(),
        ]);
        assert_eq!(
            payload_of(files).0,
            "4.14.0-0.nightly-2023-11-14-090000",
            "a digest names no tag"
        );
        assert_eq!(
            payload_of(base_files()),
            (String::new(), String::new()),
            "no payload: still a run"
        );
        assert_eq!(
            crate::model::payload_time("4.14.0-0.nightly-2023-11-14-070000")
                .map(|t| t.to_rfc3339()),
            Some("2023-11-14T07:00:00+00:00".into())
        );
        assert_eq!(crate::model::payload_time("4.14.3"), None);
    }

    #[test]
    fn cluster_data_wins_and_the_name_fills_the_gaps() {
        let mut files = base_files();
        files.push(file(
            &junit("cluster-data_20231114-220000.json"),
            r#"{"Release": "4.14", "FromRelease": "4.14", "Platform": "metal", "Architecture": "amd64", "Network": "ovn",
                "Topology": "ha", "NetworkStack": "", "MasterNodesUpdated": "N"}"#,
        ));
        files.push(file(
            &junit("cluster-data_20231114-230000.json"),
            r#"{"Release": "4.14", "Platform": "metal", "MasterNodesUpdated": "Y"}"#,
        ));
        let Assembly::Ready { record, .. } = assemble(&run(files)) else {
            panic!("not ready")
        };
        let d = &record.run.dimensions;
        assert_eq!(
            (
                d.upgrade_type.as_str(),
                d.network.as_str(),
                d.network_stack.as_str()
            ),
            ("micro", "ovn", "ipv4")
        );
        assert_eq!(d.master_nodes_updated, "Y");
    }

    #[test]
    fn a_copy_of_a_phase_file_in_another_folder_is_counted_once() {
        let mut files = base_files();
        let copy = RunFile {
            name: "artifacts/junit/backend-disruption_20231114-220000.json".into(),
            content: Ok(files[2].content.as_ref().unwrap().clone()),
        };
        files.push(copy);
        let Assembly::Ready { record, .. } = assemble(&run(files)) else {
            panic!("not ready")
        };
        assert_eq!(record.samples[0].seconds, 32);
    }

    #[test]
    fn a_run_dated_in_the_future_is_refused_and_one_finished_before_it_started_is_clamped() {
        let mut files = base_files();
        files[0] = file("started.json", r#"{"timestamp": 253402300800}"#);
        let Assembly::Failed { problems } = assemble(&run(files)) else {
            panic!("stored a run from the future")
        };
        assert_eq!(problems[0].file, "started.json");
        assert!(
            problems[0].error.contains("10000-01-01") && problems[0].error.contains("future"),
            "{problems:?}"
        );
        let mut files = base_files();
        files[0] = file("started.json", r#"{"timestamp": -99999999999}"#);
        let Assembly::Failed { problems } = assemble(&run(files)) else {
            panic!("stored a run of the year -1199")
        };
        assert_eq!(problems[0].file, "started.json");
        assert!(
            problems[0].error.contains("before the year 2000"),
            "{problems:?}"
        );
        let mut files = base_files();
        files[1] = file(
            "finished.json",
            r#"{"timestamp": 1699990000, "passed": true}"#,
        );
        let Assembly::Ready { record, warnings } = assemble(&run(files)) else {
            panic!("refused")
        };
        assert_eq!(record.run.finished_at, Some(record.run.started_at));
        assert!(
            warnings
                .iter()
                .any(|w| w.file == "finished.json" && w.error.contains("before it started")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_prow_link_that_is_no_web_address_is_replaced_by_the_run_s_own() {
        for (given, kept) in [
            ("javascript:alert('url')//x", false),
            ("https://prow.example/view/1", true),
        ] {
            let mut files = base_files();
            files.push(file(
                "prowjob.json",
                &format!(r#"{{"spec": {{"job": "{JOB}"}}, "status": {{"build_id": "1700000000000000001", "url": "{given}"}}}}"#),
            ));
            let Assembly::Ready { record, .. } = assemble(&run(files)) else {
                panic!("not ready")
            };
            if kept {
                assert_eq!(record.run.url, given);
            } else {
                assert!(
                    record
                        .run
                        .url
                        .starts_with("https://prow.ci.openshift.org/view/gs/"),
                    "{}",
                    record.run.url
                );
            }
        }
    }

    #[test]
    fn a_nul_in_a_side_file_is_a_warning_naming_it_and_in_a_disruption_file_fails_the_run() {
        let mut files = base_files();
        files.push(file(
            "prowjob.json",
            &format!(r#"{{"spec": {{"job": "{JOB}\u0000"}}}}"#),
        ));
        let Assembly::Ready { record, warnings } = assemble(&run(files)) else {
            panic!("not ready")
        };
        assert_eq!(record.run.job_name, JOB);
        assert!(
            warnings
                .iter()
                .any(|w| w.file == "prowjob.json" && w.error.contains("NUL")),
            "{warnings:?}"
        );
        let mut files = base_files();
        files.push(file(
            &junit("backend-disruption_x.json"),
            r#"{"BackendDisruptions": {"a\u0000b": {"DisruptedDuration": "1s"}}}"#,
        ));
        let Assembly::Failed { problems } = assemble(&run(files)) else {
            panic!("stored")
        };
        assert!(
            problems[0].file.ends_with("backend-disruption_x.json")
                && problems[0].error.contains("NUL"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_run_without_finished_json_is_still_running() {
        let files = base_files()
            .into_iter()
            .filter(|f| f.name != "finished.json")
            .collect();
        assert!(matches!(assemble(&run(files)), Assembly::StillRunning));
    }

    #[test]
    fn a_broken_disruption_file_fails_the_run_naming_the_file() {
        let mut files = base_files();
        files[2].content = Ok(Content::Bytes(b"{\"BackendDisruptions\": {\"x\"".to_vec()));
        let Assembly::Failed { problems } = assemble(&run(files)) else {
            panic!("stored a partial run")
        };
        assert!(
            problems[0]
                .file
                .ends_with("backend-disruption_20231114-220000.json"),
            "{problems:?}"
        );
    }

    #[test]
    fn broken_side_files_are_warnings_and_the_run_still_lands() {
        let mut files = base_files();
        files.push(file(
            &junit("cluster-data_20231114-220000.json"),
            "\u{0}\u{1}binary",
        ));
        files.push(file(
            &junit("e2e-events_20231114-220000.json"),
            "{\"items\": [{",
        ));
        files.push(file("prowjob.json", "[]"));
        files.push(RunFile {
            name: junit("e2e-events_20231114-230000.json"),
            content: Err(ParseError::new(
                "e2e-events_20231114-230000.json",
                Problem::TooLarge { size: 2, max: 1 },
            )),
        });
        let Assembly::Ready { record, warnings } = assemble(&run(files)) else {
            panic!("not ready")
        };
        assert_eq!(record.samples[0].seconds, 32);
        assert_eq!(warnings.len(), 4, "{warnings:?}");
    }

    /// An interval file on disk is read as it is parsed, no further than its limit: one that
    /// grew past it after it was listed is a warning naming it, and the run still lands.
    #[test]
    fn an_interval_file_on_disk_is_read_as_a_stream_within_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e2e-events_20231114-220000.json");
        let text = r#"{"items": [{"level": "Error", "source": "Disruption", "locator": {"keys": {"backend-disruption-name": "image-registry-new-connections"}}, "message": {"reason": "DisruptionBegan"}, "from": "2023-11-14T22:00:00Z", "to": "2023-11-14T22:00:12Z"}]}"#;
        std::fs::write(&path, text).unwrap();
        let on_disk = |max_bytes: u64| RunFile {
            name: junit("e2e-events_20231114-220000.json"),
            content: Ok(Content::File {
                path: path.clone(),
                max_bytes,
                spool: None,
            }),
        };
        let mut files = base_files();
        files.push(on_disk(text.len() as u64));
        let Assembly::Ready { record, warnings } = assemble(&run(files)) else {
            panic!("not ready")
        };
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(record.outages.len(), 1);
        let mut files = base_files();
        files.push(on_disk(text.len() as u64 - 1));
        let Assembly::Ready { record, warnings } = assemble(&run(files)) else {
            panic!("not ready")
        };
        assert!(record.outages.is_empty());
        assert!(
            warnings
                .iter()
                .any(|w| w.file.ends_with("e2e-events_20231114-220000.json")
                    && w.error.contains("larger than the")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_run_without_disruption_files_is_stored_without_samples_and_said_so() {
        let files = base_files().into_iter().take(2).collect();
        let Assembly::Ready { record, warnings } = assemble(&run(files)) else {
            panic!("not ready")
        };
        assert!(record.samples.is_empty());
        assert!(warnings[0].error.contains("no backend-disruption"));
    }
}
