//! A CI world calibrated from origin's real disruption table, with planted regressions, decoys
//! and the truth of every run, to judge sheriff on realistic data (`sheriff bench quality`).
//!
//! Deterministic from a seed. It returns the runs as records (fast, for the scorecard) and can
//! write the real bucket tree through the artifact writer (for `sheriff demo --world` and the
//! ingest tests). About 45 upgrade jobs over releases 4.13–4.15 run over 28 days; every cell's
//! seconds come from the table's row for it.
//!
//! What the real table shows, and what the world therefore does (`data/origin/README.md` has
//! the details):
//! - Most cells are zero at P50 and P75 and have a tail: each backend's per-run seconds follow a
//!   quantile function through the row's P50/P75/P95/P99 (the share of zero runs falls out of
//!   where it crosses half a second), with a tail beyond P99 to `max(2 P99, P99 + 2 (P99 − P95))`,
//!   so a P99 far above P95 (gcp ovn kube-api: 2 s against 77.5 s) stays far above it.
//! - `gcp-network-liveness-*` on metal is thousands of seconds (8952 s, 3393 s, 1981 s, one run
//!   each): the probe cannot reach its target from those clusters, so in the world it is down in
//!   every metal run, for 60–120% of the row's value.
//! - Rows with few runs (metal 18–35, vsphere 6–8, single-node 4–8 a month) give sparse jobs:
//!   a job runs `JobRuns / 30 × scale` times a day, and sparse cells stay sparse.
//! - Backends present only on some platforms: a backend with no row on a platform (the registry
//!   on vsphere, load balancers on metal) or for a topology (no single-node registry) is not in
//!   those runs at all.
//! - The table holds one release (4.15; 4.16 for the newer `gcp-network-liveness-*`): every world
//!   release reads the rows of its upgrade type, and a cell without a row reads the nearest one
//!   on its platform (architecture, then topology, upgrade type, network; more runs break ties).
//!
//! On top of the table: a run's backends move together (a common draw per run, per family, per
//! backend), 3% of runs fail to install and report no disruption at all, CI-infrastructure
//! spells hit the CI's liveness probe and most backends together, one job starts late and one
//! stops early, and each release has a stream of nightlies every 3–6 hours of which every run
//! tests the newest (sometimes an older one). A run is generated in one place
//! (`runs.rs`, `Generator::run`) so that later kinds of evidence (interval timelines) can be added
//! per run.

pub(crate) mod jobs;
pub(crate) mod payloads;
mod runs;
pub(crate) mod scenarios;
pub(crate) mod table;
mod tree;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};

pub use jobs::WorldJob;
pub use payloads::Payload;
pub use scenarios::{Class, Decoy, Part, Plant, Spell, mixes};
pub use table::{EmbeddedTableError, Table};

use crate::model::{Dimensions, MechanismKind, RunRecord};
use crate::synth::Rng;

/// The bucket the world's runs live in.
pub const BUCKET: &str = "test-platform-results";

/// Everything a world is built from.
#[derive(Debug, Clone)]
pub struct WorldSpec {
    pub seed: u64,
    /// The end (exclusive), midnight UTC.
    pub end: DateTime<Utc>,
    pub days: u32,
    pub classes: Vec<Class>,
    /// Runs a day of a metal scope with a planted regression (the density knob).
    pub density: f64,
    /// Runs per table JobRun: a job runs `JobRuns / 30 × scale` times a day.
    pub scale: f64,
    /// The mechanism behind every plant's outages (None: each family's own, see
    /// [`Plant::mechanism`]).
    pub mechanism: Option<MechanismKind>,
    /// Whether the interval files hold the watched namespaces' pods.
    pub pod_intervals: bool,
}

impl WorldSpec {
    /// 28 days ending at `end`, metal scopes with a planted regression at 12 runs a day, the
    /// other jobs at half the table's rates.
    pub fn new(seed: u64, end: DateTime<Utc>, classes: Vec<Class>) -> WorldSpec {
        WorldSpec {
            seed,
            end,
            days: 28,
            classes,
            density: 12.0,
            scale: 0.5,
            mechanism: None,
            pod_intervals: true,
        }
    }

    pub fn start(&self) -> DateTime<Utc> {
        self.end - Duration::days(i64::from(self.days))
    }
}

/// The truth of one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunTruth {
    pub job: String,
    pub build_id: String,
    pub started: DateTime<Utc>,
    pub dims: Dimensions,
    pub payload: String,
    /// Its place in the release's payload stream.
    pub payload_index: usize,
    /// The planted regression that hit it (its id).
    pub plant: Option<usize>,
    /// The decoy that disturbed it.
    pub decoy: Option<Class>,
    /// Why it had CI-infrastructure trouble, if it had.
    pub ci_trouble: Option<String>,
    /// Its cluster never came up: no disruption data.
    pub install_failure: bool,
}

/// A generated world: the runs as ingest would store them, and the truth.
#[derive(Debug, Clone)]
pub struct World {
    pub spec: WorldSpec,
    pub jobs: Vec<WorldJob>,
    pub records: Vec<RunRecord>,
    /// One per record, in the same order.
    pub truth: Vec<RunTruth>,
    pub plants: Vec<Plant>,
    pub decoys: Vec<Decoy>,
    pub spells: Vec<Spell>,
    /// Each release's nightlies, oldest first.
    pub payloads: BTreeMap<String, Vec<Payload>>,
}

/// Builds the world of `spec`.
pub fn build(spec: &WorldSpec) -> Result<World, EmbeddedTableError> {
    let table = Table::embedded()?;
    let mut rng = Rng::new(spec.seed);
    let (start, end) = (spec.start(), spec.end);
    let payloads: BTreeMap<String, Vec<Payload>> = ["4.13", "4.14", "4.15"]
        .iter()
        .map(|r| (r.to_string(), payloads::stream(r, start, end, &mut rng)))
        .collect();

    let mut plants = scenarios::plants(spec, &payloads, &mut rng);
    let dense: Vec<&str> = plants
        .iter()
        .filter(|p| p.density > 0.0)
        .map(|p| p.release.as_str())
        .collect();

    let jobs = jobs::jobs(spec, &table, &dense);
    let spells = scenarios::spells(spec, &mut rng);
    let generator = runs::Generator::new(spec, &table, &jobs, &payloads, &plants, &spells);
    let mut records = Vec::new();
    let mut truth = Vec::new();
    for (k, started) in schedule(spec, &jobs, &mut rng) {
        let n = records.len() as u64;
        let build_id = format!(
            "{}",
            1_900_000_000_000_000_000u64 + (spec.seed % 100_000) * 100_000 + n
        );
        let mut run_rng = Rng::new(spec.seed ^ n.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let (r, t) = generator.run(&jobs, k, started, build_id, &mut run_rng);
        records.push(r);
        truth.push(t);
    }

    fill_plant_truth(&mut plants, &truth);
    let decoys = scenarios::decoys(spec);
    Ok(World {
        spec: spec.clone(),
        jobs,
        records,
        truth,
        plants,
        decoys,
        spells,
        payloads,
    })
}

/// Every run's job and start, in start order: each job runs `per_day` times a day (the
/// fractions carried over) from its first day to its last, at random times of the day.
fn schedule(spec: &WorldSpec, jobs: &[WorldJob], rng: &mut Rng) -> Vec<(usize, DateTime<Utc>)> {
    let mut out = Vec::new();
    for (k, job) in jobs.iter().enumerate() {
        let mut expected = rng.unit();
        let mut count = 0usize;
        let last = job.until_day.unwrap_or(spec.days).min(spec.days);
        for day in job.from_day..last {
            expected += job.per_day;
            while (count as f64) < expected.floor() && job.max_runs.is_none_or(|m| count < m) {
                let at = spec.start()
                    + Duration::days(i64::from(day))
                    + Duration::seconds(rng.below(86_000) as i64);
                out.push((k, at));
                count += 1;
            }
        }
    }
    out.sort_by_key(|(k, at)| (*at, *k));
    out
}

/// Each plant part's first bad run and the first run of the fix, from the runs' truth.
fn fill_plant_truth(plants: &mut [Plant], truth: &[RunTruth]) {
    for p in plants.iter_mut() {
        let of_release = || {
            truth
                .iter()
                .filter(|t| t.dims.release == p.release && !t.install_failure)
        };
        for part in &mut p.parts {
            let bad = |t: &&RunTruth| {
                part.scope.contains(&t.dims)
                    && t.payload_index >= part.first_bad.index
                    && p.fix.as_ref().is_none_or(|f| t.payload_index < f.index)
            };
            part.onset_at = of_release().filter(bad).map(|t| t.started).min();
        }
        if let Some(fix) = &p.fix {
            let in_scope = |t: &&RunTruth| p.parts.iter().any(|part| part.scope.contains(&t.dims));
            p.fix_first_run = of_release()
                .filter(in_scope)
                .filter(|t| t.payload_index >= fix.index)
                .map(|t| t.started)
                .min();
        }
    }
}

impl World {
    /// Every combination of dimensions the world's runs have.
    pub fn variants(&self) -> Vec<Dimensions> {
        let set: BTreeSet<&Dimensions> = self.truth.iter().map(|t| &t.dims).collect();
        set.into_iter().cloned().collect()
    }

    /// The run's truth by build id.
    pub fn truth_of(&self, build_id: &str) -> Option<&RunTruth> {
        self.truth.iter().find(|t| t.build_id == build_id)
    }

    /// Writes the world's bucket tree under `root` in the real artifact formats; the number of
    /// files written.
    pub fn write_tree(&self, root: &std::path::Path) -> std::io::Result<u64> {
        tree::write(self, root)
    }
}

#[cfg(test)]
mod tests;
