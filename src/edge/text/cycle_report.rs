//! A cycle's report as terminal text: what `sheriff evaluate` and the demo print.

use std::fmt::Write as _;

use crate::application::cycle::CycleReport;
use crate::model::{Dimension, RegressionReport, secs, secs_or_dash};
/// The readable form of a report.
pub fn cycle_report(report: &CycleReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "evaluated at {} — window {} → {}, reference from {}",
        report.evaluated_at.format("%Y-%m-%d %H:%M UTC"),
        report.window.from.format("%Y-%m-%d %H:%M"),
        report.window.to.format("%Y-%m-%d %H:%M"),
        report.baseline.from.format("%Y-%m-%d %H:%M"),
    );

    let _ = writeln!(
        s,
        "{} cells with runs, {} groups judged, {} tests{}",
        report.cells_evaluated,
        report.groups_evaluated,
        report.tests,
        if report.dry_run {
            " (dry run: nothing recorded)"
        } else {
            ""
        }
    );

    let active: Vec<&RegressionReport> = report
        .regressions
        .iter()
        .filter(|r| r.status.is_active())
        .collect();

    if active.is_empty() {
        let _ = writeln!(s, "\nno regressions");
    } else {
        render_table(&mut s, &active);
        for r in &active {
            render_regression(&mut s, r);
        }
    }

    let resolved: Vec<&RegressionReport> = report
        .regressions
        .iter()
        .filter(|r| !r.status.is_active())
        .collect();

    if !resolved.is_empty() {
        let _ = writeln!(s, "\nresolved:");
        for r in resolved {
            let _ = writeln!(s, "  {} [{}]", r.attribution.summary, r.fingerprint);
        }
    }

    render_outcome(&mut s, report);
    s
}

/// One line per active regression.
fn render_table(s: &mut String, active: &[&RegressionReport]) {
    let _ = writeln!(s, "\n{} regression(s):", active.len());
    let _ = writeln!(
        s,
        "  {:<8} {:<22} {:<7} {:<24} {:>5} {:>9} {:>9} {:>9}  scope",
        "status", "family", "release", "component", "runs", "pct", "now", "allowed"
    );
    for r in active {
        let scope: Vec<String> = r
            .scope
            .iter()
            .filter(|(d, _)| *d != Dimension::Release)
            .map(|(d, v)| format!("{d}={}", v.iter().cloned().collect::<Vec<_>>().join(",")))
            .collect();
        let _ = writeln!(
            s,
            "  {:<8} {:<22} {:<7} {:<24} {:>5} {:>9} {:>9} {:>9}  {}",
            r.status,
            r.family,
            r.release,
            r.component,
            r.job_runs,
            r.percentile.to_string(),
            secs(r.observed_seconds),
            secs(crate::support::render::allowed(r)),
            scope.join(" ")
        );
    }
}

/// One regression's account: summary, evidence, percentiles, sample jobs.
fn render_regression(s: &mut String, r: &RegressionReport) {
    let _ = writeln!(
        s,
        "\n  [{}] {} — confidence {}",
        r.fingerprint, r.attribution.scope, r.attribution.confidence
    );

    let _ = writeln!(s, "  {}", r.attribution.summary);
    for e in &r.attribution.evidence {
        let _ = writeln!(s, "    - {e}");
    }

    let _ = writeln!(s, "    percentiles now / reference:");
    for (p, pair) in &r.percentiles {
        let _ = writeln!(
            s,
            "      {p}: {} / {}",
            secs_or_dash(pair.now),
            secs_or_dash(pair.baseline)
        );
    }

    for j in &r.sample_jobs {
        let ci = if j.ci_infrastructure_trouble {
            "  (CI liveness lost too)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "    {:<7} {:>4}s  {}{ci}",
            j.kind.as_str(),
            j.seconds,
            j.url
        );
    }

    if let Some(o) = &r.onset {
        let _ = writeln!(s, "    regressed {}", crate::words::regression::onset(o));
    }

    for c in r
        .suspect_changes
        .iter()
        .take(crate::support::render::SUSPECTS_SHOWN)
    {
        let _ = writeln!(
            s,
            "    suspect change: {}  {}",
            crate::words::regression::suspect(c),
            c.url
        );
    }

    if r.changes_pending {
        let _ = writeln!(
            s,
            "    suspect changes: {}",
            crate::words::regression::CHANGES_PENDING
        );
    }

    if r.outside_pending {
        let _ = writeln!(s, "    {}", crate::words::regression::OUTSIDE_PENDING);
    }
}

/// What the cycle did to incidents and the outbox, and what it could not judge.
fn render_outcome(s: &mut String, report: &CycleReport) {
    let c = &report.incidents;
    if !report.dry_run {
        let _ = writeln!(
            s,
            "\nincidents: {} opened, {} changed, {} resolved, {} stale, {} held by silences; {} notification(s) queued{}",
            c.opened,
            c.changed,
            c.resolved,
            c.stale,
            c.silenced,
            c.notifications,
            if c.not_filed > 0 {
                format!(", {} not filed in Jira (cap)", c.not_filed)
            } else {
                String::new()
            }
        );
    }

    if let Some(d) = &report.delivery {
        let _ = writeln!(
            s,
            "delivered {}, retrying {}, dead {}",
            d.delivered, d.retrying, d.dead
        );
    }

    if !report.ci_trouble.is_empty() {
        let _ = writeln!(
            s,
            "\nCI-infrastructure trouble (left out of evaluation, not a regression):"
        );
        for t in report.ci_trouble.iter().take(10) {
            let release = t.scope.single(Dimension::Release).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {} of {} runs  {release} {}",
                t.troubled_runs, t.job_runs, t.scope
            );
        }
    }

    if !report.data_quality.is_empty() {
        let _ = writeln!(s, "\ndata quality (not regressions):");
        for p in report.data_quality.broken_probes.iter().take(10) {
            let _ = writeln!(s, "  {}", crate::words::findings::broken_probe(p));
        }
        for j in report.data_quality.new_jobs.iter().take(10) {
            let _ = writeln!(s, "  {}", crate::words::findings::new_job(j));
        }
    }

    if !report.insufficient_data.is_empty() {
        let _ = writeln!(
            s,
            "\ninsufficient data (fewer runs than the minimum, even with networks and upgrade types merged):"
        );
        for i in report.insufficient_data.iter().take(10) {
            let _ = writeln!(s, "  {} runs  {}", i.job_runs, i.jobs.join(", "));
        }
    }
}
