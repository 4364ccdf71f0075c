//! Jira's markup: a [document](Node) (`words::issue` writes an issue's) written as wiki markup
//! (REST v2) or as Atlassian Document Format (REST v3), each escaping what it gives meaning to.

use serde_json::{Value, json};

use crate::config::JiraApi;
use crate::support::document::{Inline, Node, text};

/// Wiki markup (Jira Server / Data Center).
pub fn to_wiki(doc: &[Node]) -> String {
    fn esc(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            // `!url!` embeds an image fetched from anywhere by everyone who opens the issue
            if matches!(
                c,
                '[' | ']' | '{' | '}' | '|' | '*' | '_' | '^' | '~' | '+' | '!'
            ) {
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
                Inline::Link { text, url } => match crate::support::render::web_link(url) {
                    Some(url) => format!(
                        "[{}|{}]",
                        esc(text),
                        crate::support::render::link_target(url)
                    ),
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
            Node::Bullets(items) => out.push(
                items
                    .iter()
                    .map(|i| format!("* {}", inline(i)))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Node::Table { header, rows } => {
                let mut t = format!(
                    "||{}||",
                    header.iter().map(|h| esc(h)).collect::<Vec<_>>().join("||")
                );
                for r in rows {
                    t.push_str(&format!(
                        "\n|{}|",
                        r.iter().map(|c| esc(c)).collect::<Vec<_>>().join("|")
                    ));
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
                Inline::Link { text, url } => match crate::support::render::web_link(url) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::incidents::Incident;
    use crate::model::Dimension;
    use crate::words::issue::description;

    #[test]
    fn wiki_escapes_and_formats() {
        let doc = vec![
            Node::Heading("Scope".into()),
            Node::Para(vec![
                text("a [b] |c|"),
                Inline::Code("x".into()),
                Inline::Link {
                    text: "job".into(),
                    url: "https://x/y".into(),
                },
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
        assert_eq!(
            adf["content"][1]["content"][2]["marks"][0]["attrs"]["href"],
            "https://x/y"
        );
    }

    #[test]
    fn artifact_text_cannot_embed_an_image_in_wiki_markup() {
        let doc = vec![Node::Para(vec![
            text("The deployment !https://evil.example/p.png! gone"),
            Inline::Code("!https://evil.example/q.png|width=1!".into()),
        ])];
        assert_eq!(
            to_wiki(&doc),
            "The deployment \\!https://evil.example/p.png\\! gone{{\\!https://evil.example/q.png\\|width=1\\!}}"
        );
    }

    #[test]
    fn a_link_to_anything_but_a_web_address_is_text_and_a_bracket_cannot_end_a_wiki_link() {
        let doc = vec![Node::Para(vec![
            Inline::Link {
                text: "run".into(),
                url: "javascript:alert('url')//https://x".into(),
            },
            text(" "),
            Inline::Link {
                text: "pr".into(),
                url: "https://x/a]*bold*[b|c".into(),
            },
        ])];
        assert_eq!(to_wiki(&doc), "run [pr|https://x/a%5D*bold*%5Bb%7Cc]");
        let adf = to_adf(&doc);
        assert!(
            adf["content"][0]["content"][0].get("marks").is_none(),
            "{adf}"
        );
        assert_eq!(
            adf["content"][0]["content"][2]["marks"][0]["attrs"]["href"],
            "https://x/a]*bold*[b|c"
        );
    }

    #[test]
    fn the_description_opens_with_what_broke_where_the_evidence_and_the_ask() {
        use crate::model::{Dimension, SampleJob, SampleKind, Scope};
        let mut r =
            crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 22.0, 0.0);
        r.allowed_seconds = 5.0;
        r.attribution.summary =
            "image-registry regressed on metal 4.14. File against Image Registry.".into();
        r.attribution
            .evidence
            .push("File against Image Registry; Bare Metal is the platform's owner".into());
        r.sample_jobs.push(SampleJob {
            url: "https://prow.ci.openshift.org/view/gs/test-platform-results/logs/job/99".into(),
            job: "periodic-metal-upgrade".into(),
            build_id: "99".into(),
            seconds: 43,
            kind: SampleKind::Worst,
            ci_infrastructure_trouble: false,
            variant: "ovn · micro".into(),
        });
        let i = Incident::new(
            1,
            "sheriff-00000000000000aa",
            crate::domain::incidents::Snapshot::from_report(&r),
        );
        let doc = description(&i, "https://sheriff.example.com");
        let wiki = to_wiki(&doc);
        let lines: Vec<&str> = wiki.split("\n\n").collect();
        for (line, label) in lines
            .iter()
            .zip(["What broke: ", "Where: ", "Evidence: ", "Ask: "])
        {
            assert!(line.starts_with(label), "{label}: {wiki}");
        }
        assert!(lines[0].contains("(was 0s, allowed 5s)"), "{}", lines[0]);
        assert!(lines[1].contains("metal"), "{}", lines[1]);
        assert!(
            wiki.contains("disruption is the number of seconds"),
            "{wiki}"
        );
        assert!(wiki.contains("[the run (43s, periodic-metal-upgrade)|https://prow.ci.openshift.org/view/gs/test-platform-results/logs/job/99]"), "{wiki}");
        assert!(
            !wiki.contains("File against"),
            "never in an issue filed against it: {wiki}"
        );
        let statistics = wiki.find("h3. Statistics").unwrap();
        assert!(
            statistics > wiki.find("h3. What this measures").unwrap()
                && wiki[statistics..].contains("h3. Affected groups")
        );
        for word in ["threshold", "baseline", "limit"] {
            assert!(!wiki.to_lowercase().contains(word), "{word}: {wiki}");
        }
        assert_eq!(to_adf(&doc)["content"][0]["type"], "paragraph");
    }

    /// The seed case: one registry replica, evicted by each drain, on metal only.
    fn harness_incident() -> Incident {
        use crate::model::{FileAgainst, Mechanism, MechanismKind, PlatformContrast, Scope};
        let mut r =
            crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 22.0, 0.0);
        let a = &mut r.attribution;
        a.file_against = FileAgainst::TestEnvironment;
        a.harness = Some("openshift-metal3/dev-scripts".into());
        let summary = "In 11 of 12 sample runs image-registry had one ready replica (healthy runs of the same jobs: 2); \
                       each time the upgrade drained the node it ran on, the drain evicted it and image-registry was \
                       unreachable until the replacement became ready.";
        a.mechanism = Some(Mechanism {
            summary: summary.into(),
            runs_explained: 11,
            runs_examined: 12,
            healthy_examined: 20,
            ..crate::synth::example_mechanism(MechanismKind::SingleReplicaDrained)
        });
        a.contrast = ["aws", "azure", "gcp", "vsphere"]
            .map(|p| PlatformContrast {
                platform: p.into(),
                seconds: 0.0,
                runs: 30,
                same_payloads: true,
            })
            .into();
        Incident::new(
            1,
            "sheriff-00000000000000bb",
            crate::domain::incidents::Snapshot::from_report(&r),
        )
    }

    #[test]
    fn a_cause_in_the_ci_harness_asks_the_harness_and_consults_the_product() {
        let i = harness_incident();
        assert_eq!(i.snapshot.component, "Image Registry");
        let wiki = to_wiki(&description(&i, ""));
        let lines: Vec<&str> = wiki.split("\n\n").collect();
        assert!(
            lines[3].starts_with(
                "Ask: maintainers of the CI harness openshift-metal3/dev-scripts, please find why"
            ),
            "{wiki}"
        );
        assert!(
            lines[3].contains("Image Registry is consulted, not blamed"),
            "{}",
            lines[3]
        );
        assert!(!lines[3].starts_with("Ask: Image Registry"), "{}", lines[3]);
        // a regression of the product itself still asks its component
        let mut product = i.clone();
        product.snapshot.report.attribution.file_against = crate::model::FileAgainst::Backend;
        assert!(
            to_wiki(&description(&product, ""))
                .contains("\n\nAsk: Image Registry, please find why")
        );
    }

    #[test]
    fn the_mechanism_and_the_healthy_platforms_follow_the_four_lines() {
        let i = harness_incident();
        let doc = description(&i, "");
        let wiki = to_wiki(&doc);
        let lines: Vec<&str> = wiki.split("\n\n").collect();
        for (line, label) in lines
            .iter()
            .zip(["What broke: ", "Where: ", "Evidence: ", "Ask: "])
        {
            assert!(line.starts_with(label), "{label}: {wiki}");
        }
        assert!(
            lines[4].contains("one ready replica") && lines[4].contains("the drain evicted it"),
            "{wiki}"
        );
        assert!(
            lines[5].starts_with(
                "Not the release as a whole: aws, azure, gcp and vsphere 4.14 kept image-registry at P50 0s"
            ),
            "{wiki}"
        );
        let adf = to_adf(&doc);
        assert_eq!(adf["content"][4]["content"][0]["text"], lines[4]);
        assert_eq!(adf["content"][5]["type"], "paragraph");
    }

    #[test]
    fn empty_text_is_never_an_adf_node() {
        let adf = to_adf(&[Node::Para(vec![text(""), text("x")])]);
        assert_eq!(adf["content"][0]["content"].as_array().unwrap().len(), 1);
    }
}
