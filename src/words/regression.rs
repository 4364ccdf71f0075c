//! A regression in words: the summary a person reads first, the evidence lines behind it, and
//! what it does not depend on. The domain gathers the facts and judges the confidence
//! (`domain::attribute::facts`); this says them.

use std::collections::BTreeMap;

use crate::config::OutsideRepository;
use crate::domain::attribute::facts::{Facts, PendingRuns};
use crate::domain::attribute::scope::ValueEvidence;
use crate::model::{
    ConditionEvidence, Dimension, FileAgainst, Onset, Percentile, RegressionReport, Scope,
    SuspectChange, ThresholdSource, secs,
};
use crate::support::render::{allowed, percentile_table, sparkline, truncate};

/// "metal 4.14", "4.14, every platform, network=ovn", …: the dimensions the scope itself limits
/// (once simplified, a dimension whose every value it covers is not named), past the `context`
/// every group of its cluster shares.
pub fn scope(
    scope: &Scope,
    platform: Option<&str>,
    release: &str,
    context: &[Dimension],
) -> String {
    let mut words = match platform {
        Some(p) => format!("{p} {release}"),
        None if scope.get(Dimension::Platform).is_some() => release.to_string(),
        None => format!("{release}, every platform"),
    };
    for (d, values) in scope.iter().filter(|(d, _)| !context.contains(d)) {
        if d == Dimension::Platform && platform.is_some() {
            continue;
        }
        words.push_str(&format!(
            ", {d}={}",
            values.iter().cloned().collect::<Vec<_>>().join("|")
        ));
    }
    words
}

/// The plain-language account: what, where, how much, what it does not depend on, the control,
/// the condition behind it, whom to file against.
pub fn summary(f: &Facts<'_>) -> String {
    let verb = if f.regressed {
        "regressed"
    } else {
        "recovered"
    };

    let mut s = format!(
        "{} disruption {verb} on {}: {} {} against {} over {} runs.",
        f.family,
        f.scope_words,
        f.percentile,
        secs(f.observed),
        secs(f.threshold),
        f.runs
    );

    if !f.independence.is_empty() {
        s.push_str(&format!(" It is {}.", f.independence.join("; ")));
    }

    if let Some(c) = f.control {
        if c.healthy {
            s.push_str(&format!(
                " The control {} stayed at {} {} on the same kind of runs, so the clusters as a whole were reachable.",
                c.backend,
                f.percentile,
                c.now.map_or("-".to_string(), secs)
            ));
        } else {
            s.push_str(&format!(
                " The control {} regressed as well: this looks wider than {}.",
                c.backend, f.family
            ));
        }
    }

    if let Some(top) = f.conditions.first() {
        s.push_str(&condition_sentence(top));
    }

    let o = f.owners;
    s.push_str(&format!(" File against {}", o.component));
    match (&o.platform_component, o.file_against) {
        (Some(pc), FileAgainst::Backend) => {
            s.push_str(&format!("; {pc} is named as the platform's owner."))
        }
        (Some(_), FileAgainst::Platform) => s.push_str(&format!(
            "; {} is named as the backend's owner.",
            o.backend_component
        )),
        (Some(_), FileAgainst::TestEnvironment) | (None, _) => s.push('.'),
    }

    s
}

/// The summary's sentence on the platforms that stayed healthy: "aws, gcp and azure 4.15 kept
/// image-registry at P50 0s over 120 runs of the same payloads."
pub fn contrast_sentence(
    contrast: &[crate::model::PlatformContrast],
    family: &str,
    release: &str,
    percentile: crate::model::Percentile,
) -> String {
    let names: Vec<&str> = contrast.iter().map(|c| c.platform.as_str()).collect();
    let names = listed(&names);
    let worst = contrast.iter().map(|c| c.seconds).fold(0.0, f64::max);
    let runs: usize = contrast.iter().map(|c| c.runs).sum();
    let of = if contrast.iter().all(|c| c.same_payloads) {
        "of the same payloads"
    } else {
        "over the same days"
    };
    format!(
        "Not the release as a whole: {names} {release} kept {family} at {percentile} {} or less over {runs} runs {of}.",
        crate::model::secs(worst)
    )
}

/// The summary's sentence on whom to file a cause in the test environment against.
fn harness_sentence(a: &crate::model::Attribution) -> String {
    format!(
        "The cause is how the CI cluster is set up, not the product: file against the CI harness {}, and consult {} rather than blame it.",
        a.harness.as_deref().unwrap_or("of the platform"),
        a.component
    )
}

/// A summary without its mechanism's sentence and the harness sentence that came with it,
/// before the attribution's mechanism (and whom to file against) is decided anew.
pub fn without_mechanism(a: &mut crate::model::Attribution) {
    if let Some(old) = &a.mechanism {
        a.summary = a.summary.replace(&format!(" {}", old.summary), "");
        a.summary = a.summary.replace(&format!(" {}", harness_sentence(a)), "");
    }
}

/// A summary with the attribution's mechanism said; when the cause is filed against a CI
/// harness, its sentence replaces the one filing against the product's component.
pub fn with_mechanism(a: &mut crate::model::Attribution) {
    let Some(m) = &a.mechanism else { return };
    a.summary.push(' ');
    a.summary.push_str(&m.summary);
    if a.harness.is_some() {
        if let Some(at) = a.summary.find(" File against ") {
            let end = a.summary[at + 1..]
                .find(". ")
                .map_or(a.summary.len(), |e| at + 1 + e + 1);
            a.summary.replace_range(at..end.min(a.summary.len()), "");
        }
        let sentence = harness_sentence(a);
        a.summary.push(' ');
        a.summary.push_str(&sentence);
    }
}

/// The summary's sentence on the condition behind the outages.
fn condition_sentence(top: &ConditionEvidence) -> String {
    format!(
        " In {} of {} sample runs the outage overlapped {} {}={}{}, covering {:.0}% of the outage seconds.",
        top.runs_with,
        top.runs,
        top.operator,
        top.condition,
        top.status,
        if top.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", top.reason)
        },
        top.covered_share * 100.0
    )
}

/// How the evidence line on pending interval evidence starts.
const PENDING: &str = "interval evidence pending for ";

fn pending_line(PendingRuns { unfetched, read }: PendingRuns) -> String {
    format!(
        "{PENDING}{unfetched} of {read} runs: their interval files could not be fetched yet; a later cycle fills it in"
    )
}

/// An attribution made while some of its runs' interval evidence was pending, brought up to
/// date with the conditions read now: the summary's condition sentence, the condition and
/// pending evidence lines. The confidence they may raise is the domain's
/// (`facts::with_conditions`).
pub fn with_conditions(
    a: &mut crate::model::Attribution,
    conditions: Vec<ConditionEvidence>,
    pending: PendingRuns,
) {
    let old: Vec<String> = a.conditions.iter().map(condition).collect();
    let first = a
        .evidence
        .iter()
        .position(|l| old.contains(l) || l.starts_with(PENDING));
    a.evidence
        .retain(|l| !old.contains(l) && !l.starts_with(PENDING));
    let at = first.unwrap_or_else(|| {
        a.evidence
            .iter()
            .position(|l| l.starts_with("platform-specific:"))
            .unwrap_or(a.evidence.len())
    });
    let mut lines: Vec<String> = conditions.iter().map(condition).collect();
    if pending.unfetched > 0 {
        lines.push(pending_line(pending));
    }
    a.evidence.splice(at..at, lines);
    if let Some(old_top) = a.conditions.first() {
        a.summary = a.summary.replacen(&condition_sentence(old_top), "", 1);
    }
    if let Some(top) = conditions.first() {
        let at = a.summary.find(" File against").unwrap_or(a.summary.len());
        a.summary.insert_str(at, &condition_sentence(top));
    }
    a.conditions = conditions;
    a.evidence_pending = pending.unfetched;
}

/// How the evidence line of a scope that separates nothing starts.
const NOT_SEPARATED: &str = "no description in dimension values separates";

/// Whether an attribution's scope separates the regressed cells from every healthy one, as its
/// evidence lines say.
pub fn separates(evidence: &[String]) -> bool {
    !evidence.iter().any(|l| l.starts_with(NOT_SEPARATED))
}

/// A summary again with today's numbers: its first sentence said anew, the rest kept.
pub fn restated(
    summary: &str,
    family: &str,
    percentile: Percentile,
    observed: f64,
    threshold: f64,
    runs: u64,
    regressed: bool,
) -> String {
    let verb = if regressed { "regressed" } else { "recovered" };
    let scope = summary
        .split_once(" on ")
        .and_then(|(_, r)| r.split_once(": "))
        .map_or("", |(s, _)| s);
    let rest = summary.split_once(" runs.").map_or("", |(_, r)| r);
    format!(
        "{family} disruption {verb} on {scope}: {percentile} {} against {} over {runs} runs.{rest}",
        secs(observed),
        secs(threshold)
    )
}

/// The evidence, one line a fact, strongest first.
pub fn evidence(f: &Facts<'_>) -> Vec<String> {
    let p = f.percentile;
    let mut lines = vec![
        format!(
            "{p} is {} against a reference of {} from the {}; allowed {}",
            secs(f.observed),
            secs(f.threshold),
            f.source,
            secs(f.allowed)
        ),
        format!(
            "one-sided test p = {:.2e}, false-discovery-adjusted q = {:.2e}, over {} runs",
            f.p_value, f.q_value, f.runs
        ),
    ];

    if let Some(days) = f.span_days {
        let days = if days == 1 {
            "day".to_string()
        } else {
            format!("{days} days")
        };
        lines.push(format!(
            "judged on the runs of the last {days}: it began inside the window"
        ));
    }

    if let Some((value, runs)) = f.reference {
        lines.push(format!(
            "{p} in the reference window was {} over {runs} runs",
            secs(value)
        ));
    }
    lines.extend(f.independence.iter().cloned());
    if !f.separates {
        lines.push(format!(
            "{NOT_SEPARATED} it from every healthy cell: the scope is as narrow as the data allow"
        ));
    }
    if f.backends.len() > 1 {
        lines.push(format!(
            "new and reused connections regressed together: {}",
            f.backends.join(", ")
        ));
    }
    if let Some(c) = f.control {
        lines.push(format!(
            "control {}: {p} {} (reference {}) over {} runs — {}",
            c.backend,
            c.now.map_or("-".into(), secs),
            c.baseline.map_or("-".into(), secs),
            c.runs,
            if c.healthy {
                "healthy"
            } else {
                "regressed too"
            }
        ));
    }

    lines.extend(f.conditions.iter().map(condition));
    if f.evidence_pending.unfetched > 0 {
        lines.push(pending_line(f.evidence_pending));
    }
    if f.left_out > 0 {
        lines.push(format!(
            "{} of {} runs left out: CI network trouble (CI network liveness lost)",
            f.left_out,
            f.runs + f.left_out
        ));
    }

    if let Some(pc) = &f.owners.platform_component {
        lines.push(format!(
            "platform-specific: owners {} (backend) and {pc} (platform)",
            f.owners.backend_component
        ));
    }
    lines
}

/// "not specific to a network plugin: ovn and sdn both regressed" and its kin.
pub fn independence(d: Dimension, evidence: &BTreeMap<String, ValueEvidence>) -> Option<String> {
    if evidence.len() < 2 {
        return None;
    }

    let noun = match d {
        Dimension::Network => "a network plugin",
        Dimension::UpgradeType => "an upgrade type",
        Dimension::Platform => "a platform",
        Dimension::NetworkStack => "a network stack",
        Dimension::FromRelease => "the release upgraded from",
        Dimension::MasterNodesUpdated => "whether control-plane nodes were updated",
        _ => return None,
    };

    let named = |want: ValueEvidence| -> Vec<&str> {
        evidence
            .iter()
            .filter(|(_, e)| **e == want)
            .map(|(v, _)| if v.is_empty() { "(unset)" } else { v.as_str() })
            .collect()
    };

    let (regressed, thin) = (named(ValueEvidence::Regressed), named(ValueEvidence::Thin));
    // No value regressed, or was too thin to tell, on its own: the pooled runs are the only
    // evidence, and there is nothing to say about the dimension.
    if regressed.is_empty() && thin.is_empty() {
        return None;
    }

    Some(if thin.is_empty() {
        let all = if regressed.len() == 2 { "both" } else { "all" };
        format!(
            "not specific to {noun}: {} {all} regressed",
            listed(&regressed)
        )
    } else if regressed.is_empty() {
        format!(
            "{d}: {} each have too few runs on their own to tell (thin evidence)",
            listed(&thin)
        )
    } else {
        format!(
            "probably not specific to {noun}: {} regressed on its own; {} had too few runs to tell (thin evidence)",
            listed(&regressed),
            listed(&thin)
        )
    })
}

/// "aws", "aws and gcp", "aws, gcp and azure".
fn listed(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `openshift/image-registry#912 Scale the registry down…`, or for a commit outside the
/// payload `openshift-metal3/dev-scripts@1a2b3c4 Use RWX storage… (outside the payload: …)` (no
/// link: each output adds its own).
pub fn suspect(s: &SuspectChange) -> String {
    let star = if s.component_match {
        " (component's repository)"
    } else {
        ""
    };
    let why = if s.commit.is_some() && !s.why.is_empty() {
        format!(" (outside the payload: {})", truncate(&s.why, 160))
    } else {
        String::new()
    };
    format!("{} {}{star}{why}", s.reference(), truncate(&s.title, 80))
}

/// Why the commits outside the payload are missing from a report's suspects, when they are.
pub const OUTSIDE_PENDING: &str =
    "commits outside the payload: not read yet (GitHub did not answer)";

/// Why a report has no suspect changes from its payloads yet, after "suspect changes: ".
pub const CHANGES_PENDING: &str = "not read yet (the release controller did not answer)";

/// "since Aug 4 14:00 UTC, between Aug 4 06:00 and 20:00", and the payload window when known.
pub fn onset(o: &Onset) -> String {
    let day = |t: chrono::DateTime<chrono::Utc>| t.format("%b %-d").to_string();
    let clock = |t: chrono::DateTime<chrono::Utc>| t.format("%H:%M").to_string();
    let latest = if day(o.latest) == day(o.earliest) {
        clock(o.latest)
    } else {
        format!("{} {}", day(o.latest), clock(o.latest))
    };
    let when = format!(
        "since {} {} UTC, between {} {} and {latest}",
        day(o.at),
        clock(o.at),
        day(o.earliest),
        clock(o.earliest)
    );
    match payload_window(o) {
        Some(words) => format!("{when}; {words}"),
        None => when,
    }
}

/// "began between 4.14.0-0.nightly-…-040000 (last good) and …-120000 (first bad)", when
/// the payloads are known, and why the window is as wide as it is.
pub fn payload_window(o: &Onset) -> Option<String> {
    let mut words = match (&o.last_good_payload, &o.first_bad_payload) {
        (Some(good), Some(bad)) => {
            format!("began between {good} (last good) and {bad} (first bad)")
        }
        (None, Some(bad)) => format!("began with {bad} (first bad) or before it"),
        _ => return None,
    };
    let n = o.payloads.len();
    if n > 2 {
        let ran = n - o.untested_payloads.len().min(n);
        words.push_str(&format!(
            "; the scope ran {ran} of the {n} payloads from the last good to the first bad, so the change is in one of the {} after the last good",
            n - 1
        ));
    }
    Some(words)
}

/// "Aug 4 10:00, between Aug 4 04:00 and Aug 4 16:00" (UTC).
pub fn onset_moment(o: &Onset) -> String {
    let t = |d: &chrono::DateTime<chrono::Utc>| d.format("%b %-d %H:%M").to_string();
    if o.earliest == o.latest {
        format!("{} UTC", t(&o.at))
    } else {
        format!(
            "{} UTC, between {} and {}",
            t(&o.at),
            t(&o.earliest),
            t(&o.latest)
        )
    }
}

/// "No data since Aug 4 10:00 UTC: the 14 runs of the scope since then no longer report
/// image-registry; that is not a recovery." (a sentence added to a regression's summary).
pub fn no_data_since(
    since: Option<chrono::DateTime<chrono::Utc>>,
    runs: usize,
    family: &str,
) -> String {
    let when = since.map_or_else(String::new, |t| t.format("%b %-d %H:%M UTC").to_string());
    format!(
        "No data since {when}: the {runs} runs of the scope since then no longer report {family}; that is not a recovery."
    )
}

/// Why a commit outside the payload, in `repo`, is a suspect of `report`: the platforms its
/// CI reaches against the regressed ones, and whether the mechanism points there too.
pub fn why_outside(repo: &OutsideRepository, report: &RegressionReport) -> String {
    if repo.for_one_platform() {
        let platforms: Vec<&str> = report
            .scope
            .get(Dimension::Platform)
            .map(|p| p.iter().map(String::as_str).collect())
            .unwrap_or_default();
        let regressed = if platforms == [repo.platform.as_str()] {
            format!("only {} regressed", repo.platform)
        } else {
            format!("the regression is limited to {}", platforms.join(" and "))
        };
        let harness = report.attribution.harness.as_deref().is_some_and(|h| {
            h == repo.repository || h.starts_with(&format!("{} ", repo.repository))
        });
        let mechanism = if harness {
            "; the mechanism points at the test environment too"
        } else {
            ""
        };
        format!(
            "merged in the onset window into {}'s own CI ({}): it reaches only {}'s clusters, and {regressed}{mechanism}",
            repo.platform, repo.repository, repo.platform
        )
    } else {
        let under = if repo.path.is_empty() {
            String::new()
        } else {
            format!(" {}", repo.path)
        };
        format!(
            "merged in the onset window into {}{under}, which every platform's CI runs",
            repo.repository
        )
    }
}

/// `image-registry Available=False (NoReplicasAvailable): The deployment … — covers 94% of
/// outage seconds in 9 of 10 sample runs (seen in 0 of 10 healthy runs)`: a condition that
/// overlapped the outages, as an evidence line says it.
pub fn condition(c: &ConditionEvidence) -> String {
    let reason = if c.reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", c.reason)
    };
    let message = if c.message.is_empty() {
        String::new()
    } else {
        format!(": {}", c.message)
    };
    let healthy = if c.healthy_runs == 0 {
        String::new()
    } else {
        format!(
            " (seen in {} of {} healthy runs)",
            c.healthy_with, c.healthy_runs
        )
    };
    format!(
        "{}{reason}{message} — covers {:.0}% of outage seconds in {} of {} sample runs{healthy}",
        c.label(),
        c.covered_share * 100.0,
        c.runs_with,
        c.runs
    )
}

/// `was 0s, allowed 5s`: the judged percentile's reference level and the bar it crossed.
pub fn was_and_allowed(r: &RegressionReport) -> String {
    match r.percentiles.get(&r.percentile).and_then(|p| p.baseline) {
        Some(reference) => format!("was {}, allowed {}", secs(reference), secs(allowed(r))),
        None => format!("allowed {}", secs(allowed(r))),
    }
}

/// The columns of a report's percentile table ([`percentile_table`]'s rows).
pub const PERCENTILE_COLUMNS: [&str; 4] = ["percentile", "now", "allowed", "reference"];

/// The percentile table in monospace, with a header line.
pub fn percentile_text(r: &RegressionReport) -> String {
    let [_, now, allowed, reference] = PERCENTILE_COLUMNS;
    let mut out = format!("      {now:<8} {allowed:<10} {reference}\n");
    for row in percentile_table(r) {
        out.push_str(&format!(
            "{:<5} {:<8} {:<10} {}\n",
            row.percentile, row.now, row.allowed, row.reference
        ));
    }
    out
}

/// `P50 by week: ▁▁▂█` for the report's percentile, when it has a trend.
pub fn weekly_line(r: &RegressionReport) -> Option<String> {
    (!r.weekly.is_empty()).then(|| format!("{} by week: {}", r.percentile, sparkline(&r.weekly)))
}

/// Where a threshold came from: "reference window (212 runs)", "historical table", ….
pub fn threshold_source(source: &ThresholdSource) -> String {
    match source {
        ThresholdSource::Configured { rule } => format!("configured level ({rule})"),
        ThresholdSource::Historical { job_runs: Some(n) } => {
            format!("historical table ({n} runs)")
        }
        ThresholdSource::Historical { job_runs: None } => "historical table".into(),
        ThresholdSource::Baseline { runs } => format!("reference window ({runs} runs)"),
        ThresholdSource::PreviousRelease { release, runs } => {
            format!("previous release {release} ({runs} runs)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::attribute::facts::{Owners, confidence};
    use crate::model::{Confidence, ControlEvidence};

    #[test]
    fn a_condition_says_what_it_covers_and_how_often_healthy_runs_show_it() {
        let mut c = ConditionEvidence {
            operator: "image-registry".into(),
            condition: "Available".into(),
            status: "False".into(),
            reason: "NoReplicasAvailable".into(),
            message: "image-registry says NoReplicasAvailable".into(),
            covered_share: 0.9,
            runs_with: 9,
            runs: 10,
            healthy_with: 0,
            healthy_runs: 10,
            score: 0.9,
        };
        assert_eq!(
            condition(&c),
            "image-registry Available=False (NoReplicasAvailable): image-registry says NoReplicasAvailable — covers 90% of outage seconds in 9 of 10 sample runs (seen in 0 of 10 healthy runs)"
        );
        (c.reason, c.message, c.healthy_runs) = (String::new(), String::new(), 0);
        assert_eq!(
            condition(&c),
            "image-registry Available=False — covers 90% of outage seconds in 9 of 10 sample runs"
        );
    }

    fn metal_owners() -> Owners {
        Owners {
            component: "Image Registry".into(),
            backend_component: "Image Registry".into(),
            platform_component: Some("Bare Metal Hardware Provisioning".into()),
            file_against: FileAgainst::Backend,
        }
    }

    /// The metal 4.14 registry regression: decisive, separating, nothing thin, no control and
    /// no conditions yet, 3 runs left out for CI trouble.
    fn metal_facts<'a>(owners: &'a Owners, backends: &'a [String]) -> Facts<'a> {
        Facts {
            family: "image-registry",
            scope_words: "metal 4.14",
            regressed: true,
            percentile: Percentile::P50,
            observed: 29.0,
            threshold: 0.0,
            allowed: 5.0,
            source: "baseline window (84 runs)",
            p_value: 1e-9,
            q_value: 1e-7,
            runs: 28,
            span_days: None,
            reference: Some((0.0, 84)),
            independence: &[],
            thin: 0,
            separates: true,
            backends,
            control: None,
            conditions: &[],
            evidence_pending: PendingRuns {
                unfetched: 0,
                read: 20,
            },
            left_out: 3,
            owners,
        }
    }

    #[test]
    fn the_words_of_a_platform_specific_regression() {
        let owners = metal_owners();
        let control = ControlEvidence {
            backend: "ingress-to-console-new-connections".into(),
            percentile: Percentile::P50,
            now: Some(0.0),
            baseline: Some(0.0),
            runs: 28,
            healthy: true,
        };
        let independence =
            vec!["not specific to a network plugin: ovn and sdn both regressed".to_string()];
        let backends = vec![
            "image-registry-new-connections".to_string(),
            "image-registry-reused-connections".into(),
        ];
        let f = Facts {
            independence: &independence,
            control: Some(&control),
            ..metal_facts(&owners, &backends)
        };
        let s = summary(&f);
        assert!(
            s.starts_with(
                "image-registry disruption regressed on metal 4.14: P50 29s against 0s over 28 runs."
            ),
            "{s}"
        );
        assert!(
            s.contains("Bare Metal Hardware Provisioning is named as the platform's owner."),
            "{s}"
        );
        let e = evidence(&f);
        assert!(e[0].contains("; allowed 5s"), "{}", e[0]);
        assert!(
            e.iter()
                .any(|l| l.starts_with("new and reused connections regressed together"))
        );
        assert!(
            e.iter().any(
                |l| l == "3 of 31 runs left out: CI network trouble (CI network liveness lost)"
            ),
            "{e:?}"
        );
        assert_eq!(
            confidence(&f),
            Confidence::High,
            "a healthy control explains it"
        );
        assert_eq!(
            confidence(&Facts {
                p_value: 1e-4,
                ..f.clone()
            }),
            Confidence::Medium
        );
        assert_eq!(
            confidence(&Facts {
                separates: false,
                ..f.clone()
            }),
            Confidence::Low
        );
        let again = restated(&s, "image-registry", Percentile::P50, 31.0, 0.0, 40, true);
        assert!(
            again.starts_with(
                "image-registry disruption regressed on metal 4.14: P50 31s against 0s over 40 runs. It is"
            ),
            "{again}"
        );
    }

    #[test]
    fn pending_evidence_is_said_then_filled_in_where_it_belongs() {
        let owners = metal_owners();
        let backends = vec!["image-registry-new-connections".to_string()];
        let f = Facts {
            evidence_pending: PendingRuns {
                unfetched: 7,
                read: 20,
            },
            left_out: 0,
            ..metal_facts(&owners, &backends)
        };
        let lines = evidence(&f);
        let pending = "interval evidence pending for 7 of 20 runs: their interval files could not be fetched yet; a later cycle fills it in";
        assert!(lines.iter().any(|l| l == pending), "{lines:?}");
        assert_eq!(
            confidence(&f),
            Confidence::Medium,
            "nothing explains it yet"
        );
        let mut a = crate::model::Attribution {
            component: owners.component.clone(),
            platform: Some("metal".into()),
            platform_component: owners.platform_component.clone(),
            owners: vec![owners.component.clone()],
            file_against: FileAgainst::Backend,
            scope: "metal 4.14".into(),
            summary: summary(&f),
            independence: Vec::new(),
            thin_evidence: Vec::new(),
            control: None,
            conditions: Vec::new(),
            confidence: confidence(&f),
            evidence: lines.clone(),
            evidence_pending: 7,
            mechanism: None,
            harness: None,
            contrast: Vec::new(),
        };
        let found = ConditionEvidence {
            operator: "image-registry".into(),
            condition: "Available".into(),
            status: "False".into(),
            reason: "NoReplicasAvailable".into(),
            message: "The deployment does not have available replicas".into(),
            covered_share: 0.94,
            runs_with: 9,
            runs: 10,
            healthy_with: 0,
            healthy_runs: 10,
            score: 0.9,
        };
        a.confidence = crate::domain::attribute::facts::with_conditions(
            a.confidence,
            1e-9,
            separates(&a.evidence),
            a.thin_evidence.len(),
            std::slice::from_ref(&found),
            a.control.as_ref(),
        );
        with_conditions(
            &mut a,
            vec![found.clone()],
            PendingRuns {
                unfetched: 0,
                read: 20,
            },
        );
        assert_eq!(a.evidence_pending, 0);
        assert!(
            !a.evidence.iter().any(|l| l.starts_with(PENDING)),
            "{:?}",
            a.evidence
        );
        let at = lines.iter().position(|l| l == pending).unwrap();
        assert_eq!(
            a.evidence[at],
            condition(&found),
            "in the pending line's place"
        );
        assert_eq!(a.evidence.len(), lines.len());
        assert!(
            a.summary
                .contains("overlapped image-registry Available=False (NoReplicasAvailable)")
        );
        assert!(
            a.summary.ends_with("is named as the platform's owner."),
            "{}",
            a.summary
        );
        assert_eq!(a.confidence, Confidence::High, "the condition explains it");
        // the same words as if the condition had been known at once
        let known = Facts {
            conditions: std::slice::from_ref(&found),
            evidence_pending: PendingRuns {
                unfetched: 0,
                read: 20,
            },
            ..f
        };
        assert_eq!(a.summary, summary(&known));
        assert_eq!(a.evidence, evidence(&known));
    }

    #[test]
    fn independence_is_said_in_words() {
        let both: BTreeMap<String, ValueEvidence> = [
            ("ovn".into(), ValueEvidence::Regressed),
            ("sdn".into(), ValueEvidence::Regressed),
        ]
        .into();
        assert_eq!(
            independence(Dimension::Network, &both).unwrap(),
            "not specific to a network plugin: ovn and sdn both regressed"
        );
        let thin: BTreeMap<String, ValueEvidence> = [
            ("micro".into(), ValueEvidence::Regressed),
            ("minor".into(), ValueEvidence::Thin),
        ]
        .into();
        assert!(
            independence(Dimension::UpgradeType, &thin)
                .unwrap()
                .contains("thin evidence")
        );
        assert!(
            independence(
                Dimension::Network,
                &[("ovn".into(), ValueEvidence::Regressed)].into()
            )
            .is_none()
        );
        // healthy one by one, regressed only pooled: nothing to say, and no empty list
        let pooled: BTreeMap<String, ValueEvidence> = [
            ("micro".into(), ValueEvidence::Healthy),
            ("minor".into(), ValueEvidence::Healthy),
        ]
        .into();
        assert_eq!(independence(Dimension::UpgradeType, &pooled), None);
    }

    #[test]
    fn an_onset_reads_as_a_day_and_an_interval() {
        let at = 1_754_316_000; // 2025-08-04 14:00 UTC
        let o = Onset::from_secs(at, at - 8 * 3600, at + 6 * 3600).unwrap();
        assert_eq!(
            onset(&o),
            "since Aug 4 14:00 UTC, between Aug 4 06:00 and 20:00"
        );
        let mut o = Onset::from_secs(at, at - 8 * 3600, at + 16 * 3600).unwrap();
        assert_eq!(
            onset(&o),
            "since Aug 4 14:00 UTC, between Aug 4 06:00 and Aug 5 06:00"
        );
        o.last_good_payload = Some("4.14.0-0.nightly-2025-08-04-040000".into());
        o.first_bad_payload = Some("4.14.0-0.nightly-2025-08-04-120000".into());
        assert_eq!(
            onset(&o),
            "since Aug 4 14:00 UTC, between Aug 4 06:00 and Aug 5 06:00; began between \
             4.14.0-0.nightly-2025-08-04-040000 (last good) and 4.14.0-0.nightly-2025-08-04-120000 (first bad)"
        );
    }

    #[test]
    fn a_commit_outside_the_payload_reads_with_its_short_sha_and_why() {
        let mut c = SuspectChange {
            repository: "openshift-metal3/dev-scripts".into(),
            number: 0,
            url: "https://github.com/openshift-metal3/dev-scripts/commit/d5e1a5d0cafe".into(),
            title: "Run the registry with one replica".into(),
            component_match: false,
            commit: Some("d5e1a5d0cafe".into()),
            merged_at: Some(0),
            why: "it reaches only metal's clusters".into(),
        };
        assert_eq!(
            suspect(&c),
            "openshift-metal3/dev-scripts@d5e1a5d Run the registry with one replica \
             (outside the payload: it reaches only metal's clusters)"
        );
        (c.commit, c.number, c.why) = (None, 12, String::new());
        assert_eq!(
            suspect(&c),
            "openshift-metal3/dev-scripts#12 Run the registry with one replica"
        );
    }
}
