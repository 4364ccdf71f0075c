//! The store on both engines: migrations, and runs written and read back exactly once.

mod common;

use chrono::{TimeZone, Utc};
use sheriff::model::{ConditionSpan, Dimensions, JobRun, Outage, RunRecord, Sample};
use sheriff::store::runs::WriteOutcome;

fn sample_record(build_id: &str, registry_seconds: i64) -> RunRecord {
    let started = Utc.with_ymd_and_hms(2026, 11, 20, 8, 30, 0).unwrap();
    let job = "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade";
    let path = format!("logs/{job}/{build_id}");
    RunRecord {
        run: JobRun {
            job_name: job.into(),
            build_id: build_id.into(),
            bucket: "test-platform-results".into(),
            url: JobRun::prow_url("test-platform-results", &path),
            path,
            job_type: "periodic".into(),
            started_at: started,
            finished_at: Some(started + chrono::Duration::seconds(7200)),
            state: "success".into(),
            dimensions: Dimensions {
                release: "4.14".into(),
                from_release: "4.13".into(),
                upgrade_type: "minor".into(),
                platform: "metal".into(),
                architecture: "amd64".into(),
                network: "sdn".into(),
                network_stack: "ipv4".into(),
                topology: "ha".into(),
                master_nodes_updated: "Y".into(),
            },
        },
        samples: vec![
            Sample {
                backend: "image-registry-new-connections".into(),
                connection: "new".into(),
                seconds: registry_seconds,
            },
            Sample {
                backend: "image-registry-reused-connections".into(),
                connection: "reused".into(),
                seconds: registry_seconds - 2,
            },
            Sample {
                backend: "ingress-to-console-new-connections".into(),
                connection: "new".into(),
                seconds: 0,
            },
        ],
        outages: vec![Outage {
            backend: "image-registry-new-connections".into(),
            from: started + chrono::Duration::seconds(1800),
            to: started + chrono::Duration::seconds(1800 + registry_seconds),
        }],
        conditions: vec![ConditionSpan {
            operator: "image-registry".into(),
            condition: "Available".into(),
            status: "False".into(),
            reason: "NoReplicasAvailable".into(),
            message: "The deployment does not have available replicas".into(),
            from: started + chrono::Duration::seconds(1790),
            to: started + chrono::Duration::seconds(1850),
        }],
    }
}

on_both_engines! {
    async fn migrating_twice_applies_nothing_the_second_time(db) {
        let again = db.store.migrate().await.unwrap();
        assert!(again.applied.is_empty(), "second migrate applied {:?}", again.applied);
        assert!(again.current >= 1);
    }

    async fn a_run_is_written_and_read_back_identically(db) {
        let record = sample_record("1790000000000000001", 31);
        assert_eq!(db.store.write_run(&record, false).await.unwrap(), WriteOutcome::Inserted);
        let back = db.store.run(&record.run.job_name, &record.run.build_id).await.unwrap().unwrap();
        let mut expected = record.clone();
        expected.samples.sort();
        assert_eq!(back, expected);
        assert!(db.store.has_run(&record.run.job_name, &record.run.build_id).await.unwrap());
        assert!(db.store.run(&record.run.job_name, "nope").await.unwrap().is_none());
    }

    async fn writing_the_same_run_twice_stores_it_once(db) {
        let record = sample_record("1790000000000000002", 12);
        assert_eq!(db.store.write_run(&record, false).await.unwrap(), WriteOutcome::Inserted);
        assert_eq!(db.store.write_run(&record, false).await.unwrap(), WriteOutcome::AlreadyStored);
        assert_eq!(db.store.count_runs().await.unwrap(), 1);
        assert_eq!(db.store.count_samples().await.unwrap(), 3);
    }

    async fn a_forced_rewrite_replaces_the_run_and_keeps_histograms_exact(db) {
        let first = sample_record("1790000000000000003", 12);
        let second = sample_record("1790000000000000004", 40);
        db.store.write_run(&first, false).await.unwrap();
        db.store.write_run(&second, false).await.unwrap();
        let mut changed = first.clone();
        changed.samples[0].seconds = 45;
        assert_eq!(db.store.write_run(&changed, true).await.unwrap(), WriteOutcome::Replaced);
        assert_eq!(db.store.count_runs().await.unwrap(), 2);
        let back = db.store.run(&first.run.job_name, &first.run.build_id).await.unwrap().unwrap();
        assert!(back.samples.iter().any(|s| s.backend == "image-registry-new-connections" && s.seconds == 45));
        let hist = db.store.backend_histogram("image-registry-new-connections", 0..i64::MAX).await.unwrap();
        assert_eq!(hist.encode(), "40:1 45:1");
    }

    async fn the_ingest_log_keeps_entries_newest_first(db) {
        use sheriff::store::ingest_log::IngestLogEntry;
        let entry = |file: &str, outcome: &str| IngestLogEntry {
            logged_at: Utc::now(),
            source: "/data".into(),
            run_path: "logs/job/1".into(),
            job_name: "job".into(),
            build_id: "1".into(),
            file: file.into(),
            outcome: outcome.into(),
            error: if outcome == "failed" { "truncated JSON at line 3".into() } else { String::new() },
        };
        db.store.log_ingest(&[entry("a.json", "ingested"), entry("b.json", "failed")]).await.unwrap();
        let failed = db.store.recent_ingest_log(Some("failed"), 10).await.unwrap();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].file, "b.json");
        assert_eq!(db.store.recent_ingest_log(None, 10).await.unwrap().len(), 2);
    }
}
