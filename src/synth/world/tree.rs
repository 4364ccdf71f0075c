//! The world written as a bucket tree, through the artifact writer the other scenarios use, so
//! that ingest reads back the world's records.

use std::path::Path;

use super::World;
use crate::synth::artifacts::{self, RunPlan};
use crate::synth::{JobSpec, Rng, Scenario};

/// Writes every run's files under `root`; the number of files.
pub(super) fn write(world: &World, root: &Path) -> std::io::Result<u64> {
    // The writer takes its bucket and interval noise from a scenario.
    let mut scenario = Scenario::month(world.spec.seed, world.spec.end);
    scenario.bucket = super::BUCKET.into();
    scenario.noise_intervals = 5;
    let specs: Vec<JobSpec> = world
        .jobs
        .iter()
        .map(|j| JobSpec::new(&j.name, j.per_day))
        .collect();
    let mut rng = Rng::new(world.spec.seed ^ 0x7ee5);
    let mut files = 0;
    for (record, truth) in world.records.iter().zip(&world.truth) {
        let Some(job) = specs.iter().find(|j| j.name == record.run.job_name) else {
            continue;
        };
        let plant = truth
            .plant
            .and_then(|id| world.plants.iter().find(|p| p.id == id));
        let regressed = plant.map(|p| (p.family.as_str(), p.mechanism));
        let mut plan = RunPlan::from_record(job, record, regressed, truth.ci_trouble.is_some());
        plan.pod_intervals = world.spec.pod_intervals;
        files += artifacts::write_run(&scenario, &plan, root, &mut rng)?.files;
    }
    Ok(files)
}
