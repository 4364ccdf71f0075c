//! `outbox`: the Slack and Jira side effects waiting, dead or done; retried or delivered by hand.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use chrono::Utc;

use super::{Format, OutboxAction};
use crate::config::Settings;
use crate::store::Store;

pub(super) async fn outbox(action: OutboxAction, settings: &Settings) -> Result<ExitCode> {
    let store = Arc::new(Store::open_configured(settings).await?);
    let result: Result<()> = async {
        match action {
            OutboxAction::List { state, format } => {
                let entries = store.outbox().entries(state, 500).await?;
                match format {
                    Format::Json => println!("{}", serde_json::to_string_pretty(&entries)?),
                    Format::Text => {
                        for e in &entries {
                            println!(
                                "#{} {} {} attempts={} {}",
                                e.id,
                                e.kind,
                                e.idempotency_key,
                                e.attempts,
                                e.last_error.as_deref().unwrap_or("")
                            );
                        }
                        let n = entries.len();
                        println!("{n} {state} {}", if n == 1 { "entry" } else { "entries" });
                    }
                }
            }
            OutboxAction::Retry { id, all } => {
                if id.is_none() && !all {
                    anyhow::bail!("name an entry number, or --all");
                }
                let n = store.outbox().retry(id, Utc::now().timestamp()).await?;
                println!(
                    "{n} {} queued again",
                    if n == 1 { "entry" } else { "entries" }
                );
            }
            OutboxAction::Deliver => {
                let r = crate::application::outbox::deliver_for_a_while(store.clone(), settings)
                    .await?;
                println!(
                    "delivered {}, retrying {}, dead {}",
                    r.delivered, r.retrying, r.dead
                );
            }
        }
        Ok(())
    }
    .await;
    store.close().await;
    result.map(|()| ExitCode::SUCCESS)
}
