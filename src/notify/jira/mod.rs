//! Jira: issues filed once per incident and kept current.
//!
//! Before creating, sheriff searches (JQL) for an open issue carrying the incident's
//! fingerprint label, so an issue created just before a crash is found instead of filed again.
//! Comments carry a `sheriff` comment property with the outbox idempotency key, and a retried
//! comment looks for it first. REST v2 (wiki markup) or v3 (ADF) by configuration.

pub mod render;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::DeliveryError;
use crate::config::{JiraApi, JiraSettings, Secret};
use crate::incidents::Incident;
use crate::incidents::plan::Effect;
use crate::store::outbox::{DeliveryResult, OutboxEntry};

/// An issue as sheriff needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueStatus {
    pub key: String,
    pub done: bool,
    pub resolution: Option<String>,
    pub resolved_at: Option<chrono::DateTime<chrono::Utc>>,
}

pub struct JiraClient {
    http: reqwest::Client,
    settings: JiraSettings,
    token: Option<Secret>,
    public_url: String,
}

impl JiraClient {
    pub fn new(settings: &JiraSettings) -> Result<JiraClient> {
        let http = crate::http::client_builder(Duration::from_secs_f64(settings.timeout_secs.max(0.05)))
            .build()
            .context("building the Jira client")?;
        Ok(JiraClient {
            http,
            settings: settings.clone(),
            token: settings.token.clone(),
            public_url: String::new(),
        })
    }

    /// Links back to sheriff in descriptions.
    pub fn with_public_url(mut self, url: &str) -> Self {
        self.public_url = url.to_string();
        self
    }

    fn api(&self) -> String {
        let v = match self.settings.api {
            JiraApi::V2 => "2",
            JiraApi::V3 => "3",
        };
        format!("{}/rest/api/{v}", self.settings.url.trim_end_matches('/'))
    }

    fn auth(&self, r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.token, self.settings.user.is_empty()) {
            (Some(t), true) => r.bearer_auth(t.expose()),
            (Some(t), false) => r.basic_auth(&self.settings.user, Some(t.expose())),
            (None, _) => r,
        }
    }

    /// Sends a request; the JSON answer (or Null for 204), or a classified error.
    async fn call(&self, what: &str, request: reqwest::RequestBuilder) -> Result<Value, DeliveryError> {
        let started = Instant::now();
        let response = self.auth(request).header("Accept", "application/json").send().await;
        let label = response.as_ref().map_or("error".to_string(), |r| r.status().as_u16().to_string());
        metrics::histogram!("sheriff_jira_request_seconds", "call" => what.to_string(), "status" => label)
            .record(started.elapsed().as_secs_f64());
        let response = response.map_err(|e| DeliveryError::transient(format!("Jira {what}: {e}")))?;
        let status = response.status();
        let retry_after = crate::http::retry_after(response.headers());
        let body =
            response.text().await.map_err(|e| DeliveryError::transient(format!("Jira {what}: {e}")))?;
        if status.is_success() {
            if body.trim().is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_str(&body)
                .map_err(|e| DeliveryError::transient(format!("Jira {what}: bad JSON: {e}")));
        }
        let detail = serde_json::from_str::<Value>(&body)
            .ok()
            .map(|v| {
                let mut parts: Vec<String> = v["errorMessages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.as_str().map(str::to_string))
                    .collect();
                if let Some(errors) = v["errors"].as_object() {
                    parts.extend(
                        errors.iter().map(|(k, m)| format!("{k}: {}", m.as_str().unwrap_or_default())),
                    );
                }
                parts.join("; ")
            })
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| body.chars().take(200).collect());
        let message = format!("Jira {what}: HTTP {status}: {detail}");
        Err(match status.as_u16() {
            429 => DeliveryError {
                message,
                transient: true,
                retry_after: retry_after.or(Some(Duration::from_secs(5))),
            },
            500..=599 => DeliveryError { message, transient: true, retry_after },
            _ => DeliveryError::permanent(message),
        })
    }

    /// Issues carrying `label`, newest first; open ones only when `open_only`.
    pub async fn search(&self, label: &str, open_only: bool) -> Result<Vec<IssueStatus>, DeliveryError> {
        let mut jql =
            format!("project = \"{}\" AND labels = \"{label}\"", self.settings.project.replace('"', ""));
        if open_only {
            jql.push_str(" AND statusCategory != Done");
        }
        jql.push_str(" ORDER BY created DESC");
        let fields = "status,resolution,resolutiondate";
        let request = match self.settings.api {
            JiraApi::V2 => self.http.get(format!("{}/search", self.api())).query(&[
                ("jql", jql.as_str()),
                ("fields", fields),
                ("maxResults", "20"),
            ]),
            JiraApi::V3 => self.http.get(format!("{}/search/jql", self.api())).query(&[
                ("jql", jql.as_str()),
                ("fields", fields),
                ("maxResults", "20"),
            ]),
        };
        let answer = self.call("search", request).await?;
        Ok(answer["issues"].as_array().into_iter().flatten().map(issue_status).collect())
    }

    pub async fn issue(&self, key: &str) -> Result<IssueStatus, DeliveryError> {
        let request = self
            .http
            .get(format!("{}/issue/{key}", self.api()))
            .query(&[("fields", "status,resolution,resolutiondate")]);
        Ok(issue_status(&self.call("get issue", request).await?))
    }

    /// Creates the incident's issue unless an open one with its label exists; the key.
    pub async fn file(&self, i: &Incident, link_to: Option<&str>) -> Result<String, DeliveryError> {
        if let Some(found) = self.search(&i.fingerprint, true).await?.into_iter().next() {
            tracing::info!(key = %found.key, fingerprint = %i.fingerprint, "Jira issue already exists");
            return Ok(found.key);
        }
        let s = &i.snapshot;
        let mut labels = self.settings.labels.clone();
        labels.push(i.fingerprint.clone());
        let mut fields = json!({
            "project": { "key": self.settings.project },
            "issuetype": { "name": self.settings.issue_type },
            "summary": render::summary(i),
            "description": render::render(self.settings.api, &render::description(i, &self.public_url)),
            "labels": labels,
        });
        if self.settings.set_component && !s.component.is_empty() {
            fields["components"] = json!([{ "name": s.component }]);
        }
        if let Some(prefix) = &self.settings.affects_version_prefix {
            fields["versions"] = json!([{ "name": format!("{prefix}{}", s.release) }]);
        }
        let band = s.tier.split_once(' ').map_or("", |(_, b)| b);
        if let Some(p) = self.settings.priorities.get(band) {
            fields["priority"] = json!({ "name": p });
        }
        let answer = self
            .call(
                "create issue",
                self.http.post(format!("{}/issue", self.api())).json(&json!({ "fields": fields })),
            )
            .await?;
        let key = answer["key"]
            .as_str()
            .ok_or_else(|| DeliveryError::transient("Jira create issue: no key in the answer"))?
            .to_string();
        if let Some(old) = link_to {
            let link = json!({ "type": { "name": "Relates" }, "inwardIssue": { "key": key }, "outwardIssue": { "key": old } });
            if let Err(e) = self
                .call("link issues", self.http.post(format!("{}/issueLink", self.api())).json(&link))
                .await
            {
                tracing::warn!(key, old, "could not link the new issue to the old one: {e}");
            }
        }
        Ok(key)
    }

    /// Adds a comment tagged with `idem`, unless an earlier attempt already did.
    pub async fn comment(
        &self,
        key: &str,
        text: &[render::Node],
        idem: &str,
        retried: bool,
    ) -> Result<(), DeliveryError> {
        if retried && self.has_comment(key, idem).await? {
            return Ok(());
        }
        let body = json!({
            "body": render::render(self.settings.api, text),
            "properties": [{ "key": "sheriff", "value": { "idempotency_key": idem } }],
        });
        self.call("add comment", self.http.post(format!("{}/issue/{key}/comment", self.api())).json(&body))
            .await
            .map(|_| ())
    }

    async fn has_comment(&self, key: &str, idem: &str) -> Result<bool, DeliveryError> {
        let mut start = 0u64;
        loop {
            let request = self.http.get(format!("{}/issue/{key}/comment", self.api())).query(&[
                ("expand", "properties".to_string()),
                ("startAt", start.to_string()),
                ("maxResults", "100".into()),
            ]);
            let answer = self.call("list comments", request).await?;
            let comments = answer["comments"].as_array().cloned().unwrap_or_default();
            let found = comments.iter().any(|c| {
                c["properties"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|p| p["key"] == "sheriff" && p["value"]["idempotency_key"] == idem)
            });
            if found {
                return Ok(true);
            }
            let total = answer["total"].as_u64().unwrap_or(0);
            start += comments.len() as u64;
            if comments.is_empty() || start >= total {
                return Ok(false);
            }
        }
    }

    /// Applies the transition named `name` unless the issue is already where it leads.
    pub async fn transition(&self, key: &str, name: &str) -> Result<(), DeliveryError> {
        if name.is_empty() {
            return Ok(());
        }
        let answer = self
            .call("list transitions", self.http.get(format!("{}/issue/{key}/transitions", self.api())))
            .await?;
        let Some(t) = answer["transitions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
        else {
            tracing::info!(key, name, "transition not available from the issue's status; left as it is");
            return Ok(());
        };
        let body = json!({ "transition": { "id": t["id"] } });
        self.call("transition", self.http.post(format!("{}/issue/{key}/transitions", self.api())).json(&body))
            .await
            .map(|_| ())
    }

    /// Delivers one Jira outbox entry for incident `i`.
    pub(super) async fn deliver(
        &self,
        entry: &OutboxEntry,
        i: &Incident,
        effect: &Effect,
    ) -> Result<DeliveryResult, DeliveryError> {
        let idem = entry.idempotency_key.as_str();
        let retried = entry.attempts > 1;
        let key =
            || i.jira_key.clone().ok_or_else(|| DeliveryError::permanent("the incident has no Jira issue"));
        match effect {
            Effect::JiraCreate => Ok(DeliveryResult::JiraFiled { key: self.file(i, None).await? }),
            Effect::JiraComment { text } => {
                let key = key()?;
                self.comment(&key, &render::comment(i, text), idem, retried).await?;
                Ok(DeliveryResult::Done { note: format!("commented on {key}") })
            }
            Effect::JiraResolve { text } => {
                let key = key()?;
                self.comment(&key, &render::comment(i, text), idem, retried).await?;
                self.transition(&key, &self.settings.resolve_transition).await?;
                Ok(DeliveryResult::Done { note: format!("resolved {key}") })
            }
            Effect::JiraReopen { text } => self.reopen(i, &key()?, text, idem, retried).await,
            other => Err(DeliveryError::permanent(format!("{} is not a Jira effect", other.kind()))),
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
    ) -> Result<DeliveryResult, DeliveryError> {
        let issue = self.issue(key).await?;
        let comment = render::comment(i, text);
        if !issue.done {
            self.comment(key, &comment, idem, retried).await?;
            return Ok(DeliveryResult::Done { note: format!("{key} still open; commented") });
        }
        let never = issue
            .resolution
            .as_deref()
            .is_some_and(|r| self.settings.never_reopen.iter().any(|n| n.eq_ignore_ascii_case(r)));
        if never && !self.settings.file_after_never_reopen {
            return Ok(DeliveryResult::Done {
                note: format!("{key} closed as {}; left alone", issue.resolution.unwrap_or_default()),
            });
        }
        let window = chrono::Duration::days(i64::from(self.settings.reopen_window_days));
        let recent = issue.resolved_at.is_some_and(|t| chrono::Utc::now() - t <= window);
        if !never && recent && !self.settings.reopen_transition.is_empty() {
            self.comment(key, &comment, idem, retried).await?;
            self.transition(key, &self.settings.reopen_transition).await?;
            return Ok(DeliveryResult::Done { note: format!("reopened {key}") });
        }
        if !never && recent {
            self.comment(key, &comment, idem, retried).await?;
            return Ok(DeliveryResult::Done { note: format!("commented on closed {key}") });
        }
        Ok(DeliveryResult::JiraFiled { key: self.file(i, Some(key)).await? })
    }
}

fn issue_status(v: &Value) -> IssueStatus {
    let f = &v["fields"];
    IssueStatus {
        key: v["key"].as_str().unwrap_or_default().to_string(),
        done: f["status"]["statusCategory"]["key"] == "done",
        resolution: f["resolution"]["name"].as_str().map(str::to_string),
        resolved_at: f["resolutiondate"].as_str().and_then(|t| {
            chrono::DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z")
                .or_else(|_| chrono::DateTime::parse_from_rfc3339(t))
                .ok()
                .map(|t| t.with_timezone(&chrono::Utc))
        }),
    }
}
