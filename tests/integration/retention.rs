//! Retention on both engines, over two generated months: old runs, their samples and day
//! histograms are pruned, interval evidence sooner; the sample runs of an open incident stay
//! whatever their age; a second prune deletes nothing; and a cycle run while pruning goes on
//! (in small batches) judges exactly as one run before it.

use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::Settings;
use sheriff::synth::{self, Scenario};

use sheriff::model::DAY;

fn end() -> chrono::DateTime<chrono::Utc> {
    synth::day(2026, 11, 29)
}

/// What a cycle concluded, comparable across runs.
fn verdicts(report: &sheriff::application::cycle::CycleReport) -> Vec<(String, String, u64, u64)> {
    let mut v: Vec<_> = report
        .regressions
        .iter()
        .map(|r| {
            (
                r.fingerprint.clone(),
                format!("{:.3}", r.observed_seconds),
                r.job_runs,
                r.baseline_runs,
            )
        })
        .collect();
    v.sort();
    v
}

/// The runs with interval evidence where they were disrupted, as an events file gives it: an
/// outage of each disrupted backend and the registry's operator unavailable meanwhile.
fn with_evidence(mut records: Vec<sheriff::model::RunRecord>) -> Vec<sheriff::model::RunRecord> {
    for r in &mut records {
        let from = r.run.started_at + chrono::Duration::seconds(1800);
        for s in r.samples.iter().filter(|s| s.seconds > 0) {
            let to = from + chrono::Duration::seconds(s.seconds);
            r.outages.push(sheriff::model::Outage {
                backend: s.backend.clone(),
                from,
                to,
            });
        }
        if !r.outages.is_empty() {
            r.conditions.push(sheriff::model::ConditionSpan {
                operator: "image-registry".into(),
                condition: "Available".into(),
                status: "False".into(),
                reason: "NoReplicasAvailable".into(),
                message: "The deployment does not have available replicas".into(),
                from,
                to: from + chrono::Duration::seconds(60),
            });
        }
    }
    records
}

on_both_engines! {
    async fn pruning_keeps_what_retention_and_open_incidents_need(db) {
        let mut scenario = Scenario::month(11, end());
        scenario.days = 60;
        scenario.start = end() - chrono::Duration::days(60);
        scenario.planted.push(synth::metal_registry_regression(21));
        let records = with_evidence(synth::run_records(&scenario));
        for chunk in records.chunks(500) {
            db.store.runs().write_runs(chunk, false).await.unwrap();
        }
        let mut settings = Settings::default();
        settings.database = db.settings.clone();
        settings.retention.samples_days = 28;
        settings.retention.intervals_days = 14;
        settings.retention.batch_runs = 50;

        // An incident opened 30 days before the end: its sample runs are older than retention.
        let opened = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at: end() - chrono::Duration::days(30), dry_run: false })
            .await
            .unwrap();
        assert!(!opened.regressions.is_empty(), "the planted regression opens an incident");
        let incident = db.store.incidents().all().await.unwrap().into_iter().next().unwrap();
        let samples = incident.snapshot.report.sample_jobs.clone();
        assert!(!samples.is_empty());
        let now = end().timestamp();
        let cutoff = (now / DAY - 28) * DAY;
        let evidence_cutoff = (now / DAY - 14) * DAY;
        for s in &samples {
            let run = db.store.runs().run(&s.job, &s.build_id).await.unwrap().unwrap();
            assert!(run.run.started_at.timestamp() < cutoff, "a sample run older than retention");
        }
        let before = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at: end(), dry_run: true }).await.unwrap();
        let runs_before = db.store.runs().count_runs().await.unwrap();
        let (old, middle): (Vec<_>, Vec<_>) = records
            .iter()
            .filter(|r| r.run.started_at.timestamp() < evidence_cutoff)
            .partition(|r| r.run.started_at.timestamp() < cutoff);
        assert!(middle.iter().any(|r| !r.outages.is_empty() || !r.conditions.is_empty()), "evidence to prune");

        // Prune (50 runs a batch) while a cycle runs.
        let warm = sheriff::application::warm::Warm::new();
        let (pruned, during) = tokio::join!(
            sheriff::application::scheduler::prune(&db.store, &settings, now, false),
            run_cycle(&db.store, &warm, &settings, CycleOptions { at: end(), dry_run: true })
        );
        let pruned = pruned.unwrap();
        assert_eq!(verdicts(&during.unwrap()), verdicts(&before), "a cycle during pruning judges the same");
        let after = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at: end(), dry_run: true }).await.unwrap();
        assert_eq!(verdicts(&after), verdicts(&before), "and so does one after (the incident's reference is whole)");

        // Kept: the sample runs, and the runs of the incident's scope its reference reads.
        let kept = pruned.kept_for_incidents;
        let in_scope = old.iter().filter(|r| incident.snapshot.scope.contains(&r.run.dimensions)).count() as u64;
        assert!(kept > samples.len() as u64 && kept <= in_scope + samples.len() as u64, "{pruned:?}, {in_scope} in scope");
        assert_eq!(pruned.runs, old.len() as u64 - kept, "{pruned:?}");
        assert!(pruned.batches > 2, "bounded batches: {pruned:?}");
        assert_eq!(db.store.runs().count_runs().await.unwrap(), runs_before - pruned.runs as i64);
        for s in &samples {
            let run = db.store.runs().run(&s.job, &s.build_id).await.unwrap().expect("an open incident's sample run is kept");
            assert!(!run.samples.is_empty(), "with its samples");
        }
        let gone = old.iter().find(|r| !incident.snapshot.scope.contains(&r.run.dimensions)).unwrap();
        assert!(db.store.runs().run(&gone.run.job_name, &gone.run.build_id).await.unwrap().is_none());
        for r in &middle {
            let stored = db.store.runs().run(&r.run.job_name, &r.run.build_id).await.unwrap().expect("kept: within retention");
            assert_eq!(stored.samples.len(), r.samples.len());
            let needed = incident.snapshot.scope.contains(&r.run.dimensions);
            let evidence = !stored.outages.is_empty() || !stored.conditions.is_empty();
            let had = !r.outages.is_empty() || !r.conditions.is_empty();
            assert_eq!(evidence, needed && had, "interval evidence kept only where the incident needs it");
        }
        let recent = records.iter().find(|r| r.run.started_at.timestamp() >= evidence_cutoff && !r.outages.is_empty()).unwrap();
        let stored = db.store.runs().run(&recent.run.job_name, &recent.run.build_id).await.unwrap().unwrap();
        assert_eq!(stored.outages.len(), recent.outages.len(), "recent evidence stays");
        let old_days = db.store.cells().backend_histogram("image-registry-new-connections", 0..cutoff / DAY).await.unwrap();
        assert_eq!(old_days.count(), 0, "the old days' histograms went");

        let again = sheriff::application::scheduler::prune(&db.store, &settings, now, false).await.unwrap();
        assert_eq!((again.runs, again.cell_days, again.interval_runs), (0, 0, 0), "a second prune deletes nothing");
        assert_eq!(again.kept_for_incidents, kept);
    }
}
