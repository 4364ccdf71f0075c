//! `incidents`: list, show, and people's actions on them (resolve, not a regression, silence,
//! unsilence, acknowledge, accept), recorded as `cli:$USER`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::Utc;

use super::{Format, IncidentsAction};
use crate::application::actions::{self, Operator};
use crate::application::board::{self, incident_json};
use crate::config::Settings;
use crate::store::Store;

/// `sheriff incidents list`: every incident, or those in one state, newest first.
async fn list_incidents(store: &Store, state: Option<String>, format: Format) -> Result<()> {
    use crate::domain::incidents::State;
    let wanted = match state.as_deref() {
        None => None,
        Some("open") => Some(None),
        Some(s) => Some(Some(State::parse(s).with_context(|| {
            format!("unknown state `{s}`: new, ongoing, stale, resolved, reopened or open")
        })?)),
    };
    let mut list: Vec<_> = store
        .incidents()
        .all()
        .await?
        .into_iter()
        .filter(|i| match wanted {
            None => true,
            Some(None) => i.state.is_open(),
            Some(Some(s)) => i.state == s,
        })
        .collect();
    list.sort_by_key(|i| std::cmp::Reverse(i.opened_at));
    match format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = list.iter().map(incident_json).collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "incidents": rows }))?
            );
        }
        Format::Text if list.is_empty() => println!("no incidents"),
        Format::Text => print!("{}", crate::edge::text::incident_table(&list)),
    }
    Ok(())
}

/// The reason for a resolution: `--reason`, else asked for on a terminal; an error naming
/// `--reason` when there is none, so no incident is resolved without a word of why.
fn reason_given_or_asked(given: Option<String>) -> Result<String> {
    use std::io::{BufRead, IsTerminal, Write};
    let missing = || {
        anyhow::anyhow!("`--reason` is required: say why, e.g. --reason \"the lab was rewired\"")
    };
    let reason = match given {
        Some(r) => r,
        None if std::io::stdin().is_terminal() => {
            eprint!("why do you resolve it (told to Slack and Jira)? ");
            std::io::stderr().flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line
        }
        None => return Err(missing()),
    };
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(missing());
    }
    Ok(reason.to_string())
}

/// `incidents show`: one incident with its events and report.
async fn show(store: &Store, incident: &str, format: Format) -> Result<()> {
    let e = board::explain(store, incident)
        .await?
        .with_context(|| format!("no incident {incident}"))?;
    match format {
        Format::Json => {
            let mut v = incident_json(&e.incident);
            v["events"] = serde_json::to_value(&e.events)?;
            v["report"] = serde_json::to_value(&e.incident.snapshot.report)?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => print!("{}", crate::edge::text::explain(&e)),
    }
    Ok(())
}

/// `incidents silence`: an incident or a matcher kept quiet for `duration`.
async fn silence(
    store: &Store,
    target: &[String],
    duration: &str,
    reason: &str,
    now: i64,
) -> Result<()> {
    let words: Vec<&str> = target.iter().map(String::as_str).collect();
    let target =
        crate::domain::incidents::silence::Target::parse(&words).map_err(anyhow::Error::msg)?;
    let secs = crate::model::parse_span(duration)
        .with_context(|| format!("`--for {duration}`: use a duration like 90m, 24h, 7d or 2w"))?;
    let made = actions::silence(store, &target, secs, reason, &Operator::local(), now).await?;
    let what = match &target.fingerprint {
        Some(reference) => format!("incident {reference}"),
        None => format!("matcher {}", target.describe()),
    };
    println!(
        "silence #{}: {what} for {duration}{}",
        made.id,
        made.holds_words()
    );
    Ok(())
}

pub(super) async fn incidents_on(
    store: &Store,
    action: IncidentsAction,
    settings: &Settings,
) -> Result<ExitCode> {
    let now = Utc::now().timestamp();
    match action {
        IncidentsAction::List { state, format } => list_incidents(store, state, format).await?,
        IncidentsAction::Show { incident, format } => show(store, &incident, format).await?,
        IncidentsAction::Resolve { incident, reason } => {
            let reason = reason_given_or_asked(reason)?;
            let i = actions::resolve(store, settings, &incident, &reason, &Operator::local(), now)
                .await?;
            print!("{}", crate::edge::text::resolved_words(&i, &reason));
        }
        IncidentsAction::NotARegression { incident, reason } => {
            let i = actions::not_a_regression(
                store,
                settings,
                &incident,
                &reason,
                &Operator::local(),
                now,
            )
            .await?;
            println!(
                "#{} marked not a regression: resolved, and its fingerprint silenced for 30 days",
                i.id
            );
        }
        IncidentsAction::Silence {
            target,
            duration,
            reason,
        } => silence(store, &target, &duration, &reason, now).await?,
        IncidentsAction::Unsilence { reference } => {
            let n =
                actions::unsilence(store, settings, &reference, &Operator::local(), now).await?;
            println!("ended {n} silence(s)");
        }
        IncidentsAction::Accept {
            incident,
            level,
            until,
            reason,
            jira,
        } => {
            let until = until
                .map(|u| crate::domain::incidents::manual::parse_until(&u, now))
                .transpose()?;
            let a = crate::domain::incidents::Accept {
                level,
                until,
                reason,
                jira_key: jira,
            };
            let i = actions::accept(store, &incident, &a, &Operator::local(), now).await?;
            let told = i
                .allowance
                .as_ref()
                .map_or_else(String::new, crate::words::accepted_level);
            println!("#{}: {told}", i.id);
        }
        IncidentsAction::Ack { incident } => {
            let (i, fresh) =
                actions::acknowledge(store, &incident, &Operator::local(), now).await?;
            let already = if fresh { "" } else { " (already)" };
            println!("acknowledged #{} ({}){already}", i.id, i.fingerprint);
        }
    }

    Ok(ExitCode::SUCCESS)
}
