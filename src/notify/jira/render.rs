//! Jira text: one document model, written as wiki markup (REST v2) or as Atlassian Document
//! Format (REST v3).

use serde_json::{Value, json};

use crate::config::JiraApi;
use crate::incidents::Incident;
use crate::model::{Dimension, secs};
use crate::render::{percentile_table, truncate};

/// A piece of running text.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    Text(String),
    Code(String),
    Link { text: String, url: String },
}

/// A block of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Heading(String),
    Para(Vec<Inline>),
    Bullets(Vec<Vec<Inline>>),
    Table { header: Vec<String>, rows: Vec<Vec<String>> },
}

fn text(s: impl Into<String>) -> Inline {
    Inline::Text(s.into())
}

/// Wiki markup (Jira Server / Data Center).
pub fn to_wiki(doc: &[Node]) -> String {
    fn esc(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if matches!(c, '[' | ']' | '{' | '}' | '|' | '*' | '_' | '^' | '~' | '+') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }
    fn inline(parts: &[Inline]) -> String {
        parts
            .iter()
            .map(|p| match p {
                Inline::Text(t) => esc(t),
                Inline::Code(t) => format!("{{{{{}}}}}", esc(t)),
                Inline::Link { text, url } => match crate::render::web_link(url) {
                    Some(url) => format!("[{}|{}]", esc(text), crate::render::link_target(url)),
                    None => esc(text),
                },
            })
            .collect()
    }
    let mut out = Vec::new();
    for n in doc {
        match n {
            Node::Heading(t) => out.push(format!("h3. {}", esc(t))),
            Node::Para(p) => out.push(inline(p)),
            Node::Bullets(items) => {
                out.push(items.iter().map(|i| format!("* {}", inline(i))).collect::<Vec<_>>().join("\n"))
            }
            Node::Table { header, rows } => {
                let mut t = format!("||{}||", header.iter().map(|h| esc(h)).collect::<Vec<_>>().join("||"));
                for r in rows {
                    t.push_str(&format!("\n|{}|", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join("|")));
                }
                out.push(t);
            }
        }
    }
    out.join("\n\n")
}

/// Atlassian Document Format (Jira Cloud).
pub fn to_adf(doc: &[Node]) -> Value {
    fn inline(parts: &[Inline]) -> Vec<Value> {
        parts
            .iter()
            .filter(|p| !matches!(p, Inline::Text(t) | Inline::Code(t) if t.is_empty()))
            .map(|p| match p {
                Inline::Text(t) => json!({ "type": "text", "text": t }),
                Inline::Code(t) => json!({ "type": "text", "text": t, "marks": [{ "type": "code" }] }),
                Inline::Link { text, url } => match crate::render::web_link(url) {
                    Some(url) => json!({ "type": "text", "text": if text.is_empty() { url } else { text }, "marks": [{ "type": "link", "attrs": { "href": url } }] }),
                    None => json!({ "type": "text", "text": if text.is_empty() { url } else { text } }),
                },
            })
            .collect()
    }
    fn para(parts: &[Inline]) -> Value {
        json!({ "type": "paragraph", "content": inline(parts) })
    }
    fn cell(kind: &str, t: &str) -> Value {
        json!({ "type": kind, "content": [para(&[text(t)])] })
    }
    let content: Vec<Value> = doc
        .iter()
        .map(|n| match n {
            Node::Heading(t) => json!({ "type": "heading", "attrs": { "level": 3 }, "content": inline(&[text(t.as_str())]) }),
            Node::Para(p) => para(p),
            Node::Bullets(items) => json!({
                "type": "bulletList",
                "content": items.iter().map(|i| json!({ "type": "listItem", "content": [para(i)] })).collect::<Vec<_>>(),
            }),
            Node::Table { header, rows } => {
                let mut trs = vec![json!({ "type": "tableRow", "content": header.iter().map(|h| cell("tableHeader", h)).collect::<Vec<_>>() })];
                trs.extend(rows.iter().map(|r| json!({ "type": "tableRow", "content": r.iter().map(|c| cell("tableCell", c)).collect::<Vec<_>>() })));
                json!({ "type": "table", "content": trs })
            }
        })
        .collect();
    json!({ "version": 1, "type": "doc", "content": content })
}

/// A field value in the API's format.
pub fn render(api: JiraApi, doc: &[Node]) -> Value {
    match api {
        JiraApi::V2 => Value::String(to_wiki(doc)),
        JiraApi::V3 => to_adf(doc),
    }
}

/// `image-registry disruption regressed on metal 4.14: P50 31s (threshold 4s)`, at most 255
/// characters.
pub fn summary(i: &Incident) -> String {
    let s = &i.snapshot;
    let platform = s
        .scope
        .get(Dimension::Platform)
        .map(|v| format!("{} ", v.iter().cloned().collect::<Vec<_>>().join("/")))
        .unwrap_or_default();
    let text = format!(
        "{} disruption regressed on {platform}{}: {} {} (threshold {})",
        s.family,
        s.release,
        s.percentile,
        secs(s.observed_seconds),
        secs(s.threshold_seconds)
    );
    truncate(&text, 255)
}

/// The top suspect changes of the payload window, with links.
fn suspect_changes(r: &crate::model::RegressionReport, doc: &mut Vec<Node>) {
    let suspects: Vec<Vec<Inline>> = r
        .suspect_changes
        .iter()
        .take(crate::render::SUSPECTS_SHOWN)
        .map(|c| vec![Inline::Link { text: crate::render::suspect(c), url: c.url.clone() }])
        .collect();
    if suspects.is_empty() {
        return;
    }
    doc.push(Node::Heading("Suspect changes".into()));
    let window = r.onset.as_ref().and_then(|o| o.payload_words()).unwrap_or_default();
    doc.push(Node::Para(vec![text(format!(
        "Pull requests that entered in the payload window ({window}), the component's repositories first:"
    ))]));
    doc.push(Node::Bullets(suspects));
}

/// The issue description: attribution, the percentile table, scope and independence,
/// conditions, sample jobs, the way back to sheriff.
pub fn description(i: &Incident, public_url: &str) -> Vec<Node> {
    let s = &i.snapshot;
    let r = &s.report;
    let mut doc = vec![Node::Para(vec![text(s.summary.clone())])];
    if let Some(onset) = i.onset().or_else(|| r.onset.clone()) {
        doc.push(Node::Para(vec![text(format!("Regressed {}.", crate::render::onset(&onset)))]));
    }
    doc.push(Node::Heading("Percentiles".into()));
    let rows = percentile_table(r)
        .into_iter()
        .map(|row| vec![row.percentile, row.now, row.threshold, row.baseline])
        .collect();
    doc.push(Node::Table {
        header: vec!["percentile".into(), "now".into(), "threshold".into(), "baseline".into()],
        rows,
    });
    doc.push(Node::Heading("Scope".into()));
    let mut scope = vec![vec![text(format!("{} {}", s.release, s.scope.describe()))]];
    scope.extend(r.attribution.independence.iter().map(|t| vec![text(t.clone())]));
    doc.push(Node::Bullets(scope));
    let conditions: Vec<Vec<Inline>> = r
        .attribution
        .conditions
        .iter()
        .take(5)
        .map(|c| {
            vec![
                Inline::Code(c.label()),
                text(format!(" {} — in {} of {} regressed runs", c.reason, c.runs_with, c.runs)),
            ]
        })
        .collect();
    if !conditions.is_empty() {
        doc.push(Node::Heading("Correlated ClusterOperator conditions".into()));
        doc.push(Node::Bullets(conditions));
    }
    let evidence: Vec<Vec<Inline>> =
        r.attribution.evidence.iter().take(10).map(|e| vec![text(e.clone())]).collect();
    if !evidence.is_empty() {
        doc.push(Node::Heading("Evidence".into()));
        doc.push(Node::Bullets(evidence));
    }
    let jobs: Vec<Vec<Inline>> = r
        .sample_jobs
        .iter()
        .take(10)
        .map(|j| {
            vec![
                Inline::Link { text: format!("{} #{}", j.job, j.build_id), url: j.url.clone() },
                text(format!(" — {}s ({})", j.seconds, j.kind)),
            ]
        })
        .collect();
    if !jobs.is_empty() {
        doc.push(Node::Heading("Sample job runs".into()));
        doc.push(Node::Bullets(jobs));
    }
    suspect_changes(r, &mut doc);
    let mut back = vec![text("Filed by sheriff for incident "), Inline::Code(i.fingerprint.clone())];
    if !public_url.is_empty() {
        back.push(text(" — "));
        back.push(Inline::Link {
            text: "full view".into(),
            url: format!("{}/incidents/{}", public_url.trim_end_matches('/'), i.id),
        });
    }
    doc.push(Node::Para(back));
    doc
}

/// A comment on a change.
pub fn comment(i: &Incident, change: &str) -> Vec<Node> {
    let s = &i.snapshot;
    vec![
        Node::Para(vec![text(format!("sheriff: {change}"))]),
        Node::Para(vec![text(format!(
            "Now {} {} against a threshold of {}; scope {} {}.",
            s.percentile,
            secs(s.observed_seconds),
            secs(s.threshold_seconds),
            s.release,
            s.scope.describe()
        ))]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiki_escapes_and_formats() {
        let doc = vec![
            Node::Heading("Scope".into()),
            Node::Para(vec![
                text("a [b] |c|"),
                Inline::Code("x".into()),
                Inline::Link { text: "job".into(), url: "https://x/y".into() },
            ]),
            Node::Table {
                header: vec!["p".into(), "now".into()],
                rows: vec![vec!["P50".into(), "31s".into()]],
            },
            Node::Bullets(vec![vec![text("one")]]),
        ];
        assert_eq!(
            to_wiki(&doc),
            "h3. Scope\n\na \\[b\\] \\|c\\|{{x}}[job|https://x/y]\n\n||p||now||\n|P50|31s|\n\n* one"
        );
        let adf = to_adf(&doc);
        assert_eq!(adf["type"], "doc");
        assert_eq!(adf["content"][2]["type"], "table");
        assert_eq!(adf["content"][1]["content"][2]["marks"][0]["attrs"]["href"], "https://x/y");
    }

    #[test]
    fn a_link_to_anything_but_a_web_address_is_text_and_a_bracket_cannot_end_a_wiki_link() {
        let doc = vec![Node::Para(vec![
            Inline::Link { text: "run".into(), url: "javascript:alert('url')//https://x".into() },
            text(" "),
            Inline::Link { text: "pr".into(), url: "https://x/a]*bold*[b|c".into() },
        ])];
        assert_eq!(to_wiki(&doc), "run [pr|https://x/a%5D*bold*%5Bb%7Cc]");
        let adf = to_adf(&doc);
        assert!(adf["content"][0]["content"][0].get("marks").is_none(), "{adf}");
        assert_eq!(adf["content"][0]["content"][2]["marks"][0]["attrs"]["href"], "https://x/a]*bold*[b|c");
    }

    #[test]
    fn empty_text_is_never_an_adf_node() {
        let adf = to_adf(&[Node::Para(vec![text(""), text("x")])]);
        assert_eq!(adf["content"][0]["content"].as_array().unwrap().len(), 1);
    }
}
