//! The status board, the incident list and an incident's explanation as terminal text:
//! `sheriff status`, `sheriff incidents list|explain|resolve`, and the slash command's `status`
//! and `explain`.

use std::fmt::Write as _;

use crate::application::board::{Explain, Status};
use crate::domain::incidents::Incident;
use crate::model::{RegressionReport, secs};
use crate::support::render::time as when;

/// One line per incident.
pub fn incident_line(i: &Incident) -> String {
    let [id, state, what, level, component, notes] = incident_cells(i);
    let line = format!("{id} {state:<8} {what} — {level} — {component}");
    if notes.is_empty() {
        line
    } else {
        format!("{line} {notes}")
    }
}

/// An incident's cells: number, state, what regressed, its level, component, and notes (Jira
/// issue, acknowledgement, fix claim, resolution).
fn incident_cells(i: &Incident) -> [String; 6] {
    let s = &i.snapshot;
    let mut notes = String::new();
    if let Some(k) = &i.jira_key {
        let _ = write!(notes, " [{k}]");
    }
    if let Some(by) = &i.acked_by {
        let _ = write!(notes, " (acked by {})", crate::words::person(by));
    }
    if let Some(c) = &i.fix {
        let last = c
            .verdicts
            .last()
            .map_or(crate::words::VERDICT_PENDING, |v| {
                crate::words::fix::verdict(v.verdict)
            });
        let _ = write!(notes, " (fix claimed in {}: {last})", c.key);
    }
    if let Some(r) = i.resolution {
        let _ = write!(notes, " ({})", crate::words::resolved_as(r));
    }
    [
        format!("#{}", i.id),
        i.state.as_str().to_string(),
        format!("{} {} {}", s.family, s.release, s.scope.describe()),
        format!(
            "{} {} ({})",
            s.percentile,
            secs(s.observed_seconds),
            crate::words::regression::was_and_allowed(&s.report)
        ),
        s.component.clone(),
        notes.trim_start().to_string(),
    ]
}

/// `sheriff incidents list`: a header and one row per incident, each column as wide as its
/// widest cell, so every column starts at the same place on every line.
pub fn incident_table(list: &[Incident]) -> String {
    let header = ["#", "state", "regression", "level", "component", "notes"].map(str::to_string);
    let rows: Vec<[String; 6]> = std::iter::once(header)
        .chain(list.iter().map(incident_cells))
        .collect();
    let mut widths = [0; 6];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (cell, w) in row.iter().zip(widths) {
            let _ = write!(line, "{cell:<w$}  ");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// What resolving `i` by hand did and what follows, said after `sheriff incidents resolve`:
/// its episode is closed at the resolution, so the runs so far count neither in the reference
/// nor in the current window (see `cycle::episodes`); a later regression of the same
/// fingerprint reopens this incident rather than opening a new one (`plan::match_active`).
pub fn resolved_words(i: &Incident, reason: &str) -> String {
    let s = &i.snapshot;
    let mut out = format!("resolved #{} ({}) by hand: {reason}\n", i.id, i.fingerprint);
    let since = i.onset().map_or_else(String::new, |o| {
        format!(" (since {})", o.earliest.format("%b %-d %H:%M UTC"))
    });
    let _ = writeln!(
        out,
        "  its runs so far{since} stay out of the reference and of the current window, as a known episode"
    );
    let (now, _) = s.now_and_reference();
    let _ = writeln!(
        out,
        "  {} was {} against {} allowed; if runs from now on still put it above the allowed level, \
         a cycle reopens #{}",
        s.percentile,
        secs(now),
        secs(s.threshold_seconds),
        i.id
    );
    out.push_str(
        "  Slack and Jira, where it was posted or filed, are told who resolved it and why\n",
    );
    out
}

pub fn status(s: &Status) -> String {
    let mut out = String::new();
    if s.incidents.is_empty() {
        out.push_str("no open incidents\n");
    } else {
        let _ = writeln!(out, "{} open incident(s), newest first:", s.incidents.len());
        for i in &s.incidents {
            let _ = writeln!(out, "  {}", incident_line(i));
        }
    }
    if !s.silences.is_empty() {
        let _ = writeln!(out, "silences:");
        for x in &s.silences {
            let _ = writeln!(
                out,
                "  #{} {} until {} by {}: {}",
                x.id,
                x.target().describe(),
                when(x.expires_at),
                crate::words::person(&x.created_by),
                x.reason
            );
        }
    }

    if !s.allowances.is_empty() {
        let _ = writeln!(out, "accepted levels:");
        for (id, a) in &s.allowances {
            let above = if a.above {
                " — the level is above it now"
            } else {
                ""
            };
            let jira = a
                .jira_key
                .as_deref()
                .map_or(String::new(), |k| format!(" [{k}]"));
            let _ = writeln!(
                out,
                "  #{id} {}{jira}{above}",
                crate::words::accepted_level(a)
            );
        }
    }

    let (pending, failed) = s.evidence_pending;
    if failed > 0 {
        // only worth a line when fetching has failed: unfetched runs are the normal state
        let _ = writeln!(
            out,
            "interval evidence: {failed} run(s) whose files could not be fetched yet (of {pending} not fetched); \
             a later cycle tries again"
        );
    }
    let o = &s.outbox;
    let _ = writeln!(
        out,
        "outbox: {} pending ({} retrying{}), {} dead, {} delivered",
        o.pending,
        o.retrying,
        o.oldest_pending_age_secs
            .map_or(String::new(), |a| format!(", oldest {a}s old")),
        o.dead,
        o.done
    );

    for d in &s.dead {
        let _ = writeln!(
            out,
            "  dead #{} {} after {} attempts: {} (sheriff outbox retry {})",
            d.id,
            d.kind,
            d.attempts,
            d.last_error.as_deref().unwrap_or("-"),
            d.id
        );
    }

    out
}

pub fn explain(e: &Explain) -> String {
    let i = &e.incident;
    let s = &i.snapshot;
    let r = &s.report;
    let mut out = String::new();
    let _ = writeln!(out, "{}", incident_line(i));
    let _ = writeln!(
        out,
        "fingerprint {} · opened {} · updated {}",
        i.fingerprint,
        when(i.opened_at),
        when(i.updated_at)
    );
    let _ = writeln!(out, "{}", s.summary);

    write_lifecycle(&mut out, i);
    write_evidence(&mut out, r);

    if let Some(ts) = &i.slack_ts {
        let _ = match i.slack_channel.as_deref().filter(|c| !c.is_empty()) {
            _ if ts.starts_with("console-") => {
                writeln!(out, "Slack: console only (no bot token), never posted")
            }
            Some(channel) => writeln!(out, "Slack: {channel} {ts}"),
            None => writeln!(out, "Slack: {ts}"),
        };
    }

    let _ = writeln!(out, "history:");
    for ev in &e.events {
        let _ = writeln!(
            out,
            "  {} {:<10} {:<12} {}",
            when(ev.at),
            crate::words::person(&ev.actor),
            ev.kind,
            ev.detail
        );
    }
    out
}

/// An incident's episodes, merge, claimed fix and accepted level.
fn write_lifecycle(out: &mut String, i: &Incident) {
    for (n, ep) in i.episodes.iter().enumerate() {
        let recovered = ep.recovered_at.map_or("still regressed".into(), |t| {
            format!("recovered {}", when(t.timestamp()))
        });
        let onset = crate::words::regression::onset(&ep.onset);
        // "since Nov 27 14:00 UTC, between …" reads "began Nov 27 14:00 UTC, between …" here
        let when = onset.strip_prefix("since ").unwrap_or(&onset);
        let _ = writeln!(out, "episode {}: began {when}; {recovered}", n + 1);
    }
    if let Some(into) = i.merged_into {
        let _ = writeln!(out, "merged into #{into}");
    }
    if let Some(c) = &i.fix {
        let _ = writeln!(
            out,
            "fix claimed {}: {}",
            when(c.claimed_at),
            crate::words::fix::claim(c)
        );
        for v in &c.verdicts {
            let _ = writeln!(out, "  verdict {}: {}", when(v.at), v.text);
        }
    }
    if let Some(a) = &i.allowance {
        let _ = writeln!(out, "{}", crate::words::accepted_level(a));
    }
}

/// What a report holds as evidence: the attribution's lines, the payload window, the suspect
/// changes and sample jobs.
fn write_evidence(out: &mut String, r: &RegressionReport) {
    for line in &r.attribution.evidence {
        let _ = writeln!(out, "  - {line}");
    }
    if let Some(words) = r
        .onset
        .as_ref()
        .and_then(crate::words::regression::payload_window)
    {
        let _ = writeln!(out, "payloads: {words}");
        if let Some(o) = &r.onset {
            let _ = writeln!(out, "  window: {}", o.payloads.join(" → "));
        }
    }
    if r.changes_pending {
        let _ = writeln!(
            out,
            "suspect changes: {}",
            crate::words::regression::CHANGES_PENDING
        );
    }
    if r.outside_pending {
        let _ = writeln!(out, "{}", crate::words::regression::OUTSIDE_PENDING);
    }
    for c in &r.suspect_changes {
        let _ = writeln!(
            out,
            "  suspect: {} {}",
            crate::words::regression::suspect(c),
            c.url
        );
    }
    for j in r.sample_jobs.iter().take(6) {
        let _ = writeln!(out, "  {} {}s {}", j.kind, j.seconds, j.url);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::incidents::Snapshot;
    use crate::domain::incidents::State;
    use crate::model::{Dimension, Scope};

    #[test]
    fn a_resolution_by_hand_says_the_runs_stay_out_and_when_it_reopens() {
        let report =
            crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 31.0, 4.0);
        let mut i = Incident::new(
            7,
            "sheriff-00000000000000aa",
            Snapshot::from_report(&report),
        );
        i.snapshot.threshold_seconds = 5.0;
        let words = resolved_words(&i, "the lab was rewired");
        assert!(
            words.starts_with(
                "resolved #7 (sheriff-00000000000000aa) by hand: the lab was rewired\n"
            ),
            "{words}"
        );
        assert!(
            words.contains("stay out of the reference and of the current window"),
            "{words}"
        );
        let (now, _) = i.snapshot.now_and_reference();
        let level = format!(
            "{} was {} against 5s allowed",
            i.snapshot.percentile,
            secs(now)
        );
        assert!(words.contains(&level), "{words}");
        assert!(words.contains("a cycle reopens #7"), "{words}");
    }

    #[test]
    fn the_incident_table_starts_every_column_at_the_same_place() {
        let report = |p: &str| {
            crate::synth::example_report(Scope::from([(Dimension::Platform, p)]), 31.0, 4.0)
        };
        let mut list = vec![
            Incident::new(
                7,
                "sheriff-00000000000000aa",
                Snapshot::from_report(&report("metal")),
            ),
            Incident::new(
                12,
                "sheriff-00000000000000bb",
                Snapshot::from_report(&report("vsphere")),
            ),
        ];
        list[1].state = State::Reopened;
        list[1].jira_key = Some("OCPBUGS-1".into());
        let table = incident_table(&list);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        // a column starts after two spaces, at the same place on every line
        let starts = |line: &str| -> Vec<usize> {
            let chars: Vec<char> = line.chars().collect();
            (2..chars.len())
                .filter(|&k| chars[k - 2] == ' ' && chars[k - 1] == ' ' && chars[k] != ' ')
                .collect()
        };
        let header = starts(lines[0]);
        assert_eq!(header.len(), 5, "{table}");
        for line in &lines[1..] {
            assert_eq!(&starts(line)[..4], &header[..4], "{table}");
        }
        assert_eq!(starts(lines[2]), header, "{table}");
    }
}
