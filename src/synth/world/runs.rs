//! One generated run: its payload, its seconds per backend drawn from the table (correlated
//! within the run), and what the world does to it (planted regressions, decoys, CI trouble,
//! install failures), with the truth of each.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};

use super::jobs::{NEW_ARM64_JOB, WorldJob};
use super::payloads::{Payload, tested};
use super::scenarios::{Class, Plant, Spell};
use super::table::{Fit, Table};
use super::{RunTruth, WorldSpec};
use crate::model::{JobRun, RunRecord, Sample, backend_family};
use crate::synth::Rng;

/// Share of runs whose cluster never came up: no disruption data at all.
const INSTALL_FAILURE_SHARE: f64 = 0.03;
/// Share of runs hit by CI-infrastructure trouble outside any spell.
const BACKGROUND_TROUBLE_SHARE: f64 = 0.004;
/// How strongly a run's backends move together: a family follows the run's common draw this
/// often, and a backend its family's.
const RUN_CORRELATION: f64 = 0.6;
const FAMILY_CORRELATION: f64 = 0.85;
/// The stationary tail of the `heavy_tail` decoy.
const HEAVY_TAIL_SHARE: f64 = 0.025;

/// What every run of the world shares.
pub(super) struct Generator<'a> {
    pub spec: &'a WorldSpec,
    pub streams: &'a BTreeMap<String, Vec<Payload>>,
    pub plants: &'a [Plant],
    pub spells: &'a [Spell],
    /// Per job, each backend measured in its cell and its fitted distribution.
    pub fits: Vec<Vec<(String, Fit)>>,
}

impl<'a> Generator<'a> {
    pub fn new(
        spec: &'a WorldSpec,
        table: &Table,
        jobs: &[WorldJob],
        streams: &'a BTreeMap<String, Vec<Payload>>,
        plants: &'a [Plant],
        spells: &'a [Spell],
    ) -> Generator<'a> {
        let backends = table.backends();
        let fits = jobs
            .iter()
            .map(|j| {
                backends
                    .iter()
                    .filter_map(|b| {
                        table
                            .nearest(b, &j.dims)
                            .map(|row| (b.clone(), Fit::of(row)))
                    })
                    .collect()
            })
            .collect();
        Generator {
            spec,
            streams,
            plants,
            spells,
            fits,
        }
    }

    /// The payload a run of `job` starting at `started` tests (its index in the release's
    /// stream); a scope that skips a plant's onset payload takes the one before.
    fn payload(&self, job: &WorldJob, started: DateTime<Utc>, rng: &mut Rng) -> usize {
        let stream = &self.streams[&job.dims.release];
        let mut index = tested(stream, started, rng).unwrap_or(0);
        for p in self
            .plants
            .iter()
            .filter(|p| p.skip_onset && p.release == job.dims.release)
        {
            if p.parts
                .iter()
                .any(|part| part.scope.contains(&job.dims) && part.first_bad.index == index)
            {
                index = index.saturating_sub(1);
            }
        }
        index
    }

    /// The seconds of each backend measured in the job's cell: a common draw for the run, one
    /// per backend family that mostly follows it, one per backend that mostly follows its family
    /// (a bad run is bad on several backends; each backend keeps its table distribution).
    fn baseline(&self, job: usize, rng: &mut Rng) -> BTreeMap<String, i64> {
        let common = rng.unit();
        let mut family_draw: HashMap<String, f64> = HashMap::new();
        let mut out = BTreeMap::new();
        for (backend, fit) in &self.fits[job] {
            let family = backend_family(backend).to_string();
            let f = *family_draw.entry(family).or_insert_with(|| {
                if rng.chance(RUN_CORRELATION) {
                    common
                } else {
                    rng.unit()
                }
            });
            let u = if rng.chance(FAMILY_CORRELATION) {
                f
            } else {
                rng.unit()
            };
            out.insert(backend.clone(), fit.at(u, rng));
        }
        out
    }

    /// The planted regression that hits this run, if any, applied to its seconds.
    fn plant(
        &self,
        job: &WorldJob,
        index: usize,
        seconds: &mut BTreeMap<String, i64>,
        rng: &mut Rng,
    ) -> Option<usize> {
        for p in self.plants.iter().filter(|p| p.release == job.dims.release) {
            let Some(part) = p
                .parts
                .iter()
                .position(|part| part.scope.contains(&job.dims))
            else {
                continue;
            };
            if !rng.chance(p.hit_share(part, index)) {
                continue;
            }
            let base = rng.between(p.seconds.0, p.seconds.1);
            let [new, reused] = p.backends();
            raise(seconds, &new, base);
            raise(seconds, &reused, (base + rng.between(-3, 0)).max(1));
            return Some(p.id);
        }
        None
    }

    /// The decoys that disturb this run (the new arm64 job's high runs, the stationary tail).
    fn decoy(
        &self,
        job: &WorldJob,
        seconds: &mut BTreeMap<String, i64>,
        rng: &mut Rng,
    ) -> Option<Class> {
        let classes = &self.spec.classes;
        if job.name == NEW_ARM64_JOB {
            let s = rng.between(25, 70);
            raise(seconds, "kube-api-new-connections", s);
            raise(
                seconds,
                "kube-api-reused-connections",
                s - rng.between(0, 5),
            );
            return Some(Class::NewJob);
        }
        let d = &job.dims;
        let tail_cell = d.release == "4.14" && d.platform == "gcp" && d.network == "ovn";
        if classes.contains(&Class::HeavyTail) && tail_cell && rng.chance(HEAVY_TAIL_SHARE) {
            let s = rng.between(12, 60);
            raise(seconds, "openshift-api-new-connections", s);
            raise(
                seconds,
                "openshift-api-reused-connections",
                (s - rng.between(0, 3)).max(1),
            );
            return Some(Class::HeavyTail);
        }
        None
    }

    /// CI-infrastructure trouble: the CI's network to the cluster lost, so its liveness probe
    /// and most backends are disrupted together, for about as long as each other.
    fn ci_trouble(
        &self,
        job: &WorldJob,
        started: DateTime<Utc>,
        seconds: &mut BTreeMap<String, i64>,
        rng: &mut Rng,
    ) -> Option<String> {
        let spell = self.spells.iter().find(|s| {
            started >= s.from
                && started < s.from + Duration::hours(s.hours)
                && s.scope.contains(&job.dims)
        });
        let why = match spell {
            Some(s) if rng.chance(s.share) => {
                format!("CI network lost (spell on {})", s.scope.describe())
            }
            _ if rng.chance(BACKGROUND_TROUBLE_SHARE) => "CI network lost (one run)".to_string(),
            _ => return None,
        };
        let base = rng.between(30, 200);
        for (backend, s) in seconds.iter_mut() {
            if backend.starts_with("ci-cluster-network-liveness") || rng.chance(0.85) {
                *s = (*s).max((base + rng.between(-10, 10)).max(1));
            }
        }
        Some(why)
    }

    /// One run of `jobs[job]`: its record and its truth.
    pub fn run(
        &self,
        jobs: &[WorldJob],
        job: usize,
        started: DateTime<Utc>,
        build_id: String,
        rng: &mut Rng,
    ) -> (RunRecord, RunTruth) {
        let j = &jobs[job];
        let index = self.payload(j, started, rng);
        let payload = self.streams[&j.dims.release]
            .get(index)
            .map(|p| p.tag.clone())
            .unwrap_or_default();

        let install_failure = rng.chance(INSTALL_FAILURE_SHARE);
        let mut seconds = BTreeMap::new();
        let (mut plant, mut decoy, mut ci_trouble) = (None, None, None);
        if !install_failure {
            seconds = self.baseline(job, rng);
            plant = self.plant(j, index, &mut seconds, rng);
            decoy = self.decoy(j, &mut seconds, rng);
            ci_trouble = self.ci_trouble(j, started, &mut seconds, rng);
        }

        let minutes = if install_failure {
            rng.between(30, 50)
        } else {
            rng.between(90, 150)
        };

        let record = record(
            j,
            &build_id,
            started,
            started + Duration::minutes(minutes),
            install_failure,
            &payload,
            &seconds,
        );

        let truth = RunTruth {
            job: j.name.clone(),
            build_id,
            started,
            dims: j.dims.clone(),
            payload,
            payload_index: index,
            plant,
            decoy,
            ci_trouble,
            install_failure,
        };

        (record, truth)
    }
}

fn raise(seconds: &mut BTreeMap<String, i64>, backend: &str, to: i64) {
    if let Some(s) = seconds.get_mut(backend) {
        *s = (*s).max(to);
    }
}

/// The record ingest would make of the run's files.
fn record(
    job: &WorldJob,
    build_id: &str,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
    install_failure: bool,
    payload: &str,
    seconds: &BTreeMap<String, i64>,
) -> RunRecord {
    let bucket = super::BUCKET;
    let path = format!("logs/{}/{build_id}", job.name);
    let mut dimensions = job.dims.clone();
    if install_failure {
        // No cluster came up, so no cluster-data file says whether the masters were updated.
        dimensions.master_nodes_updated.clear();
    }

    RunRecord {
        run: JobRun {
            job_name: job.name.clone(),
            build_id: build_id.to_string(),
            bucket: bucket.into(),
            url: JobRun::prow_url(bucket, &path),
            path,
            job_type: "periodic".into(),
            started_at: started,
            finished_at: Some(finished),
            state: if install_failure {
                "failure".into()
            } else {
                "success".into()
            },
            dimensions,
            payload: payload.to_string(),
            from_payload: String::new(),
        },
        samples: seconds
            .iter()
            .map(|(b, s)| Sample {
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
