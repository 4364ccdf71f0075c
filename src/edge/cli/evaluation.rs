//! `evaluate`: one evaluation cycle now; `backtest`: cycles replayed over the stored runs, and
//! the difference another configuration makes.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};

use super::Format;
use crate::config::Settings;
use crate::store::Store;

pub(super) async fn evaluate(
    settings: &Settings,
    at: Option<DateTime<Utc>>,
    format: Format,
    dry_run: bool,
) -> Result<ExitCode> {
    let store = Arc::new(Store::open_configured(settings).await?);
    let options = crate::application::cycle::CycleOptions {
        at: at.unwrap_or_else(Utc::now),
        dry_run,
    };
    let report = async {
        let mut report = crate::application::cycle::run_cycle(
            &store,
            &crate::application::warm::Warm::new(),
            settings,
            options,
        )
        .await?;
        if !dry_run {
            report.delivery = Some(
                crate::application::outbox::deliver_for_a_while(store.clone(), settings).await?,
            );
        }
        anyhow::Ok(report)
    }
    .await;
    store.close().await;
    let report = report?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Text => print!("{}", crate::edge::text::cycle_report(&report)),
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn backtest(
    settings: &Settings,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    every: Option<&str>,
    cron: Option<&str>,
    against: Option<&std::path::Path>,
    format: Format,
) -> Result<ExitCode> {
    use crate::application::backtest::{self, Cadence};
    let cadence = match (every, cron) {
        (Some(e), _) => Cadence::Every(
            crate::model::parse_span(e)
                .with_context(|| format!("`--every {e}`: use a span like 90m, 6h or 1d"))?,
        ),
        (None, c) => {
            let expression = c.unwrap_or(&settings.schedule.evaluate);
            Cadence::Cron(Box::new(
                crate::config::cron::Schedule::parse(expression, &settings.schedule.timezone)
                    .map_err(|e| anyhow::anyhow!("`{expression}`: {e}"))?,
            ))
        }
    };
    let other = against
        .map(|p| Settings::load(Some(p)).map_err(|e| anyhow::anyhow!("{e}")))
        .transpose()?;
    let store = Arc::new(Store::open_configured(settings).await?);
    let result = async {
        let a = backtest::backtest(store.clone(), settings, from, to, &cadence).await?;
        let b = match &other {
            Some(o) => Some(backtest::backtest(store.clone(), o, from, to, &cadence).await?),
            None => None,
        };
        anyhow::Ok((a, b))
    }
    .await;
    store.close().await;
    let (a, b) = result?;
    let difference = b.as_ref().map(|b| backtest::compare(&a, b));
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&a)?;
            if let (Some(b), Some(d)) = (&b, &difference) {
                v["against"] = serde_json::to_value(b)?;
                v["difference"] = serde_json::to_value(d)?;
            }
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => {
            print!("{}", crate::edge::text::backtest(&a));
            if let (Some(b), Some(d)) = (&b, &difference) {
                println!("\n── against the other configuration ──");
                print!("{}", crate::edge::text::backtest(b));
                println!(
                    "\nonly in the first: {}",
                    if d.only_in_a.is_empty() {
                        "-".into()
                    } else {
                        d.only_in_a.join("; ")
                    }
                );
                println!(
                    "only in the second: {}",
                    if d.only_in_b.is_empty() {
                        "-".into()
                    } else {
                        d.only_in_b.join("; ")
                    }
                );
                for t in &d.different_timing {
                    println!(
                        "timing differs: {}: opened {} / {}, resolved {:?} / {:?}",
                        t.incident, t.opened.0, t.opened.1, t.resolved.0, t.resolved.1
                    );
                }
            }
        }
    }

    Ok(ExitCode::SUCCESS)
}
