//! A regression in words: the summary a person reads first, the evidence lines behind it, and
//! what it does not depend on. The domain gathers the facts into the report and its typed
//! attribution, and judges the confidence (`domain::attribute::facts`); this says them, the
//! whole summary and evidence anew each time a part changes ([`said`]).

use std::collections::BTreeMap;

use crate::config::OutsideRepository;
use crate::domain::attribute::scope::ValueEvidence;
use crate::model::{
    Attribution, ConditionEvidence, ControlEvidence, Dimension, FileAgainst, Onset, Percentile,
    RegressionReport, Scope, SuspectChange, ThresholdSource, secs,
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

/// Says `r`'s summary and evidence anew from its parts. Nothing edits either in place: a part
/// that changes (today's numbers, the conditions read, the mechanism, the platforms that stayed
/// healthy, a scope gone quiet) is set on the report, and this says the whole again.
pub fn said(r: &mut RegressionReport) {
    r.attribution.summary = summary(r);
    r.attribution.evidence = evidence(r);
}

/// The plain-language account: what, where, how much, what it does not depend on, the control,
/// the condition behind it, whom to file against, the platforms that stayed healthy, how the
/// outages come about, and a scope gone quiet.
pub fn summary(r: &RegressionReport) -> String {
    let a = &r.attribution;
    let verb = if r.status.is_active() {
        "regressed"
    } else {
        "recovered"
    };

    let mut s = format!(
        "{} disruption {verb} on {}: {} {} against {} over {} runs.",
        r.family,
        a.scope,
        r.percentile,
        secs(r.observed_seconds),
        secs(r.threshold_seconds),
        r.job_runs
    );

    if !a.independence.is_empty() {
        s.push_str(&format!(" It is {}.", a.independence.join("; ")));
    }

    if let Some(c) = &a.control {
        if c.healthy {
            s.push_str(&format!(
                " The control {} stayed at {} {} on the same kind of runs, so the clusters as a whole were reachable.",
                c.backend,
                r.percentile,
                c.now.map_or("-".to_string(), secs)
            ));
        } else {
            s.push_str(&format!(
                " The control {} regressed as well: this looks wider than {}.",
                c.backend, r.family
            ));
        }
    }

    if let Some(top) = a.conditions.first() {
        s.push_str(&condition_sentence(top));
    }

    // a cause in the test environment is filed against the CI harness, said after the mechanism
    if a.harness.is_none() {
        s.push_str(&file_against_sentence(a));
    }

    if !a.contrast.is_empty() {
        s.push(' ');
        s.push_str(&contrast_sentence(
            &a.contrast,
            &r.family,
            &r.release,
            r.percentile,
        ));
    }

    if let Some(m) = &a.mechanism {
        s.push(' ');
        s.push_str(&m.summary);
    }

    if a.harness.is_some() {
        s.push(' ');
        s.push_str(&harness_sentence(a));
    }

    if let Some(since) = r.no_data_since {
        s.push(' ');
        s.push_str(&no_data_since(Some(since), r.no_data_runs, &r.family));
    }

    s
}

/// The summary's sentence on whom to file against: the component, and the other owner named.
fn file_against_sentence(a: &Attribution) -> String {
    let backend_component = a.owners.first().unwrap_or(&a.component);
    match (&a.platform_component, a.file_against) {
        (Some(pc), FileAgainst::Backend) => format!(
            " File against {}; {pc} is named as the platform's owner.",
            a.component
        ),
        (Some(_), FileAgainst::Platform) => format!(
            " File against {}; {backend_component} is named as the backend's owner.",
            a.component
        ),
        (Some(_), FileAgainst::TestEnvironment) | (None, _) => {
            format!(" File against {}.", a.component)
        }
    }
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
fn harness_sentence(a: &Attribution) -> String {
    format!(
        "The cause is how the CI cluster is set up, not the product: file against the CI harness {}, and consult {} rather than blame it.",
        a.harness.as_deref().unwrap_or("of the platform"),
        a.component
    )
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

/// The evidence, one line a fact, strongest first.
pub fn evidence(r: &RegressionReport) -> Vec<String> {
    let (a, p) = (&r.attribution, r.percentile);
    let mut lines = vec![
        format!(
            "{p} is {} against a reference of {} from the {}; allowed {}",
            secs(r.observed_seconds),
            secs(r.threshold_seconds),
            r.threshold_source,
            secs(r.allowed_seconds)
        ),
        format!(
            "one-sided test p = {:.2e}, false-discovery-adjusted q = {:.2e}, over {} runs",
            r.p_value, r.q_value, r.job_runs
        ),
    ];

    if let Some(days) = r.span_days {
        let days = match days {
            1 => "day".to_string(),
            _ => format!("{days} days"),
        };
        lines.push(format!(
            "judged on the runs of the last {days}: it began inside the window"
        ));
    }

    if let Some(value) = r.baseline_seconds {
        lines.push(format!(
            "{p} in the reference window was {} over {} runs",
            secs(value),
            r.baseline_runs
        ));
    }
    lines.extend(a.independence.iter().cloned());
    if !a.separates() {
        lines.push(
            "no description in dimension values separates it from every healthy cell: the scope is as narrow as the data allow"
                .into(),
        );
    }
    if r.backends.len() > 1 {
        lines.push(format!(
            "new and reused connections regressed together: {}",
            r.backends.join(", ")
        ));
    }
    lines.extend(a.control.as_ref().map(|c| control_line(c, p)));

    lines.extend(a.conditions.iter().map(condition));
    if a.evidence_pending > 0 {
        // a report stored before the runs read were kept knows only the pending ones
        let of = match a.evidence_read {
            read if read >= a.evidence_pending => format!(" of {read}"),
            _ => String::new(),
        };
        lines.push(format!(
            "interval evidence pending for {}{of} runs: their interval files could not be fetched yet; a later cycle fills it in",
            a.evidence_pending
        ));
    }
    if r.ci_troubled_runs > 0 {
        lines.push(format!(
            "{} of {} runs left out: CI network trouble (CI network liveness lost)",
            r.ci_troubled_runs,
            r.job_runs + r.ci_troubled_runs
        ));
    }

    if let Some(pc) = &a.platform_component {
        let backend_component = a.owners.first().unwrap_or(&a.component);
        lines.push(format!(
            "platform-specific: owners {backend_component} (backend) and {pc} (platform)"
        ));
    }
    lines
}

/// The evidence line on the control backend over the same runs.
fn control_line(c: &ControlEvidence, p: Percentile) -> String {
    format!(
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
    )
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

    #[test]
    fn a_condition_says_what_it_covers_and_how_often_healthy_runs_show_it() {
        let mut c = ConditionEvidence {
            message: "image-registry says NoReplicasAvailable".into(),
            ..crate::synth::example_condition()
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

    /// The metal 4.14 registry regression: decisive, separating, nothing thin, no control and
    /// no conditions yet, 3 runs left out for CI trouble, Bare Metal named as the platform's
    /// owner.
    fn metal_report() -> RegressionReport {
        let mut scope = Scope::new();
        scope.set(Dimension::Release, ["4.14"]);
        scope.set(Dimension::Platform, ["metal"]);
        let mut r = crate::synth::example_report(scope, 29.0, 0.0);
        r.threshold_source = "reference window (84 runs)".into();
        r.ci_troubled_runs = 3;
        let a = &mut r.attribution;
        a.platform_component = Some("Bare Metal Hardware Provisioning".into());
        a.owners = vec![
            "Image Registry".into(),
            "Bare Metal Hardware Provisioning".into(),
        ];
        a.independence.clear();
        a.separates = Some(true);
        a.evidence_read = 20;
        said(&mut r);
        r
    }

    fn registry_condition() -> ConditionEvidence {
        ConditionEvidence {
            covered_share: 0.94,
            ..crate::synth::example_condition()
        }
    }

    #[test]
    fn the_words_of_a_platform_specific_regression() {
        let mut r = metal_report();
        r.attribution.control = Some(crate::synth::example_control());
        r.attribution.independence =
            vec!["not specific to a network plugin: ovn and sdn both regressed".to_string()];
        said(&mut r);

        let s = &r.attribution.summary;
        assert!(
            s.starts_with(
                "image-registry disruption regressed on metal 4.14: P50 29s against 0s over 28 runs. \
                 It is not specific to a network plugin"
            ),
            "{s}"
        );
        assert!(
            s.ends_with("Bare Metal Hardware Provisioning is named as the platform's owner."),
            "{s}"
        );
        let e = &r.attribution.evidence;
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
            e.last().unwrap(),
            "platform-specific: owners Image Registry (backend) and Bare Metal Hardware Provisioning (platform)"
        );

        // today's numbers: the first sentence and the evidence say them, the rest stays
        (r.observed_seconds, r.job_runs) = (31.0, 40);
        said(&mut r);
        assert!(
            r.attribution.summary.starts_with(
                "image-registry disruption regressed on metal 4.14: P50 31s against 0s over 40 runs. It is"
            ),
            "{}",
            r.attribution.summary
        );
        assert!(r.attribution.evidence[1].ends_with("over 40 runs"));
        r.status = crate::model::Status::Resolved;
        assert!(summary(&r).starts_with("image-registry disruption recovered on metal 4.14"));
    }

    #[test]
    fn pending_evidence_is_said_then_filled_in_where_it_belongs() {
        let mut r = metal_report();
        r.ci_troubled_runs = 0;
        r.attribution.evidence_pending = 7;
        said(&mut r);
        let lines = r.attribution.evidence.clone();
        let pending = "interval evidence pending for 7 of 20 runs: their interval files could not be fetched yet; a later cycle fills it in";
        let at = lines.iter().position(|l| l == pending).expect("said");
        assert_eq!(at, lines.len() - 2, "before the owners: {lines:?}");

        // a later cycle reads the conditions
        r.attribution.conditions = vec![registry_condition()];
        r.attribution.evidence_pending = 0;
        said(&mut r);
        let a = &r.attribution;
        assert_eq!(
            a.evidence[at],
            condition(&registry_condition()),
            "in the pending line's place"
        );
        assert_eq!(a.evidence.len(), lines.len());
        assert!(
            a.summary
                .contains(". In 9 of 10 sample runs the outage overlapped image-registry Available=False (NoReplicasAvailable), covering 94% of the outage seconds. File against Image Registry;"),
            "the condition before whom to file against: {}",
            a.summary
        );
    }

    #[test]
    fn a_cause_in_the_ci_harness_is_filed_there_after_the_mechanism_and_the_healthy_platforms() {
        let mut r = metal_report();
        r.attribution.conditions = vec![registry_condition()];
        r.attribution.contrast = vec![crate::model::PlatformContrast {
            platform: "aws".into(),
            seconds: 0.0,
            runs: 40,
            same_payloads: true,
        }];
        r.attribution.mechanism = Some(crate::model::Mechanism {
            summary: "Each node drain evicted the registry's only replica.".into(),
            ..crate::synth::example_mechanism(crate::model::MechanismKind::SingleReplicaDrained)
        });
        said(&mut r);
        let backend = r.attribution.summary.clone();
        assert!(
            backend.ends_with(
                "File against Image Registry; Bare Metal Hardware Provisioning is named as the platform's owner. \
                 Not the release as a whole: aws 4.14 kept image-registry at P50 0s or less over 40 runs of the same payloads. \
                 Each node drain evicted the registry's only replica."
            ),
            "{backend}"
        );

        r.attribution.file_against = FileAgainst::TestEnvironment;
        r.attribution.harness = Some("openshift-metal3/dev-scripts".into());
        said(&mut r);
        let s = &r.attribution.summary;
        assert!(!s.contains("File against"), "{s}");
        assert!(
            s.ends_with(
                "of the outage seconds. Not the release as a whole: aws 4.14 kept image-registry at P50 0s or less over 40 runs of the same payloads. \
                 Each node drain evicted the registry's only replica. The cause is how the CI cluster is set up, not the product: \
                 file against the CI harness openshift-metal3/dev-scripts, and consult Image Registry rather than blame it."
            ),
            "{s}"
        );

        // the harness is dropped again when a later mechanism is the product's
        r.attribution.file_against = FileAgainst::Backend;
        r.attribution.harness = None;
        said(&mut r);
        assert_eq!(r.attribution.summary, backend);

        // a scope gone quiet says so last
        r.no_data_since = chrono::DateTime::from_timestamp(1_754_316_000, 0);
        r.no_data_runs = 14;
        said(&mut r);
        assert!(r.attribution.summary.ends_with(
            "No data since Aug 4 14:00 UTC: the 14 runs of the scope since then no longer report image-registry; that is not a recovery."
        ));
    }

    #[test]
    fn a_report_stored_before_its_parts_were_kept_keeps_its_words() {
        let mut r = metal_report();
        r.attribution.separates = Some(false);
        r.attribution.evidence_pending = 7;
        said(&mut r);
        let stored = r.attribution.evidence.clone();
        let line = "no description in dimension values separates it from every healthy cell: the scope is as narrow as the data allow";
        assert!(stored.iter().any(|l| l == line), "{stored:?}");

        // stored before `separates` and `evidence_read` were kept
        let mut json = serde_json::to_value(&r).unwrap();
        let a = json["attribution"].as_object_mut().unwrap();
        assert!(a.remove("separates").is_some() && a.remove("evidence_read").is_some());
        let mut old: RegressionReport = serde_json::from_value(json).unwrap();
        assert!(!old.attribution.separates(), "read from its evidence line");
        said(&mut old);
        assert!(old.attribution.evidence.iter().any(|l| l == line));
        assert!(
            old.attribution.evidence.iter().any(|l| l
                == "interval evidence pending for 7 runs: their interval files could not be fetched yet; a later cycle fills it in"),
            "no made-up count of runs read: {:?}",
            old.attribution.evidence
        );
        assert_eq!(old.attribution.evidence.len(), stored.len());
    }

    #[test]
    fn the_oldest_stored_snapshot_is_said_again_in_the_same_summary() {
        let path = crate::test_fixture("incident_snapshot_v1.json");
        let text = std::fs::read_to_string(path).unwrap();
        let s: crate::domain::incidents::Snapshot = serde_json::from_str(&text).unwrap();
        let mut r = s.report.clone();
        said(&mut r);
        assert_eq!(r.attribution.summary, s.report.attribution.summary);
        assert!(r.attribution.separates());
        assert_eq!(
            r.attribution.evidence.len(),
            9,
            "{:?}",
            r.attribution.evidence
        );
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
