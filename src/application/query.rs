//! `query <backend> [filters]`: one backend's disruption over a window, against its threshold
//! and baseline, with a weekly trend. Answers `sheriff query` and the slash command from the
//! per-day histograms, so a million samples cost a few thousand rows.

use std::collections::{BTreeMap, HashSet};

use crate::store::Result;
use serde::Serialize;

use crate::application::warm::Queries;
use crate::config::EvaluateSettings;
use crate::model::{DAY, GroupKey, Histogram, Percentile, glob_match, percentiles_of};
use crate::store::Store;

pub use crate::model::Query;

const WEEKS: i64 = 8;

#[derive(Debug, Clone, Serialize)]
pub struct QueryAnswer {
    pub backend: String,
    pub filters: BTreeMap<String, String>,
    pub window_days: i64,
    /// Whether any stored run has recorded this backend.
    pub known_backend: bool,
    /// When it is not known, the stored backends whose names are nearest (at most three).
    pub similar: Vec<String>,
    /// Variants the filters select.
    pub variants: usize,
    pub runs: u64,
    pub disrupted_runs: u64,
    pub percentiles: BTreeMap<Percentile, Option<f64>>,
    pub baseline_runs: u64,
    pub baseline: BTreeMap<Percentile, Option<f64>>,
    /// The configured limit for the percentiles that have one.
    pub thresholds: BTreeMap<Percentile, f64>,
    /// P50 of each of the last weeks, oldest first (None: no runs).
    pub weekly_p50: Vec<Option<f64>>,
    pub weekly_p95: Vec<Option<f64>>,
}

/// The variants a question's filters select (dimension globs).
pub(crate) async fn variants_of(store: &Store, q: &Query) -> Result<HashSet<i64>> {
    Ok(selected(&store.variants().await?, q))
}

fn selected(variants: &[(i64, crate::model::Dimensions)], q: &Query) -> HashSet<i64> {
    variants
        .iter()
        .filter(|(_, d)| q.filters.iter().all(|(dim, v)| glob_match(v, d.get(*dim))))
        .map(|(id, _)| *id)
        .collect()
}

/// Answers `q` as of `now` (Unix seconds). Between two writes this reads only the data
/// version: the variants, the backend names and the days are kept for it in `kept`.
pub async fn answer(
    store: &Store,
    kept: &Queries,
    settings: &EvaluateSettings,
    q: &Query,
    now: i64,
) -> Result<QueryAnswer> {
    let catalog = kept.catalog(store).await?;
    let variants = selected(&catalog.variants, q);
    let today = now.div_euclid(DAY) + 1;
    let window = q.window_days;
    let first = today - (WEEKS * 7).max(window + i64::from(settings.baseline_days));
    let days = kept
        .daily_histograms_at(store, catalog.version, &q.backend, &variants, first..today)
        .await?;

    // Each span's days summed in one counting pass (a question sums 11 spans of up to 8 weeks).
    let mut scratch = Vec::new();
    let mut merge = |range: std::ops::Range<i64>| {
        Histogram::sum_of(days.range(range).map(|(_, d)| d), &mut scratch)
    };

    let current = merge(today - window..today);
    let base = merge(today - window - i64::from(settings.baseline_days)..today - window);
    let pct = |h: &Histogram| Percentile::ALL.into_iter().zip(percentiles_of(h)).collect();
    let key = GroupKey {
        backend: q.backend.as_str().into(),
        fixed: q.filters.iter().map(|(d, v)| (*d, v.as_str())).collect(),
    };

    let thresholds = Percentile::ALL
        .iter()
        .filter_map(|p| {
            crate::domain::evaluate::thresholds::configured(&settings.limits, &key, *p)
                .map(|t| (*p, t.seconds))
        })
        .collect();

    // P50 and P95 of each week, oldest first, from one sum per week.
    let (weekly_p50, weekly_p95) = (0..WEEKS)
        .rev()
        .map(|w| {
            let end = today - w * 7;
            let [p50, p95] = merge(end - 7..end)
                .percentiles([Percentile::P50, Percentile::P95].map(Percentile::fraction));
            (p50, p95)
        })
        .unzip();

    let names = &catalog.backend_names;
    // a glob (`*`, `image-registry-*`) is known when it matches a stored backend
    let known_backend =
        names.binary_search(&q.backend).is_ok() || names.iter().any(|n| glob_match(&q.backend, n));

    Ok(QueryAnswer {
        similar: if known_backend {
            Vec::new()
        } else {
            similar(&q.backend, names)
        },
        known_backend,
        backend: q.backend.clone(),
        filters: q
            .filters
            .iter()
            .map(|(d, v)| (d.as_str().to_string(), v.clone()))
            .collect(),
        window_days: window,
        variants: variants.len(),
        runs: current.count(),
        disrupted_runs: current.disrupted(),
        percentiles: pct(&current),
        baseline_runs: base.count(),
        baseline: pct(&base),
        thresholds,
        weekly_p50,
        weekly_p95,
    })
}

/// Up to three of `names` nearest `asked`: those that contain it or share its longest prefix,
/// case aside (a typo late in a long name, a name given without its `-connections` end).
fn similar(asked: &str, names: &[String]) -> Vec<String> {
    let asked = asked.to_lowercase();
    let mut scored: Vec<(usize, &String)> = names
        .iter()
        .filter_map(|n| {
            let lower = n.to_lowercase();
            let prefix = lower
                .chars()
                .zip(asked.chars())
                .take_while(|(a, b)| a == b)
                .count();
            let score = if lower.contains(&asked) && asked.len() >= 3 {
                asked.len() + 100
            } else {
                prefix
            };
            (score >= 4).then_some((score, n))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, n)| n.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelled_backend_is_pointed_at_the_nearest_names() {
        let names: Vec<String> = [
            "image-registry-new-connections",
            "image-registry-reused-connections",
            "ingress-to-console-new-connections",
            "kube-api-new-connections",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            similar("image-registry-new-connection", &names),
            [
                "image-registry-new-connections",
                "image-registry-reused-connections"
            ]
        );
        assert_eq!(similar("Kube-API", &names), ["kube-api-new-connections"]);
        assert_eq!(
            similar("console", &names),
            ["ingress-to-console-new-connections"]
        );
        assert!(similar("*", &names).is_empty());
        assert!(similar("zzz", &names).is_empty());
    }
}
