//! A Jira issue in words: its summary, and its description as a [document](Node) (the four
//! lines a component team acts on, how the outages come about, what the disruption measures
//! and what stayed healthy, the detail, the statistics at the bottom), and a comment on a
//! change. The Jira sink writes the document in the API's markup (`notify::jira::adf`).

use crate::domain::incidents::{Incident, Snapshot};
use crate::model::{Dimension, FileAgainst, RegressionReport, secs, secs_or_dash};
use crate::support::document::{Inline, Node, text};
use crate::support::render::{SUSPECTS_SHOWN, percentile_table};
use crate::words::regression::{
    PERCENTILE_COLUMNS, contrast_sentence, onset, payload_window, suspect, was_and_allowed,
};

/// `image-registry disruption regressed on metal 4.14: P50 31s (was 0s, allowed 5s)`: the
/// issue's summary (the Jira sink cuts it to Jira's 255 characters) and the incident page's
/// title.
pub fn summary(i: &Incident) -> String {
    let s = &i.snapshot;
    let platform = s
        .scope
        .get(Dimension::Platform)
        .map(|v| format!("{} ", v.iter().cloned().collect::<Vec<_>>().join("/")))
        .unwrap_or_default();
    format!(
        "{} disruption regressed on {platform}{}: {} {} ({})",
        s.family,
        s.release,
        s.percentile,
        secs(s.observed_seconds),
        was_and_allowed(&s.report)
    )
}

/// The Ask: who should act. A cause in the test environment is the CI harness's to fix; the
/// product's component is consulted, not blamed.
fn ask(s: &Snapshot) -> String {
    let then = "please find why and link the fix's pull request here; sheriff checks the runs after it and says whether it worked.";
    let a = &s.report.attribution;
    if a.file_against == FileAgainst::TestEnvironment {
        let harness = a
            .harness
            .as_deref()
            .map_or("the platform's CI harness".to_string(), |h| {
                format!("the CI harness {h}")
            });
        return format!(
            "Ask: maintainers of {harness}, {then} The cause is how the CI cluster is set up, not the product: {} is consulted, not blamed.",
            s.component
        );
    }
    format!("Ask: {}, {then}", s.component)
}

/// What a backend family's disruption measures, in one sentence.
fn measures(family: &str, backends: &[String]) -> String {
    let how = match (
        backends.iter().any(|b| b.ends_with("-new-connections")),
        backends.iter().any(|b| b.ends_with("-reused-connections")),
    ) {
        (true, true) => "over a new connection for each request and over one kept-open connection",
        (true, false) => "over a new connection for each request",
        (false, true) => "over one kept-open connection",
        (false, false) => "",
    };
    let how = if how.is_empty() {
        String::new()
    } else {
        format!(" {how}")
    };
    format!(
        "{family} disruption is the number of seconds in one CI run (most often an upgrade) during which a client \
         polling {family}{how} got no answer; a healthy run stays near 0 s."
    )
}

/// The top suspect changes of the payload window, with links.
fn suspect_changes(r: &RegressionReport, doc: &mut Vec<Node>) {
    let suspects: Vec<Vec<Inline>> = r
        .suspect_changes
        .iter()
        .take(SUSPECTS_SHOWN)
        .map(|c| {
            vec![Inline::Link {
                text: suspect(c),
                url: c.url.clone(),
            }]
        })
        .collect();
    if suspects.is_empty() {
        return;
    }
    doc.push(Node::Heading("Suspect changes".into()));
    let window = r
        .onset
        .as_ref()
        .and_then(payload_window)
        .unwrap_or_default();
    doc.push(Node::Para(vec![text(format!(
        "Pull requests that entered in the payload window ({window}) and commits outside the payload merged in the onset window, ranked by the regression's scope:"
    ))]));
    doc.push(Node::Bullets(suspects));
}

/// The issue description, for the team that receives it: four lines (what broke, where, the
/// evidence, the ask); how the outages come about and the platforms that stayed healthy; what
/// the disruption measures, the worst run and what else stayed healthy; then the detail; the
/// statistics and group keys at the bottom.
// Long: one document, section by section, in the order the team reads it.
pub fn description(i: &Incident, public_url: &str) -> Vec<Node> {
    let s = &i.snapshot;
    let r = &s.report;
    let (now, _) = s.now_and_reference();
    let worst = r.sample_jobs.iter().max_by_key(|j| j.seconds);
    let began = i.onset().or_else(|| r.onset.clone());
    let mut doc = Vec::new();
    // the four lines
    let broke = format!(
        "What broke: {} disruption rose to {} {} ({}) on {}.",
        s.family,
        s.percentile,
        secs(now),
        was_and_allowed(r),
        s.backends.join(", ")
    );

    let mut where_ = format!("Where: {} {}", s.release, s.scope.describe());
    if !r.not_specific_to.is_empty() {
        where_.push_str(&format!(
            ", whatever the {}",
            r.not_specific_to.join(" or ")
        ));
    }

    if let Some(o) = &began {
        where_.push_str(&format!("; {}", onset(o)));
    }

    where_.push('.');
    let evidence = match r.attribution.conditions.first() {
        Some(c) => format!(
            "Evidence: {} ({}) overlapped the outages in {} of {} regressed runs and {} of {} healthy ones; {} runs judged.",
            c.label(),
            c.reason,
            c.runs_with,
            c.runs,
            c.healthy_with,
            c.healthy_runs,
            r.job_runs
        ),
        None => format!(
            "Evidence: {} runs judged; {} {} in them.",
            r.job_runs,
            s.percentile,
            secs(now)
        ),
    };

    let mut ask = vec![text(ask(s))];
    if let Some(c) = r.suspect_changes.first() {
        ask.push(text(" First suspect: "));
        ask.push(Inline::Link {
            text: suspect(c),
            url: c.url.clone(),
        });
        ask.push(text("."));
    }

    doc.push(Node::Para(vec![text(broke)]));
    doc.push(Node::Para(vec![text(where_)]));
    doc.push(Node::Para(vec![text(evidence)]));
    doc.push(Node::Para(ask));
    // how the outages come about, and where the same release stayed healthy
    if let Some(m) = &r.attribution.mechanism {
        doc.push(Node::Para(vec![text(m.summary.clone())]));
    }

    if !r.attribution.contrast.is_empty() {
        let sentence =
            contrast_sentence(&r.attribution.contrast, &s.family, &s.release, s.percentile);
        doc.push(Node::Para(vec![text(sentence)]));
    }

    // what it measures, the worst run, the contrast
    doc.push(Node::Heading("What this measures".into()));
    let mut about = vec![text(measures(&s.family, &s.backends))];
    if let Some(j) = worst {
        // sheriff has no page of a run's timeline: the link opens the run itself
        about.push(text(" The worst run: "));
        about.push(Inline::Link {
            text: format!("the run ({}s, {})", j.seconds, j.job),
            url: j.url.clone(),
        });
        about.push(text("."));
    }

    doc.push(Node::Para(about));
    let mut contrast: Vec<Vec<Inline>> = Vec::new();
    if let Some(c) = r.attribution.control.as_ref().filter(|c| c.healthy) {
        contrast.push(vec![text(format!(
            "On the same runs {} stayed healthy: {} {} over {} runs.",
            c.backend,
            c.percentile,
            secs_or_dash(c.now),
            c.runs
        ))]);
    }

    contrast.extend(
        r.attribution
            .independence
            .iter()
            .map(|t| vec![text(t.clone())]),
    );

    if !contrast.is_empty() {
        doc.push(Node::Heading("What stayed healthy".into()));
        doc.push(Node::Bullets(contrast));
    }

    let conditions: Vec<Vec<Inline>> = r
        .attribution
        .conditions
        .iter()
        .take(5)
        .map(|c| {
            vec![
                Inline::Code(c.label()),
                text(format!(
                    " {} — in {} of {} regressed runs",
                    c.reason, c.runs_with, c.runs
                )),
            ]
        })
        .collect();

    if !conditions.is_empty() {
        doc.push(Node::Heading(
            "Correlated ClusterOperator conditions".into(),
        ));
        doc.push(Node::Bullets(conditions));
    }

    suspect_changes(r, &mut doc);
    let jobs: Vec<Vec<Inline>> = r
        .sample_jobs
        .iter()
        .take(10)
        .map(|j| {
            let variant = if j.variant.is_empty() {
                String::new()
            } else {
                format!(", {}", j.variant)
            };
            vec![
                Inline::Link {
                    text: format!("{} #{}", j.job, j.build_id),
                    url: j.url.clone(),
                },
                text(format!(" — {}s ({}{variant})", j.seconds, j.kind)),
            ]
        })
        .collect();

    if !jobs.is_empty() {
        doc.push(Node::Heading("Sample job runs".into()));
        doc.push(Node::Bullets(jobs));
    }

    // the statistics and the group keys, for whoever wants to check the numbers
    doc.push(Node::Heading("Statistics".into()));
    let rows = percentile_table(r)
        .into_iter()
        .map(|row| vec![row.percentile, row.now, row.allowed, row.reference])
        .collect();

    doc.push(Node::Table {
        header: PERCENTILE_COLUMNS.map(String::from).to_vec(),
        rows,
    });

    let evidence: Vec<Vec<Inline>> = r
        .attribution
        .evidence
        .iter()
        .filter(|e| !e.contains("File against"))
        .take(10)
        .map(|e| vec![text(e.clone())])
        .collect();

    if !evidence.is_empty() {
        doc.push(Node::Bullets(evidence));
    }

    doc.push(Node::Para(vec![text(format!(
        "p = {:.2e}, q = {:.2e} (after adjusting for the many groups tested); {} reference runs.",
        r.p_value, r.q_value, r.baseline_runs
    ))]));

    if !r.groups.is_empty() {
        let groups = r
            .groups
            .iter()
            .take(20)
            .map(|g| vec![Inline::Code(g.clone())])
            .collect();
        doc.push(Node::Heading(format!(
            "Affected groups ({})",
            r.groups.len()
        )));
        doc.push(Node::Bullets(groups));
    }

    let mut back = vec![
        text("Filed by sheriff for incident "),
        Inline::Code(i.fingerprint.clone()),
    ];

    if !public_url.is_empty() {
        back.push(text(" — "));
        back.push(Inline::Link {
            text: super::FULL_VIEW.into(),
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
            "Now {} {} ({}); scope {} {}.",
            s.percentile,
            secs(s.observed_seconds),
            was_and_allowed(&s.report),
            s.release,
            s.scope.describe()
        ))]),
    ]
}
