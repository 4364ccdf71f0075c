//! `sheriff bench`: repeatable measurements of the figures the issues name, on generated data.
//! Run them on an optimised build: `cargo run --release -- bench ingest`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::config::{DatabaseSettings, DatabaseUrl, IngestSettings};
use crate::ingest::{IngestOptions, Source};
use crate::store::Store;
use crate::synth::{self, Scenario};

/// Where a benchmark keeps its database: a fresh SQLite file in a temporary folder, or the URL
/// given (which should point at an empty database).
pub async fn bench_store(database_url: Option<&str>, dir: &std::path::Path) -> Result<Store> {
    let url = match database_url {
        Some(u) => u.to_string(),
        None => format!("sqlite://{}", dir.join("bench.db").display()),
    };
    let settings = DatabaseSettings {
        url: url.parse::<DatabaseUrl>().map_err(anyhow::Error::msg)?,
        ..Default::default()
    };
    Store::open(&settings).await
}

/// What `bench ingest` measured.
#[derive(Debug, serde::Serialize)]
pub struct IngestBench {
    pub runs: u64,
    pub interval_mb: f64,
    pub generate_seconds: f64,
    pub ingest_seconds: f64,
    pub runs_per_second: f64,
    pub interval_mb_per_second: f64,
    pub engine: String,
}

/// Generates `runs` runs (each with `noise` unrelated intervals per events file, as real files
/// are mostly such), then times one ingest of the tree from a local folder.
pub async fn ingest(
    runs: usize,
    noise: usize,
    database_url: Option<&str>,
    keep: Option<PathBuf>,
) -> Result<IngestBench> {
    let tmp = tempfile::tempdir().context("creating a temporary folder")?;
    let root = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let mut scenario = Scenario::month(2026, synth::day(2026, 11, 1));
    let per_day: f64 = scenario.jobs.iter().map(|j| j.runs_per_day).sum();
    scenario.days = (runs as f64 / per_day).ceil() as u32;
    scenario.start = synth::day(2026, 11, 1) - chrono::Duration::days(i64::from(scenario.days));
    scenario.noise_intervals = noise;
    scenario.write_timelines = true;
    let started = Instant::now();
    let truth = synth::write_tree(&scenario, &root)?;
    let generate_seconds = started.elapsed().as_secs_f64();

    let store = bench_store(database_url, tmp.path()).await?;
    let settings = IngestSettings::default();
    let started = Instant::now();
    let summary =
        crate::ingest::ingest(&store, &settings, &Source::Local(root.clone()), &IngestOptions::default())
            .await?;
    let ingest_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        summary.failed == 0,
        "the generated tree did not ingest cleanly: {:?}",
        summary.errors.first()
    );
    let interval_mb = truth.interval_bytes as f64 / 1e6;
    let engine = format!("{:?}", store.engine()).to_lowercase();
    store.close().await;
    Ok(IngestBench {
        runs: summary.ingested,
        interval_mb,
        generate_seconds,
        ingest_seconds,
        runs_per_second: summary.ingested as f64 / ingest_seconds,
        interval_mb_per_second: interval_mb / ingest_seconds,
        engine,
    })
}

/// What `bench evaluate` measured, per engine.
#[derive(Debug, serde::Serialize)]
pub struct EvaluateBench {
    pub runs: usize,
    pub samples: i64,
    pub cells: usize,
    pub groups: usize,
    pub load_seconds: Vec<(String, f64)>,
    /// Best of the repetitions, per engine: one full cycle (dry run).
    pub cycle_seconds: Vec<(String, f64)>,
    /// PostgreSQL `percentile_cont … GROUP BY` over the raw samples, best of the repetitions.
    pub postgres_percentile_cont_seconds: Option<f64>,
    pub regressions: usize,
}

/// Loads `runs` generated runs (about `runs × backends` samples over `days` days) into a fresh
/// SQLite file and, when `postgres_url` is given, into that (empty) PostgreSQL database; then
/// times full evaluation cycles on each and PostgreSQL's own percentile query.
pub async fn evaluate(
    runs: usize,
    variants: usize,
    backends: usize,
    repeat: usize,
    postgres_url: Option<&str>,
    sqlite_path: Option<&std::path::Path>,
) -> Result<EvaluateBench> {
    let end = synth::day(2026, 11, 29);
    let scenario = synth::large(runs, variants, backends, 28, end);
    let records = synth::run_records(&scenario);
    let tmp = tempfile::tempdir()?;
    let sqlite_url = sqlite_path.map(|p| format!("sqlite://{}", p.display()));
    let mut stores = vec![("sqlite".to_string(), bench_store(sqlite_url.as_deref(), tmp.path()).await?)];
    if let Some(url) = postgres_url {
        stores.push(("postgres".to_string(), bench_store(Some(url), tmp.path()).await?));
    }
    let settings = crate::config::Settings::default();
    let options = crate::cycle::CycleOptions { at: end, dry_run: true };
    let mut out = EvaluateBench {
        runs: records.len(),
        samples: 0,
        cells: 0,
        groups: 0,
        load_seconds: Vec::new(),
        cycle_seconds: Vec::new(),
        postgres_percentile_cont_seconds: None,
        regressions: 0,
    };
    for (engine, store) in &stores {
        let stored = store.count_runs().await? as usize;
        if stored != records.len() {
            // A kept SQLite file already loaded with the same data is measured as it is.
            anyhow::ensure!(
                stored == 0,
                "the {engine} database holds {stored} runs, neither none nor this benchmark's"
            );
            let started = Instant::now();
            for chunk in records.chunks(1000) {
                store.write_runs(chunk, false).await?;
            }
            store.checkpoint().await?;
            out.load_seconds.push((engine.clone(), started.elapsed().as_secs_f64()));
        }
        out.samples = store.count_samples().await?;
        let mut best = f64::MAX;
        for _ in 0..repeat.max(1) {
            let started = Instant::now();
            let report = crate::cycle::run_cycle(store, &settings, options).await?;
            best = best.min(started.elapsed().as_secs_f64());
            out.cells = report.cells_evaluated;
            out.groups = report.groups_evaluated;
            out.regressions = report.regressions.len();
        }
        out.cycle_seconds.push((engine.clone(), best));
        if engine == "postgres" {
            let window_from = (end - chrono::Duration::days(7)).timestamp();
            let baseline_from = (end - chrono::Duration::days(28)).timestamp();
            let mut best = f64::MAX;
            for _ in 0..repeat.max(1) {
                let started = Instant::now();
                store.reference_percentiles_query(baseline_from, window_from, end.timestamp()).await?;
                best = best.min(started.elapsed().as_secs_f64());
            }
            out.postgres_percentile_cont_seconds = Some(best);
        }
    }
    for (_, s) in stores {
        s.close().await;
    }
    Ok(out)
}
