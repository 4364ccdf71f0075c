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
        if let Some(c) = component(&self.settings, s) {
            fields["components"] = json!([{ "name": c }]);
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
            Effect::JiraTransition { name } => {
                let key = key()?;
                self.transition(&key, name).await?;
                Ok(DeliveryResult::Done { note: format!("{key}: transition {name} asked") })
            }
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

/// An issue as the fix watch reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchedIssue {
    pub key: String,
    pub status: String,
    pub done: bool,
    pub resolution: Option<String>,
    /// When it last entered its current status, from its changelog.
    pub status_since: Option<i64>,
    /// Pull request URLs in the configured pull-request field.
    pub pull_requests: Vec<String>,
}

/// Issue keys asked in one search, at most.
const KEYS_PER_SEARCH: usize = 50;

/// GitHub pull request URLs in a text or a list (the pull-request field holds one or several,
/// separated by spaces, commas or new lines), normalised to `https://github.com/o/r/pull/N`.
pub fn pull_request_urls(v: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    match v {
        Value::String(s) => texts.push(s.as_str()),
        Value::Array(items) => texts.extend(items.iter().filter_map(Value::as_str)),
        _ => {}
    }
    let mut out: Vec<String> = texts
        .iter()
        .flat_map(|t| t.split(|c: char| c.is_whitespace() || c == ',' || c == ';'))
        .filter_map(normalise_pull_url)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `https://github.com/o/r/pull/N` of a pull request URL, or `https://github.com/o/r/commit/SHA`
/// of a commit URL (a fix that landed outside the payload, in the CI harness, is often a
/// commit), a trailing path, query or fragment dropped; else None.
pub fn normalise_pull_url(text: &str) -> Option<String> {
    let rest = text
        .trim()
        .strip_prefix("https://github.com/")
        .or_else(|| text.trim().strip_prefix("http://github.com/"))?;
    let mut parts = rest.split(['/', '?', '#']);
    let (owner, repo, pull, number) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let sha = (7..=40).contains(&number.len()) && number.chars().all(|c| c.is_ascii_hexdigit());
    let what = match pull {
        "pull" if number.parse::<u64>().is_ok() => "pull",
        "commit" if sha => "commit",
        _ => return None,
    };
    (valid(owner) && valid(repo)).then(|| format!("https://github.com/{owner}/{repo}/{what}/{number}"))
}

/// When the issue last entered `status`, from an expanded changelog.
fn entered_status(v: &Value, status: &str) -> Option<i64> {
    v["changelog"]["histories"]
        .as_array()?
        .iter()
        .filter(|h| {
            h["items"].as_array().into_iter().flatten().any(|item| {
                item["field"] == "status"
                    && item["toString"].as_str().is_some_and(|s| s.eq_ignore_ascii_case(status))
            })
        })
        .filter_map(|h| parse_time(h["created"].as_str()?))
        .map(|t| t.timestamp())
        .max()
}

fn parse_time(t: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z")
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(t))
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

impl JiraClient {
    /// The issues `keys` name, read with as few JQL searches as the page size allows (v2
    /// `startAt`/`total`, v3 `nextPageToken`), each with its status, resolution, changelog and
    /// pull-request field. Keys Jira does not know are left out.
    pub async fn watch(&self, keys: &[String]) -> Result<Vec<WatchedIssue>, DeliveryError> {
        let valid: Vec<&String> = keys.iter().filter(|k| crate::notify::jira::is_issue_key(k)).collect();
        let mut out = Vec::new();
        for chunk in valid.chunks(KEYS_PER_SEARCH) {
            let list: Vec<&str> = chunk.iter().map(|k| k.as_str()).collect();
            let jql = format!("key in ({}) ORDER BY key ASC", list.join(", "));
            let mut fields = "status,resolution,resolutiondate".to_string();
            if !self.settings.pull_request_field.is_empty() {
                fields.push(',');
                fields.push_str(&self.settings.pull_request_field);
            }
            let (mut start, mut token): (u64, Option<String>) = (0, None);
            loop {
                let answer = self.search_page(&jql, &fields, start, token.as_deref()).await?;
                let issues = answer["issues"].as_array().cloned().unwrap_or_default();
                out.extend(issues.iter().map(|v| self.watched(v)));
                start += issues.len() as u64;
                token = answer["nextPageToken"].as_str().map(str::to_string);
                let more = match self.settings.api {
                    JiraApi::V2 => !issues.is_empty() && start < answer["total"].as_u64().unwrap_or(0),
                    JiraApi::V3 => token.is_some() && answer["isLast"] != Value::Bool(true),
                };
                if !more {
                    break;
                }
            }
        }
        Ok(out)
    }

    async fn search_page(
        &self,
        jql: &str,
        fields: &str,
        start: u64,
        token: Option<&str>,
    ) -> Result<Value, DeliveryError> {
        let mut query: Vec<(&str, String)> = vec![
            ("jql", jql.to_string()),
            ("fields", fields.to_string()),
            ("expand", "changelog".into()),
            ("maxResults", KEYS_PER_SEARCH.to_string()),
        ];
        let path = match self.settings.api {
            JiraApi::V2 => {
                // An issue deleted or moved since would fail the whole search otherwise.
                query.push(("validateQuery", "warn".into()));
                query.push(("startAt", start.to_string()));
                "search"
            }
            JiraApi::V3 => {
                if let Some(t) = token {
                    query.push(("nextPageToken", t.to_string()));
                }
                "search/jql"
            }
        };
        self.call("search", self.http.get(format!("{}/{path}", self.api())).query(&query)).await
    }

    fn watched(&self, v: &Value) -> WatchedIssue {
        let f = &v["fields"];
        let status = f["status"]["name"].as_str().unwrap_or_default().to_string();
        let pull_requests = if self.settings.pull_request_field.is_empty() {
            Vec::new()
        } else {
            pull_request_urls(&f[self.settings.pull_request_field.as_str()])
        };
        WatchedIssue {
            key: v["key"].as_str().unwrap_or_default().to_string(),
            status_since: entered_status(v, &status),
            status,
            done: f["status"]["statusCategory"]["key"] == "done",
            resolution: f["resolution"]["name"].as_str().map(str::to_string),
            pull_requests,
        }
    }

    /// The pull requests an issue's remote links point at.
    pub async fn linked_pull_requests(&self, key: &str) -> Result<Vec<String>, DeliveryError> {
        if !is_issue_key(key) {
            return Ok(Vec::new());
        }
        let answer = self
            .call("remote links", self.http.get(format!("{}/issue/{key}/remotelink", self.api())))
            .await?;
        let mut out: Vec<String> = answer
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| normalise_pull_url(l["object"]["url"].as_str()?))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// `PROJ-123`: what a key looks like, and all sheriff puts in a JQL list or a path.
pub fn is_issue_key(key: &str) -> bool {
    let Some((project, number)) = key.split_once('-') else { return false };
    !project.is_empty()
        && project.len() <= 64
        && project.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !number.is_empty()
        && number.len() <= 12
        && number.chars().all(|c| c.is_ascii_digit())
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

/// The issue's component: the incident's, unless the attribution files the cause against the
/// CI harness, where the product's component is only consulted: then `harness_component`, or
/// none (the project's default applies; the Ask names the harness). `set_component` governs
/// the incident's own component only.
fn component<'a>(settings: &'a JiraSettings, s: &'a crate::incidents::Snapshot) -> Option<&'a str> {
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
    fn pull_request_urls_are_read_from_the_field_in_the_forms_it_takes() {
        let one =
            Value::String("https://github.com/openshift/cluster-image-registry-operator/pull/918".into());
        assert_eq!(
            pull_request_urls(&one),
            vec!["https://github.com/openshift/cluster-image-registry-operator/pull/918"]
        );
        let several = Value::String(
            "https://github.com/openshift/a/pull/2, https://github.com/openshift/b/pull/3/files\nnot a url"
                .into(),
        );
        assert_eq!(
            pull_request_urls(&several),
            vec!["https://github.com/openshift/a/pull/2", "https://github.com/openshift/b/pull/3"]
        );
        assert_eq!(
            normalise_pull_url(
                "https://github.com/openshift-metal3/dev-scripts/commit/1a2b3c4d5e?diff=split"
            )
            .as_deref(),
            Some("https://github.com/openshift-metal3/dev-scripts/commit/1a2b3c4d5e")
        );
        assert_eq!(normalise_pull_url("https://github.com/o/r/commit/not-a-sha"), None);
        let list =
            serde_json::json!(["https://github.com/o/r/pull/1#top", "https://github.com/o/r/issues/4", 7]);
        assert_eq!(pull_request_urls(&list), vec!["https://github.com/o/r/pull/1"]);
        assert!(pull_request_urls(&Value::Null).is_empty());
        assert_eq!(normalise_pull_url("https://github.com/o/r/pull/x"), None);
        assert_eq!(normalise_pull_url("https://github.com/o r/x/pull/1"), None);
    }

    #[test]
    fn a_cause_in_the_ci_harness_never_takes_the_product_s_component() {
        use crate::model::{Dimension, FileAgainst, Scope};
        let r = crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 22.0, 0.0);
        let mut s = crate::incidents::Snapshot::from_report(&r);
        let mut settings = JiraSettings::default();
        assert_eq!(component(&settings, &s), Some("Image Registry"));
        s.report.attribution.file_against = FileAgainst::TestEnvironment;
        assert_eq!(component(&settings, &s), None, "unset: the project's default");
        settings.harness_component = Some("Installer / openshift-metal3".into());
        assert_eq!(component(&settings, &s), Some("Installer / openshift-metal3"));
        settings.set_component = false;
        assert_eq!(component(&settings, &s), Some("Installer / openshift-metal3"), "set explicitly");
        s.report.attribution.file_against = FileAgainst::Backend;
        assert_eq!(component(&settings, &s), None);
    }

    #[test]
    fn only_plain_issue_keys_reach_a_query_or_a_path() {
        assert!(is_issue_key("OCPBUGS-123"));
        assert!(is_issue_key("TRT2-1"));
        for bad in ["OCPBUGS", "ocpbugs-1", "OCPBUGS-", "A-1) OR (1=1", "A-1/../2", "-1"] {
            assert!(!is_issue_key(bad), "{bad}");
        }
    }

    #[test]
    fn the_time_a_status_was_entered_comes_from_the_changelog() {
        let v = serde_json::json!({"changelog": {"histories": [
            {"created": "2026-10-01T10:00:00.000+0000", "items": [{"field": "status", "toString": "MODIFIED"}]},
            {"created": "2026-10-02T10:00:00.000+0000", "items": [{"field": "assignee", "toString": "ON_QA"}]},
            {"created": "2026-10-03T10:00:00.000+0000", "items": [{"field": "status", "toString": "ON_QA"}]}
        ]}});
        assert_eq!(entered_status(&v, "on_qa"), Some(1_791_021_600));
        assert_eq!(entered_status(&v, "MODIFIED"), Some(1_790_848_800));
        assert_eq!(entered_status(&v, "Verified"), None);
        assert_eq!(entered_status(&serde_json::json!({}), "ON_QA"), None);
    }
}
