//! The timing benchmarks: each generates its data, times sheriff on it and returns what it
//! measured (ingest, evaluate, query, backtest, page). Repeatable measurements of the figures
//! the issues name; run them on an optimised build: `cargo run --release -- bench ingest`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use chrono::Utc;

use sheriff::adapters::ingest::{IngestOptions, Source};
use sheriff::application::warm::Warm;
use sheriff::config::{DatabaseSettings, DatabaseUrl, IngestSettings};
use sheriff::model::HOUR;
use sheriff::store::Store;
use sheriff::synth::{self, Scenario};

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
    Ok(Store::open(&settings).await?)
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
    let summary = sheriff::adapters::ingest::ingest(
        &store,
        &settings,
        &Source::Local(root.clone()),
        &IngestOptions::default(),
    )
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

/// Loads `records` into an empty store, returning how long it took; a store that already holds
/// them (a kept database, perhaps with runs an earlier benchmark added) is used as it is (None).
async fn load(store: &Store, records: &[sheriff::model::RunRecord]) -> Result<Option<f64>> {
    let stored = store.runs().count_runs().await? as usize;
    if let (Some(first), Some(last)) = (records.first(), records.last())
        && stored >= records.len()
        && store
            .runs()
            .has_run(&first.run.job_name, &first.run.build_id)
            .await?
        && store
            .runs()
            .has_run(&last.run.job_name, &last.run.build_id)
            .await?
    {
        return Ok(None);
    }
    anyhow::ensure!(
        stored == 0,
        "the database holds {stored} runs, neither none nor this benchmark's"
    );
    let started = Instant::now();
    for chunk in records.chunks(1000) {
        store.runs().write_runs(chunk, false).await?;
    }
    store.checkpoint().await?;
    Ok(Some(started.elapsed().as_secs_f64()))
}

/// What `bench evaluate` measured at one history length, per engine.
#[derive(Debug, serde::Serialize)]
pub struct EvaluateBench {
    /// Days of stored history.
    pub days: u32,
    pub runs: usize,
    pub samples: i64,
    pub cells: usize,
    pub groups: usize,
    pub load_seconds: Vec<(String, f64)>,
    /// Best of the repetitions, per engine: one full cycle (dry run), in-process.
    pub cycle_seconds: Vec<(String, f64)>,
    /// Every repetition's cycle, per engine, in order: the lengths are timed in turn, so the
    /// k-th of each length ran back to back with the others' k-th.
    pub cycle_rounds: Vec<(String, Vec<f64>)>,
    /// Per engine, cycles with the windows kept in memory, as `serve` runs them.
    pub kept_in_memory: Vec<(String, KeptCycles)>,
    /// PostgreSQL `percentile_cont … GROUP BY` over the raw samples, best of the repetitions.
    pub postgres_percentile_cont_seconds: Option<f64>,
    /// DuckDB's `quantile_cont` over the same raw samples, per cell and window (query time
    /// only, best of the repetitions), or why it could not be measured.
    pub duckdb_seconds: Result<f64, String>,
    pub regressions: usize,
}

/// Cycles with the windows kept in memory between them (`serve`), in seconds.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct KeptCycles {
    /// The first cycle, which reads every day of the windows.
    pub first: f64,
    /// Best of the repetitions with nothing changed since the cycle before.
    pub warm: f64,
    /// Every one of those repetitions, in order.
    pub warm_rounds: Vec<f64>,
    /// The cycle after the runs of the last two hours arrived again as new runs (new build ids):
    /// it reads the days they changed again.
    pub after_new_runs: f64,
    pub new_runs: usize,
    /// How much the process's resident memory grew over the first cycle (what the cache holds,
    /// roughly; Linux only).
    pub resident_growth_bytes: Option<u64>,
}

/// The process's resident memory (Linux: `/proc/self/statm`, assuming 4 KiB pages).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    Some(statm.split_whitespace().nth(1)?.parse::<u64>().ok()? * 4096)
}

/// What one `bench evaluate` run's history lengths gave.
pub struct EvaluateShape<'a> {
    /// Runs per 28 days, kept for every length (the same runs per day).
    pub runs_per_28_days: usize,
    pub variants: usize,
    pub backends: usize,
    pub repeat: usize,
    /// Also measured on this (empty) PostgreSQL database, at the first length only.
    pub postgres_url: Option<&'a str>,
    /// Keep each length's SQLite database as `<this>-<days>d.db` (reused when it holds the data).
    pub sqlite: Option<&'a std::path::Path>,
    /// Compare with DuckDB (needs `python3` with `duckdb`; skipped with a note otherwise).
    pub duckdb: bool,
}

/// Evaluates at each history length in `days`, with the same runs per day: loads each into a
/// fresh SQLite file (and PostgreSQL at the first), then times cycles and the peers. The lengths
/// are timed in turn, cycle by cycle, so that a slow spell of the machine falls on all of them
/// alike and their ratio stays put.
pub async fn evaluate(shape: &EvaluateShape<'_>, days: &[u32]) -> Result<Vec<EvaluateBench>> {
    let mut points = Vec::new();
    for (i, d) in days.iter().enumerate() {
        points.push(Point::load(shape, *d, i == 0).await?);
    }

    let settings = sheriff::config::Settings::default();
    let options = sheriff::application::cycle::CycleOptions {
        at: bench_end(),
        dry_run: true,
    };

    // Plain cycles, reading the windows from the database.
    for _ in 0..shape.repeat.max(1) {
        for p in &mut points {
            for (k, (_, store)) in p.stores.iter().enumerate() {
                let (seconds, report) = timed_cycle(store, &p.warm[k], &settings, options).await?;
                p.out.cycle_seconds[k].1 = p.out.cycle_seconds[k].1.min(seconds);
                p.out.cycle_rounds[k].1.push(seconds);
                p.out.cells = report.cells_evaluated;
                p.out.groups = report.groups_evaluated;
                p.out.regressions = report.regressions.len();
            }
        }
    }

    // As `serve` runs them: the windows kept in memory from the first cycle on.
    for p in &mut points {
        for (k, (_, store)) in p.stores.iter().enumerate() {
            p.warm[k].windows = Some(Default::default());
            p.warm[k].scope_runs = Some(Default::default());
            let before = resident_bytes();
            let kept = &mut p.out.kept_in_memory[k].1;
            kept.first = timed_cycle(store, &p.warm[k], &settings, options).await?.0;
            kept.resident_growth_bytes = before
                .zip(resident_bytes())
                .map(|(b, a)| a.saturating_sub(b));
        }
    }

    for _ in 0..shape.repeat.max(1) {
        for p in &mut points {
            for (k, (_, store)) in p.stores.iter().enumerate() {
                let kept = &mut p.out.kept_in_memory[k].1;
                let seconds = timed_cycle(store, &p.warm[k], &settings, options).await?.0;
                kept.warm = kept.warm.min(seconds);
                kept.warm_rounds.push(seconds);
            }
        }
    }

    let mut out = Vec::new();
    for mut p in points {
        for (k, (_, store)) in p.stores.iter().enumerate() {
            let kept = &mut p.out.kept_in_memory[k].1;
            let new_runs = recent_runs_again(&p.records, options.at);
            store.runs().write_runs(&new_runs, false).await?;
            kept.new_runs = new_runs.len();
            kept.after_new_runs = timed_cycle(store, &p.warm[k], &settings, options).await?.0;
            let added: Vec<(String, String)> = new_runs
                .iter()
                .map(|r| (r.run.job_name.clone(), r.run.build_id.clone()))
                .collect();
            store.runs().remove_runs(&added).await?;
        }
        out.push(p.peers(shape).await?);
    }

    Ok(out)
}

/// One cycle on `store` (a dry run), timed.
async fn timed_cycle(
    store: &Store,
    warm: &Warm,
    settings: &sheriff::config::Settings,
    options: sheriff::application::cycle::CycleOptions,
) -> Result<(f64, sheriff::application::cycle::CycleReport)> {
    let started = Instant::now();
    let report = sheriff::application::cycle::run_cycle(store, warm, settings, options).await?;
    Ok((started.elapsed().as_secs_f64(), report))
}

/// The day every `bench evaluate` history ends.
fn bench_end() -> chrono::DateTime<chrono::Utc> {
    synth::day(2026, 11, 29)
}

/// The runs of the two hours before `at` again, under new build ids: runs arriving, for the
/// cycle after them (taken away again afterwards, so a kept file holds what was loaded).
fn recent_runs_again(
    records: &[sheriff::model::RunRecord],
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<sheriff::model::RunRecord> {
    let stamp = chrono::Utc::now().timestamp_micros();
    let recent = at - chrono::Duration::hours(2);
    records
        .iter()
        .filter(|r| r.run.started_at >= recent)
        .map(|r| {
            let mut r = r.clone();
            r.run.build_id = format!("{}{stamp}", r.run.build_id);
            r
        })
        .collect()
}

/// One history length: its generated runs, its stores (loaded), and what was measured of it.
struct Point {
    records: Vec<sheriff::model::RunRecord>,
    stores: Vec<(String, Store)>,
    /// The caches each store's cycles read through, by the stores' order.
    warm: Vec<Warm>,
    /// Holds the SQLite file unless `--sqlite` keeps it, and DuckDB's CSV.
    tmp: tempfile::TempDir,
    out: EvaluateBench,
}

impl Point {
    /// Generates `days` of runs at the shape's density and loads them into a fresh SQLite file
    /// (or the kept one) and, when `with_postgres`, the PostgreSQL database given.
    async fn load(shape: &EvaluateShape<'_>, days: u32, with_postgres: bool) -> Result<Point> {
        let runs = shape.runs_per_28_days * days as usize / 28;
        let scenario = synth::large(runs, shape.variants, shape.backends, days, bench_end());
        let records = synth::run_records(&scenario);
        let tmp = tempfile::tempdir()?;
        let sqlite_url = shape
            .sqlite
            .map(|p| format!("sqlite://{}-{days}d.db", p.display()));

        let mut stores = vec![(
            "sqlite".to_string(),
            bench_store(sqlite_url.as_deref(), tmp.path()).await?,
        )];

        if let Some(url) = shape.postgres_url.filter(|_| with_postgres) {
            stores.push((
                "postgres".to_string(),
                bench_store(Some(url), tmp.path()).await?,
            ));
        }

        let mut out = EvaluateBench {
            days,
            runs: records.len(),
            samples: 0,
            cells: 0,
            groups: 0,
            load_seconds: Vec::new(),
            cycle_seconds: stores.iter().map(|(e, _)| (e.clone(), f64::MAX)).collect(),
            cycle_rounds: stores
                .iter()
                .map(|(e, _)| (e.clone(), Vec::new()))
                .collect(),
            kept_in_memory: stores
                .iter()
                .map(|(e, _)| {
                    (
                        e.clone(),
                        KeptCycles {
                            warm: f64::MAX,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            postgres_percentile_cont_seconds: None,
            duckdb_seconds: Err("not asked for (--duckdb)".into()),
            regressions: 0,
        };

        for (engine, store) in &stores {
            if let Some(seconds) = load(store, &records).await? {
                out.load_seconds.push((engine.clone(), seconds));
            }
            out.samples = store.runs().count_samples().await?;
        }

        let warm = stores.iter().map(|_| Warm::new()).collect();
        Ok(Point {
            records,
            stores,
            warm,
            tmp,
            out,
        })
    }

    /// PostgreSQL's own percentile query and DuckDB's over the same samples; the stores closed.
    async fn peers(self, shape: &EvaluateShape<'_>) -> Result<EvaluateBench> {
        let Point {
            records,
            stores,
            tmp,
            mut out,
            ..
        } = self;
        let end = bench_end();
        let window_from = (end - chrono::Duration::days(7)).timestamp();
        let baseline_from = (end - chrono::Duration::days(28)).timestamp();
        for (engine, store) in stores {
            if engine == "postgres" {
                let mut best = f64::MAX;
                for _ in 0..shape.repeat.max(1) {
                    let started = Instant::now();
                    store
                        .evaluations()
                        .reference_percentiles_query(baseline_from, window_from, end.timestamp())
                        .await?;
                    best = best.min(started.elapsed().as_secs_f64());
                }
                out.postgres_percentile_cont_seconds = Some(best);
            }
            store.close().await;
        }
        if shape.duckdb {
            out.duckdb_seconds = duckdb_quantiles(
                &records,
                tmp.path(),
                (baseline_from, window_from, end.timestamp()),
                shape.repeat,
            );
        }
        Ok(out)
    }
}

/// DuckDB's `quantile_cont` over every sample of `records`, exported to CSV: per cell and
/// window (the baseline `[w.0, w.1)` and the current `[w.1, w.2)`), as PostgreSQL's reference
/// query groups them; on 2 threads; the best query time of `repeat` (the CSV's loading into
/// DuckDB is not timed).
fn duckdb_quantiles(
    records: &[sheriff::model::RunRecord],
    dir: &std::path::Path,
    w: (i64, i64, i64),
    repeat: usize,
) -> Result<f64, String> {
    use std::io::Write as _;
    let csv = dir.join("samples.csv");
    let write = || -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv)?);
        writeln!(f, "backend,variant,started_at,seconds")?;
        for r in records {
            let started = r.run.started_at.timestamp();
            let variant = &r.run.job_name;
            for s in &r.samples {
                writeln!(f, "{},{variant},{started},{}", s.backend, s.seconds)?;
            }
        }
        f.flush()
    };

    write().map_err(|e| format!("writing {}: {e}", csv.display()))?;
    let script = format!(
        "import duckdb, time\n\
         c = duckdb.connect()\n\
         c.execute(\"SET threads = 2\")\n\
         c.execute(\"SET enable_progress_bar = false\")\n\
         c.execute(\"CREATE TABLE s AS SELECT * FROM read_csv('{csv}', header = true)\")\n\
         best = 1e9\n\
         for _ in range({repeat}):\n\
         \x20   t = time.perf_counter()\n\
         \x20   c.execute(\"SELECT backend, variant, started_at >= {current} AS current, \
         quantile_cont(seconds, [0.5, 0.75, 0.95, 0.99]) FROM s WHERE started_at >= {from} AND started_at < {to} \
         GROUP BY ALL\").fetchall()\n\
         \x20   best = min(best, time.perf_counter() - t)\n\
         print(best)\n",
        csv = csv.display(),
        repeat = repeat.max(1),
        from = w.0,
        current = w.1,
        to = w.2,
    );

    let output = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .map_err(|e| format!("python3 could not be run ({e}); DuckDB is `pip install duckdb`"))?;

    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let last = err.lines().last().unwrap_or_default().to_string();
        return Err(format!(
            "DuckDB did not run ({last}); it is `pip install duckdb`"
        ));
    }

    // the timing is the last line (a large read may print progress before it)
    let out = String::from_utf8_lossy(&output.stdout);
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();

    last.parse::<f64>().map_err(|e| {
        format!(
            "DuckDB's answer `{}`: {e}",
            last.chars().take(200).collect::<String>()
        )
    })
}

/// Latency figures of a set of timed calls, in milliseconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    fn of(mut seconds: Vec<f64>) -> Latency {
        seconds.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if seconds.is_empty() {
                return 0.0;
            }
            let i = ((seconds.len() as f64 * q).ceil() as usize).clamp(1, seconds.len()) - 1;
            seconds[i] * 1000.0
        };
        Latency {
            count: seconds.len(),
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: at(1.0),
        }
    }
}

/// What `bench query` measured.
#[derive(Debug, serde::Serialize)]
pub struct QueryBench {
    pub engine: String,
    pub runs: usize,
    pub samples: i64,
    pub load_seconds: Option<f64>,
    /// `query::answer` called directly, one at a time: each query's first answer (read from
    /// the database), then the repeated ones (from the per-day cache).
    pub direct_cold: Latency,
    pub direct_warm: Latency,
    /// Signed `POST /slack/commands` over HTTP on 127.0.0.1, `concurrency` clients at once,
    /// while evaluation cycles run back to back.
    pub http: Latency,
    pub concurrency: usize,
    pub errors: usize,
    /// The cycle before the load, which read the windows into memory (as `serve`'s first does).
    pub first_cycle_seconds: f64,
    /// Cycles during the load, each reading only what changed since the one before.
    pub cycles_during_load: usize,
    /// Runs written during the load (each one invalidates the query cache).
    pub writes_during_load: usize,
    pub requests_per_second: f64,
}

/// The queries the benchmark asks: every filter shape the slash command takes, over the
/// scenario's backends.
fn bench_queries(backends: &[String]) -> Vec<String> {
    let shapes = [
        "",
        " platform=metal",
        " release=4.14 platform=aws network=ovn",
        " upgrade=micro topology=ha window=14d",
        " arch=amd64 window=28d",
        " platform=gcp network=sdn upgrade=minor",
    ];
    backends
        .iter()
        .enumerate()
        .map(|(n, b)| format!("query {b}{}", shapes[n % shapes.len()]))
        .collect()
}

/// The data and load of `bench query`.
#[derive(Debug, Clone)]
pub struct QueryShape {
    pub runs: usize,
    pub variants: usize,
    pub backends: usize,
    /// HTTP requests in all, from `concurrency` clients at once.
    pub requests: usize,
    pub concurrency: usize,
    /// A new run is written this often during the load.
    pub write_every_ms: u64,
}

const BENCH_SECRET: &str = "sheriff-bench-signing-secret";

/// Loads about `runs × backends` samples ending today, then measures `/sheriff query`: direct
/// calls first, then `requests` signed HTTP requests from `concurrency` clients while
/// evaluation cycles (recording incidents, delivering nothing) run back to back, as `serve`
/// runs them after its first (windows kept in memory), and a new run is written every
/// `write_every_ms`.
pub async fn query(shape: &QueryShape, database_url: Option<&str>) -> Result<QueryBench> {
    use std::sync::Arc;
    let today = Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap_or_default()
        .and_utc();

    let scenario = synth::large(shape.runs, shape.variants, shape.backends, 28, today);
    let records = synth::run_records(&scenario);
    let tmp = tempfile::tempdir()?;
    let store = Arc::new(bench_store(database_url, tmp.path()).await?);
    let load_seconds = load(&store, &records).await?;
    let samples = store.runs().count_samples().await?;
    let engine = format!("{:?}", store.engine()).to_lowercase();
    let mut settings = sheriff::config::Settings::default();
    settings.slack.signing_secret = Some(sheriff::config::Secret::new(BENCH_SECRET));
    let settings = Arc::new(settings);
    let texts = bench_queries(&scenario.backends);
    // The cycles run as `serve` runs them, their windows kept in memory between cycles; the
    // direct answers and the HTTP edge share the questions' answers.
    let warm = Arc::new(Warm::kept());
    let (direct_cold, direct_warm) =
        direct_answers(&store, &warm.queries, &settings, &texts).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/slack/commands", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    // `serve`'s first cycle reads every day of the windows; the load runs beside the ones after.
    let first = Instant::now();
    let options = sheriff::application::cycle::CycleOptions {
        at: Utc::now(),
        dry_run: false,
    };
    sheriff::application::cycle::run_cycle(&store, &warm, &settings, options).await?;
    let first_cycle_seconds = first.elapsed().as_secs_f64();
    let state = sheriff::edge::server::AppState::new(store.clone(), warm.clone(), settings.clone());
    let server = tokio::spawn(sheriff::edge::server::serve(listener, state, async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|s| *s).await;
    }));

    let cycles = tokio::spawn(cycles_until(
        store.clone(),
        warm,
        settings.clone(),
        stop.subscribe(),
    ));

    let fresh: Vec<sheriff::model::RunRecord> = records.iter().rev().take(2_000).cloned().collect();
    let writes = tokio::spawn(writes_until(
        store.clone(),
        fresh,
        shape.write_every_ms,
        stop.subscribe(),
    ));

    let started = Instant::now();
    let (timings, errors) = http_load(&url, texts, shape.requests, shape.concurrency).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let _ = stop.send(true);
    let cycles_during_load = cycles.await?;
    let writes_during_load = writes.await?;
    server.await??;
    store.close().await;
    Ok(QueryBench {
        engine,
        runs: records.len(),
        samples,
        load_seconds,
        direct_cold,
        direct_warm,
        http: Latency::of(timings),
        writes_during_load,
        concurrency: shape.concurrency,
        errors,
        first_cycle_seconds,
        cycles_during_load,
        requests_per_second: shape.requests as f64 / elapsed,
    })
}

/// `query::answer` one at a time: the first pass over the distinct queries reads the database,
/// the next ones come from the per-day cache.
async fn direct_answers(
    store: &sheriff::store::Store,
    kept: &sheriff::application::warm::Queries,
    settings: &sheriff::config::Settings,
    texts: &[String],
) -> Result<(Latency, Latency)> {
    let mut timings = Vec::new();
    let mut cold = Vec::new();
    for (n, text) in texts.iter().cycle().take(texts.len() * 5).enumerate() {
        if n == texts.len() {
            cold = std::mem::take(&mut timings);
        }
        let Ok(sheriff::edge::server::slack::command::Command::Query(q)) =
            sheriff::edge::server::slack::command::parse(text)
        else {
            anyhow::bail!("the benchmark's query `{text}` does not parse");
        };
        let started = Instant::now();
        sheriff::application::query::answer(
            store,
            kept,
            &settings.evaluate,
            &q,
            Utc::now().timestamp(),
        )
        .await?;
        timings.push(started.elapsed().as_secs_f64());
    }
    Ok((Latency::of(cold), Latency::of(timings)))
}

/// Evaluation cycles back to back until `stop`; how many ran.
async fn cycles_until(
    store: std::sync::Arc<sheriff::store::Store>,
    warm: std::sync::Arc<Warm>,
    settings: std::sync::Arc<sheriff::config::Settings>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> usize {
    let mut n = 0;
    while !*stop.borrow_and_update() {
        let options = sheriff::application::cycle::CycleOptions {
            at: Utc::now(),
            dry_run: false,
        };
        if let Err(e) =
            sheriff::application::cycle::run_cycle(&store, &warm, &settings, options).await
        {
            let e = anyhow::Error::from(e); // its sources, too
            tracing::error!("a cycle during the load failed: {e:#}");
        }
        n += 1;
    }
    n
}

/// New runs arriving every `every_ms`, as pushes and scheduled ingests do (each empties the
/// query cache), until `stop`; how many were written.
async fn writes_until(
    store: std::sync::Arc<sheriff::store::Store>,
    mut fresh: Vec<sheriff::model::RunRecord>,
    every_ms: u64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> usize {
    let mut n = 0;
    while !*stop.borrow_and_update() && n < fresh.len() {
        fresh[n].run.build_id.push_str("-pushed");
        if let Err(e) = store.runs().write_run(&fresh[n], false).await {
            tracing::error!("a write during the load failed: {e:#}");
        }
        n += 1;
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(every_ms)) => {}
            _ = stop.changed() => {}
        }
    }
    n
}

/// `requests` signed slash commands from `concurrency` clients; each answer's time, and the
/// number of failed or wrong answers.
async fn http_load(
    url: &str,
    texts: Vec<String>,
    requests: usize,
    concurrency: usize,
) -> Result<(Vec<f64>, usize)> {
    use std::sync::Arc;
    let client = sheriff::support::http::client_builder(std::time::Duration::from_secs(10))
        .pool_max_idle_per_host(concurrency)
        .build()?;

    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let texts = Arc::new(texts);
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (client, url, next, texts) =
            (client.clone(), url.to_string(), next.clone(), texts.clone());
        clients.spawn(async move {
            let mut timings = Vec::new();
            let mut errors = 0;
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= requests {
                    break;
                }
                let sent = Instant::now();
                let ok = signed_query(&client, &url, &texts[n % texts.len()]).await;
                timings.push(sent.elapsed().as_secs_f64());
                errors += usize::from(!ok);
            }
            (timings, errors)
        });
    }

    let mut timings = Vec::with_capacity(requests);
    let mut errors = 0;
    while let Some(done) = clients.join_next().await {
        let (t, e) = done?;
        timings.extend(t);
        errors += e;
    }

    Ok((timings, errors))
}

/// One signed `POST /slack/commands`; whether it answered the query.
async fn signed_query(client: &reqwest::Client, url: &str, text: &str) -> bool {
    let body = serde_urlencoded::to_string([
        ("command", "/sheriff"),
        ("user_id", "UBENCH"),
        ("text", text),
        ("response_url", ""),
    ])
    .unwrap_or_default();
    let ts = Utc::now().timestamp();
    let signature = sheriff::clients::slack::sign(BENCH_SECRET, ts, body.as_bytes());
    let answer = client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", ts.to_string())
        .header("x-slack-signature", signature)
        .body(body)
        .send()
        .await;
    match answer {
        Ok(r) if r.status().is_success() => r
            .json::<serde_json::Value>()
            .await
            .is_ok_and(|v| v["text"].as_str().is_some_and(|t| t.contains("runs ("))),
        _ => false,
    }
}

/// What `bench backtest` measured.
#[derive(Debug, serde::Serialize)]
pub struct BacktestBench {
    pub runs: usize,
    pub samples: usize,
    /// Days of stored runs (the replayed span and the baseline before it).
    pub stored_days: u32,
    pub replayed_days: u32,
    pub cycles: usize,
    pub load_seconds: Option<f64>,
    /// The whole backtest: reading the runs into memory, every cycle, the report.
    pub backtest_seconds: f64,
    pub ms_per_cycle: f64,
    pub incidents: usize,
    /// The peer: the same kind of cycle reading the database (as `evaluate` does), timed over
    /// `peer_cycles` of the backtest's ticks.
    pub peer_cycles: usize,
    pub peer_ms_per_cycle: f64,
}

/// Stores `replayed_days` plus a baseline's worth of generated runs at `runs_per_28_days` (the
/// evaluation benchmark's density), with a regression that is fixed and one that is not; then
/// times `sheriff backtest` at four cycles a day over the replayed days, and the same cycles
/// read from the database for `peer_cycles` of its ticks.
pub async fn backtest(
    runs_per_28_days: usize,
    replayed_days: u32,
    peer_cycles: usize,
    sqlite_path: Option<&std::path::Path>,
) -> Result<BacktestBench> {
    let settings = sheriff::config::Settings::default();
    let lead = settings.evaluate.window_days + settings.evaluate.baseline_days;
    let stored_days = replayed_days + lead;
    let end = synth::day(2026, 11, 29);
    let runs = runs_per_28_days * stored_days as usize / 28;
    let mut scenario = synth::large(runs, 384, 30, stored_days, end);
    let mut fixed = synth::metal_registry_regression(lead + replayed_days / 4);
    fixed.until_day = Some(lead + replayed_days / 2);
    let mut ongoing = synth::metal_registry_regression(lead + replayed_days * 3 / 4);
    ongoing.matches[1].1 = "4.15".into();
    scenario.planted = vec![fixed, ongoing];
    let records = synth::run_records(&scenario);
    let tmp = tempfile::tempdir()?;
    let sqlite_url = sqlite_path.map(|p| format!("sqlite://{}", p.display()));
    let store = std::sync::Arc::new(bench_store(sqlite_url.as_deref(), tmp.path()).await?);
    let load_seconds = load(&store, &records).await?;
    drop(records);
    let from = end - chrono::Duration::days(i64::from(replayed_days));
    let cadence = sheriff::application::backtest::Cadence::Every(6 * HOUR);
    let started = Instant::now();
    let result =
        sheriff::application::backtest::backtest(store.clone(), &settings, from, end, &cadence)
            .await?;

    let backtest_seconds = started.elapsed().as_secs_f64();
    let ticks = cadence.times(from, end);
    let step = (ticks.len() / peer_cycles.max(1)).max(1);
    std::fs::create_dir_all(tmp.path().join("peer"))?;
    let scratch = bench_store(None, &tmp.path().join("peer")).await?;
    let policy =
        sheriff::domain::incidents::plan::Policy::from_settings(&settings, sheriff::words::line);

    let started = Instant::now();
    let mut timed: u32 = 0;
    let warm = Warm::new();
    let live = sheriff::application::cycle::source::Live {
        store: &store,
        warm: &warm,
    };

    for at in ticks.iter().step_by(step).take(peer_cycles.max(1)) {
        let options = sheriff::application::cycle::CycleOptions {
            at: *at,
            dry_run: true,
        };
        sheriff::application::cycle::run_cycle_on(
            &live,
            &scratch,
            &sheriff::application::cycle::Unrecorded::default(),
            &settings,
            &policy,
            options,
        )
        .await?;
        timed += 1;
    }

    let peer_ms_per_cycle = started.elapsed().as_secs_f64() * 1000.0 / f64::from(timed);
    scratch.close().await;
    store.close().await;
    Ok(BacktestBench {
        runs: result.runs,
        samples: result.samples,
        stored_days,
        replayed_days,
        cycles: result.cycles,
        load_seconds,
        backtest_seconds,
        ms_per_cycle: backtest_seconds * 1000.0 / result.cycles.max(1) as f64,
        incidents: result.incidents.len(),
        peer_cycles: timed as usize,
        peer_ms_per_cycle,
    })
}

/// What `bench page` measured: the server time of the pages over the evaluation benchmark's
/// data, through the router (no socket), in milliseconds.
#[derive(Debug, serde::Serialize)]
pub struct PageBench {
    pub runs: usize,
    pub samples: i64,
    pub incident: i64,
    pub charts: usize,
    /// The incident page: the first request (cold caches), then the rest.
    pub incident_first_ms: f64,
    pub incident_page: Latency,
    pub index: Latency,
    pub incident_json: Latency,
}

/// Loads the evaluation benchmark's month (about a million samples) into SQLite, records one
/// cycle so its regressions become incidents, then times `GET /incidents/{id}` (the first
/// incident with the most charts), `GET /` and `GET /api/v1/incidents/{id}`, `repeat` times each.
pub async fn page(
    runs: usize,
    variants: usize,
    backends: usize,
    repeat: usize,
    sqlite_path: Option<&std::path::Path>,
) -> Result<PageBench> {
    use tower::ServiceExt as _;
    let end = synth::day(2026, 11, 29);
    let scenario = synth::large(runs, variants, backends, 28, end);
    let records = synth::run_records(&scenario);
    let tmp = tempfile::tempdir()?;
    let sqlite_url = sqlite_path.map(|p| format!("sqlite://{}", p.display()));
    let store = std::sync::Arc::new(bench_store(sqlite_url.as_deref(), tmp.path()).await?);
    load(&store, &records).await?;
    let mut settings = sheriff::config::Settings::default();
    settings.slack.channel = "#bench".into();
    let warm = std::sync::Arc::new(Warm::new());
    if store.incidents().all().await?.is_empty() {
        let options = sheriff::application::cycle::CycleOptions {
            at: end,
            dry_run: false,
        };
        sheriff::application::cycle::run_cycle(&store, &warm, &settings, options).await?;
    }
    let incident = store
        .incidents()
        .all()
        .await?
        .iter()
        .max_by_key(|i| i.snapshot.report.not_specific_to.len())
        .map(|i| i.id)
        .context("the benchmark's data raised no incident")?;
    let state =
        sheriff::edge::server::AppState::new(store.clone(), warm, std::sync::Arc::new(settings));
    let time = |path: String| {
        let state = state.clone();
        async move {
            let started = Instant::now();
            let request = axum::http::Request::get(path.as_str()).body(axum::body::Body::empty())?;
            let response = sheriff::edge::server::router(state)
                .oneshot(request)
                .await?;
            anyhow::ensure!(
                response.status() == 200,
                "{path} answered {}",
                response.status()
            );
            let body = axum::body::to_bytes(response.into_body(), 64 << 20).await?;
            Ok::<_, anyhow::Error>((started.elapsed().as_secs_f64(), body))
        }
    };

    let (first, _) = time(format!("/incidents/{incident}")).await?;
    let measure = async |path: String| -> Result<Latency> {
        let mut seconds = Vec::new();
        for _ in 0..repeat.max(1) {
            seconds.push(time(path.clone()).await?.0);
        }
        Ok(Latency::of(seconds))
    };
    let page = measure(format!("/incidents/{incident}")).await?;
    let index = measure("/".into()).await?;
    let json = measure(format!("/api/v1/incidents/{incident}")).await?;
    let (_, body) = time(format!("/api/v1/incidents/{incident}")).await?;
    let charts = serde_json::from_slice::<serde_json::Value>(&body)?["charts"]
        .as_array()
        .map_or(0, Vec::len);
    let samples = store.runs().count_samples().await?;
    Ok(PageBench {
        runs: records.len(),
        samples,
        incident,
        charts,
        incident_first_ms: first * 1000.0,
        incident_page: page,
        index,
        incident_json: json,
    })
}
