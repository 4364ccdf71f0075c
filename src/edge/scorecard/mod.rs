//! The quality scorecard (`sheriff bench quality`, and the integration tests' judge of
//! detection). Replays cycles every 6 hours over worlds calibrated from origin's real
//! disruption table (`synth::world`), with sheriff's default settings (or the `[evaluate]`
//! settings given), and scores what they reported against the worlds' truth, per failure class
//! and overall.
//!
//! The floors (`FLOORS`) are the targets detection must reach; `--check` fails below them.

mod score;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use chrono::Duration;
use serde::Serialize;

use crate::config::{DatabaseSettings, DatabaseUrl, EvaluateSettings, Settings};
use crate::model::HOUR;
use crate::synth::world::{Class, Table, World, WorldSpec, build, mixes};
pub use score::{FalseRegression, PlantScore, WorldScore};
use score::{Observed, score_world};

/// The targets, in one place. A scorecard below any of them fails `--check`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Floors {
    /// Planted regressions detected with exactly their scope.
    pub recall_exact: f64,
    /// Reported regressions matching nothing planted.
    pub false_regressions: usize,
    /// Sample runs that are truly regressed, clean runs of the scope.
    pub sample_purity: f64,
    /// Detection latency in days, at about 12 runs a day in the scope …
    pub detection_median_days_dense: f64,
    pub detection_worst_days_dense: f64,
    /// … and at about 6.
    pub detection_median_days_sparse: f64,
    /// From the fixing payload's first runs to resolved, in days.
    pub recovery_worst_days: f64,
    /// A growing regression: its first part detected within this many days, as one incident.
    pub growing_first_part_days: f64,
    pub growing_incidents: usize,
    /// The reported onset window holds the true first bad payload this often …
    pub window_hit: f64,
    /// … and spans at most `window_payloads` payloads the scope tested this often.
    pub window_narrow: f64,
    pub window_payloads: usize,
}

const FLOORS: Floors = Floors {
    recall_exact: 1.0,
    false_regressions: 0,
    sample_purity: 1.0,
    detection_median_days_dense: 1.0,
    detection_worst_days_dense: 2.0,
    detection_median_days_sparse: 1.5,
    recovery_worst_days: 1.5,
    growing_first_part_days: 1.5,
    growing_incidents: 1,
    window_hit: 0.95,
    window_narrow: 0.80,
    window_payloads: 3,
};

/// A scope runs "densely" (the 12-a-day targets) from this many runs a day.
const DENSE_RUNS_PER_DAY: f64 = 9.0;

/// What to score.
#[derive(Debug, Clone)]
pub struct QualityOptions {
    pub seeds: usize,
    /// The first world's index: worlds `first..first + seeds` are built (seed `1000 + i`).
    pub first: usize,
    /// The failure classes (all when empty).
    pub classes: Vec<Class>,
    /// A folder to keep each world's store (`world-<seed>.db`) and its runs' truth
    /// (`world-<seed>.truth.jsonl`) in, to look into what a cycle saw; None keeps nothing.
    pub keep: Option<PathBuf>,
    /// The evaluation settings to score; sheriff's defaults when None.
    pub evaluate: Option<EvaluateSettings>,
}

/// One row of the scorecard: a failure class (planted ones split by the scope's density).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct ClassSummary {
    pub class: Option<Class>,
    /// `12/day`, `6/day`, or empty for classes that plant nothing.
    pub density: String,
    pub worlds: usize,
    pub planted: usize,
    pub detected: usize,
    pub exact_scope: usize,
    pub recall_exact: Option<f64>,
    pub detection_median_days: Option<f64>,
    pub detection_worst_days: Option<f64>,
    /// Detection counted from each plant's first disrupted run instead of its first bad run:
    /// what is left once the wait for a disrupted run is taken out (runs still spared after it,
    /// the runs' own length, the 6 hours between cycles, and the tests). Negative for a plant
    /// reported before its first disrupted run; plants without one are left out.
    pub detection_after_disrupted_median_days: Option<f64>,
    pub detection_after_disrupted_worst_days: Option<f64>,
    pub recovery_median_days: Option<f64>,
    pub recovery_worst_days: Option<f64>,
    pub not_recovered: usize,
    pub samples: usize,
    pub pure_samples: usize,
    pub purity: Option<f64>,
    pub windows: usize,
    pub window_hits: usize,
    pub window_narrow: usize,
    /// Plants the replay kept as more than one incident.
    pub split_incidents: usize,
    pub false_regressions: usize,
}

/// The whole scorecard.
#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    /// The `[evaluate]` settings scored were sheriff's defaults (`bench quality --config` scores
    /// a file's).
    pub default_settings: bool,
    pub seeds: usize,
    pub runs: usize,
    pub seconds: f64,
    pub classes: Vec<ClassSummary>,
    pub overall: ClassSummary,
    /// Distinct reported regressions, those matching a planted one, and their share.
    pub reported: usize,
    pub matched: usize,
    pub precision: Option<f64>,
    pub worlds: Vec<WorldScore>,
    pub floors: Floors,
    pub below_floors: Vec<String>,
}

impl Scorecard {
    /// Which `[evaluate]` settings it scored, in words.
    pub fn settings_scored(&self) -> &'static str {
        if self.default_settings {
            "sheriff's default settings"
        } else {
            "the [evaluate] settings given (--config)"
        }
    }
}

/// The day every scored world ends (fixed, so a seed is the same world on every run).
fn world_end() -> chrono::DateTime<chrono::Utc> {
    crate::synth::day(2026, 11, 29)
}

/// Builds and scores `options.seeds` worlds: seed `i` holds mix `i` of the selected classes.
pub async fn quality(options: &QualityOptions) -> Result<Scorecard> {
    let started = Instant::now();
    let selected = if options.classes.is_empty() {
        Class::ALL.to_vec()
    } else {
        options.classes.clone()
    };
    let mixes = mixes(&selected);
    anyhow::ensure!(!mixes.is_empty(), "no failure class selected");
    let mut settings = Settings::default();
    if let Some(evaluate) = &options.evaluate {
        settings.evaluate = evaluate.clone();
    }
    let mut worlds = Vec::new();
    let mut runs = 0;
    for i in options.first..options.first + options.seeds {
        let (classes, density) = mixes[i % mixes.len()].clone();
        let mut spec = WorldSpec::new(1000 + i as u64, world_end(), classes);
        spec.density = density;
        let world = build(&spec)?;
        runs += world.records.len();
        let observed = replay(&world, &settings, options.keep.as_deref())
            .await
            .with_context(|| format!("replaying seed {}", spec.seed))?;
        let score = score_world(&world, &observed);
        tracing::info!(
            seed = spec.seed,
            runs = world.records.len(),
            reported = score.reported,
            "world scored"
        );
        worlds.push(score);
    }
    let mut card = scorecard(worlds, options.seeds, runs, started.elapsed().as_secs_f64());
    card.default_settings = options.evaluate.is_none();
    Ok(card)
}

/// Replays cycles every 6 hours from the world's fifteenth day to its end over a fresh SQLite
/// store holding its runs and origin's table (as a deployment imports it), with `settings`.
/// With `keep`, the store stays in that folder beside its runs' truth.
async fn replay(world: &World, settings: &Settings, keep: Option<&Path>) -> Result<Observed> {
    let scratch;
    let path = match keep {
        Some(dir) => kept_world(dir, world)?,
        None => {
            scratch = tempfile::tempdir().context("a folder for the world's store")?;
            scratch.path().join("world.db")
        }
    };

    let url = format!("sqlite://{}", path.display());
    let store = crate::store::Store::open(&DatabaseSettings {
        url: url.parse::<DatabaseUrl>().map_err(anyhow::Error::msg)?,
        ..Default::default()
    })
    .await?;

    store.trouble().apply(&settings.evaluate.ci_trouble).await?;
    let table = Table::embedded()?;
    store
        .evaluations()
        .import_thresholds(table.rows(), "data/origin/query_results_upgrades.json")
        .await?;

    for chunk in world.records.chunks(1000) {
        store.runs().write_runs(chunk, false).await?;
    }

    let store = Arc::new(store);
    let from = world.spec.start() + Duration::days(14);
    let cadence = crate::application::backtest::Cadence::Every(6 * HOUR);
    let mut cycles = Vec::new();
    let mut observe = |r: &crate::application::cycle::CycleReport| {
        cycles.push((r.evaluated_at, r.regressions.clone()))
    };

    let backtest = crate::application::backtest::backtest_observed(
        store.clone(),
        settings,
        from,
        world.spec.end,
        &cadence,
        &mut observe,
    )
    .await?;

    store.close().await;
    Ok(Observed {
        cycles,
        incidents: backtest.incidents,
    })
}

/// Where a kept world's store goes in `dir` (an older one of the same seed removed), with its
/// runs' truth written beside it, one JSON object a line.
fn kept_world(dir: &Path, world: &World) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    let seed = world.spec.seed;
    let db = dir.join(format!("world-{seed}.db"));
    for stale in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", db.display()));
    }
    let mut lines = String::new();
    for t in &world.truth {
        writeln!(lines, "{}", serde_json::to_string(t)?)?;
    }
    let truth = dir.join(format!("world-{seed}.truth.jsonl"));
    std::fs::write(&truth, lines).with_context(|| format!("writing {}", truth.display()))?;
    Ok(db)
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            xs[n / 2]
        } else {
            (xs[n / 2 - 1] + xs[n / 2]) / 2.0
        }
    })
}

fn ratio(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn density_label(p: &PlantScore) -> &'static str {
    if p.runs_per_day >= DENSE_RUNS_PER_DAY {
        "12/day"
    } else {
        "6/day"
    }
}

/// Sums plant scores into a row.
fn summarize<'a>(row: &mut ClassSummary, plants: impl Iterator<Item = &'a PlantScore>) {
    let plants: Vec<&PlantScore> = plants.collect();
    row.planted += plants.len();
    row.detected += plants.iter().filter(|p| p.detected).count();
    row.exact_scope += plants
        .iter()
        .filter(|p| p.detected && p.exact_scope)
        .count();
    let detection: Vec<f64> = plants.iter().filter_map(|p| p.detection_days).collect();
    row.detection_worst_days = detection.iter().copied().reduce(f64::max);
    row.detection_median_days = median(detection);
    let after: Vec<f64> = plants
        .iter()
        .filter_map(|p| Some(p.detection_days? - p.first_disrupted_days?))
        .collect();
    row.detection_after_disrupted_worst_days = after.iter().copied().reduce(f64::max);
    row.detection_after_disrupted_median_days = median(after);
    let recovery: Vec<f64> = plants.iter().filter_map(|p| p.recovery_days).collect();
    row.not_recovered += plants
        .iter()
        .filter(|p| p.fixed && p.detected && p.recovery_days.is_none())
        .count();
    row.recovery_worst_days = recovery.iter().copied().reduce(f64::max);
    row.recovery_median_days = median(recovery);
    row.samples += plants.iter().map(|p| p.samples).sum::<usize>();
    row.pure_samples += plants.iter().map(|p| p.pure_samples).sum::<usize>();
    row.windows += plants.iter().filter(|p| p.window_hit.is_some()).count();
    row.window_hits += plants.iter().filter(|p| p.window_hit == Some(true)).count();
    row.window_narrow += plants
        .iter()
        .filter(|p| p.window_width.is_some_and(|w| w <= FLOORS.window_payloads))
        .count();
    row.split_incidents += plants.iter().filter(|p| p.incidents > 1).count();
    row.recall_exact = ratio(row.exact_scope, row.planted);
    row.purity = ratio(row.pure_samples, row.samples);
}

/// The rows: each planted class by density, each other class, and overall.
pub fn scorecard(worlds: Vec<WorldScore>, seeds: usize, runs: usize, seconds: f64) -> Scorecard {
    let all_plants = || worlds.iter().flat_map(|w| w.plants.iter());
    let mut classes = Vec::new();
    for class in Class::ALL {
        let in_worlds = worlds.iter().filter(|w| w.classes.contains(&class)).count();
        if in_worlds == 0 {
            continue;
        }
        let false_regressions = worlds
            .iter()
            .flat_map(|w| &w.false_regressions)
            .filter(|f| f.class == Some(class))
            .count();
        let labels = if class.is_planted() {
            vec!["12/day", "6/day"]
        } else {
            vec![""]
        };
        for label in labels {
            let plants: Vec<&PlantScore> = all_plants()
                .filter(|p| p.class == class && (label.is_empty() || density_label(p) == label))
                .collect();
            if class.is_planted() && plants.is_empty() {
                continue;
            }
            let mut row = ClassSummary {
                class: Some(class),
                density: label.into(),
                worlds: in_worlds,
                ..Default::default()
            };
            summarize(&mut row, plants.into_iter());
            row.false_regressions = if label == "6/day" {
                0
            } else {
                false_regressions
            };
            classes.push(row);
        }
    }

    let mut overall = ClassSummary {
        worlds: worlds.len(),
        ..Default::default()
    };

    summarize(&mut overall, all_plants());
    overall.false_regressions = worlds.iter().map(|w| w.false_regressions.len()).sum();
    let reported = worlds.iter().map(|w| w.reported).sum();
    let matched = worlds.iter().map(|w| w.matched).sum();
    let mut card = Scorecard {
        default_settings: true,
        seeds,
        runs,
        seconds,
        classes,
        overall,
        reported,
        matched,
        precision: ratio(matched, reported),
        worlds,
        floors: FLOORS,
        below_floors: Vec::new(),
    };

    card.below_floors = below_floors(&card, &FLOORS);
    card
}

/// Every floor the scorecard is below, in words.
fn below_floors(card: &Scorecard, floors: &Floors) -> Vec<String> {
    let mut below = Below::default();
    let o = &card.overall;
    below.overall(o, floors);

    let plants: Vec<&PlantScore> = card.worlds.iter().flat_map(|w| &w.plants).collect();
    below.latency(&plants, o, floors);
    below.growing(&plants, floors);

    below.window(o, floors);
    below.0
}

/// The floors a scorecard is below, in words, in the order they are checked.
#[derive(Default)]
struct Below(Vec<String>);

impl Below {
    fn check(&mut self, failed: bool, what: String) {
        if failed {
            self.0.push(what);
        }
    }

    /// Recall with the exact scope, false regressions and sample purity.
    fn overall(&mut self, o: &ClassSummary, floors: &Floors) {
        self.check(
            o.recall_exact.is_some_and(|r| r < floors.recall_exact),
            format!(
                "recall with exact scope {} < {}",
                pct(o.recall_exact),
                pct(Some(floors.recall_exact))
            ),
        );
        self.check(
            o.false_regressions > floors.false_regressions,
            format!(
                "{} false regressions > {}",
                o.false_regressions, floors.false_regressions
            ),
        );
        self.check(
            o.purity.is_some_and(|p| p < floors.sample_purity),
            format!(
                "sample purity {} < {}",
                pct(o.purity),
                pct(Some(floors.sample_purity))
            ),
        );
    }

    /// Days to detect, at 12 runs a day and at 6, and days to recover.
    fn latency(&mut self, plants: &[&PlantScore], o: &ClassSummary, floors: &Floors) {
        let latency = |dense: bool| -> Vec<f64> {
            plants
                .iter()
                .filter(|p| (density_label(p) == "12/day") == dense)
                .filter_map(|p| p.detection_days)
                .collect()
        };

        let dense = latency(true);
        let worst = dense.iter().copied().reduce(f64::max);
        self.check(
            median(dense).is_some_and(|m| m > floors.detection_median_days_dense),
            format!(
                "detection median at 12/day above {} days",
                floors.detection_median_days_dense
            ),
        );

        self.check(
            worst.is_some_and(|w| w > floors.detection_worst_days_dense),
            format!(
                "detection worst at 12/day above {} days",
                floors.detection_worst_days_dense
            ),
        );

        self.check(
            median(latency(false)).is_some_and(|m| m > floors.detection_median_days_sparse),
            format!(
                "detection median at 6/day above {} days",
                floors.detection_median_days_sparse
            ),
        );

        self.check(
            o.not_recovered > 0
                || o.recovery_worst_days
                    .is_some_and(|w| w > floors.recovery_worst_days),
            format!(
                "recovery worst above {} days ({} never resolved)",
                floors.recovery_worst_days, o.not_recovered
            ),
        );
    }

    /// A growing regression: its first part detected in time, and one incident for all parts.
    fn growing(&mut self, plants: &[&PlantScore], floors: &Floors) {
        let growing: Vec<&&PlantScore> = plants
            .iter()
            .filter(|p| p.class == Class::Growing)
            .collect();
        self.check(
            growing.iter().any(|p| {
                p.detection_days
                    .is_none_or(|d| d > floors.growing_first_part_days)
            }),
            format!(
                "growing: first part not detected within {} days",
                floors.growing_first_part_days
            ),
        );
        self.check(
            growing
                .iter()
                .any(|p| p.incidents > floors.growing_incidents),
            "growing: more than one incident".into(),
        );
    }

    /// The payload window: that it holds the truth, and that it is narrow.
    fn window(&mut self, o: &ClassSummary, floors: &Floors) {
        self.check(
            ratio(o.window_hits, o.windows).is_some_and(|r| r < floors.window_hit)
                || (o.windows == 0 && o.planted > 0),
            format!(
                "payload window holds the truth {} < {}",
                pct(ratio(o.window_hits, o.windows)),
                pct(Some(floors.window_hit))
            ),
        );
        self.check(
            ratio(o.window_narrow, o.windows).is_some_and(|r| r < floors.window_narrow),
            format!(
                "payload window within {} tested payloads {} < {}",
                floors.window_payloads,
                pct(ratio(o.window_narrow, o.windows)),
                pct(Some(floors.window_narrow))
            ),
        );
    }
}

/// A share as a whole percentage, `-` when there is none.
fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.0}%", 100.0 * x))
}

/// The readable scorecard: one table row per class, overall, the false regressions, the floors.
pub fn render_text(card: &Scorecard) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "quality over {} seeds ({} runs) in {:.1} s, {}, a cycle every 6 h\n",
        card.seeds,
        card.runs,
        card.seconds,
        card.settings_scored()
    );

    let _ = writeln!(
        s,
        "{:<15} {:>7} {:>6} {:>8} {:>11} {:>11} {:>11} {:>8} {:>9} {:>9} {:>7}",
        "class",
        "density",
        "worlds",
        "planted",
        "recall=",
        "detect d",
        "recover d",
        "purity",
        "window",
        "window<=3",
        "false"
    );

    for row in card.classes.iter().chain(std::iter::once(&card.overall)) {
        render_row(&mut s, row);
    }

    render_after_disrupted(&mut s, card);

    let _ = writeln!(
        s,
        "\nprecision: {} of {} reported regressions match a planted one",
        card.matched, card.reported
    );

    let falses: Vec<_> = card
        .worlds
        .iter()
        .flat_map(|w| w.false_regressions.iter().map(move |f| (w.seed, f)))
        .collect();

    if !falses.is_empty() {
        let _ = writeln!(s, "\nfalse regressions ({}):", falses.len());
        for (seed, f) in falses.iter().take(40) {
            let class = f.class.map_or("other", Class::as_str);
            let _ = writeln!(
                s,
                "  seed {seed} [{class}] {} {} ({}) first {}\n    {}",
                f.family,
                f.release,
                f.scope,
                f.first_reported.format("%m-%d %H:%M"),
                f.numbers
            );
        }
        if falses.len() > 40 {
            let _ = writeln!(
                s,
                "  … {} more (--format json lists all)",
                falses.len() - 40
            );
        }
    }

    if card.below_floors.is_empty() {
        let _ = writeln!(s, "\nall floors met");
    } else {
        let _ = writeln!(s, "\nbelow the floors:");
        for b in &card.below_floors {
            let _ = writeln!(s, "  - {b}");
        }
    }

    s
}

/// Detection counted from each plant's first disrupted run, one line per planted row.
fn render_after_disrupted(s: &mut String, card: &Scorecard) {
    let _ = writeln!(
        s,
        "\ndetection counted from each plant's first disrupted run, median/worst days:"
    );
    for row in card.classes.iter().chain(std::iter::once(&card.overall)) {
        if let (Some(m), Some(w)) = (
            row.detection_after_disrupted_median_days,
            row.detection_after_disrupted_worst_days,
        ) {
            let name = row.class.map_or("overall", Class::as_str);
            let _ = writeln!(s, "  {name:<15} {:>7} {m:.2}/{w:.2}", row.density);
        }
    }
}

fn render_row(s: &mut String, row: &ClassSummary) {
    let name = row.class.map_or("overall", Class::as_str);
    let pair = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{a:.2}/{b:.2}"),
        _ => "-".into(),
    };
    let recall = if row.planted == 0 {
        "-".into()
    } else {
        format!("{}/{}", row.exact_scope, row.planted)
    };
    let window = if row.windows == 0 {
        "-".into()
    } else {
        format!("{}/{}", row.window_hits, row.windows)
    };
    let narrow = if row.windows == 0 {
        "-".into()
    } else {
        format!("{}/{}", row.window_narrow, row.windows)
    };
    let _ = writeln!(
        s,
        "{name:<15} {:>7} {:>6} {:>8} {recall:>11} {:>11} {:>11} {:>8} {window:>9} {narrow:>9} {:>7}",
        row.density,
        row.worlds,
        row.planted,
        pair(row.detection_median_days, row.detection_worst_days),
        pair(row.recovery_median_days, row.recovery_worst_days),
        pct(row.purity),
        row.false_regressions
    );
}
