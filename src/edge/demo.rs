//! `sheriff demo`: the quick-start main job, with no network and no service. It generates a
//! realistic month of CI data (several platforms, networks and upgrade types) with the case of
//! the case that started sheriff planted in its last week, ingests it into a fresh SQLite file, evaluates, and
//! prints what sheriff found.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use chrono::{Duration, Utc};

use crate::adapters::ingest::{IngestOptions, Source};
use crate::application::cycle::CycleOptions;
use crate::config::{DatabaseSettings, DatabaseUrl, Settings};
use crate::store::Store;
use crate::synth::world::{Class, Table, WorldSpec, build};
use crate::synth::{self, Scenario};

/// Runs the demo in `folder` (created; a previous demo database there is replaced): on the
/// demo month, or with `world` on a world calibrated from origin's real disruption table holding
/// those failure classes (the seed case when none is named), whose table is imported as the
/// historical thresholds, as a deployment would.
pub async fn run(
    folder: &Path,
    settings: &Settings,
    world: Option<&[Class]>,
    out: &mut impl std::io::Write,
) -> Result<()> {
    let started = Instant::now();
    let end = Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap_or_default()
        .and_utc();
    let tree = match world {
        None => generate(folder, end, out)?,
        Some(classes) => generate_world(folder, end, classes, out)?,
    };
    let (db_path, db) = fresh_database(folder)?;
    let store = Store::open(&db).await?;
    store.trouble().apply(&settings.evaluate.ci_trouble).await?;
    if world.is_some() {
        let table = Table::embedded()?;
        store
            .evaluations()
            .import_thresholds(table.rows(), "data/origin/query_results_upgrades.json")
            .await?;
    }
    let summary = crate::adapters::ingest::ingest(
        &store,
        &settings.ingest,
        &Source::Local(tree.clone()),
        &IngestOptions::default(),
    )
    .await?;
    writeln!(
        out,
        "ingested {} runs into {} ({} skipped, {} failed)",
        summary.ingested,
        db_path.display(),
        summary.skipped,
        summary.failed
    )?;

    // The demo never reaches out: Slack messages go to the console, Jira issues are shown.
    let mut local = settings.clone();
    local.slack.bot_token = None;
    local.jira.url.clear();
    // The payloads' changelogs come from a release controller of the demo's own, on loopback.
    let releases = serve_changelogs(demo_scenario(end)).await?;
    local.release_controller.urls = [("amd64".to_string(), releases)].into();
    let store = std::sync::Arc::new(store);
    let warm = std::sync::Arc::new(crate::application::warm::Warm::new());
    let report = crate::application::cycle::run_cycle(
        &store,
        &warm,
        &local,
        CycleOptions {
            at: end,
            dry_run: false,
        },
    )
    .await?;

    writeln!(out)?;
    write!(out, "{}", crate::edge::text::cycle_report(&report))?;
    writeln!(out, "\n── Slack ({}) ──", slack_heading(settings))?;
    let delivery = crate::application::outbox::deliver_for_a_while(store.clone(), &local).await?;
    writeln!(out, "{} Slack message(s) rendered", delivery.delivered)?;
    show_jira_issues(&store, &local, settings.jira.enabled(), out).await?;
    store.close().await;
    writeln!(
        out,
        "\ndemo finished in {:.1} s; explore it with: SHERIFF__DATABASE__URL=sqlite://{} sheriff evaluate --at {}",
        started.elapsed().as_secs_f64(),
        db_path.display(),
        end.to_rfc3339()
    )?;

    write!(out, "{}", going_live(&db_path, end))?;
    Ok(())
}

/// Serves the pages (and the rest of the HTTP edge, with Slack and Jira off) on the demo's
/// database in `folder` at `server.listen`, until `shutdown`.
pub async fn serve(
    folder: &Path,
    settings: &Settings,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let (_, db) = demo_database(folder)?;
    let store = std::sync::Arc::new(Store::open(&db).await?);
    let mut local = settings.clone();
    local.slack.bot_token = None;
    local.jira.url.clear();
    let listener = tokio::net::TcpListener::bind(&local.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", local.server.listen))?;
    println!(
        "\nthe pages: http://{}/ (ctrl-c stops)",
        listener.local_addr()?
    );
    let warm = std::sync::Arc::new(crate::application::warm::Warm::new());
    let state = crate::edge::server::AppState::new(store.clone(), warm, std::sync::Arc::new(local));
    crate::edge::server::serve(listener, state, shutdown).await?;
    store.close().await;
    Ok(())
}

/// `folder/bucket`, made empty: where a generated tree goes (replacing an earlier one).
fn fresh_tree(folder: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let tree = folder.join("bucket");
    if tree.exists() {
        std::fs::remove_dir_all(&tree).with_context(|| format!("clearing {}", tree.display()))?;
    }
    Ok(tree)
}

/// Writes the demo month into `folder/bucket` (replacing an earlier one); the tree's path.
fn generate(
    folder: &Path,
    end: chrono::DateTime<Utc>,
    out: &mut impl std::io::Write,
) -> Result<PathBuf> {
    let tree = fresh_tree(folder)?;
    let scenario = demo_scenario(end);
    let truth = synth::write_tree(&scenario, &tree)?;
    writeln!(
        out,
        "generated {} job runs of {} jobs over {} days ({} → {}) in {}",
        truth.runs.len(),
        scenario.jobs.len(),
        scenario.days,
        scenario.start.format("%Y-%m-%d"),
        (end - Duration::days(1)).format("%Y-%m-%d"),
        tree.display()
    )?;
    writeln!(
        out,
        "planted: image-registry disruption on metal 4.14 (both networks, micro and minor) in the last week"
    )?;
    Ok(tree)
}

/// Writes a calibrated world of `classes` (the seed case when empty) into `folder/bucket`.
fn generate_world(
    folder: &Path,
    end: chrono::DateTime<Utc>,
    classes: &[Class],
    out: &mut impl std::io::Write,
) -> Result<PathBuf> {
    let tree = fresh_tree(folder)?;
    let classes = if classes.is_empty() {
        vec![Class::SeedCase]
    } else {
        classes.to_vec()
    };
    let world = build(&WorldSpec::new(20231114, end, classes)).map_err(anyhow::Error::msg)?;
    world.write_tree(&tree)?;
    writeln!(
        out,
        "generated {} job runs of {} jobs over {} days, calibrated from origin's disruption table, in {}",
        world.records.len(),
        world.jobs.len(),
        world.spec.days,
        tree.display()
    )?;
    for p in &world.plants {
        let scope: Vec<String> = p.parts.iter().map(|part| part.scope.describe()).collect();
        writeln!(
            out,
            "planted: {} {} on {} ({})",
            p.family,
            p.release,
            scope.join(", then "),
            p.class.as_str()
        )?;
    }
    for d in &world.decoys {
        writeln!(out, "decoy ({}): {}", d.class.as_str(), d.what)?;
    }
    Ok(tree)
}

/// The demo month, its runs testing nightly payloads built every 4 hours.
fn demo_scenario(end: chrono::DateTime<Utc>) -> Scenario {
    let mut s = Scenario::demo(end);
    s.payload_every_hours = 4;
    s
}

/// Serves the scenario's changelogs as a release controller answers `/changelog?format=json`,
/// on a loopback port for as long as the process runs; its base URL.
async fn serve_changelogs(scenario: Scenario) -> Result<String> {
    use axum::extract::Query;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let scenario = std::sync::Arc::new(scenario);
    let app = axum::Router::new().route(
        "/changelog",
        axum::routing::get(
            move |Query(q): Query<std::collections::HashMap<String, String>>| {
                let scenario = scenario.clone();
                async move {
                    let (from, to) = (
                        q.get("from").cloned().unwrap_or_default(),
                        q.get("to").cloned().unwrap_or_default(),
                    );
                    match synth::release_changelog(&scenario, &from, &to) {
                        Ok(body) => axum::Json(body).into_response(),
                        Err(reason) => {
                            (StatusCode::BAD_REQUEST, reason.to_string()).into_response()
                        }
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("a loopback port for the demo")?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("the demo's release controller stopped: {e}");
        }
    });
    Ok(url)
}

/// `folder/sheriff.db`, an earlier demo's database removed first.
fn fresh_database(folder: &Path) -> Result<(PathBuf, DatabaseSettings)> {
    let (db_path, db) = demo_database(folder)?;
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db_path.display()));
        if p.exists() {
            std::fs::remove_file(&p)
                .with_context(|| format!("removing the previous demo database {}", p.display()))?;
        }
    }
    Ok((db_path, db))
}

/// `folder/sheriff.db` and the settings that open it.
fn demo_database(folder: &Path) -> Result<(PathBuf, DatabaseSettings)> {
    let db_path = folder.join("sheriff.db");
    let url = format!("sqlite://{}", db_path.display()).parse::<DatabaseUrl>()?;
    Ok((
        db_path,
        DatabaseSettings {
            url,
            ..Default::default()
        },
    ))
}

/// What the demo's Slack heading says: the demo never posts, whatever is configured.
fn slack_heading(settings: &Settings) -> &'static str {
    if settings.slack.bot_token.is_some() {
        "a bot token is configured, but the demo never posts: the messages are shown on stderr"
    } else {
        "no bot token configured: the messages are shown on stderr, not posted"
    }
}

/// The end of the demo: its database is console-only, and how to go live from here.
fn going_live(db_path: &Path, end: chrono::DateTime<Utc>) -> String {
    let since = (end - Duration::days(14)).format("%Y-%m-%d");
    format!(
        "\n{db} is console-only: its incidents were announced on this console, never in Slack, and no \
         Jira issue was filed, so do not run `sheriff serve` on it with Slack or Jira configured.\n\
         To go live, start from a fresh database (README, \"Going live\"):\n  \
         1. write one TOML file, sheriff.toml: [slack] channel and bot_token_file and signing_secret_file, \
         [jira] url, project and token_file, [[schedule.ingest]] (every key is in config/sheriff.toml)\n  \
         2. sheriff config check --config sheriff.toml\n  \
         3. sheriff ingest --config sheriff.toml gs://test-platform-results/logs --job '^periodic-ci-openshift-release-master-.*-upgrade' --since {since}\n  \
         4. sheriff serve --config sheriff.toml --cycle-now\n",
        db = db_path.display()
    )
}

/// The Jira issue sheriff would file for each open incident.
async fn show_jira_issues(
    store: &Store,
    settings: &Settings,
    jira_configured: bool,
    out: &mut impl std::io::Write,
) -> Result<()> {
    let heading = if jira_configured {
        "the Jira issue sheriff would file (Jira is configured, but the demo never files)"
    } else {
        "the Jira issue sheriff would file (configure [jira] to file it)"
    };
    for incident in store
        .incidents()
        .all()
        .await?
        .iter()
        .filter(|i| i.state.is_open())
    {
        let doc = crate::words::issue::description(incident, &settings.server.public_url);
        writeln!(out, "\n── {heading} ──")?;
        writeln!(
            out,
            "summary: {}",
            crate::adapters::notify::jira::summary(incident)
        )?;
        writeln!(out, "labels: sheriff, {}", incident.fingerprint)?;
        writeln!(out, "component: {}\n", incident.snapshot.component)?;
        writeln!(out, "{}", crate::adapters::notify::jira::adf::to_wiki(&doc))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The demo's closing steps are the README's "Going live" commands, its dates aside.
    #[test]
    fn the_demo_goes_live_with_the_readme_commands() {
        let readme = include_str!("../../README.md");
        let section = &readme[readme.find("## Going live").expect("README has Going live")..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |n| n + 3)];
        let end = chrono::DateTime::parse_from_rfc3339("2026-12-04T00:00:00Z")
            .unwrap()
            .to_utc();
        let shown = super::going_live(std::path::Path::new("demo/sheriff.db"), end);
        let before_date = |line: &str| {
            line.split(" --since ")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let commands: Vec<String> = section
            .lines()
            .map(str::trim)
            .filter(|l| {
                l.starts_with("sheriff ingest gs:")
                    || l.starts_with("sheriff ingest --config")
                    || l.starts_with("sheriff serve")
            })
            .map(before_date)
            .collect();
        assert_eq!(commands.len(), 2, "{section}");
        for c in &commands {
            assert!(
                shown.lines().any(|l| l.contains(c.as_str())),
                "README's `{c}` is not in the demo's steps:\n{shown}"
            );
        }
        assert!(
            section.contains("sheriff config check --config sheriff.toml")
                && shown.contains("sheriff config check --config sheriff.toml")
        );
    }
}
