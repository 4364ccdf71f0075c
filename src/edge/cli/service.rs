//! Running sheriff as a service: `config check` (and what a half-configured Slack or Jira lacks),
//! `migrate`, `serve` and `healthcheck`.

use std::process::ExitCode;

use anyhow::Result;

use super::{EXIT_CONFIG, Format};
use crate::config::Settings;
use crate::store::Store;

pub(super) async fn migrate(settings: &Settings) -> Result<ExitCode> {
    let store = Store::connect(&settings.database).await?;
    let report = store.migrate().await;
    store.close().await;
    let report = report?;
    if report.applied.is_empty() {
        println!(
            "{}: schema already at version {}; nothing to apply",
            settings.database.url, report.current
        );
    } else {
        println!(
            "{}: applied {} migration(s) {:?}; schema at version {}",
            settings.database.url,
            report.applied.len(),
            report.applied,
            report.current
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn healthcheck(settings: &Settings, url: Option<String>) -> Result<ExitCode> {
    let base = url.unwrap_or_else(|| {
        format!(
            "http://{}",
            settings.server.listen.replace("0.0.0.0", "127.0.0.1")
        )
    });
    let client = crate::support::http::client_builder(std::time::Duration::from_secs(3)).build()?;
    match client
        .get(format!("{}/healthz", base.trim_end_matches('/')))
        .send()
        .await
    {
        Ok(r) if r.status().is_success() => Ok(ExitCode::SUCCESS),
        Ok(r) => {
            eprintln!("sheriff: {base}/healthz answered {}", r.status());
            Ok(ExitCode::FAILURE)
        }
        Err(e) => {
            eprintln!("sheriff: {base}/healthz: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

pub(super) async fn serve(settings: Settings, cycle_now: bool) -> Result<ExitCode> {
    let missing = settings.half_configured();
    if !missing.is_empty() {
        eprint!("{}", incomplete(&missing));
        return Ok(ExitCode::from(EXIT_CONFIG));
    }
    let mut app = crate::edge::serve::App::build(settings).await?;
    if cycle_now {
        app.scheduler.cycle_at_start();
    }
    app.run_until_stopped(crate::support::shutdown::signal())
        .await?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the effective settings, or what a half-configured Slack or Jira is missing (exit 2).
pub(super) fn config_check(settings: &Settings, format: Format) -> ExitCode {
    let missing = settings.half_configured();
    if !missing.is_empty() {
        match format {
            Format::Text => eprint!("{}", incomplete(&missing)),
            Format::Json => println!(
                "{}",
                serde_json::json!({ "valid": false, "missing": missing })
            ),
        }
        return ExitCode::from(EXIT_CONFIG);
    }
    match format {
        Format::Text => {
            println!("# configuration is valid; effective settings (secrets redacted):");
            print!("{}", settings.to_redacted_toml());
        }
        Format::Json => {
            let value = serde_json::json!({ "valid": true, "settings": settings });
            println!("{value}");
        }
    }
    ExitCode::SUCCESS
}

/// `sheriff: the configuration is incomplete:` and one line per missing setting.
fn incomplete(missing: &[String]) -> String {
    let mut text = String::from("sheriff: the configuration is incomplete:\n");
    for m in missing {
        text.push_str(&format!("  - {m}\n"));
    }
    text.push_str("configure Slack (or Jira) fully, or leave it out entirely to run without it\n");
    text
}
