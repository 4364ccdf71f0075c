//! Evaluation end to end: a generated month with the case of DESIGN §1 planted, ingested,
//! then `sheriff evaluate --format json` as a script would run it.

use crate::common;

use std::process::Command;

use sheriff::adapters::ingest::{IngestOptions, Source, ingest};
use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::{IngestSettings, Settings};
use sheriff::synth::{self, JobSpec, Outlier, Scenario};

const OVIRT_JOB: &str = "periodic-ci-openshift-release-master-nightly-4.14-e2e-ovirt-ovn-upgrade";
const VSPHERE_JOB: &str =
    "periodic-ci-openshift-release-master-nightly-4.14-e2e-vsphere-ovn-upgrade";

fn end() -> chrono::DateTime<chrono::Utc> {
    synth::day(2026, 11, 29)
}

/// The demo month, plus a huge outlier on vsphere and a job that ran only 4 times.
fn scenario() -> Scenario {
    let mut s = Scenario::demo(end());
    s.outliers.push(Outlier {
        job: VSPHERE_JOB.into(),
        nth: 50,
        backend: "image-registry-new-connections".into(),
        seconds: 4000,
    });
    s.jobs.push(JobSpec {
        max_runs: Some(4),
        from_day: 22,
        ..JobSpec::new(OVIRT_JOB, 1.0)
    });
    s
}

async fn load(db: &common::TestDb) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::write_tree(&scenario(), dir.path()).unwrap();
    let vsphere_runs = truth.runs.iter().filter(|r| r.job == VSPHERE_JOB).count();
    assert!(
        vsphere_runs > 50,
        "the outlier run exists ({vsphere_runs} vsphere runs)"
    );
    let outlier = truth
        .runs
        .iter()
        .filter(|r| r.job == VSPHERE_JOB)
        .nth(50)
        .unwrap();
    assert!(
        outlier.started_at >= end() - chrono::Duration::days(7),
        "the outlier is in the current window"
    );
    let summary = ingest(
        &db.store,
        &IngestSettings::default(),
        &Source::Local(dir.path().to_path_buf()),
        &IngestOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(summary.failed, 0);
    dir
}

fn evaluate_json(db: &common::TestDb, extra: &[&str]) -> serde_json::Value {
    let workdir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sheriff"))
        .args([
            "evaluate",
            "--format",
            "json",
            "--at",
            "2026-11-29T00:00:00Z",
        ])
        .args(extra)
        .env("SHERIFF__DATABASE__URL", db.url())
        .env("RUST_LOG", "warn")
        .current_dir(workdir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

on_both_engines! {
    async fn the_metal_registry_regression_is_reported_and_nothing_else(db) {
        let _tree = load(&db).await;
        let report = evaluate_json(&db, &[]);
        for key in ["evaluated_at", "window", "cells_evaluated", "regressions"] {
            assert!(report.get(key).is_some(), "missing {key}: {report}");
        }
        assert_eq!(report["window"]["to"], "2026-11-29T00:00:00Z");
        let regressions = report["regressions"].as_array().unwrap();
        assert_eq!(regressions.len(), 1, "{}", serde_json::to_string_pretty(regressions).unwrap());
        let r = &regressions[0];
        assert_eq!(r["family"], "image-registry");
        assert_eq!(r["component"], "Image Registry");
        assert_eq!(r["release"], "4.14");
        assert_eq!(r["scope"]["platform"], "metal");
        assert!(r["scope"].get("network").is_none(), "both networks: {}", r["scope"]);
        assert!(r["scope"].get("upgrade_type").is_none(), "micro and minor: {}", r["scope"]);
        let backends: Vec<&str> = r["backends"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
        assert_eq!(backends, ["image-registry-new-connections", "image-registry-reused-connections"]);
        assert_eq!(r["status"], "new");
        assert!(r["observed_seconds"].as_f64().unwrap() > r["threshold_seconds"].as_f64().unwrap() + 5.0);
        assert!(r["job_runs"].as_u64().unwrap() >= 20);
        for key in ["fingerprint", "percentile", "attribution", "sample_jobs"] {
            assert!(r.get(key).is_some(), "missing {key}");
        }
        let samples = r["sample_jobs"].as_array().unwrap();
        assert!(samples.len() >= 3);
        for s in samples {
            assert!(s["url"].as_str().unwrap().starts_with("https://prow.ci.openshift.org/view/gs/test-platform-results/logs/"));
            assert!(s["job"].as_str().unwrap().contains("metal"));
            assert!(s["seconds"].as_i64().is_some() && s["build_id"].as_str().is_some());
        }
        // Attribution (DESIGN §1, done by sheriff).
        let a = &r["attribution"];
        assert_eq!(a["component"], "Image Registry");
        assert_eq!(a["platform"], "metal");
        assert_eq!(a["platform_component"], "Bare Metal Hardware Provisioning");
        assert_eq!(r["not_specific_to"].as_array().unwrap().iter().filter(|d| *d == "network" || *d == "upgrade_type").count(), 2);
        let independence = a["independence"].to_string();
        assert!(independence.contains("not specific to a network plugin: ovn and sdn both regressed"), "{independence}");
        assert!(independence.contains("not specific to an upgrade type"), "{independence}");
        // the console route, on the connections of whichever registry backend leads the case
        let control = a["control"]["backend"].as_str().unwrap();
        assert!(matches!(control, "ingress-to-console-new-connections" | "ingress-to-console-reused-connections"), "{control}");
        assert_eq!(a["control"]["healthy"], true);
        let top = &a["conditions"][0];
        assert_eq!((top["operator"].as_str(), top["condition"].as_str(), top["status"].as_str()), (Some("image-registry"), Some("Available"), Some("False")));
        assert_eq!(top["reason"], "NoReplicasAvailable");
        assert_eq!(top["message"], "The deployment does not have available replicas");
        assert!(top["covered_share"].as_f64().unwrap() > 0.9, "{top}");
        assert!(top["runs_with"].as_u64().unwrap() >= 8 && top["healthy_with"].as_u64().unwrap() <= 1, "{top}");
        assert!(a["evidence"].to_string().contains("image-registry Available=False (NoReplicasAvailable): The deployment does not have available replicas — covers"));
        assert!(a["summary"].as_str().unwrap().contains("metal 4.14"));
        assert_eq!(a["confidence"], "high");
        // Not the console on the same runs, and nothing from the vsphere outlier.
        assert!(!report.to_string().contains("\"family\":\"ingress-to-console\""));
        // The job with 4 runs is insufficient data.
        let insufficient = report["insufficient_data"].as_array().unwrap();
        let ovirt = insufficient.iter().find(|i| i["jobs"].as_array().unwrap().iter().any(|j| j == OVIRT_JOB)).expect("ovirt listed");
        assert_eq!(ovirt["job_runs"], 4);
        assert_eq!(ovirt["scope"]["platform"], "ovirt");
    }

    async fn cycles_are_recorded_the_regression_stays_the_same_and_dry_runs_record_nothing(db) {
        let _tree = load(&db).await;
        let settings = Settings::default();
        let at = end();
        // Evaluated a week earlier, before the regression started, nothing is found.
        let before = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at: at - chrono::Duration::days(8), dry_run: true }).await.unwrap();
        assert!(before.regressions.is_empty(), "{:#?}", before.regressions);
        let dry = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at, dry_run: true }).await.unwrap();
        assert_eq!(db.store.evaluations().count_cycles().await.unwrap(), 0);
        let first = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at, dry_run: false }).await.unwrap();
        let second = run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &settings, CycleOptions { at, dry_run: false }).await.unwrap();
        assert_eq!(db.store.evaluations().count_cycles().await.unwrap(), 2);
        assert_eq!(dry.regressions[0].fingerprint, first.regressions[0].fingerprint);
        assert_eq!(first.regressions[0].fingerprint, second.regressions[0].fingerprint);
        assert_eq!(
            (first.regressions[0].status, second.regressions[0].status),
            (sheriff::model::Status::New, sheriff::model::Status::Ongoing)
        );
    }
}

/// An ovn-only console regression on every platform.
fn ovn_console_scenario() -> Scenario {
    use sheriff::model::Dimension;
    let mut s = Scenario::month(77, end());
    s.planted.push(synth::Planted {
        backend_prefix: "ingress-to-console-".into(),
        matches: vec![
            (Dimension::Network, "ovn".into()),
            (Dimension::Release, "4.14".into()),
        ],
        from_day: 21,
        until_day: None,
        share: 0.85,
        seconds: (15, 60),
        condition: Some((
            "ingress".into(),
            "Degraded".into(),
            "True".into(),
            "IngressControllerUnavailable".into(),
            "One or more router pods are not available".into(),
        )),
    });
    s
}

on_both_engines! {
    async fn an_ovn_only_console_regression_on_every_platform_belongs_to_the_router(db) {
        let dir = tempfile::tempdir().unwrap();
        synth::write_tree(&ovn_console_scenario(), dir.path()).unwrap();
        ingest(&db.store, &IngestSettings::default(), &Source::Local(dir.path().to_path_buf()), &IngestOptions::default()).await.unwrap();
        let report = evaluate_json(&db, &[]);
        let regressions = report["regressions"].as_array().unwrap();
        let console: Vec<&serde_json::Value> = regressions.iter().filter(|r| r["family"] == "ingress-to-console").collect();
        assert_eq!(console.len(), 1, "{}", serde_json::to_string_pretty(regressions).unwrap());
        let r = console[0];
        assert_eq!(r["component"], "Networking / router");
        assert_eq!(r["scope"]["network"], "ovn");
        assert!(r["scope"].get("platform").is_none(), "every platform: {}", r["scope"]);
        assert!(r["attribution"]["platform"].is_null());
        assert!(r["attribution"]["independence"].to_string().contains("not specific to a platform"), "{}", r["attribution"]);
        assert_eq!(r["attribution"]["conditions"][0]["operator"], "ingress");
        // Nothing else regressed.
        assert_eq!(regressions.len(), 1, "{}", serde_json::to_string_pretty(regressions).unwrap());
    }
}

on_both_engines! {
    async fn a_past_evaluation_knows_no_later_incident_and_takes_a_date_like_backtest(db) {
        common::load_metal_regression(&db.store, 7, end()).await;
        run_cycle(&db.store, &sheriff::application::warm::Warm::new(), &Settings::default(), CycleOptions { at: end(), dry_run: false }).await.unwrap();
        assert_eq!(db.store.incidents().all().await.unwrap().len(), 1, "an incident from the end of the month");
        let before = (end() - chrono::Duration::days(10)).format("%Y-%m-%d").to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_sheriff"))
            .args(["evaluate", "--dry-run", "--at", &before])
            .env("SHERIFF__DATABASE__URL", db.url())
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.starts_with(&format!("evaluated at {before} 00:00 UTC")), "{text}");
        assert!(text.contains("no regressions"), "ten days before, nothing had regressed: {text}");
    }
}
