//! Text pieces every output shares (the terminal, Slack, Jira, the pages): cutting text to a
//! limit, times, sparklines and the rows of a report's percentile table. Pure; the words
//! around them are `words`'.

pub use crate::model::actor::slack_user;
use crate::model::{RegressionReport, secs, secs_or_dash};

/// Cuts `s` to at most `max` characters, ending in "…" when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Characters that must not pass into a log line, a job name or a metric label as they are:
/// control characters, the bidirectional overrides and isolates, the line and paragraph
/// separators, and characters that look like nothing or like a plain space (zero-width ones,
/// the no-break space, the soft hyphen, the byte-order mark).
pub fn is_hostile_char(c: char) -> bool {
    c.is_control()
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || ('\u{200b}'..='\u{200f}').contains(&c)
        || ('\u{2060}'..='\u{2064}').contains(&c)
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{00a0}' | '\u{00ad}' | '\u{feff}'
        )
}

/// Artifact text made plain: each [hostile character](is_hostile_char) becomes a space, so a
/// message read from a run cannot carry a line break into a Jira heading, a terminal escape
/// sequence into `sheriff incidents show`, or a bidirectional override into Slack.
pub fn plain_text(s: String) -> String {
    if !s.chars().any(is_hostile_char) {
        return s;
    }
    s.chars()
        .map(|c| if is_hostile_char(c) { ' ' } else { c })
        .collect()
}

/// A URL that may become a link in any output: `http://` or `https://` with a host, and no
/// whitespace, control character, quote, angle bracket or backslash. URLs come from artifacts
/// and changelogs, which are hostile (`javascript:…`); None: show the text without a link.
/// Each output still escapes what its own markup gives meaning to ([`link_target`]).
pub fn web_link(url: &str) -> Option<&str> {
    let rest = ["https://", "http://"].iter().find_map(|scheme| {
        let head = url.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &url[scheme.len()..])
    })?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let odd = |c: char| {
        c.is_whitespace() || is_hostile_char(c) || matches!(c, '"' | '\'' | '<' | '>' | '\\' | '`')
    };
    (!host.is_empty() && !url.chars().any(odd)).then_some(url)
}

/// A checked URL as the target of a markup link whose syntax ends at `|`, `[` or `]` (Slack's
/// `<url|text>`, Jira wiki's `[text|url]`): those characters percent-encoded, which a browser
/// reads as the same address.
pub fn link_target(url: &str) -> String {
    url.replace('|', "%7C")
        .replace('[', "%5B")
        .replace(']', "%5D")
}

/// `2026-11-29 06:00 UTC` for Unix seconds (the number itself when out of range).
pub fn time(t: i64) -> String {
    crate::model::utc_minute(t)
}

/// Suspect changes shown in Slack and Jira; `incidents show` lists them all.
pub const SUSPECTS_SHOWN: usize = 3;

/// `▁▂▅█`: one character a value (none: a space), scaled to the largest.
pub fn sparkline(values: &[Option<f64>]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().flatten().copied().fold(0.0_f64, f64::max);
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(_) if max <= 0.0 => BARS[0],
            Some(x) => BARS[((x / max) * 7.0).round().clamp(0.0, 7.0) as usize],
        })
        .collect()
}

/// One row of the percentile table: the percentile, now, the allowed level (for the percentile
/// the regression is judged on: what it had to exceed) and the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PercentileRow {
    pub percentile: String,
    pub now: String,
    pub allowed: String,
    pub reference: String,
}

/// The level a report's judged percentile had to exceed (reports kept from before carry none:
/// their comparison level).
pub fn allowed(r: &RegressionReport) -> f64 {
    if r.allowed_seconds > 0.0 {
        r.allowed_seconds
    } else {
        r.threshold_seconds
    }
}

/// The table of a report's percentiles, P50 first.
pub fn percentile_table(r: &RegressionReport) -> Vec<PercentileRow> {
    let mut rows: Vec<PercentileRow> = r
        .percentiles
        .iter()
        .map(|(p, pair)| PercentileRow {
            percentile: p.to_string(),
            now: secs_or_dash(pair.now),
            allowed: if *p == r.percentile {
                secs(allowed(r))
            } else {
                "-".into()
            },
            reference: secs_or_dash(pair.baseline),
        })
        .collect();
    if rows.is_empty() {
        rows.push(PercentileRow {
            percentile: r.percentile.to_string(),
            now: secs(r.observed_seconds),
            allowed: secs(allowed(r)),
            reference: "-".into(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_and_https_urls_become_links() {
        for good in [
            "https://prow.ci.openshift.org/view/gs/b/1",
            "HTTP://x.example/a?b=c#d",
            "https://h/a|b]c",
        ] {
            assert_eq!(web_link(good), Some(good), "{good}");
        }
        for bad in [
            "javascript:alert('url')//https://x",
            "JavaScript:alert(1)",
            "data:text/html,x",
            "//evil.example/x",
            "https://",
            "https:///path",
            "https://x/a b",
            "https://x/\"><script>",
            "https://x/\u{202e}",
            "ftp://x/y",
            "",
        ] {
            assert_eq!(web_link(bad), None, "{bad}");
        }
        assert_eq!(link_target("https://h/a|b]c[d"), "https://h/a%7Cb%5Dc%5Bd");
    }

    #[test]
    fn sparklines_scale_to_the_largest_value() {
        assert_eq!(sparkline(&[Some(0.0), Some(7.0), None, Some(3.5)]), "▁█ ▅");
        assert_eq!(sparkline(&[Some(0.0), Some(0.0)]), "▁▁");
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("ééééé", 3), "éé…");
        assert_eq!(truncate("abc", 3), "abc");
    }

    #[test]
    fn the_table_marks_the_allowed_level_of_the_judged_percentile() {
        let mut r = crate::synth::example_report(crate::model::Scope::new(), 31.0, 4.0);
        r.allowed_seconds = 9.0;
        let rows = percentile_table(&r);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            (rows[0].percentile.as_str(), rows[0].allowed.as_str()),
            ("P50", "9s")
        );
        assert_eq!(rows[2].allowed, "-");
        assert_eq!(time(0), "1970-01-01 00:00 UTC");
    }
}
