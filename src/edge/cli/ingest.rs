//! Getting data in: `ingest` and its summary, the BigQuery `--backfill`, and `thresholds import`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};

use super::{Format, with_store};
use crate::adapters::ingest::{IngestOptions, IngestSummary, Source};
use crate::config::Settings;
use crate::model::{DAY, HOUR};

/// `ingest`: the runs of `source` not stored yet; exit 2 when some could not be stored for
/// sheriff's own reasons.
pub(super) async fn ingest_runs(
    settings: &Settings,
    source: &str,
    options: &IngestOptions,
    format: Format,
) -> Result<ExitCode> {
    let source = Source::parse(source, settings)?;
    let summary = with_store(settings, async |store| {
        Ok(crate::adapters::ingest::ingest(store, &settings.ingest, &source, options).await?)
    })
    .await?;
    print_ingest_summary(&summary, format);
    // 2: some runs could not be stored for sheriff's own reasons (a retry may store them);
    // runs refused for bad files are reported, not an exit status.
    Ok(if summary.storage_failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// `ingest bq://… --backfill`: the day histograms of `from..to` from BigQuery's counts.
pub(super) async fn backfill(
    settings: &Settings,
    source: &str,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
    format: Format,
) -> Result<ExitCode> {
    let Source::BigQuery(dataset) = Source::parse(source, settings)? else {
        anyhow::bail!("--backfill reads a BigQuery dataset (bq://PROJECT/DATASET), not `{source}`");
    };
    let to = to.unwrap_or_else(|| {
        let end = Utc::now().timestamp() - i64::from(dataset.overlap_hours) * HOUR;
        DateTime::from_timestamp(end.div_euclid(DAY) * DAY, 0).unwrap_or_default()
    });
    let summary = with_store(settings, async |store| {
        Ok(
            crate::adapters::ingest::bigquery::backfill::backfill(store, &dataset, from, to)
                .await?,
        )
    })
    .await?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
        Format::Text => println!(
            "backfilled {} from {} to {} (exclusive): {} rows read, {} samples into {} variant-days, {} of CI-troubled runs left out, in {:.1} s",
            summary.source,
            summary.from,
            summary.to,
            summary.rows,
            summary.report.samples,
            summary.report.variant_days,
            summary.report.troubled_samples,
            summary.seconds
        ),
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn import_thresholds(
    settings: &Settings,
    file: &std::path::Path,
) -> Result<ExitCode> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let rows = crate::adapters::ingest::formats::query_results::parse_query_results(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    with_store(settings, async |store| {
        Ok(store
            .evaluations()
            .import_thresholds(&rows, &file.display().to_string())
            .await?)
    })
    .await?;
    let generation = if rows.iter().any(|r| r.p50.is_some()) {
        "current (P50/P75/P95/P99, MasterNodesUpdated)"
    } else if rows.iter().any(|r| r.job_runs.is_some()) {
        "4.13 (JobRuns, P95/P99)"
    } else {
        "oldest (P95/P99 only)"
    };
    println!(
        "imported {} rows from {} (schema: {generation})",
        rows.len(),
        file.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn print_ingest_summary(summary: &IngestSummary, format: Format) {
    match format {
        Format::Json => println!("{}", serde_json::to_string(summary).unwrap_or_default()),
        Format::Text => {
            println!(
                "ingested {}, skipped {}, failed {}",
                summary.ingested, summary.skipped, summary.failed
            );
            let shown = 10;
            for e in summary.errors.iter().take(shown) {
                let file = if e.file.is_empty() {
                    String::new()
                } else {
                    format!(" {}", e.file)
                };
                println!("  {} {}{}: {}", e.severity, e.run, file, e.error);
            }
            if summary.errors.len() > shown {
                println!(
                    "  … and {} more (sheriff ingest --format json lists them all)",
                    summary.errors.len() - shown
                );
            }
        }
    }
}
