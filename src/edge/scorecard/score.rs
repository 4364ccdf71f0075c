//! Scoring a replay against the world's truth: pure functions over regression reports, the
//! incidents they left and the generator's truth. Matching, scope exactness, sample purity and
//! the payload window are each one function here.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::application::backtest::Story;
use crate::model::{DAY, Dimensions, RegressionReport, Scope};
use crate::synth::world::{Class, Part, Plant, RunTruth, World};

/// What one world's replay said: each cycle's regressions (active and resolved), and the
/// incidents they left in the replay's store.
#[derive(Debug, Clone, Default)]
pub(super) struct Observed {
    pub(super) cycles: Vec<(DateTime<Utc>, Vec<RegressionReport>)>,
    pub(super) incidents: Vec<Story>,
}

/// How one planted regression was handled.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlantScore {
    pub class: Class,
    pub family: String,
    pub release: String,
    pub planted_scope: String,
    /// Runs a day of the planted scope (12 or 6 for the metal scopes).
    pub runs_per_day: f64,
    /// Runs a day of its first part alone: the whole scope's when it has one part; about half
    /// for a growing regression, whose first part is one network of the scope.
    pub first_part_runs_per_day: f64,
    pub detected: bool,
    /// The last report before the fix (or the end) covers exactly the affected variants.
    pub exact_scope: bool,
    pub reported_scope: Option<String>,
    /// Variants (with runs of the family) the plant affected then, and the last report covered.
    pub affected_variants: usize,
    pub reported_variants: usize,
    /// First cycle reporting it minus its first bad run, in days.
    pub detection_days: Option<f64>,
    /// Its first disrupted run (one it hit, without CI trouble) minus its first bad run, in
    /// days: the part of `detection_days` spent waiting while the runs of bad payloads were all
    /// spared (a share that ramps up, or chance).
    pub first_disrupted_days: Option<f64>,
    pub fixed: bool,
    /// First cycle with it resolved minus the first run of the fixing payload, in days.
    pub recovery_days: Option<f64>,
    /// Incidents the replay kept for it (one problem is one incident).
    pub incidents: usize,
    /// Sample runs listed for it, and those that were truly regressed, clean runs of its scope.
    pub samples: usize,
    pub pure_samples: usize,
    /// The reported onset window holds the true first bad payload, and how many payloads the
    /// scope tested in it.
    pub window_hit: Option<bool>,
    pub window_width: Option<usize>,
    /// The last report's window and the true first bad payload, to see why a window missed.
    pub window: Option<String>,
}

/// A reported regression that matches no planted one.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FalseRegression {
    /// The decoy (or quiet world) it fell for; None when it is none of them.
    pub class: Option<Class>,
    pub family: String,
    pub release: String,
    pub scope: String,
    pub first_reported: DateTime<Utc>,
    pub fingerprint: String,
    /// What the report said when first raised: the percentile, now against the reference and
    /// allowed, the runs and the test's p-value.
    pub numbers: String,
}

/// One world's score.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorldScore {
    pub seed: u64,
    pub classes: Vec<Class>,
    pub density: f64,
    pub plants: Vec<PlantScore>,
    pub false_regressions: Vec<FalseRegression>,
    /// Distinct reported regressions (fingerprints), and those matching a planted one.
    pub reported: usize,
    pub matched: usize,
}

/// The variants (combinations of dimensions) with runs measuring `family`, by release.
fn family_variants(world: &World, family: &str) -> Vec<Dimensions> {
    let backend = format!("{family}-new-connections");
    let set: BTreeSet<&Dimensions> = world
        .records
        .iter()
        .filter(|r| r.samples.iter().any(|s| s.backend == backend))
        .map(|r| &r.run.dimensions)
        .collect();
    set.into_iter().cloned().collect()
}

/// The variants of `release` a scope covers, among `variants`.
fn covered<'a>(
    scope: &Scope,
    release: &str,
    variants: &'a [Dimensions],
) -> BTreeSet<&'a Dimensions> {
    variants
        .iter()
        .filter(|v| v.release == release && scope.contains(v))
        .collect()
}

/// The variants a plant affects by `at`: those of the parts whose first bad run came by then.
fn affected<'a>(
    plant: &Plant,
    variants: &'a [Dimensions],
    at: DateTime<Utc>,
) -> BTreeSet<&'a Dimensions> {
    plant
        .parts
        .iter()
        .filter(|p| p.onset_at.is_some_and(|o| o <= at))
        .flat_map(|p| covered(&p.scope, &plant.release, variants))
        .collect()
}

/// Whether a report is about a plant: same family and release, and a variant in common with
/// any of its parts.
fn matches(report: &RegressionReport, plant: &Plant, variants: &[Dimensions]) -> bool {
    if report.family != plant.family || report.release != plant.release {
        return false;
    }
    let reported = covered(&report.scope, &report.release, variants);
    plant.parts.iter().any(|p| {
        covered(&p.scope, &plant.release, variants)
            .iter()
            .any(|v| reported.contains(v))
    })
}

/// Whether a sample run is a truly regressed, clean run of the plant's scope.
fn pure_sample(truth: Option<&RunTruth>, plant: &Plant) -> bool {
    truth.is_some_and(|t| {
        t.plant == Some(plant.id) && t.ci_trouble.is_none() && in_parts(t, plant, &plant.parts)
    })
}

/// Whether a run is one of the plant's release in any of `parts`.
fn in_parts(t: &RunTruth, plant: &Plant, parts: &[Part]) -> bool {
    t.dims.release == plant.release && parts.iter().any(|p| p.scope.contains(&t.dims))
}

/// Whether the reported onset holds the true first bad payload, and the width of the window in
/// payloads the scope tested. The window is an interval of the release's payload order
/// (`order`, oldest first): after the last good, up to and including the first bad. It holds
/// the truth when the truth lies in that interval, listed or not: a payload no run of any job
/// tested is unknown to the store (it cannot list it), yet the interval still holds it and the
/// changelog between its ends names its changes. The width counts the window's listed payloads
/// and its first bad (never the last good) that the scope tested.
fn payload_window(
    report: &RegressionReport,
    truth_first_bad: &str,
    order: &[&str],
    tested: &BTreeSet<&str>,
) -> Option<(bool, usize)> {
    let onset = report.onset.as_ref()?;
    let first_bad = onset.first_bad_payload.as_deref()?;
    let mut window: BTreeSet<&str> = onset.payloads.iter().map(String::as_str).collect();
    window.insert(first_bad);
    if let Some(good) = onset.last_good_payload.as_deref() {
        window.remove(good);
    }
    let width = window.iter().filter(|p| tested.contains(*p)).count();
    let at = |tag: &str| order.iter().position(|p| *p == tag);
    let inside = match (at(truth_first_bad), at(first_bad)) {
        (Some(truth), Some(bad)) => {
            let after_good = onset
                .last_good_payload
                .as_deref()
                .is_none_or(|g| at(g).is_some_and(|g| g < truth));
            after_good && truth <= bad
        }
        _ => window.contains(truth_first_bad),
    };
    Some((inside, width))
}

fn days(d: chrono::TimeDelta) -> f64 {
    d.num_seconds() as f64 / DAY as f64
}

/// The cycles' active reports matching a plant (from its first bad payload on), by cycle.
fn matching<'a>(
    plant: &Plant,
    variants: &[Dimensions],
    observed: &'a Observed,
) -> Vec<(DateTime<Utc>, Vec<&'a RegressionReport>)> {
    let from = plant.parts[0].first_bad.built;
    observed
        .cycles
        .iter()
        .filter(|(at, _)| *at >= from)
        .map(|(at, reports)| {
            let m = reports
                .iter()
                .filter(|r| r.status.is_active() && matches(r, plant, variants))
                .collect();
            (*at, m)
        })
        .collect()
}

/// Scores one plant.
fn score_plant(world: &World, plant: &Plant, observed: &Observed) -> PlantScore {
    let variants = family_variants(world, &plant.family);
    let cycles = matching(plant, &variants, observed);
    let onset = plant.parts[0].onset_at;
    let first = cycles
        .iter()
        .find(|(_, m)| !m.is_empty())
        .map(|(at, _)| *at);
    let end_of_truth = plant.fix_first_run.unwrap_or(world.spec.end);
    let last = cycles
        .iter()
        .rev()
        .find(|(at, m)| *at < end_of_truth && !m.is_empty());
    let (exact, reported_scope, counts) = last_scope(plant, &variants, last);
    let recovery = plant
        .fix_first_run
        .filter(|_| first.is_some())
        .and_then(|fix| {
            cycles
                .iter()
                .find(|(at, m)| *at >= fix && m.is_empty())
                .map(|(at, _)| days(*at - fix))
        });
    let (samples, pure_samples) = purity(world, plant, &cycles);
    let window = last_window(world, plant, last);

    PlantScore {
        class: plant.class,
        family: plant.family.clone(),
        release: plant.release.clone(),
        planted_scope: plant
            .parts
            .iter()
            .map(|p| p.scope.describe())
            .collect::<Vec<_>>()
            .join(" then "),
        runs_per_day: runs_per_day(world, plant, &plant.parts),
        first_part_runs_per_day: runs_per_day(world, plant, &plant.parts[..1]),
        detected: first.is_some(),
        exact_scope: exact,
        reported_scope,
        affected_variants: counts.0,
        reported_variants: counts.1,
        detection_days: first.zip(onset).map(|(f, o)| days(f - o)),
        first_disrupted_days: first_disrupted(world, plant)
            .zip(onset)
            .map(|(d, o)| days(d - o)),
        fixed: plant.fix.is_some(),
        recovery_days: recovery,
        incidents: incidents_of(plant, &variants, &observed.incidents),
        samples,
        pure_samples,
        window_hit: window.map(|w| w.0),
        window_width: window.map(|w| w.1),
        window: onset_text(plant, last, onset),
    }
}

/// How the last matching cycle before the truth ends reported the plant's scope: whether
/// exactly (one report covering the affected variants), in words, and how many variants are
/// affected and reported.
fn last_scope(
    plant: &Plant,
    variants: &[Dimensions],
    last: Option<&(DateTime<Utc>, Vec<&RegressionReport>)>,
) -> (bool, Option<String>, (usize, usize)) {
    match last {
        Some((at, m)) => {
            let want = affected(plant, variants, *at);
            let got: BTreeSet<&Dimensions> = m
                .iter()
                .flat_map(|r| covered(&r.scope, &r.release, variants))
                .collect();
            let text = m
                .iter()
                .map(|r| r.scope.describe())
                .collect::<Vec<_>>()
                .join(" + ");
            (
                m.len() == 1 && got == want,
                Some(text),
                (want.len(), got.len()),
            )
        }
        None => (false, None, (0, 0)),
    }
}

/// Whether the payload window the last matching cycle reported holds the truth, and its width.
fn last_window(
    world: &World,
    plant: &Plant,
    last: Option<&(DateTime<Utc>, Vec<&RegressionReport>)>,
) -> Option<(bool, usize)> {
    last.and_then(|(_, m)| {
        let order: Vec<&str> = world
            .payloads
            .get(&plant.release)
            .map_or(Vec::new(), |s| s.iter().map(|p| p.tag.as_str()).collect());
        let tested = tested_by(world, plant);
        m.iter()
            .find_map(|r| payload_window(r, &plant.parts[0].first_bad.tag, &order, &tested))
    })
}

/// The payload window and onset the last matching cycle reported, beside the truth, in words.
fn onset_text(
    plant: &Plant,
    last: Option<&(DateTime<Utc>, Vec<&RegressionReport>)>,
    onset: Option<DateTime<Utc>>,
) -> Option<String> {
    last.and_then(|(_, m)| m.iter().find_map(|r| r.onset.as_ref()))
        .map(|o| {
            format!(
                "{} .. {} (onset {}), truth {} first run {}",
                o.last_good_payload.as_deref().unwrap_or("-"),
                o.first_bad_payload.as_deref().unwrap_or("-"),
                o.at.format("%m-%d %H:%M"),
                plant.parts[0].first_bad.tag,
                onset.map_or("-".to_string(), |t| t.format("%m-%d %H:%M").to_string()),
            )
        })
}

/// Sample runs listed by the plant's reports (each counted once), and the pure ones.
fn purity(
    world: &World,
    plant: &Plant,
    cycles: &[(DateTime<Utc>, Vec<&RegressionReport>)],
) -> (usize, usize) {
    let by_build: HashMap<&str, &RunTruth> = world
        .truth
        .iter()
        .map(|t| (t.build_id.as_str(), t))
        .collect();
    let listed: BTreeSet<&str> = cycles
        .iter()
        .flat_map(|(_, m)| {
            m.iter()
                .flat_map(|r| r.sample_jobs.iter().map(|s| s.build_id.as_str()))
        })
        .collect();
    let pure = listed
        .iter()
        .filter(|b| pure_sample(by_build.get(*b).copied(), plant))
        .count();
    (listed.len(), pure)
}

/// The payloads the plant's first part's runs tested.
fn tested_by<'a>(world: &'a World, plant: &Plant) -> BTreeSet<&'a str> {
    world
        .truth
        .iter()
        .filter(|t| in_parts(t, plant, &plant.parts[..1]))
        .map(|t| t.payload.as_str())
        .collect()
}

/// When the plant first disrupted a run: its first truly regressed, clean run ([`pure_sample`]).
fn first_disrupted(world: &World, plant: &Plant) -> Option<DateTime<Utc>> {
    world
        .truth
        .iter()
        .filter(|t| pure_sample(Some(t), plant))
        .map(|t| t.started)
        .min()
}

/// Runs a day of the plant's release in any of `parts`.
fn runs_per_day(world: &World, plant: &Plant, parts: &[Part]) -> f64 {
    let n = world
        .truth
        .iter()
        .filter(|t| in_parts(t, plant, parts))
        .count();
    n as f64 / f64::from(world.spec.days)
}

/// Incidents about a plant: same family and release, a variant in common.
fn incidents_of(plant: &Plant, variants: &[Dimensions], incidents: &[Story]) -> usize {
    incidents
        .iter()
        .filter(|s| s.family == plant.family && s.release == plant.release)
        .filter(|s| {
            let got = covered(&s.scope, &s.release, variants);
            plant.parts.iter().any(|p| {
                covered(&p.scope, &plant.release, variants)
                    .iter()
                    .any(|v| got.contains(v))
            })
        })
        .count()
}

/// What a regression matching no plant fell for: the quiet world, a decoy of its family whose
/// scope it shares a variant with, CI trouble (a CI decoy's scope, or mostly CI-troubled sample
/// runs), or nothing known.
fn attribute(report: &RegressionReport, world: &World, variants: &[Dimensions]) -> Option<Class> {
    if world.spec.classes == [Class::Quiet] {
        return Some(Class::Quiet);
    }
    let reported = covered(&report.scope, &report.release, variants);
    let overlaps = |s: &Scope| {
        variants
            .iter()
            .any(|v| s.contains(v) && reported.contains(v))
    };
    if let Some(d) = world
        .decoys
        .iter()
        .find(|d| d.family.as_deref() == Some(&report.family) && overlaps(&d.scope))
    {
        return Some(d.class);
    }
    let troubled = report
        .sample_jobs
        .iter()
        .filter(|s| {
            world
                .truth_of(&s.build_id)
                .is_some_and(|t| t.ci_trouble.is_some())
        })
        .count();
    let ci_scope = world
        .decoys
        .iter()
        .any(|d| d.family.is_none() && overlaps(&d.scope));
    ((ci_scope || 2 * troubled > report.sample_jobs.len())
        && world.spec.classes.contains(&Class::CiInfra))
    .then_some(Class::CiInfra)
}

/// A report's figures in one line, to see why it was raised.
fn numbers(r: &RegressionReport) -> String {
    format!(
        "{} {} {:.1} s against {} from {} (allowed {:.1} s) over {} runs ({} reference runs), p {:.2e}, {}",
        r.backend.as_deref().unwrap_or(&r.family),
        r.percentile,
        r.observed_seconds,
        r.baseline_seconds
            .map_or("no reference".to_string(), |b| format!("{b:.1} s")),
        r.threshold_source,
        r.allowed_seconds,
        r.job_runs,
        r.baseline_runs,
        r.p_value,
        r.groups.join(", "),
    )
}

/// What the report's sample runs truly were: planted, a decoy, CI trouble, or clean.
fn samples_truth(r: &RegressionReport, world: &World) -> String {
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for s in &r.sample_jobs {
        let kind = match world.truth_of(&s.build_id) {
            None => "unknown".to_string(),
            Some(t) if t.ci_trouble.is_some() => "CI trouble".to_string(),
            Some(t) if t.plant.is_some() => "planted".to_string(),
            Some(t) => t
                .decoy
                .map_or_else(|| "clean".to_string(), |c| c.as_str().to_string()),
        };
        *kinds.entry(kind).or_default() += 1;
    }
    kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Scores one world: each plant, and every reported regression that matches none.
pub(super) fn score_world(world: &World, observed: &Observed) -> WorldScore {
    let plants: Vec<PlantScore> = world
        .plants
        .iter()
        .map(|p| score_plant(world, p, observed))
        .collect();

    let mut first: BTreeMap<&str, (DateTime<Utc>, &RegressionReport)> = BTreeMap::new();
    for (at, reports) in &observed.cycles {
        for r in reports.iter().filter(|r| r.status.is_active()) {
            first.entry(r.fingerprint.as_str()).or_insert((*at, r));
        }
    }

    let mut false_regressions = Vec::new();
    let mut matched = 0;
    for (fingerprint, (at, r)) in &first {
        let variants = family_variants(world, &r.family);
        let about = |p: &&Plant| matches(r, p, &variants) && *at >= p.parts[0].first_bad.built;
        if world.plants.iter().any(|p| about(&p)) {
            matched += 1;
            continue;
        }
        false_regressions.push(FalseRegression {
            class: attribute(r, world, &variants),
            family: r.family.clone(),
            release: r.release.clone(),
            scope: r.scope.describe(),
            first_reported: *at,
            fingerprint: fingerprint.to_string(),
            numbers: format!("{}; samples: {}", numbers(r), samples_truth(r, world)),
        });
    }

    WorldScore {
        seed: world.spec.seed,
        classes: world.spec.classes.clone(),
        density: world.spec.density,
        plants,
        false_regressions,
        reported: first.len(),
        matched,
    }
}

#[cfg(test)]
mod tests;
