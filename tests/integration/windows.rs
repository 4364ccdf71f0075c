//! The windows `sheriff serve` keeps in memory between cycles hold exactly what the database
//! holds: a generated six weeks walked every 5 hours (so the windows' edges fall mid-day), with
//! runs arriving as they finish (late ones land in the day before), forced re-ingests of older
//! runs, new CI-trouble rules and pruning into the baseline, written now through the caching
//! store and now through another one on the same database (as a second replica or `sheriff
//! ingest` would). At every step the cached windows equal those read afresh, and a step that
//! changed nothing reads no day again; so do the per-day answers `/sheriff query` reads, kept
//! from one step to the next and brought up to date from what changed.

use std::collections::HashSet;

use chrono::Duration;
use sheriff::application::warm::{Queries, Warm};
use sheriff::config::{EvaluateSettings, RetentionSettings};
use sheriff::model::{Dimensions, RunRecord, TroubleRules};
use sheriff::store::Cutoffs;
use sheriff::store::Store;
use sheriff::synth::{self, Scenario};

use sheriff::model::DAY;

fn visible(r: &RunRecord) -> i64 {
    r.run.finished_at.unwrap_or(r.run.started_at).timestamp()
}

/// Windows of a cycle at `t`: the week before it and the three weeks before that.
/// The recent spans a cycle at `t` counts apart: its last 1, 2 and 3 days.
fn recent(t: i64) -> Vec<i64> {
    (1..=3).map(|d| t - d * DAY).collect()
}

fn windows(t: i64) -> ((i64, i64), (i64, i64)) {
    ((t - 7 * DAY, t), (t - 28 * DAY, t - 7 * DAY))
}

on_both_engines! {
    async fn windows_kept_in_memory_match_the_database_through_weeks_of_changes(db) {
        let end = synth::day(2026, 11, 29);
        let mut scenario = Scenario::month(5, end);
        scenario.days = 42;
        scenario.start = end - Duration::days(42);
        scenario.planted.push(synth::metal_registry_regression(30));
        let mut records = synth::run_records(&scenario);
        records.sort_by_key(visible);
        let cached = Store::open(&db.settings).await.unwrap();
        // What `serve` keeps over its store: the windows, the scopes' runs, the questions' days.
        let warm = Warm::kept();
        let kept_windows = warm.windows.as_ref().unwrap();
        let first = (scenario.start + Duration::days(21)).timestamp();
        let mut next = records.partition_point(|r| visible(r) <= first);
        for chunk in records[..next].chunks(500) {
            db.store.runs().write_runs(chunk, false).await.unwrap();
        }
        let settings = EvaluateSettings::default();
        let strict = TroubleRules { liveness_allowance_seconds: 0, ..TroubleRules::default() };
        let (mut t, mut step, mut compared) = (first, 0, 0);
        let mut replaced = HashSet::new();
        while t < end.timestamp() {
            t += 5 * 3600;
            step += 1;
            let writer = if step % 2 == 0 { &cached } else { &db.store };
            let due = records[next..].partition_point(|r| visible(r) <= t);
            writer.runs().write_runs(&records[next..next + due], false).await.unwrap();
            next += due;
            match step % 9 {
                // An older run (three days back) re-ingested with other numbers.
                3 => {
                    let old = records[..next]
                        .iter()
                        .rev()
                        .find(|r| visible(r) < t - 3 * DAY && !replaced.contains(&r.run.build_id))
                        .cloned();
                    if let Some(mut r) = old {
                        replaced.insert(r.run.build_id.clone());
                        for s in &mut r.samples {
                            s.seconds += 17;
                        }
                        writer.runs().write_runs(&[r], true).await.unwrap();
                    }
                }
                // New CI-trouble rules: runs move in and out of the histograms.
                5 => {
                    let rules = if step % 2 == 0 { strict.clone() } else { TroubleRules::default() };
                    writer.trouble().apply(&rules).await.unwrap();
                }
                // Pruning into the baseline, in small batches.
                7 => {
                    let retention = RetentionSettings { samples_days: 24, batch_runs: 50, ..Default::default() };
                    writer.retention().prune(Cutoffs::new(t, &retention, &settings), false).await.unwrap();
                }
                _ => {}
            }
            let (current, baseline) = windows(t);
            let fresh = db.store.evaluations().window_data(current, baseline, &recent(t), t).await.unwrap();
            let kept = kept_windows.window_data(&cached, current, baseline, &recent(t), t).await.unwrap();
            assert!(!fresh.cells.is_empty());
            assert_eq!(fresh, kept, "step {step}, at {t}: the cached windows differ from the database");
            compared += 1;
            assert_query_days_match((&cached, &warm), &db.settings, t, step).await;
            assert_scope_runs_match((&cached, &warm), &db.store, t, step).await;
            // Nothing changed: the same windows again read no day.
            let read = warm.window_days_read();
            assert_eq!(kept_windows.window_data(&cached, current, baseline, &recent(t), t).await.unwrap(), fresh);
            assert_eq!(warm.window_days_read(), read, "step {step}: days read again with nothing changed");
            // One-day windows have no whole day: their edges cross midnight.
            if step % 3 == 0 {
                let (current, baseline) = ((t - DAY, t), (t - 2 * DAY, t - DAY));
                let fresh = db.store.evaluations().window_data(current, baseline, &[], t).await.unwrap();
                let kept = kept_windows.window_data(&cached, current, baseline, &[], t).await.unwrap();
                assert_eq!(fresh, kept, "step {step}, at {t}: one-day windows differ from the database");
            }
        }
        let written = records.partition_point(|r| visible(r) <= t);
        assert!(compared > 90 && next == written, "{compared} steps, {next} of {written} runs");
    }
}

/// The per-day answers of nine questions (three backends over every variant, metal only, one
/// release) over the last eight weeks, from `kept` (answers kept since the step before) and from a new store
/// with nothing kept.
async fn assert_query_days_match(
    (store, kept): (&Store, &Warm),
    settings: &sheriff::config::DatabaseSettings,
    t: i64,
    step: usize,
) {
    let fresh = Store::connect(settings).await.unwrap();
    let nothing_kept = Queries::default();
    let variants = fresh.variants().await.unwrap();
    let every: HashSet<i64> = variants.iter().map(|(id, _)| *id).collect();
    let metal: HashSet<i64> = variants
        .iter()
        .filter(|(_, d)| d.platform == "metal")
        .map(|(id, _)| *id)
        .collect();
    let release: HashSet<i64> = variants
        .iter()
        .filter(|(_, d)| d.release == "4.14")
        .map(|(id, _)| *id)
        .collect();
    let days = t / DAY - 56..t / DAY + 1;
    // Nine answers: enough that what changed is read once for all of them.
    for backend in [
        "image-registry-new-connections",
        "kube-api-reused-connections",
        "ingress-to-console-new-connections",
    ] {
        for chosen in [&every, &metal, &release] {
            let want = nothing_kept
                .daily_histograms(&fresh, backend, chosen, days.clone())
                .await
                .unwrap();
            let got = kept
                .queries
                .daily_histograms(store, backend, chosen, days.clone())
                .await
                .unwrap();
            assert!(
                !want.is_empty() || chosen.is_empty(),
                "step {step}: {backend} has no days"
            );
            assert_eq!(
                got, want,
                "step {step}: the kept answers for {backend} differ from the database"
            );
        }
    }
    fresh.close().await;
}

/// The runs of four scopes, as cycles describe regressions from them, kept in `cached` from
/// step to step (their ranges moving on with time), equal those `fresh` reads: one backend over
/// metal 4.14 for four weeks (and again as seen six hours earlier), both registry backends over
/// 4.14 for three weeks, one backend over every variant for ten days. Asked again with nothing
/// changed, no row is read.
async fn assert_scope_runs_match(
    (store, cached): (&Store, &Warm),
    fresh: &Store,
    t: i64,
    step: usize,
) {
    let scope_runs = cached.scope_runs.as_ref().unwrap();
    let variants = fresh.variants().await.unwrap();
    let ids = |keep: &dyn Fn(&Dimensions) -> bool| -> Vec<i64> {
        variants
            .iter()
            .filter(|(_, d)| keep(d))
            .map(|(id, _)| *id)
            .collect()
    };
    let registry = || vec!["image-registry-new-connections".to_string()];
    let metal = ids(&|d| d.platform == "metal" && d.release == "4.14");
    let scopes = [
        (registry(), metal.clone(), t - 28 * DAY, t),
        (registry(), metal, t - 28 * DAY, t - 6 * 3600),
        (
            vec![
                "image-registry-reused-connections".to_string(),
                "image-registry-new-connections".into(),
            ],
            ids(&|d| d.release == "4.14"),
            t - 21 * DAY,
            t,
        ),
        (
            vec!["kube-api-reused-connections".to_string()],
            ids(&|_| true),
            t - 10 * DAY,
            t,
        ),
    ];
    for round in 0..2 {
        let read = cached.scope_rows_read();
        for (backends, variants, from, visible_at) in &scopes {
            let want = fresh
                .cells()
                .cell_runs(backends, variants, (*from, t), *visible_at)
                .await
                .unwrap();
            let got = scope_runs
                .cell_runs(store, backends, variants, (*from, t), *visible_at)
                .await
                .unwrap();
            assert!(!want.is_empty(), "step {step}: no runs of {backends:?}");
            assert_eq!(
                got.len(),
                want.len(),
                "step {step}: the kept runs of {backends:?} differ in number"
            );
            assert_eq!(
                got, want,
                "step {step}: the kept runs of {backends:?} differ from the database"
            );
        }
        if round == 1 {
            assert_eq!(
                cached.scope_rows_read(),
                read,
                "step {step}: rows read again with nothing changed"
            );
        }
    }
}

/// `sheriff serve` keeps its windows: a cycle reads its days once, the next none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_keeps_the_windows_in_memory_between_cycles() {
    let db = crate::common::TestDb::sqlite().await;
    let end = synth::day(2026, 11, 29);
    crate::common::load_metal_regression(&db.store, 3, end).await;
    let mut settings = sheriff::config::Settings {
        database: db.settings.clone(),
        ..Default::default()
    };
    settings.server.listen = "127.0.0.1:0".into();
    let app = sheriff::edge::serve::App::build(settings).await.unwrap();
    let options = sheriff::application::cycle::CycleOptions {
        at: end,
        dry_run: true,
    };
    let first =
        sheriff::application::cycle::run_cycle(&app.store, &app.warm, &app.settings, options)
            .await
            .unwrap();
    let read = app.warm.window_days_read();
    assert!(read >= 28, "the first cycle read {read} days");
    let second =
        sheriff::application::cycle::run_cycle(&app.store, &app.warm, &app.settings, options)
            .await
            .unwrap();
    assert_eq!(
        app.warm.window_days_read(),
        read,
        "the second cycle read days again"
    );
    assert_eq!(first.regressions.len(), 1);
    assert_eq!(
        (
            first.cells_evaluated,
            first.groups_evaluated,
            &first.regressions[0].fingerprint
        ),
        (
            second.cells_evaluated,
            second.groups_evaluated,
            &second.regressions[0].fingerprint
        )
    );
}
