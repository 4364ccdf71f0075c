//! `sheriff bench`: the benchmarks run, and their results printed as lines for people and one
//! JSON line. They are the binary's own, no part of the product library: the timing harness is
//! [`measure`], the command line [`args`]; `bench quality` prints the library's quality
//! scorecard ([`sheriff::edge::scorecard`]), which the integration tests use too.

mod args;
mod measure;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use sheriff::edge::cli::Format;

pub use args::BenchCommand;
use args::BenchData;

/// Runs one benchmark and prints what it measured.
pub async fn run(what: BenchCommand) -> Result<ExitCode> {
    match what {
        BenchCommand::Ingest {
            runs,
            noise,
            database_url,
            keep,
        } => ingest(runs, noise, database_url.as_deref(), keep).await,
        BenchCommand::Evaluate {
            data,
            days,
            duckdb,
            repeat,
            postgres_url,
            sqlite,
        } => {
            let shape = measure::EvaluateShape {
                runs_per_28_days: data.runs,
                variants: data.variants,
                backends: data.backends,
                repeat,
                postgres_url: postgres_url.as_deref(),
                sqlite: sqlite.as_deref(),
                duckdb,
            };
            evaluate(&shape, &days).await
        }
        BenchCommand::Page {
            data,
            repeat,
            sqlite,
        } => page(data, repeat, sqlite.as_deref()).await,
        BenchCommand::Backtest {
            runs_per_28_days,
            days,
            peer_cycles,
            sqlite,
        } => backtest(runs_per_28_days, days, peer_cycles, sqlite.as_deref()).await,
        BenchCommand::Quality {
            seeds,
            first,
            scenarios,
            format,
            check,
            keep,
            config,
        } => {
            let options = sheriff::edge::scorecard::QualityOptions {
                seeds,
                first,
                classes: scenarios,
                keep,
                evaluate: None,
            };
            quality(options, config.as_deref(), format, check).await
        }
        BenchCommand::Query {
            data,
            requests,
            concurrency,
            write_every_ms,
            database_url,
        } => {
            let BenchData {
                runs,
                variants,
                backends,
            } = data;
            let shape = measure::QueryShape {
                runs,
                variants,
                backends,
                requests,
                concurrency,
                write_every_ms,
            };
            query(&shape, database_url.as_deref()).await
        }
    }
}

/// `sheriff bench ingest`: runs ingested a second, and interval megabytes.
async fn ingest(
    runs: usize,
    noise: usize,
    database_url: Option<&str>,
    keep: Option<PathBuf>,
) -> Result<ExitCode> {
    let result = measure::ingest(runs, noise, database_url, keep).await?;
    println!(
        "ingest: {} runs, {:.1} MB of interval files, in {:.2} s on {}: {:.0} runs/s, {:.1} MB/s (generating took {:.1} s)",
        result.runs,
        result.interval_mb,
        result.ingest_seconds,
        result.engine,
        result.runs_per_second,
        result.interval_mb_per_second,
        result.generate_seconds
    );
    println!("{}", serde_json::to_string(&result).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// `sheriff bench evaluate`: a cycle's time at each length of history.
async fn evaluate(shape: &measure::EvaluateShape<'_>, days: &[u32]) -> Result<ExitCode> {
    let points = measure::evaluate(shape, days).await?;
    for r in &points {
        print_evaluate_bench(r, shape.repeat);
    }
    print_history_ratio(&points);
    Ok(ExitCode::SUCCESS)
}

/// `sheriff bench page`: the pages' server time.
async fn page(data: BenchData, repeat: usize, sqlite: Option<&Path>) -> Result<ExitCode> {
    let r = measure::page(data.runs, data.variants, data.backends, repeat, sqlite).await?;
    print_page_bench(&r);
    Ok(ExitCode::SUCCESS)
}

/// `sheriff bench backtest`: a replayed cycle's time, beside the same cycle reading the database.
async fn backtest(
    runs_per_28_days: usize,
    days: u32,
    peer_cycles: usize,
    sqlite: Option<&Path>,
) -> Result<ExitCode> {
    let r = measure::backtest(runs_per_28_days, days, peer_cycles, sqlite).await?;
    println!(
        "backtest: {} runs, {} samples over {} days; {} cycles over the last {} days",
        r.runs, r.samples, r.stored_days, r.cycles, r.replayed_days
    );
    if let Some(s) = r.load_seconds {
        println!("  load into sqlite: {s:.1} s");
    }
    println!(
        "  backtest: {:.1} s in all, {:.1} ms a cycle, {} incident(s)",
        r.backtest_seconds, r.ms_per_cycle, r.incidents
    );
    println!(
        "  the same cycles reading the database: {:.1} ms a cycle (over {}), {:.1}x the backtest's",
        r.peer_ms_per_cycle,
        r.peer_cycles,
        r.peer_ms_per_cycle / r.ms_per_cycle
    );
    println!("{}", serde_json::to_string(&r).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// `sheriff bench query`: the API under concurrent requests; exit 1 when any failed.
async fn query(shape: &measure::QueryShape, database_url: Option<&str>) -> Result<ExitCode> {
    let r = measure::query(shape, database_url).await?;
    print_query_bench(&r);
    Ok(if r.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `sheriff bench quality`: the scorecard, with the `[evaluate]` settings of `config` when
/// given, and with `check` exit 1 below the floors.
async fn quality(
    mut options: sheriff::edge::scorecard::QualityOptions,
    config: Option<&Path>,
    format: Format,
    check: bool,
) -> Result<ExitCode> {
    if let Some(path) = config {
        let evaluate = sheriff::config::Settings::evaluate_from(path);
        options.evaluate = Some(evaluate.context("--config")?);
    }
    let card = sheriff::edge::scorecard::quality(&options).await?;
    match format {
        Format::Text => print!("{}", sheriff::edge::scorecard::render_text(&card)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&card)?),
    }
    Ok(if check && !card.below_floors.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_page_bench(r: &measure::PageBench) {
    println!(
        "page: {} samples; /incidents/{} ({} charts): first {:.1} ms, then p50 {:.1} ms, p99 {:.1} ms over {}; / p50 {:.1} ms; JSON p50 {:.1} ms",
        r.samples,
        r.incident,
        r.charts,
        r.incident_first_ms,
        r.incident_page.p50_ms,
        r.incident_page.p99_ms,
        r.incident_page.count,
        r.index.p50_ms,
        r.incident_json.p50_ms
    );
    println!("{}", serde_json::to_string(r).unwrap_or_default());
}

fn print_evaluate_bench(r: &measure::EvaluateBench, repeat: usize) {
    println!(
        "evaluate, {} days of history: {} runs, {} samples, {} cells with runs, {} groups judged, {} regression(s) found",
        r.days, r.runs, r.samples, r.cells, r.groups, r.regressions
    );

    for (engine, s) in &r.load_seconds {
        println!("  load into {engine}: {s:.1} s");
    }

    for (engine, s) in &r.cycle_seconds {
        println!("  one evaluation cycle on {engine}: {s:.3} s (best of {repeat})");
    }

    for (engine, k) in &r.kept_in_memory {
        println!(
            "  windows kept in memory on {engine} (as serve runs): first cycle {:.3} s, then {:.3} s (best of {repeat}), {:.3} s after {} new runs; resident memory +{:.0} MB over the first",
            k.first,
            k.warm,
            k.after_new_runs,
            k.new_runs,
            k.resident_growth_bytes.unwrap_or(0) as f64 / 1e6
        );
    }

    if let Some(pg) = r.postgres_percentile_cont_seconds {
        println!("  PostgreSQL percentile_cont GROUP BY over the raw samples: {pg:.3} s");
        for (engine, s) in &r.cycle_seconds {
            println!(
                "  ratio percentile_cont / sheriff on {engine}: {:.1}x",
                pg / s
            );
        }
    }

    match &r.duckdb_seconds {
        Ok(d) => {
            println!(
                "  DuckDB quantile_cont over the raw samples (2 threads, query only): {d:.3} s"
            );
            for (engine, s) in &r.cycle_seconds {
                println!("  ratio DuckDB / sheriff on {engine}: {:.1}x", d / s);
            }
            for (engine, k) in &r.kept_in_memory {
                println!(
                    "  ratio DuckDB / sheriff on {engine}, windows kept in memory: {:.1}x",
                    d / k.warm
                );
            }
        }
        Err(why) => println!("  DuckDB: {why}"),
    }

    println!("{}", serde_json::to_string(r).unwrap_or_default());
}

/// How a cycle's cost grew with history: each length's SQLite cycles against the first's, best
/// against best, and the median of the rounds' ratios (each round times the lengths back to
/// back, so a slow spell of the machine falls on both sides of a ratio).
fn print_history_ratio(points: &[measure::EvaluateBench]) {
    let plain = |r: &measure::EvaluateBench| {
        let best = r.cycle_seconds.iter().find(|(e, _)| e == "sqlite")?.1;
        Some((
            best,
            r.cycle_rounds
                .iter()
                .find(|(e, _)| e == "sqlite")?
                .1
                .clone(),
        ))
    };

    let warm = |r: &measure::EvaluateBench| {
        let k = &r.kept_in_memory.iter().find(|(e, _)| e == "sqlite")?.1;
        Some((k.warm, k.warm_rounds.clone()))
    };

    let Some(first) = points.first() else { return };
    for p in &points[1..] {
        let mut parts = Vec::new();
        for (what, of) in [
            ("plain cycle", &plain as &dyn Fn(_) -> _),
            ("serve's warm cycle", &warm),
        ] {
            if let (Some((best0, rounds0)), Some((best, rounds))) = (of(first), of(p)) {
                parts.push(format!(
                    "{what} {:.2}x best against best, {:.2}x the median of {} rounds",
                    best / best0,
                    median_ratio(&rounds, &rounds0),
                    rounds.len().min(rounds0.len())
                ));
            }
        }
        println!(
            "history: {} days ({} samples) against {} days ({} samples) on SQLite, {:.1}x the history: {}",
            p.days,
            p.samples,
            first.days,
            first.samples,
            p.samples as f64 / first.samples.max(1) as f64,
            parts.join("; ")
        );
    }
}

/// The median of `a[k] / b[k]`.
fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let mut ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print_query_bench(r: &measure::QueryBench) {
    println!(
        "query: {} runs, {} samples on {}",
        r.runs, r.samples, r.engine
    );
    if let Some(s) = r.load_seconds {
        println!("  load: {s:.1} s");
    }
    let show = |name: &str, l: &measure::Latency| {
        println!(
            "  {name}: {} answers, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            l.count, l.p50_ms, l.p99_ms, l.max_ms
        );
    };
    show("direct, first asked", &r.direct_cold);
    show("direct, asked again", &r.direct_warm);
    show(&format!("HTTP, {} clients", r.concurrency), &r.http);
    println!(
        "  {:.0} requests/s, {} error(s); meanwhile {} evaluation cycle(s) ran (after a first one of {:.2} s \
         before the load, which read the windows into memory) and {} run(s) were written",
        r.requests_per_second,
        r.errors,
        r.cycles_during_load,
        r.first_cycle_seconds,
        r.writes_during_load
    );
    println!("{}", serde_json::to_string(r).unwrap_or_default());
}
