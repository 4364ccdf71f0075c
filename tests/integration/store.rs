//! The store on both engines: migrations, and runs written and read back exactly once.

use chrono::{TimeZone, Utc};
use sheriff::application::warm::Queries;
use sheriff::model::DAY;
use sheriff::model::{ConditionSpan, Dimensions, JobRun, Outage, RunRecord, Sample};
use sheriff::store::WriteOutcome;

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
            payload: "4.14.0-0.nightly-2023-09-01-120000".into(),
            from_payload: "4.13.12".into(),
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
        interval_files: Vec::new(),
        timeline: Vec::new(),
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
        assert_eq!(db.store.runs().write_run(&record, false).await.unwrap(), WriteOutcome::Inserted);
        let back = db.store.runs().run(&record.run.job_name, &record.run.build_id).await.unwrap().unwrap();
        let mut expected = record.clone();
        expected.samples.sort();
        assert_eq!(back, expected);
        assert!(db.store.runs().has_run(&record.run.job_name, &record.run.build_id).await.unwrap());
        assert!(db.store.runs().run(&record.run.job_name, "nope").await.unwrap().is_none());
    }

    async fn runs_read_together_are_each_as_read_alone(db) {
        // several runs, one of another job, with differing intervals; a key twice, one unknown
        let mut records: Vec<RunRecord> =
            (0..5).map(|i| sample_record(&format!("17900000000000001{i:02}"), 10 + i)).collect();
        records[1].run.job_name = "periodic-ci-openshift-release-master-ci-4.14-e2e-aws-ovn-upgrade".into();
        records[2].outages.clear();
        let progressing = ConditionSpan { reason: "Progressing".into(), ..records[3].conditions[0].clone() };
        records[3].conditions.push(progressing);
        for r in &records {
            db.store.runs().write_run(r, false).await.unwrap();
        }
        let mut keys: Vec<(&str, &str)> =
            records.iter().map(|r| (r.run.job_name.as_str(), r.run.build_id.as_str())).collect();
        keys.push(("no-such-job", "1"));
        keys.push((&records[1].run.job_name, "17900000000000001xx"));
        let mut together = db.store.runs().find(&keys).await.unwrap();
        together.sort_by(|a, b| a.run.build_id.cmp(&b.run.build_id));
        assert_eq!(together.len(), records.len(), "the unknown keys read nothing");
        for (back, r) in together.iter().zip(&records) {
            let alone = db.store.runs().run(&r.run.job_name, &r.run.build_id).await.unwrap().unwrap();
            assert_eq!(back, &alone);
            let mut expected = r.clone();
            expected.samples.sort();
            assert_eq!(back, &expected);
        }
        assert!(db.store.runs().find(&[]).await.unwrap().is_empty());
    }

    async fn writing_the_same_run_twice_stores_it_once(db) {
        let record = sample_record("1790000000000000002", 12);
        assert_eq!(db.store.runs().write_run(&record, false).await.unwrap(), WriteOutcome::Inserted);
        assert_eq!(db.store.runs().write_run(&record, false).await.unwrap(), WriteOutcome::AlreadyStored);
        assert_eq!(db.store.runs().count_runs().await.unwrap(), 1);
        assert_eq!(db.store.runs().count_samples().await.unwrap(), 3);
    }

    async fn a_forced_rewrite_replaces_the_run_and_keeps_histograms_exact(db) {
        let first = sample_record("1790000000000000003", 12);
        let second = sample_record("1790000000000000004", 40);
        db.store.runs().write_run(&first, false).await.unwrap();
        db.store.runs().write_run(&second, false).await.unwrap();
        let mut changed = first.clone();
        changed.samples[0].seconds = 45;
        assert_eq!(db.store.runs().write_run(&changed, true).await.unwrap(), WriteOutcome::Replaced);
        assert_eq!(db.store.runs().count_runs().await.unwrap(), 2);
        let back = db.store.runs().run(&first.run.job_name, &first.run.build_id).await.unwrap().unwrap();
        assert!(back.samples.iter().any(|s| s.backend == "image-registry-new-connections" && s.seconds == 45));
        let hist = db.store.cells().backend_histogram("image-registry-new-connections", 0..i64::MAX).await.unwrap();
        assert_eq!(hist.encode(), "40:1 45:1");
    }

    async fn the_ingest_log_keeps_entries_newest_first(db) {
        use sheriff::store::{IngestLogEntry, LogOutcome};
        let entry = |file: &str, outcome: LogOutcome| IngestLogEntry {
            logged_at: Utc::now(),
            source: "/data".into(),
            run_path: "logs/job/1".into(),
            job_name: "job".into(),
            build_id: "1".into(),
            file: file.into(),
            outcome,
            error: if outcome == LogOutcome::Failed { "truncated JSON at line 3".into() } else { String::new() },
        };
        db.store.ingest_log().log_ingest(&[entry("a.json", LogOutcome::Ingested), entry("b.json", LogOutcome::Failed)]).await.unwrap();
        let failed = db.store.ingest_log().recent(Some(LogOutcome::Failed), 10).await.unwrap();
        assert_eq!(failed.len(), 1);
        assert_eq!((failed[0].file.as_str(), failed[0].outcome), ("b.json", LogOutcome::Failed));
        let all = db.store.ingest_log().recent(None, 10).await.unwrap();
        assert_eq!(all.iter().map(|e| e.outcome).collect::<Vec<_>>(), [LogOutcome::Failed, LogOutcome::Ingested]);
        assert_eq!(serde_json::to_value(&all[0]).unwrap()["outcome"], "failed");
    }
}

/// Runs spread over days at odd hours, each with one backend sample of known seconds.
fn spread_records() -> Vec<RunRecord> {
    let base = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    (0..60)
        .map(|i: i64| {
            let mut r = sample_record(&format!("18000000000000{i:05}"), 0);
            r.run.started_at = base + chrono::Duration::minutes(i * 557);
            r.run.dimensions.network = if i % 2 == 0 {
                "ovn".into()
            } else {
                "sdn".into()
            };
            r.samples = vec![Sample {
                backend: "kube-api-new-connections".into(),
                connection: "new".into(),
                seconds: i % 7,
            }];
            r.outages.clear();
            r.conditions.clear();
            r
        })
        .collect()
}

on_both_engines! {
    async fn window_histograms_are_exact_for_windows_that_do_not_start_at_midnight(db) {
        let records = spread_records();
        db.store.runs().write_runs(&records, false).await.unwrap();
        let t = |h: u32, m: u32| Utc.with_ymd_and_hms(2026, 11, 10, h, m, 0).unwrap().timestamp();
        let current = (t(7, 13), t(7, 13) + 5 * DAY + 3_600);
        let baseline = (current.0 - 6 * DAY - 17, current.0);
        let data = db.store.evaluations().window_data(current, baseline, &[], i64::MAX).await.unwrap();
        for (window, pick) in [(current, true), (baseline, false)] {
            for network in ["ovn", "sdn"] {
                let mut expected: Vec<i64> = records
                    .iter()
                    .filter(|r| r.run.dimensions.network == network)
                    .filter(|r| (window.0..window.1).contains(&r.run.started_at.timestamp()))
                    .map(|r| r.samples[0].seconds)
                    .collect();
                expected.sort_unstable();
                let cell = data.cells.iter().find(|c| {
                    data.backends[c.backend] == "kube-api-new-connections" && data.variants[c.variant].network == network
                });
                let got = cell.map(|c| if pick { c.current.clone() } else { c.baseline.clone() }).unwrap_or_default();
                assert_eq!(got, sheriff::model::Histogram::from_values(expected), "{network} current={pick}");
            }
        }
    }
}

/// Per day, one backend over every variant, as `query` asks, through the answers kept in `kept`.
async fn days_of_every_variant(
    (store, kept): (&sheriff::store::Store, &Queries),
    backend: &str,
    days: std::ops::Range<i64>,
) -> std::sync::Arc<std::collections::BTreeMap<i64, sheriff::model::Histogram>> {
    let ids = store
        .variants()
        .await
        .unwrap()
        .iter()
        .map(|(id, _)| *id)
        .collect();
    kept.daily_histograms(store, backend, &ids, days)
        .await
        .unwrap()
}

on_both_engines! {
    async fn query_days_follow_every_write_whichever_process_made_it(db) {
        let day = Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap().timestamp() / DAY;
        let backend = "image-registry-new-connections";
        let kept = Queries::default();
        db.store.runs().write_run(&sample_record("1790000000000000101", 40), false).await.unwrap();
        let first = days_of_every_variant((&db.store, &kept), backend, day - 3..day + 3).await;
        assert_eq!(first[&day], sheriff::model::Histogram::from_values([40]));
        assert_eq!(days_of_every_variant((&db.store, &kept), backend, day - 3..day + 3).await, first, "asked again, the same answer");

        // another process (a second replica, or an ingest command) writes a run and replaces one
        let other = sheriff::store::Store::open(&db.settings).await.unwrap();
        other.runs().write_run(&sample_record("1790000000000000102", 7), false).await.unwrap();
        assert_eq!(days_of_every_variant((&db.store, &kept), backend, day - 3..day + 3).await[&day], sheriff::model::Histogram::from_values([7, 40]));
        other.runs().write_run(&sample_record("1790000000000000102", 0), true).await.unwrap();
        assert_eq!(days_of_every_variant((&db.store, &kept), backend, day - 3..day + 3).await[&day], sheriff::model::Histogram::from_values([0, 40]));
        // a run on an earlier day: that day is re-read, the others kept
        let mut earlier = sample_record("1790000000000000103", 12);
        earlier.run.started_at -= chrono::Duration::days(2);
        other.runs().write_run(&earlier, false).await.unwrap();
        let days = days_of_every_variant((&db.store, &kept), backend, day - 3..day + 3).await;
        assert_eq!(days[&(day - 2)], sheriff::model::Histogram::from_values([12]));
        assert_eq!(days[&day], sheriff::model::Histogram::from_values([0, 40]));
        assert_eq!(days.len(), 2);
        // a run already stored changes nothing, and the answer stays
        other.runs().write_run(&sample_record("1790000000000000101", 99), false).await.unwrap();
        assert_eq!(days_of_every_variant((&db.store, &kept), backend, day - 3..day + 3).await[&day], sheriff::model::Histogram::from_values([0, 40]));
        // a variant another process added is seen
        let before = db.store.variants().await.unwrap().len();
        let mut aws = sample_record("1790000000000000104", 3);
        aws.run.dimensions.platform = "aws".into();
        other.runs().write_run(&aws, false).await.unwrap();
        let variants = db.store.variants().await.unwrap();
        assert_eq!(variants.len(), before + 1);
        assert!(variants.iter().any(|(_, d)| d.platform == "aws"));
        other.close().await;

        // no variant selected: nothing, without asking the database
        let none = kept.daily_histograms(&db.store, backend, &Default::default(), day - 3..day + 3).await.unwrap();
        assert!(none.is_empty());
    }
}

on_both_engines! {
    async fn questions_asked_at_once_share_a_version_read_and_each_sees_the_writes_before_it(db) {
        db.store.runs().write_run(&sample_record("1790000000000000201", 40), false).await.unwrap();
        let kept = Queries::default();
        let before = kept.version_reads_started();
        let asked = futures::future::join_all((0..50).map(|_| kept.data_version(&db.store))).await;
        let reads = kept.version_reads_started() - before;
        // Each read serves every question that asked while the one before it ran: two reads
        // when all ask before the first ends, a few more on a busy machine (up to 9 seen with
        // three cores' worth of other work), never one each.
        assert!(reads <= 25, "50 questions asked at once read the version {reads} times");
        let version = db.store.cells().data_version().await.unwrap();
        assert!(asked.iter().all(|v| *v.as_ref().unwrap() == version));

        // a write committed before a question, by another process, is seen by it
        let other = sheriff::store::Store::open(&db.settings).await.unwrap();
        other.runs().write_run(&sample_record("1790000000000000202", 7), false).await.unwrap();
        let written = other.cells().data_version().await.unwrap();
        assert!(written > version);
        assert_eq!(kept.data_version(&db.store).await.unwrap(), written);
        other.close().await;
    }
}

/// One count of a backfill: `runs` runs of the sample record's job and variant on its day.
fn count(
    backend: &str,
    seconds: i64,
    runs: u64,
    down_probes: &[&str],
) -> sheriff::store::CellCount {
    let record = sample_record("0", 0);
    sheriff::store::CellCount {
        job: record.run.job_name.clone(),
        dimensions: record.run.dimensions.clone(),
        day: record.run.started_at.timestamp().div_euclid(DAY),
        down_probes: down_probes.iter().map(|p| p.to_string()).collect(),
        backend: backend.into(),
        seconds,
        runs,
        first_start: record.run.started_at.timestamp(),
    }
}

on_both_engines! {
    async fn a_backfill_adds_its_clean_counts_and_a_run_of_its_days_is_not_stored_after(db) {
        use sheriff::store::Backfill;
        let probe = "ci-cluster-network-liveness-new-connections";
        let counts = [
            count("image-registry-new-connections", 0, 3, &[]),
            count("image-registry-new-connections", 31, 2, &[]),
            count(probe, 0, 5, &[]),
            // a run whose working probe was down: CI-troubled, left out
            count("image-registry-new-connections", 90, 1, &[probe]),
            count(probe, 45, 1, &[probe]),
        ];
        let day = counts[0].day;
        let backfill = Backfill { source: "bq://p/d", days: day..day + 1, rows_read: 5, counts: &counts };
        let report = db.store.backfills().write_backfill(&backfill).await.unwrap();
        assert_eq!((report.samples, report.troubled_samples, report.variant_days), (10, 2, 1));
        let variants = db.store.variants().await.unwrap();
        let ids = std::collections::HashSet::from([variants[0].0]);
        let registry = "image-registry-new-connections";
        let h = Queries::default().daily_histograms(&db.store, registry, &ids, day..day + 1).await.unwrap();
        assert_eq!(format!("{:?}", h[&day]), "Histogram { bins: [(0, 3), (31, 2)], count: 5 }");

        // the day is sealed: its run is not stored, and the next read of runs starts after it
        let outcome = db.store.runs().write_run(&sample_record("1", 12), false).await.unwrap();
        assert_eq!(outcome, WriteOutcome::AlreadyStored);
        assert_eq!(db.store.runs().count_runs().await.unwrap(), 0);
        assert_eq!(db.store.backfills().past_backfilled_days(day * DAY + 5).await.unwrap(), (day + 1) * DAY);
        assert_eq!(db.store.backfills().past_backfilled_days(day * DAY - 1).await.unwrap(), day * DAY - 1);
        // an adjacent backfill: a read starting in the first goes past both
        let next: Vec<_> = counts
            .iter()
            .map(|c| sheriff::store::CellCount { day: day + 1, ..c.clone() })
            .collect();
        let backfill = Backfill { source: "bq://p/d", days: day + 1..day + 2, rows_read: 5, counts: &next };
        db.store.backfills().write_backfill(&backfill).await.unwrap();
        assert_eq!(db.store.backfills().past_backfilled_days(day * DAY).await.unwrap(), (day + 2) * DAY);
    }

    async fn a_backfill_is_refused_when_a_rule_needs_every_sample_of_a_run(db) {
        let rules = sheriff::model::TroubleRules { all_backends_share: 0.9, ..Default::default() };
        db.store.trouble().apply(&rules).await.unwrap();
        let counts = [count("image-registry-new-connections", 0, 3, &[])];
        let day = counts[0].day;
        let days = day..day + 1;
        let backfill = sheriff::store::Backfill { source: "bq://p/d", days, rows_read: 1, counts: &counts };
        let e = format!("{:#}", db.store.backfills().write_backfill(&backfill).await.unwrap_err());
        assert!(e.contains("all_backends_share"), "{e}");
        assert!(db.store.backfills().backfilled_days().await.unwrap().is_empty());
    }
}

/// A run of `job` started `hours` after 2026-11-01 00:00 UTC, on `platform`.
fn run_at(job: &str, hours: i64, platform: &str) -> RunRecord {
    let mut r = sample_record(&format!("{}", 1_790_000_000_000_000_000i64 + hours), 12);
    let started =
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap() + chrono::Duration::hours(hours);
    r.run.job_name = job.into();
    r.run.path = format!("logs/{job}/{}", r.run.build_id);
    r.run.url = JobRun::prow_url("test-platform-results", &r.run.path);
    r.run.started_at = started;
    r.run.finished_at = Some(started + chrono::Duration::hours(2));
    r.run.dimensions.platform = platform.into();
    for o in &mut r.outages {
        o.from = started + chrono::Duration::seconds(1800);
        o.to = o.from + chrono::Duration::seconds(12);
    }
    for c in &mut r.conditions {
        c.from = started + chrono::Duration::seconds(1790);
        c.to = c.from + chrono::Duration::seconds(60);
    }
    r
}

on_both_engines! {
    async fn a_job_whose_first_run_is_in_the_window_is_new_unless_too_few_runs_say_so(db) {
        let day = 24;
        let window = (
            Utc.with_ymd_and_hms(2026, 11, 15, 0, 0, 0).unwrap().timestamp(),
            Utc.with_ymd_and_hms(2026, 11, 22, 0, 0, 0).unwrap().timestamp(),
        );
        let mut runs = Vec::new();
        // a job running every day since the history began
        runs.extend((0..21).map(|d| run_at("job-old", d * day + 3, "aws")));
        // a new job: first run on the 16th, then four a day; its latest run is on gcp
        runs.extend((0..24).map(|i| run_at("job-new", 15 * day + 6 * i + 1, if i == 23 { "gcp" } else { "metal" })));
        // ... and one run starting as the window ends, neither counted nor its scope
        runs.push(run_at("job-new", 21 * day, "aws"));
        // a new job whose first run starts as the window does, twice a day, and runs after it
        runs.extend((0..12).map(|i| run_at("job-edge", 14 * day + 12 * i, "aws")));
        runs.extend([21 * day, 21 * day + 6, 22 * day].map(|h| run_at("job-edge", h, "aws")));
        // a sparse job: one run long before the window, then two in it
        runs.extend([2 * day, 16 * day, 18 * day].map(|h| run_at("job-sparse", h + 5, "aws")));
        // a job too new to tell from a sparse one: two runs
        runs.extend([20 * day, 20 * day + 6].map(|h| run_at("job-two", h + 7, "aws")));
        // a job that stopped before the window, and runs after it
        runs.extend((0..5).map(|d| run_at("job-gone", d * day + 9, "aws")));
        runs.push(run_at("job-later", 23 * day, "aws"));
        for r in &runs {
            db.store.runs().write_run(r, false).await.unwrap();
        }
        let new = db.store.runs().new_jobs_in(window).await.unwrap();
        assert_eq!(new.len(), 2, "{new:?}");
        assert_eq!((new[0].job.as_str(), new[0].runs), ("job-edge", 12));
        assert!(new[0].first_run.starts_with("2026-11-15T00:00:00"), "{}", new[0].first_run);
        assert_eq!((new[1].job.as_str(), new[1].runs), ("job-new", 24));
        assert!(new[1].first_run.starts_with("2026-11-16T01:00:00"), "{}", new[1].first_run);
        assert_eq!(new[1].scope.single(sheriff::model::Dimension::Platform), Some("gcp"));
        // a window holding every run: no job has a run before it, and only the new one ran
        // often enough, against the history before its first run, to be told from a sparse one
        let all = (window.0 - 30 * DAY, window.1 + 30 * DAY);
        let jobs: Vec<String> = db.store.runs().new_jobs_in(all).await.unwrap().into_iter().map(|j| j.job).collect();
        assert_eq!(jobs, ["job-new"]);
        assert!(db.store.runs().new_jobs_in((window.1 + 40 * DAY, window.1 + 41 * DAY)).await.unwrap().is_empty());
    }
}
