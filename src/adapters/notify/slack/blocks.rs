//! Block Kit messages, kept within Slack's limits: 50 blocks a message, 3,000 characters a
//! section text, 10 fields of 2,000 characters a section, 150 characters a header, 10 elements
//! a context block, 75 characters a button label. What does not fit is cut with "…" and a link
//! to the full view.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::clients::slack::Message;
use crate::domain::incidents::plan::{Happened, SummaryLine};
use crate::domain::incidents::{Event, Incident, State};
use crate::model::secs;
pub use crate::support::render::truncate;
use crate::words::regression::{percentile_text, weekly_line};
use crate::words::slack as words;

pub const MAX_BLOCKS: usize = 50;
pub const MAX_SECTION_TEXT: usize = 3000;
pub const MAX_FIELDS: usize = 10;
pub const MAX_FIELD_TEXT: usize = 2000;
pub const MAX_HEADER_TEXT: usize = 150;
pub const MAX_CONTEXT_ELEMENTS: usize = 10;
pub const MAX_BUTTON_TEXT: usize = 75;
/// Slack truncates longer notification text; keep well under it.
pub const MAX_MESSAGE_TEXT: usize = 3000;

/// Links sheriff puts in messages.
#[derive(Debug, Clone, Default)]
pub struct Links {
    /// sheriff's own address, for the full view; empty: no link.
    pub public_url: String,
    /// Jira's base URL, for issue links.
    pub jira_url: String,
    /// The Slack workspace's address, for links to threads; empty: the full view instead.
    pub workspace_url: String,
}

impl Links {
    /// Where an incident's thread is: its permalink when the workspace is known and the parent
    /// was posted to Slack, else its full view.
    pub fn thread(&self, i: &Incident) -> Option<String> {
        let posted = i
            .slack_channel
            .as_deref()
            .filter(|c| !c.is_empty())
            .zip(i.slack_ts.as_deref());
        match posted.filter(|(_, ts)| !self.workspace_url.is_empty() && !ts.starts_with("console-"))
        {
            Some((channel, ts)) => Some(format!(
                "{}/archives/{channel}/p{}",
                self.workspace_url.trim_end_matches('/'),
                ts.replace('.', "")
            )),
            None => self.incident(i.id),
        }
    }

    /// The context block every message ends with: the link to the full view, when there is one.
    pub fn footer(&self, id: Option<i64>) -> Option<Value> {
        let link = match id {
            Some(id) => format!("*<{}|{}>*", self.incident(id)?, crate::words::FULL_VIEW),
            None if self.public_url.is_empty() => return None,
            None => format!(
                "*<{}/incidents|{}>*",
                self.public_url.trim_end_matches('/'),
                words::ALL_INCIDENTS
            ),
        };
        Some(context(&[link]))
    }

    pub fn incident(&self, id: i64) -> Option<String> {
        (!self.public_url.is_empty())
            .then(|| format!("{}/incidents/{id}", self.public_url.trim_end_matches('/')))
    }
    pub fn jira(&self, key: &str) -> String {
        if self.jira_url.is_empty() {
            key.to_string()
        } else {
            format!(
                "<{}/browse/{key}|{key}>",
                self.jira_url.trim_end_matches('/')
            )
        }
    }
}

/// A person in mrkdwn: a real mention (`<@U012AB>`) for a Slack user, else their readable
/// name, escaped.
pub fn mention(actor: &str) -> String {
    crate::support::render::slack_user(actor).map_or_else(
        || escape(&crate::words::person(actor)),
        |id| format!("<@{id}>"),
    )
}

/// Escapes the three characters Slack's mrkdwn treats as control characters.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn section(text: &str) -> Value {
    json!({ "type": "section", "text": { "type": "mrkdwn", "text": truncate(text, MAX_SECTION_TEXT) } })
}

/// A section shown exactly as written: for text made of what a person typed (globs such as
/// `*`, which mrkdwn would read as bold).
pub fn plain_section(text: &str) -> Value {
    json!({ "type": "section", "text": { "type": "plain_text", "text": truncate(text, MAX_SECTION_TEXT), "emoji": false } })
}

/// A typed value inside mrkdwn as inline code, where `*`, `_` and `~` mean nothing. The
/// text it goes into is escaped as a whole ([`escape`]).
pub fn code(s: &str) -> String {
    format!("`{}`", s.replace('`', "'"))
}

pub fn header(text: &str) -> Value {
    json!({ "type": "header", "text": { "type": "plain_text", "text": truncate(text, MAX_HEADER_TEXT), "emoji": true } })
}

pub fn fields(pairs: &[(&str, String)]) -> Value {
    let fields: Vec<Value> = pairs
        .iter()
        .take(MAX_FIELDS)
        .map(|(k, v)| json!({ "type": "mrkdwn", "text": truncate(&format!("*{k}*\n{v}"), MAX_FIELD_TEXT) }))
        .collect();
    json!({ "type": "section", "fields": fields })
}

pub fn context(items: &[String]) -> Value {
    let elements: Vec<Value> = items
        .iter()
        .take(MAX_CONTEXT_ELEMENTS)
        .map(|t| json!({ "type": "mrkdwn", "text": truncate(t, MAX_SECTION_TEXT) }))
        .collect();
    json!({ "type": "context", "elements": elements })
}

fn button(label: &str, action_id: &str, value: &str, style: Option<&str>) -> Value {
    let mut b = json!({
        "type": "button",
        "text": { "type": "plain_text", "text": truncate(label, MAX_BUTTON_TEXT), "emoji": true },
        "action_id": action_id,
        "value": value,
    });
    if let Some(s) = style {
        b["style"] = json!(s);
    }
    b
}

/// Joins lines into section texts of at most 3,000 characters each, at most `max_sections`;
/// what is left is counted in a last line.
pub fn sections_of_lines(
    lines: &[String],
    max_sections: usize,
    more_link: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for (n, line) in lines.iter().enumerate() {
        let line = truncate(line, MAX_SECTION_TEXT - 100);
        if current.len() + line.len() + 1 > MAX_SECTION_TEXT - 100 {
            if out.len() + 1 == max_sections {
                break;
            }
            out.push(section(&current));
            current.clear();
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(&line);
        used = n + 1;
    }
    if used < lines.len() {
        let more = words::and_more(lines.len() - used);
        let more = match more_link {
            Some(l) => format!("\n{more}: <{l}|{}>", crate::words::FULL_VIEW),
            None => format!("\n{more} {}", words::THE_REST_IN_THE_LIST),
        };
        current.push_str(&more);
    }
    if !current.is_empty() {
        out.push(section(&current));
    }
    out
}

fn state_emoji(state: State) -> &'static str {
    match state {
        State::New | State::Reopened => ":rotating_light:",
        State::Ongoing => ":warning:",
        State::Stale => ":grey_question:",
        State::Resolved => ":white_check_mark:",
    }
}

/// The state field: the state, how it was resolved, the fix claimed and its last verdict, the
/// accepted level, who acknowledged it.
fn state_text(i: &Incident) -> String {
    let opened = crate::support::render::time(i.opened_at);
    let mut lines = vec![words::state(i, &opened)];
    if let Some(c) = &i.fix {
        let last = c
            .verdicts
            .last()
            .map(|v| crate::words::fix::verdict(v.verdict));
        lines.push(escape(&words::fix_claimed(&c.key, &c.status, last)));
    }
    if let Some(a) = &i.allowance {
        lines.push(escape(&words::accepted(&a.level())));
    }
    if let Some(by) = &i.acked_by {
        lines.push(words::acknowledged_by(&mention(by)));
    }
    lines.join("\n")
}

/// The five fields of the parent message: state, scope, now against the reference, onset, Jira.
fn incident_fields(i: &Incident, links: &Links) -> Value {
    let s = &i.snapshot;
    let (now, reference) = s.now_and_reference();
    let [state, scope, levels, regressed, jira] = words::FIELDS;
    let f = vec![
        (state, state_text(i)),
        (
            scope,
            escape(&format!(
                "{} {} · {}",
                s.release,
                s.scope.describe(),
                s.component
            )),
        ),
        (
            levels,
            words::now_and_reference(
                s.percentile,
                &secs(now),
                &crate::model::secs_or_dash(reference),
                &secs(crate::support::render::allowed(&s.report)),
            ),
        ),
        (
            regressed,
            i.onset()
                .or_else(|| s.report.onset.clone())
                .map_or(words::ONSET_NOT_KNOWN.into(), |o| {
                    crate::words::regression::onset(&o)
                }),
        ),
        (
            jira,
            i.jira_key
                .as_deref()
                .map_or(words::NOT_FILED.into(), |k| links.jira(k)),
        ),
    ];

    fields(&f)
}

/// What the details reply adds about the changes between the payloads.
fn suspects_field(i: &Incident) -> Option<String> {
    let s = &i.snapshot;
    if !s.report.suspect_changes.is_empty() {
        let list: Vec<String> = s
            .report
            .suspect_changes
            .iter()
            .take(crate::support::render::SUSPECTS_SHOWN)
            .map(|c| {
                let words = escape(&crate::words::regression::suspect(c));
                // a link only to a plain web address: it comes from the changelog
                match crate::support::render::web_link(&c.url) {
                    Some(url) => format!(
                        "<{}|{words}>",
                        escape(&crate::support::render::link_target(url))
                    ),
                    None => words,
                }
            })
            .collect();
        let pending = if s.report.outside_pending {
            format!("\n{}", crate::words::regression::OUTSIDE_PENDING)
        } else {
            String::new()
        };
        Some(format!("{}{pending}", list.join("\n")))
    } else if s.report.changes_pending {
        Some(crate::words::regression::CHANGES_PENDING.into())
    } else if s.report.outside_pending {
        Some(crate::words::regression::OUTSIDE_PENDING.into())
    } else {
        None
    }
}

/// The buttons of an open incident.
fn incident_buttons(i: &Incident) -> Value {
    let id = i.id.to_string();
    let [ack, silence, file, accept, not_a_regression] = words::BUTTONS;
    json!({
        "type": "actions",
        "block_id": format!("incident-{}", i.id),
        "elements": [
            button(ack, "ack", &id, Some("primary")),
            button(silence, "silence_24h", &id, None),
            button(file, "file_jira", &id, None),
            button(accept, "accept_level", &id, None),
            button(not_a_regression, "not_a_regression", &id, Some("danger")),
        ],
    })
}

/// The incident's parent message, edited in place as it changes.
pub fn incident_message(i: &Incident, events: &[Event], links: &Links) -> Message {
    let s = &i.snapshot;
    let title = format!("{} {}", state_emoji(i.state), words::title(i));
    let mut blocks = vec![header(&title), incident_fields(i, links)];
    if i.state.is_open() {
        blocks.push(incident_buttons(i));
    }
    let mut footer = Vec::new();
    if let Some(link) = links.incident(i.id) {
        footer.push(format!("*<{link}|{}>*", crate::words::FULL_VIEW));
    }
    footer.push(format!("#{} · {}", i.id, i.fingerprint));
    if let Some(last) = events.iter().rev().find(|e| e.actor != "sheriff") {
        footer.push(words::last_action(
            &escape(&last.kind),
            &mention(&last.actor),
        ));
    }
    blocks.push(context(&footer));
    Message {
        text: truncate(&format!("{title} — {}", s.summary), MAX_MESSAGE_TEXT),
        blocks: Value::Array(blocks),
    }
}

/// The details reply's sample runs, each linked to its run, with its seconds and variant.
fn sample_runs(r: &crate::model::RegressionReport) -> Vec<String> {
    r.sample_jobs
        .iter()
        .map(|j| {
            let words = format!("{} #{}", j.kind, escape(&j.build_id));
            let variant = if j.variant.is_empty() {
                String::new()
            } else {
                format!(" ({})", escape(&j.variant))
            };
            match crate::support::render::web_link(&j.url) {
                Some(url) => {
                    format!(
                        "<{}|{words}> {}s{variant}",
                        escape(&crate::support::render::link_target(url)),
                        j.seconds
                    )
                }
                None => format!("{words} {}s{variant}", j.seconds),
            }
        })
        .collect()
}

/// The first reply in an incident's thread: the account, the percentiles and the weekly trend,
/// the evidence, the groups, the suspect changes and the sample runs.
pub fn details_message(i: &Incident, links: &Links) -> Message {
    let s = &i.snapshot;
    let r = &s.report;
    let full = links.incident(i.id);
    let mut blocks = vec![section(&escape(&s.summary))];
    // percentiles now / threshold / reference, and the weekly sparkline
    let mut table = format!("```\n{}", percentile_text(r));
    if let Some(line) = weekly_line(r) {
        table.push_str(&line);
        table.push('\n');
    }
    table.push_str("```");
    blocks.push(section(&table));
    let evidence: Vec<String> = r
        .attribution
        .evidence
        .iter()
        .map(|e| format!("• {}", escape(e)))
        .collect();

    if !evidence.is_empty() {
        blocks.extend(sections_of_lines(&evidence, 2, full.as_deref()));
    }
    let groups: Vec<String> = r
        .groups
        .iter()
        .map(|g| format!("`{}`", escape(g)))
        .collect();

    if groups.len() > 1 {
        let mut lines = vec![format!("*{}*", words::affected_groups(groups.len()))];
        lines.extend(groups);
        blocks.extend(sections_of_lines(&lines, 2, full.as_deref()));
    }

    let [component, confidence, suspects] = words::DETAIL_FIELDS;
    let mut f = vec![
        (component, escape(&s.component)),
        (confidence, r.attribution.confidence.to_string()),
    ];

    if let Some(list) = suspects_field(i) {
        f.push((suspects, list));
    }
    blocks.push(fields(&f));
    let jobs = sample_runs(r);

    if !jobs.is_empty() {
        blocks.push(context(&jobs));
    }
    blocks.truncate(MAX_BLOCKS - 1);
    blocks.extend(links.footer(Some(i.id)));
    Message {
        text: truncate(
            &format!("{} {}: {}", s.family, s.release, s.summary),
            MAX_MESSAGE_TEXT,
        ),
        blocks: Value::Array(blocks),
    }
}

/// A thread reply on a material change, with the link to the full view.
pub fn reply_message(i: &Incident, change: &str, links: &Links) -> Message {
    let s = &i.snapshot;
    let text = format!(
        "{} {}",
        state_emoji(i.state),
        words::change_reply(&s.family, change, s.percentile, &secs(s.observed_seconds))
    );
    let mut blocks = vec![section(&escape(&text))];
    blocks.extend(links.footer(Some(i.id)));
    Message {
        text: truncate(&text, MAX_MESSAGE_TEXT),
        blocks: Value::Array(blocks),
    }
}

/// A cycle's summary line as Slack shows it (escaped), with the emoji of what happened and a
/// link to the incident's thread.
fn summary_line(line: &SummaryLine, threads: &HashMap<String, Incident>, links: &Links) -> String {
    match line {
        SummaryLine::Text(t) => escape(t),
        SummaryLine::Line {
            what,
            text,
            fingerprint,
        } => {
            let emoji = match what {
                Happened::New => ":rotating_light:",
                Happened::Changed => ":arrows_counterclockwise:",
                Happened::Reopened => ":repeat:",
                Happened::Resolved => ":white_check_mark:",
                Happened::NotFiled => ":no_entry:",
            };
            let word = words::happened(*what);
            let thread = threads.get(fingerprint).and_then(|i| links.thread(i));
            match thread.as_deref().and_then(crate::support::render::web_link) {
                Some(url) => {
                    format!(
                        "{emoji} {word}{} <{}|{}>",
                        escape(text),
                        escape(&crate::support::render::link_target(url)),
                        words::THREAD
                    )
                }
                None => format!("{emoji} {word}{}", escape(text)),
            }
        }
    }
}

/// A cycle's summary for one channel; `threads` holds the incidents its lines name, by
/// fingerprint, for links to their threads.
pub fn summary_message(
    lines: &[SummaryLine],
    threads: &HashMap<String, Incident>,
    links: &Links,
) -> Message {
    let title = words::summary_title(lines.len());
    let mut blocks = vec![header(&title)];
    let full = (!links.public_url.is_empty())
        .then(|| format!("{}/incidents", links.public_url.trim_end_matches('/')));
    let shown: Vec<String> = lines
        .iter()
        .map(|l| summary_line(l, threads, links))
        .collect();
    blocks.extend(sections_of_lines(&shown, MAX_BLOCKS - 2, full.as_deref()));
    blocks.extend(links.footer(None));
    let plain: Vec<&str> = lines
        .iter()
        .map(|l| match l {
            SummaryLine::Text(t) | SummaryLine::Line { text: t, .. } => t.as_str(),
        })
        .collect();
    Message {
        text: truncate(&format!("{title}: {}", plain.join("; ")), MAX_MESSAGE_TEXT),
        blocks: Value::Array(blocks),
    }
}

/// The text a console shows for a message: each block's text, in order.
pub fn to_text(m: &Message) -> String {
    let mut out = Vec::new();
    for b in m.blocks.as_array().into_iter().flatten() {
        if let Some(t) = b["text"]["text"].as_str() {
            out.push(t.to_string());
        }
        for f in b["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(b["elements"].as_array().into_iter().flatten())
        {
            if let Some(t) = f["text"].as_str() {
                out.push(t.replace('\n', ": "));
            } else if let Some(t) = f["text"]["text"].as_str() {
                out.push(format!("[{t}]"));
            }
        }
    }
    out.join("\n")
}

/// Checks a message against the limits above; the first breach found.
#[cfg(test)]
fn check_limits(m: &Message) -> Result<(), String> {
    let blocks = m.blocks.as_array().ok_or("blocks is not an array")?;
    if blocks.len() > MAX_BLOCKS {
        return Err(format!("{} blocks", blocks.len()));
    }
    if m.text.chars().count() > MAX_MESSAGE_TEXT {
        return Err("notification text too long".into());
    }
    for b in blocks {
        let kind = b["type"].as_str().unwrap_or_default();
        let text_len = b["text"]["text"].as_str().map_or(0, |t| t.chars().count());
        match kind {
            "header" if text_len > MAX_HEADER_TEXT => return Err("header too long".into()),
            "section" if text_len > MAX_SECTION_TEXT => return Err("section text too long".into()),
            _ => {}
        }
        if let Some(f) = b["fields"].as_array() {
            if f.len() > MAX_FIELDS {
                return Err("too many fields".into());
            }
            if f.iter()
                .any(|x| x["text"].as_str().map_or(0, |t| t.chars().count()) > MAX_FIELD_TEXT)
            {
                return Err("field too long".into());
            }
        }
        if kind == "context" && b["elements"].as_array().map_or(0, Vec::len) > MAX_CONTEXT_ELEMENTS
        {
            return Err("too many context elements".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn big_incident(cells: usize) -> Incident {
        use crate::model::{Dimension, SampleJob, SampleKind, Scope};
        let mut r =
            crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 31.0, 4.0);
        r.groups = (0..cells)
            .map(|n| {
                format!("image-registry-new-connections release=4.14 platform=metal network=ovn variant={n}")
            })
            .collect();
        r.sample_jobs = (0..25)
            .map(|n| SampleJob {
                url: format!("https://prow.ci.openshift.org/view/gs/b/logs/job/{n}"),
                job: "job".into(),
                build_id: n.to_string(),
                seconds: 40,
                kind: SampleKind::Worst,
                ci_infrastructure_trouble: false,
                variant: "ovn · micro".into(),
            })
            .collect();
        r.attribution.evidence = (0..60)
            .map(|n| format!("evidence line {n} <with> & {}", "x".repeat(200)))
            .collect();
        r.attribution.summary = "x".repeat(5000);
        r.weekly = vec![Some(2.0), Some(3.0), None, Some(30.0), Some(31.0)];
        let mut i = Incident::new(
            12,
            "sheriff-0123456789abcdef",
            crate::domain::incidents::Snapshot::from_report(&r),
        );
        i.revision = 1;
        i.opened_at = 1_700_000_000;
        i.acked_by = Some("U123".into());
        i.jira_key = Some("OCPBUGS-1".into());
        i
    }

    #[test]
    fn an_incident_with_200_cells_stays_within_the_limits() {
        let links = Links {
            public_url: "https://sheriff.example.com".into(),
            jira_url: "https://issues.example.com".into(),
            workspace_url: String::new(),
        };
        let i = big_incident(200);
        let m = incident_message(&i, &[], &links);
        check_limits(&m).unwrap();
        // the parent is concise: a headline, five fields, the buttons, the link to the page
        let blocks = m.blocks.as_array().unwrap();
        let kinds: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["header", "section", "actions", "context"]);
        assert_eq!(blocks[1]["fields"].as_array().unwrap().len(), 5);
        let parent = serde_json::to_string(&m.blocks).unwrap();
        assert!(
            parent.contains("<https://sheriff.example.com/incidents/12|Full view>"),
            "{parent}"
        );
        assert!(
            !parent.contains("evidence line"),
            "the evidence goes to the thread"
        );
        // the first thread reply carries the detail, within the limits too
        let d = details_message(&i, &links);
        check_limits(&d).unwrap();
        let text = serde_json::to_string(&d.blocks).unwrap();
        assert!(text.contains("more: <https://sheriff.example.com/incidents/12|Full view>"));
        assert!(text.contains("&lt;with&gt; &amp;"));
        let lines: Vec<SummaryLine> = (0..500)
            .map(|n| SummaryLine::Line {
                what: Happened::Changed,
                text: format!("line {n} {}", "y".repeat(80)),
                fingerprint: String::new(),
            })
            .collect();
        let summary = summary_message(&lines, &HashMap::new(), &links);
        check_limits(&summary).unwrap();
    }

    #[test]
    fn every_message_links_its_full_view_the_summary_its_threads_and_runs_show_their_variant() {
        let links = Links {
            public_url: "https://sheriff.example.com".into(),
            jira_url: String::new(),
            workspace_url: "https://trt.slack.com".into(),
        };
        let mut i = big_incident(1);
        let full = "<https://sheriff.example.com/incidents/12|Full view>";
        for m in [
            incident_message(&i, &[], &links),
            details_message(&i, &links),
            reply_message(&i, "x", &links),
        ] {
            check_limits(&m).unwrap();
            let text = m.blocks.to_string();
            assert!(text.contains(full), "{text}");
        }
        let details = details_message(&i, &links).blocks.to_string();
        assert!(
            details.contains("|worst #0&gt; 40s (ovn · micro)")
                || details.contains("|worst #0> 40s (ovn · micro)"),
            "{details}"
        );
        let line = |fingerprint: &str| SummaryLine::Line {
            what: Happened::New,
            text: "image-registry 4.14 (metal)".into(),
            fingerprint: fingerprint.into(),
        };
        (i.slack_channel, i.slack_ts) = (Some("C0TRT".into()), Some("1700000001.000100".into()));
        let threads = HashMap::from([(i.fingerprint.clone(), i.clone())]);
        let summary = summary_message(&[line(&i.fingerprint), line("unknown")], &threads, &links);
        check_limits(&summary).unwrap();
        let text = summary.blocks.to_string();
        assert!(
            text.contains("<https://trt.slack.com/archives/C0TRT/p1700000001000100|thread>"),
            "{text}"
        );
        assert!(
            text.contains("<https://sheriff.example.com/incidents|All incidents>"),
            "{text}"
        );
        // not posted to Slack (the console): the thread link is the full view
        i.slack_ts = Some("console-slack_post:12".into());
        assert_eq!(
            links.thread(&i).as_deref(),
            Some("https://sheriff.example.com/incidents/12")
        );
    }

    #[test]
    fn the_header_says_how_it_was_resolved_and_only_a_recovery_is_no_longer_observed() {
        let links = Links::default();
        let mut i = big_incident(1);
        let header =
            |i: &Incident| incident_message(i, &[], &links).blocks[0]["text"]["text"].to_string();
        assert!(
            header(&i).contains("disruption regressed: 4.14"),
            "{}",
            header(&i)
        );
        i.state = State::Resolved;
        use crate::domain::incidents::ResolvedAs;
        for (how, says) in [
            (ResolvedAs::NotARegression, "marked not a regression"),
            (ResolvedAs::ByHand, "resolved by hand"),
            (ResolvedAs::Fixed, "fixed"),
            (ResolvedAs::Recovered, "no longer observed"),
        ] {
            i.resolution = Some(how);
            assert!(header(&i).contains(says), "{how:?}: {}", header(&i));
            assert_eq!(
                header(&i).contains("no longer observed"),
                how == ResolvedAs::Recovered,
                "{how:?}"
            );
        }
        (i.resolution, i.merged_into) = (Some(ResolvedAs::Merged), Some(3));
        assert!(header(&i).contains("merged into #3"));
        i.state = State::Stale;
        assert!(header(&i).contains("too few runs to judge"));
    }

    #[test]
    fn a_sample_run_link_that_is_no_web_address_is_shown_as_text() {
        let links = Links::default();
        let mut i = big_incident(1);
        i.snapshot.report.sample_jobs[0].url = "javascript:alert('url')//x".into();
        i.snapshot.report.sample_jobs[1].url = "https://prow.example/a|b".into();
        let text = serde_json::to_string(&details_message(&i, &links).blocks).unwrap();
        assert!(!text.contains("javascript:"), "{text}");
        assert!(text.contains("worst #0"), "the run is still named: {text}");
        assert!(
            text.contains("<https://prow.example/a%7Cb|worst #1>"),
            "a `|` would end the URL: {text}"
        );
    }

    #[test]
    fn the_parent_and_the_jira_description_say_when_it_began() {
        let links = Links::default();
        let mut i = big_incident(1);
        assert!(
            serde_json::to_string(&incident_message(&i, &[], &links).blocks)
                .unwrap()
                .contains("not known")
        );
        let onset =
            crate::model::Onset::from_secs(1_754_316_000, 1_754_290_000, 1_754_330_000).unwrap();
        i.episodes = vec![crate::model::Episode {
            onset,
            recovered_at: None,
        }];
        let blocks = serde_json::to_string(&incident_message(&i, &[], &links).blocks).unwrap();
        assert!(blocks.contains("since Aug 4 14:00 UTC, between Aug 4 06:46 and 17:53"));
        let wiki =
            crate::adapters::notify::jira::adf::to_wiki(&crate::words::issue::description(&i, ""));
        assert!(wiki.contains("; since Aug 4 14:00 UTC"), "{wiki}");
    }

    #[test]
    fn the_payload_window_and_the_suspect_changes_are_shown_with_links() {
        let links = Links::default();
        let mut i = big_incident(1);
        let mut onset =
            crate::model::Onset::from_secs(1_754_316_000, 1_754_290_000, 1_754_330_000).unwrap();
        onset.last_good_payload = Some("4.14.0-0.nightly-2025-08-04-040000".into());
        onset.first_bad_payload = Some("4.14.0-0.nightly-2025-08-04-080000".into());
        i.episodes = vec![crate::model::Episode {
            onset: onset.clone(),
            recovered_at: None,
        }];
        i.snapshot.report.onset = Some(onset);
        let change = |repo: &str, n: u64, url: &str, m: bool| crate::model::SuspectChange {
            repository: repo.into(),
            number: n,
            url: url.into(),
            title: "Scale <down> & drain".into(),
            component_match: m,
            commit: None,
            merged_at: None,
            why: String::new(),
        };
        i.snapshot.report.suspect_changes = vec![
            change(
                "openshift/cluster-image-registry-operator",
                912,
                "https://github.com/openshift/cluster-image-registry-operator/pull/912",
                true,
            ),
            change("openshift/console", 7, "javascript:alert(1)|x", false),
        ];
        let blocks = serde_json::to_string(&incident_message(&i, &[], &links).blocks).unwrap();
        assert!(
            blocks.contains("began between 4.14.0-0.nightly-2025-08-04-040000 (last good)"),
            "{blocks}"
        );
        let blocks = serde_json::to_string(&details_message(&i, &links).blocks).unwrap();
        assert!(blocks.contains("<https://github.com/openshift/cluster-image-registry-operator/pull/912|openshift/cluster-image-registry-operator#912 Scale &lt;down&gt; &amp; drain"), "{blocks}");
        assert!(
            !blocks.contains("javascript:"),
            "only plain https links: {blocks}"
        );
        let wiki =
            crate::adapters::notify::jira::adf::to_wiki(&crate::words::issue::description(&i, ""));
        assert!(
            wiki.contains("h3. Suspect changes") && wiki.contains("pull/912"),
            "{wiki}"
        );
    }
}
