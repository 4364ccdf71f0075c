//! A question's answer as terminal text: what `sheriff query` prints, and the slash command's
//! `query` shows in a code block.

use std::fmt::Write as _;

use crate::application::query::QueryAnswer;
use crate::model::{Percentile, secs, secs_or_dash};
use crate::support::render::sparkline;

/// The answer as a few lines of text (monospace-friendly; Slack puts the table in a code block).
/// An unknown backend is said plainly, with the nearest names, and no table of dashes.
pub fn query_answer(a: &QueryAnswer) -> (String, String) {
    if !a.known_backend {
        let hint = if a.similar.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", a.similar.join(", "))
        };
        return (
            format!(
                "unknown backend `{}`: no stored run has recorded it{hint}",
                a.backend
            ),
            String::new(),
        );
    }

    let filters: Vec<String> = a.filters.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let title = format!(
        "{} {} — last {} days: {} runs ({} disrupted){}",
        a.backend,
        if filters.is_empty() {
            "(every variant)".to_string()
        } else {
            filters.join(" ")
        },
        a.window_days,
        a.runs,
        a.disrupted_runs,
        if a.variants == 0 {
            " — no variant matches these filters".to_string()
        } else {
            String::new()
        }
    );

    let mut table = String::from("      now      reference  before (raw)\n");
    for p in Percentile::ALL {
        let _ = writeln!(
            table,
            "{:<5} {:<8} {:<10} {}",
            p.to_string(),
            secs_or_dash(a.percentiles[&p]),
            a.thresholds.get(&p).map_or("-".into(), |t| secs(*t)),
            secs_or_dash(a.baseline[&p])
        );
    }

    let _ = writeln!(
        table,
        "before: {} runs, known episodes included (raw)",
        a.baseline_runs
    );

    let _ = writeln!(table, "P50 by week: {}", sparkline(&a.weekly_p50));
    let _ = write!(table, "P95 by week: {}", sparkline(&a.weekly_p95));
    (title, table)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn an_unknown_backend_is_said_with_the_nearest_names_and_no_table() {
        let a = QueryAnswer {
            backend: "image-registry".into(),
            filters: BTreeMap::new(),
            window_days: 7,
            known_backend: false,
            similar: vec!["image-registry-new-connections".into()],
            variants: 0,
            runs: 0,
            disrupted_runs: 0,
            percentiles: Percentile::ALL.iter().map(|p| (*p, None)).collect(),
            baseline_runs: 0,
            baseline: Percentile::ALL.iter().map(|p| (*p, None)).collect(),
            thresholds: BTreeMap::new(),
            weekly_p50: vec![],
            weekly_p95: vec![],
        };
        let (title, table) = query_answer(&a);
        assert_eq!(
            title,
            "unknown backend `image-registry`: no stored run has recorded it; did you mean image-registry-new-connections?"
        );
        assert!(table.is_empty(), "{table}");
    }
}
