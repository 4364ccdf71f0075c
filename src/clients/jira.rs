//! Jira's REST API, v2 (wiki markup) or v3 (ADF) by configuration: issues found by label or
//! key, created, linked, commented on with a comment property, moved by a named transition, and
//! read for the fix watch (status, resolution, changelog, the pull-request field, remote links).
//!
//! Search is `GET /search` (v2: `startAt`/`total` paging, `validateQuery=warn`) or `GET
//! /search/jql` (v3: `nextPageToken`/`isLast`). An error answer is `{"errorMessages": […],
//! "errors": {"field": "message"}}`; `429` carries `Retry-After`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallError, SetupError};
use crate::config::{JiraApi, JiraSettings, Secret};

/// An issue as the outbox needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueStatus {
    pub key: String,
    pub done: bool,
    pub resolution: Option<String>,
    pub resolved_at: Option<chrono::DateTime<chrono::Utc>>,
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

/// What sheriff files: the parts that differ from one incident to the next. The project, the
/// issue type and the configured labels come from the settings.
#[derive(Debug, Clone, PartialEq)]
pub struct NewIssue {
    pub summary: String,
    /// The description, rendered for the configured API version (wiki text or ADF).
    pub description: Value,
    /// Labels besides the configured ones (the incident's fingerprint).
    pub labels: Vec<String>,
    pub component: Option<String>,
    pub affects_version: Option<String>,
    pub priority: Option<String>,
}

/// Issue keys asked in one search, at most.
const KEYS_PER_SEARCH: usize = 50;

/// The fields sheriff asks of an issue.
const STATUS_FIELDS: &str = "status,resolution,resolutiondate";

/// An error answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody {
    #[serde(default)]
    error_messages: Vec<String>,
    /// Field name → message.
    #[serde(default)]
    errors: serde_json::Map<String, Value>,
}

/// One page of a JQL search (v2 or v3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchPage {
    #[serde(default)]
    issues: Vec<Issue>,
    /// v2: how many issues match in all.
    total: Option<u64>,
    /// v3: the next page's token, and whether this page is the last.
    next_page_token: Option<String>,
    is_last: Option<bool>,
}

#[derive(Deserialize)]
struct Issue {
    #[serde(default)]
    key: String,
    #[serde(default)]
    fields: Fields,
    /// With `expand=changelog`.
    changelog: Option<Changelog>,
}

#[derive(Deserialize, Default)]
struct Fields {
    status: Option<Status>,
    resolution: Option<Named>,
    resolutiondate: Option<String>,
    /// The other fields asked for: the pull-request field's name (`customfield_…`) is a
    /// setting, known only at run time.
    #[serde(flatten)]
    other: HashMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default)]
    name: String,
    status_category: Option<StatusCategory>,
}

#[derive(Deserialize)]
struct StatusCategory {
    #[serde(default)]
    key: String,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

#[derive(Deserialize)]
struct Changelog {
    #[serde(default)]
    histories: Vec<History>,
}

#[derive(Deserialize)]
struct History {
    created: Option<String>,
    #[serde(default)]
    items: Vec<ChangeItem>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChangeItem {
    #[serde(default)]
    field: String,
    to_string: Option<String>,
}

/// `POST /issue`'s body.
#[derive(Serialize)]
struct CreateIssue<'a> {
    fields: CreateFields<'a>,
}

#[derive(Serialize)]
struct CreateFields<'a> {
    project: Key<'a>,
    issuetype: Name<'a>,
    summary: &'a str,
    description: &'a Value,
    labels: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<[Name<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    versions: Option<[Name<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<Name<'a>>,
}

#[derive(Serialize)]
struct Key<'a> {
    key: &'a str,
}

#[derive(Serialize)]
struct Name<'a> {
    name: &'a str,
}

/// `POST /issue`'s answer.
#[derive(Deserialize)]
struct Created {
    key: Option<String>,
}

/// `POST /issueLink`'s body.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IssueLink<'a> {
    #[serde(rename = "type")]
    kind: Name<'a>,
    inward_issue: Key<'a>,
    outward_issue: Key<'a>,
}

/// `POST /issue/{key}/comment`'s body: the comment and the property that marks it as the
/// outbox entry's.
#[derive(Serialize)]
struct NewComment<'a> {
    body: &'a Value,
    properties: [Property<Mark<'a>>; 1],
}

#[derive(Serialize, Deserialize)]
struct Property<V> {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: V,
}

/// The value of the `sheriff` comment property.
#[derive(Serialize, Deserialize)]
struct Mark<'a> {
    idempotency_key: &'a str,
}

/// One page of `GET /issue/{key}/comment?expand=properties`.
#[derive(Deserialize)]
struct Comments {
    #[serde(default)]
    comments: Vec<Comment>,
    total: Option<u64>,
}

#[derive(Deserialize)]
struct Comment {
    #[serde(default)]
    properties: Vec<Property<Value>>,
}

impl Comment {
    /// Whether the comment carries the `sheriff` property with `idem`.
    fn marked(&self, idem: &str) -> bool {
        self.properties
            .iter()
            .filter(|p| p.key == "sheriff")
            .any(|p| Mark::deserialize(&p.value).is_ok_and(|m: Mark| m.idempotency_key == idem))
    }
}

/// `GET /issue/{key}/transitions`'s answer.
#[derive(Deserialize)]
struct Transitions {
    #[serde(default)]
    transitions: Vec<Transition>,
}

#[derive(Deserialize)]
struct Transition {
    #[serde(default)]
    id: String,
    name: Option<String>,
}

/// `POST /issue/{key}/transitions`'s body.
#[derive(Serialize)]
struct DoTransition<'a> {
    transition: TransitionId<'a>,
}

#[derive(Serialize)]
struct TransitionId<'a> {
    id: &'a str,
}

/// One of `GET /issue/{key}/remotelink`'s links.
#[derive(Deserialize)]
struct RemoteLink {
    object: Option<RemoteObject>,
}

#[derive(Deserialize)]
struct RemoteObject {
    url: Option<String>,
}

impl Issue {
    fn done(&self) -> bool {
        self.status()
            .and_then(|s| s.status_category.as_ref())
            .is_some_and(|c| c.key == "done")
    }

    fn status(&self) -> Option<&Status> {
        self.fields.status.as_ref()
    }

    fn resolution(&self) -> Option<String> {
        self.fields.resolution.as_ref().and_then(|r| r.name.clone())
    }

    fn into_status(self) -> IssueStatus {
        IssueStatus {
            done: self.done(),
            resolution: self.resolution(),
            resolved_at: self.fields.resolutiondate.as_deref().and_then(parse_time),
            key: self.key,
        }
    }

    /// When the issue last entered `status`, from its changelog.
    fn entered(&self, status: &str) -> Option<i64> {
        self.changelog
            .as_ref()?
            .histories
            .iter()
            .filter(|h| {
                h.items.iter().any(|item| {
                    item.field == "status"
                        && item
                            .to_string
                            .as_deref()
                            .is_some_and(|s| s.eq_ignore_ascii_case(status))
                })
            })
            .filter_map(|h| parse_time(h.created.as_deref()?))
            .map(|t| t.timestamp())
            .max()
    }

    fn watched(&self, pull_request_field: &str) -> WatchedIssue {
        let status = self.status().map(|s| s.name.clone()).unwrap_or_default();
        let pull_requests = match pull_request_field {
            "" => Vec::new(),
            field => self
                .fields
                .other
                .get(field)
                .map(pull_request_urls)
                .unwrap_or_default(),
        };
        WatchedIssue {
            key: self.key.clone(),
            status_since: self.entered(&status),
            status,
            done: self.done(),
            resolution: self.resolution(),
            pull_requests,
        }
    }
}

/// The Jira REST API over reqwest.
pub struct JiraClient {
    http: reqwest::Client,
    settings: JiraSettings,
    token: Option<Secret>,
}

impl JiraClient {
    pub fn new(settings: &JiraSettings) -> Result<JiraClient, SetupError> {
        let http = crate::support::http::client_builder(Duration::from_secs_f64(
            settings.timeout_secs.max(0.05),
        ))
        .build()
        .map_err(|e| SetupError::http("Jira", &e))?;
        Ok(JiraClient {
            http,
            settings: settings.clone(),
            token: settings.token.clone(),
        })
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

    /// Sends a request; its answer (an empty body reads as JSON `null`), or a classified error.
    async fn call<T: DeserializeOwned>(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, CallError> {
        let started = Instant::now();
        let response = self
            .auth(request)
            .header("Accept", "application/json")
            .send()
            .await;

        let label = response
            .as_ref()
            .map_or("error".to_string(), |r| r.status().as_u16().to_string());

        metrics::histogram!("sheriff_jira_request_seconds", "call" => what.to_string(), "status" => label)
            .record(started.elapsed().as_secs_f64());

        let response = response.map_err(|e| CallError::retryable(format!("Jira {what}: {e}")))?;
        let status = response.status();
        let retry_after = crate::support::http::retry_after(response.headers());
        let body = response
            .text()
            .await
            .map_err(|e| CallError::retryable(format!("Jira {what}: {e}")))?;

        if status.is_success() {
            let json = if body.trim().is_empty() {
                "null"
            } else {
                body.as_str()
            };
            return serde_json::from_str(json)
                .map_err(|e| CallError::retryable(format!("Jira {what}: bad JSON: {e}")));
        }

        let message = format!("Jira {what}: HTTP {status}: {}", error_detail(&body));
        Err(match status.as_u16() {
            429 => CallError {
                message,
                retryable: true,
                retry_after: retry_after.or(Some(Duration::from_secs(5))),
            },
            500..=599 => CallError {
                message,
                retryable: true,
                retry_after,
            },
            _ => CallError::permanent(message),
        })
    }

    /// Issues of the project carrying `label`, newest first; open ones only when `open_only`.
    pub async fn search(
        &self,
        label: &str,
        open_only: bool,
    ) -> Result<Vec<IssueStatus>, CallError> {
        let mut jql = format!(
            "project = \"{}\" AND labels = \"{label}\"",
            self.settings.project.replace('"', "")
        );
        if open_only {
            jql.push_str(" AND statusCategory != Done");
        }
        jql.push_str(" ORDER BY created DESC");
        let path = match self.settings.api {
            JiraApi::V2 => "search",
            JiraApi::V3 => "search/jql",
        };
        let request = self.http.get(format!("{}/{path}", self.api())).query(&[
            ("jql", jql.as_str()),
            ("fields", STATUS_FIELDS),
            ("maxResults", "20"),
        ]);
        let page: SearchPage = self.call("search", request).await?;
        Ok(page.issues.into_iter().map(Issue::into_status).collect())
    }

    /// The issue `key`: its status and resolution.
    pub async fn issue(&self, key: &str) -> Result<IssueStatus, CallError> {
        let request = self
            .http
            .get(format!("{}/issue/{key}", self.api()))
            .query(&[("fields", STATUS_FIELDS)]);
        let issue: Issue = self.call("get issue", request).await?;
        Ok(issue.into_status())
    }

    /// Creates an issue in the configured project with the configured type and labels; its key.
    pub async fn create_issue(&self, new: &NewIssue) -> Result<String, CallError> {
        let fields = CreateFields {
            project: Key {
                key: &self.settings.project,
            },
            issuetype: Name {
                name: &self.settings.issue_type,
            },
            summary: &new.summary,
            description: &new.description,
            labels: self
                .settings
                .labels
                .iter()
                .chain(&new.labels)
                .map(String::as_str)
                .collect(),
            components: named(&new.component).map(|c| [c]),
            versions: named(&new.affects_version).map(|v| [v]),
            priority: named(&new.priority),
        };
        let request = self
            .http
            .post(format!("{}/issue", self.api()))
            .json(&CreateIssue { fields });
        let created: Created = self.call("create issue", request).await?;
        created
            .key
            .ok_or_else(|| CallError::retryable("Jira create issue: no key in the answer"))
    }

    /// Links issue `new` to issue `old` as related.
    pub async fn link(&self, new: &str, old: &str) -> Result<(), CallError> {
        let link = IssueLink {
            kind: Name { name: "Relates" },
            inward_issue: Key { key: new },
            outward_issue: Key { key: old },
        };
        let request = self
            .http
            .post(format!("{}/issueLink", self.api()))
            .json(&link);
        self.call::<IgnoredAny>("link issues", request)
            .await
            .map(|_| ())
    }

    /// Adds a comment (`body` rendered for the configured API version) marked with `idem`.
    pub async fn add_comment(&self, key: &str, body: &Value, idem: &str) -> Result<(), CallError> {
        let mark = Property {
            key: "sheriff".into(),
            value: Mark {
                idempotency_key: idem,
            },
        };
        let comment = NewComment {
            body,
            properties: [mark],
        };
        let request = self
            .http
            .post(format!("{}/issue/{key}/comment", self.api()))
            .json(&comment);
        self.call::<IgnoredAny>("add comment", request)
            .await
            .map(|_| ())
    }

    /// Whether issue `key` has a comment marked with `idem`; pages through all of them.
    pub async fn has_comment(&self, key: &str, idem: &str) -> Result<bool, CallError> {
        let mut start = 0u64;
        loop {
            let request = self
                .http
                .get(format!("{}/issue/{key}/comment", self.api()))
                .query(&[
                    ("expand", "properties".to_string()),
                    ("startAt", start.to_string()),
                    ("maxResults", "100".into()),
                ]);
            let page: Comments = self.call("list comments", request).await?;
            if page.comments.iter().any(|c| c.marked(idem)) {
                return Ok(true);
            }
            start += page.comments.len() as u64;
            if page.comments.is_empty() || start >= page.total.unwrap_or(0) {
                return Ok(false);
            }
        }
    }

    /// Applies the transition named `name` unless the issue is already where it leads.
    pub async fn transition(&self, key: &str, name: &str) -> Result<(), CallError> {
        if name.is_empty() {
            return Ok(());
        }
        let url = format!("{}/issue/{key}/transitions", self.api());
        let available: Transitions = self.call("list transitions", self.http.get(&url)).await?;
        let Some(t) = available.transitions.iter().find(|t| {
            t.name
                .as_deref()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        }) else {
            tracing::info!(
                key,
                name,
                "transition not available from the issue's status; left as it is"
            );
            return Ok(());
        };
        let body = DoTransition {
            transition: TransitionId { id: &t.id },
        };
        self.call::<IgnoredAny>("transition", self.http.post(&url).json(&body))
            .await
            .map(|_| ())
    }

    /// The issues `keys` name, read with as few JQL searches as the page size allows (v2
    /// `startAt`/`total`, v3 `nextPageToken`), each with its status, resolution, changelog and
    /// pull-request field. Keys Jira does not know are left out.
    pub async fn watch(&self, keys: &[String]) -> Result<Vec<WatchedIssue>, CallError> {
        let valid: Vec<&String> = keys.iter().filter(|k| is_issue_key(k)).collect();
        let mut fields = STATUS_FIELDS.to_string();
        if !self.settings.pull_request_field.is_empty() {
            fields.push(',');
            fields.push_str(&self.settings.pull_request_field);
        }
        let mut out = Vec::new();
        for chunk in valid.chunks(KEYS_PER_SEARCH) {
            let list: Vec<&str> = chunk.iter().map(|k| k.as_str()).collect();
            let jql = format!("key in ({}) ORDER BY key ASC", list.join(", "));
            let (mut start, mut token): (u64, Option<String>) = (0, None);
            loop {
                let page = self
                    .search_page(&jql, &fields, start, token.as_deref())
                    .await?;
                out.extend(
                    page.issues
                        .iter()
                        .map(|i| i.watched(&self.settings.pull_request_field)),
                );
                start += page.issues.len() as u64;
                token = page.next_page_token;
                let more = match self.settings.api {
                    JiraApi::V2 => !page.issues.is_empty() && start < page.total.unwrap_or(0),
                    JiraApi::V3 => token.is_some() && page.is_last != Some(true),
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
    ) -> Result<SearchPage, CallError> {
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
        self.call(
            "search",
            self.http
                .get(format!("{}/{path}", self.api()))
                .query(&query),
        )
        .await
    }

    /// The pull requests an issue's remote links point at.
    pub async fn linked_pull_requests(&self, key: &str) -> Result<Vec<String>, CallError> {
        if !is_issue_key(key) {
            return Ok(Vec::new());
        }
        let request = self
            .http
            .get(format!("{}/issue/{key}/remotelink", self.api()));
        let links: Vec<RemoteLink> = self.call("remote links", request).await?;
        let mut out: Vec<String> = links
            .iter()
            .filter_map(|l| normalise_pull_url(l.object.as_ref()?.url.as_deref()?))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// `{"name": …}` of a name that may be missing.
fn named(name: &Option<String>) -> Option<Name<'_>> {
    name.as_deref().map(|name| Name { name })
}

/// What an error answer says: its messages and field errors, else the start of its body.
fn error_detail(body: &str) -> String {
    serde_json::from_str::<ErrorBody>(body)
        .ok()
        .map(|e| {
            let mut parts = e.error_messages;
            parts.extend(
                e.errors
                    .iter()
                    .map(|(k, m)| format!("{k}: {}", m.as_str().unwrap_or_default())),
            );
            parts.join("; ")
        })
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| body.chars().take(200).collect())
}

fn parse_time(t: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z")
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(t))
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// `PROJ-123`: what a key looks like, and all sheriff puts in a JQL list or a path.
pub fn is_issue_key(key: &str) -> bool {
    let Some((project, number)) = key.split_once('-') else {
        return false;
    };
    !project.is_empty()
        && project.len() <= 64
        && project
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !number.is_empty()
        && number.len() <= 12
        && number.chars().all(|c| c.is_ascii_digit())
}

/// GitHub pull request URLs in a text or a list (the pull-request field holds one or several,
/// separated by spaces, commas or new lines), normalised to `https://github.com/o/r/pull/N`.
fn pull_request_urls(v: &Value) -> Vec<String> {
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
fn normalise_pull_url(text: &str) -> Option<String> {
    let rest = text
        .trim()
        .strip_prefix("https://github.com/")
        .or_else(|| text.trim().strip_prefix("http://github.com/"))?;
    let mut parts = rest.split(['/', '?', '#']);
    let (owner, repo, pull, number) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let sha = (7..=40).contains(&number.len()) && number.chars().all(|c| c.is_ascii_hexdigit());
    let what = match pull {
        "pull" if number.parse::<u64>().is_ok() => "pull",
        "commit" if sha => "commit",
        _ => return None,
    };
    (valid(owner) && valid(repo))
        .then(|| format!("https://github.com/{owner}/{repo}/{what}/{number}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_urls_are_read_from_the_field_in_the_forms_it_takes() {
        let one = Value::String(
            "https://github.com/openshift/cluster-image-registry-operator/pull/918".into(),
        );
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
            vec![
                "https://github.com/openshift/a/pull/2",
                "https://github.com/openshift/b/pull/3"
            ]
        );
        assert_eq!(
            normalise_pull_url(
                "https://github.com/openshift-metal3/dev-scripts/commit/1a2b3c4d5e?diff=split"
            )
            .as_deref(),
            Some("https://github.com/openshift-metal3/dev-scripts/commit/1a2b3c4d5e")
        );
        assert_eq!(
            normalise_pull_url("https://github.com/o/r/commit/not-a-sha"),
            None
        );
        let list = serde_json::json!([
            "https://github.com/o/r/pull/1#top",
            "https://github.com/o/r/issues/4",
            7
        ]);
        assert_eq!(
            pull_request_urls(&list),
            vec!["https://github.com/o/r/pull/1"]
        );
        assert!(pull_request_urls(&Value::Null).is_empty());
        assert_eq!(normalise_pull_url("https://github.com/o/r/pull/x"), None);
        assert_eq!(normalise_pull_url("https://github.com/o r/x/pull/1"), None);
    }

    #[test]
    fn only_plain_issue_keys_reach_a_query_or_a_path() {
        assert!(is_issue_key("OCPBUGS-123"));
        assert!(is_issue_key("TRT2-1"));
        for bad in [
            "OCPBUGS",
            "ocpbugs-1",
            "OCPBUGS-",
            "A-1) OR (1=1",
            "A-1/../2",
            "-1",
        ] {
            assert!(!is_issue_key(bad), "{bad}");
        }
    }

    #[test]
    fn the_time_a_status_was_entered_comes_from_the_changelog() {
        let issue: Issue = serde_json::from_str(
            r#"{"key": "OCPBUGS-1", "changelog": {"histories": [
            {"created": "2026-10-01T10:00:00.000+0000", "items": [{"field": "status", "toString": "MODIFIED"}]},
            {"created": "2026-10-02T10:00:00.000+0000", "items": [{"field": "assignee", "toString": "ON_QA"}]},
            {"created": "2026-10-03T10:00:00.000+0000", "items": [{"field": "status", "toString": "ON_QA"}]}
        ]}}"#,
        )
        .unwrap();
        assert_eq!(issue.entered("on_qa"), Some(1_791_021_600));
        assert_eq!(issue.entered("MODIFIED"), Some(1_790_848_800));
        assert_eq!(issue.entered("Verified"), None);
        let bare: Issue = serde_json::from_str(r#"{"key": "OCPBUGS-2"}"#).unwrap();
        assert_eq!(bare.entered("ON_QA"), None);
    }

    #[test]
    fn a_listed_issue_reads_its_status_resolution_and_pull_request_field() {
        let issue: Issue = serde_json::from_str(
            r#"{"key": "OCPBUGS-7", "fields": {
                "status": {"name": "Closed", "statusCategory": {"key": "done"}},
                "resolution": {"name": "Done"}, "resolutiondate": "2026-10-03T10:00:00.000+0000",
                "customfield_12310220": "https://github.com/o/r/pull/5 https://github.com/o/r/pull/5"}}"#,
        )
        .unwrap();
        let watched = issue.watched("customfield_12310220");
        assert_eq!((watched.status.as_str(), watched.done), ("Closed", true));
        assert_eq!(watched.resolution.as_deref(), Some("Done"));
        assert_eq!(watched.pull_requests, vec!["https://github.com/o/r/pull/5"]);
        assert!(issue.watched("").pull_requests.is_empty());
        let status = issue.into_status();
        assert_eq!(
            status.resolved_at.map(|t| t.timestamp()),
            Some(1_791_021_600)
        );
        let open: Issue = serde_json::from_str(
            r#"{"key": "OCPBUGS-8", "fields": {"resolution": null, "resolutiondate": null}}"#,
        )
        .unwrap();
        assert_eq!(
            open.into_status(),
            IssueStatus {
                key: "OCPBUGS-8".into(),
                done: false,
                resolution: None,
                resolved_at: None
            }
        );
    }

    #[test]
    fn an_error_answer_names_its_messages_and_fields_else_its_first_characters() {
        let body =
            r#"{"errorMessages": ["Issue does not exist"], "errors": {"summary": "required"}}"#;
        assert_eq!(
            error_detail(body),
            "Issue does not exist; summary: required"
        );
        assert_eq!(
            error_detail("<html>Bad gateway</html>"),
            "<html>Bad gateway</html>"
        );
        assert_eq!(
            error_detail(r#"{"errorMessages": [], "errors": {}}"#),
            r#"{"errorMessages": [], "errors": {}}"#
        );
    }

    #[test]
    fn a_comment_is_sheriff_s_only_with_its_property_and_key() {
        let page: Comments = serde_json::from_str(
            r#"{"comments": [{"id": "1", "properties": [{"key": "other", "value": {"idempotency_key": "k"}}]},
                             {"id": "2", "properties": [{"key": "sheriff", "value": {"idempotency_key": "k"}}]}],
                "total": 2}"#,
        )
        .unwrap();
        assert!(!page.comments[0].marked("k"));
        assert!(page.comments[1].marked("k"));
        assert!(!page.comments[1].marked("j"));
    }
}
