//! Jira as an outbox sink: issues filed once per incident and kept current, through the REST
//! client (`crate::clients::jira`); `words::issue` writes the text, `adf` writes it in the API's
//! markup.
//!
//! Before creating, sheriff searches (JQL) for an open issue carrying the incident's
//! fingerprint label, so an issue created just before a crash is found instead of filed again.
//! Comments carry a `sheriff` comment property with the outbox idempotency key, and a retried
//! comment looks for it first.

pub(crate) mod adf;

use crate::clients::jira::{JiraClient, NewIssue};
use crate::clients::{CallError, SetupError};
use crate::config::JiraSettings;
use crate::domain::incidents::Incident;
use crate::domain::incidents::plan::Effect;
use crate::store::outbox::{DeliveryResult, OutboxEntry};
use crate::support::document::Node;
use crate::support::render::truncate;

/// The longest summary Jira takes.
const MAX_SUMMARY: usize = 255;

/// An incident's issue summary, as Jira takes it.
pub fn summary(i: &Incident) -> String {
    truncate(&crate::words::issue::summary(i), MAX_SUMMARY)
}

/// Delivers Jira effects: files, comments on, resolves and reopens an incident's issue.
pub struct JiraSink {
    client: JiraClient,
    settings: JiraSettings,
    /// sheriff's own address, for the links back in descriptions.
    public_url: String,
}

impl JiraSink {
    pub fn new(settings: &JiraSettings) -> Result<JiraSink, SetupError> {
        Ok(JiraSink {
            client: JiraClient::new(settings)?,
            settings: settings.clone(),
            public_url: String::new(),
        })
    }

    /// Links back to sheriff in descriptions.
    pub(crate) fn with_public_url(mut self, url: &str) -> Self {
        self.public_url = url.to_string();
        self
    }

    /// Creates the incident's issue unless an open one with its label exists; the key.
    pub async fn file(&self, i: &Incident, link_to: Option<&str>) -> Result<String, CallError> {
        if let Some(found) = self
            .client
            .search(&i.fingerprint, true)
            .await?
            .into_iter()
            .next()
        {
            tracing::info!(key = %found.key, fingerprint = %i.fingerprint, "Jira issue already exists");
            return Ok(found.key);
        }
        let s = &i.snapshot;
        let band = s.tier.split_once(' ').map_or("", |(_, b)| b);
        let new = NewIssue {
            summary: summary(i),
            description: adf::render(
                self.settings.api,
                &crate::words::issue::description(i, &self.public_url),
            ),
            labels: vec![i.fingerprint.clone()],
            component: component(&self.settings, s).map(str::to_string),
            affects_version: self
                .settings
                .affects_version_prefix
                .as_ref()
                .map(|p| format!("{p}{}", s.release)),
            priority: self.settings.priorities.get(band).cloned(),
        };
        let key = self.client.create_issue(&new).await?;
        if let Some(old) = link_to
            && let Err(e) = self.client.link(&key, old).await
        {
            tracing::warn!(key, old, "could not link the new issue to the old one: {e}");
        }
        Ok(key)
    }

    /// Adds a comment tagged with `idem`, unless an earlier attempt already did.
    async fn comment(
        &self,
        key: &str,
        text: &[Node],
        idem: &str,
        retried: bool,
    ) -> Result<(), CallError> {
        if retried && self.client.has_comment(key, idem).await? {
            return Ok(());
        }
        self.client
            .add_comment(key, &adf::render(self.settings.api, text), idem)
            .await
    }

    /// Delivers one Jira outbox entry for incident `i`.
    pub(super) async fn deliver(
        &self,
        entry: &OutboxEntry,
        i: &Incident,
        effect: &Effect,
    ) -> Result<DeliveryResult, CallError> {
        let idem = entry.idempotency_key.as_str();
        let retried = entry.attempts > 1;
        let key = || {
            i.jira_key
                .clone()
                .ok_or_else(|| CallError::permanent("the incident has no Jira issue"))
        };

        match effect {
            Effect::JiraCreate => Ok(DeliveryResult::JiraFiled {
                key: self.file(i, None).await?,
            }),
            Effect::JiraComment { text } => {
                let key = key()?;
                self.comment(&key, &crate::words::issue::comment(i, text), idem, retried)
                    .await?;
                Ok(DeliveryResult::Done {
                    note: format!("commented on {key}"),
                })
            }
            Effect::JiraResolve { text } => {
                let key = key()?;
                self.comment(&key, &crate::words::issue::comment(i, text), idem, retried)
                    .await?;
                self.client
                    .transition(&key, &self.settings.resolve_transition)
                    .await?;
                Ok(DeliveryResult::Done {
                    note: format!("resolved {key}"),
                })
            }
            Effect::JiraReopen { text } => self.reopen(i, &key()?, text, idem, retried).await,
            Effect::JiraTransition { name } => {
                let key = key()?;
                self.client.transition(&key, name).await?;
                Ok(DeliveryResult::Done {
                    note: format!("{key}: transition {name} asked"),
                })
            }
            other => Err(CallError::permanent(format!(
                "{} is not a Jira effect",
                other.kind()
            ))),
        }
    }

    /// Recurrence: comment on an open issue; reopen one resolved within the window; never touch
    /// a Won't Fix (file a new linked issue only if configured); otherwise file a new linked issue.
    async fn reopen(
        &self,
        i: &Incident,
        key: &str,
        text: &str,
        idem: &str,
        retried: bool,
    ) -> Result<DeliveryResult, CallError> {
        let issue = self.client.issue(key).await?;
        let comment = crate::words::issue::comment(i, text);
        if !issue.done {
            self.comment(key, &comment, idem, retried).await?;
            return Ok(DeliveryResult::Done {
                note: format!("{key} still open; commented"),
            });
        }

        let never = issue.resolution.as_deref().is_some_and(|r| {
            self.settings
                .never_reopen
                .iter()
                .any(|n| n.eq_ignore_ascii_case(r))
        });

        if never && !self.settings.file_after_never_reopen {
            return Ok(DeliveryResult::Done {
                note: format!(
                    "{key} closed as {}; left alone",
                    issue.resolution.unwrap_or_default()
                ),
            });
        }

        let window = chrono::Duration::days(i64::from(self.settings.reopen_window_days));
        let recent = issue
            .resolved_at
            .is_some_and(|t| chrono::Utc::now() - t <= window);

        if !never && recent && !self.settings.reopen_transition.is_empty() {
            self.comment(key, &comment, idem, retried).await?;
            self.client
                .transition(key, &self.settings.reopen_transition)
                .await?;
            return Ok(DeliveryResult::Done {
                note: format!("reopened {key}"),
            });
        }

        if !never && recent {
            self.comment(key, &comment, idem, retried).await?;
            return Ok(DeliveryResult::Done {
                note: format!("commented on closed {key}"),
            });
        }

        Ok(DeliveryResult::JiraFiled {
            key: self.file(i, Some(key)).await?,
        })
    }
}

/// The issue's component: the incident's, unless the attribution files the cause against the
/// CI harness, where the product's component is only consulted: then `harness_component`, or
/// none (the project's default applies; the Ask names the harness). `set_component` governs
/// the incident's own component only.
fn component<'a>(
    settings: &'a JiraSettings,
    s: &'a crate::domain::incidents::Snapshot,
) -> Option<&'a str> {
    let c = if s.report.attribution.file_against == crate::model::FileAgainst::TestEnvironment {
        settings.harness_component.as_deref()
    } else if settings.set_component {
        Some(s.component.as_str())
    } else {
        None
    };
    c.filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_in_the_ci_harness_never_takes_the_product_s_component() {
        use crate::model::{Dimension, FileAgainst, Scope};
        let r =
            crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 22.0, 0.0);
        let mut s = crate::domain::incidents::Snapshot::from_report(&r);
        let mut settings = JiraSettings::default();
        assert_eq!(component(&settings, &s), Some("Image Registry"));
        s.report.attribution.file_against = FileAgainst::TestEnvironment;
        assert_eq!(
            component(&settings, &s),
            None,
            "unset: the project's default"
        );
        settings.harness_component = Some("Installer / openshift-metal3".into());
        assert_eq!(
            component(&settings, &s),
            Some("Installer / openshift-metal3")
        );
        settings.set_component = false;
        assert_eq!(
            component(&settings, &s),
            Some("Installer / openshift-metal3"),
            "set explicitly"
        );
        s.report.attribution.file_against = FileAgainst::Backend;
        assert_eq!(component(&settings, &s), None);
    }
}
