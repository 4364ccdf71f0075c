//! Why this platform: the calibrated world written with its runs' timelines (node drains, the
//! registry's pods, etcd leader changes and VIP moves as decoys, in all three interval schemas),
//! ingested, evaluated, and the regression's mechanism read from them.

use std::path::Path;

use crate::common;
use common::faults::Faults;
use common::jira::FakeJira;
use sheriff::domain::incidents::{Incident, Snapshot};

use sheriff::adapters::ingest::{IngestOptions, Source, ingest};
use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::{IngestSettings, IntervalsMode, Settings};
use sheriff::model::{FileAgainst, MechanismKind, RegressionReport, UnknownBecause};
use sheriff::synth::world::{Class, Table, World, WorldSpec, build};

fn spec(seed: u64, class: Class) -> WorldSpec {
    let mut spec = WorldSpec::new(seed, sheriff::synth::day(2026, 11, 29), vec![class]);
    // the other jobs thin (the planted metal scope keeps its 12 runs a day)
    spec.scale = 0.04;
    spec
}

/// The world written, ingested with its intervals, and evaluated at its end.
async fn evaluated(
    store: &sheriff::store::Store,
    world: &World,
    root: &Path,
) -> Vec<RegressionReport> {
    world.write_tree(root).unwrap();
    let settings = Settings::default();
    store
        .trouble()
        .apply(&settings.evaluate.ci_trouble)
        .await
        .unwrap();
    store
        .evaluations()
        .import_thresholds(Table::embedded().unwrap().rows(), "query_results.json")
        .await
        .unwrap();
    let ingest_settings = IngestSettings {
        intervals: IntervalsMode::Eager,
        ..Default::default()
    };
    let summary = ingest(
        store,
        &ingest_settings,
        &Source::Local(root.to_path_buf()),
        &IngestOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(summary.failed, 0, "{:?}", summary.errors.first());
    let report = run_cycle(
        store,
        &sheriff::application::warm::Warm::new(),
        &settings,
        CycleOptions {
            at: world.spec.end,
            dry_run: true,
        },
    )
    .await
    .unwrap();
    report.regressions
}

fn registry(reports: &[RegressionReport]) -> &RegressionReport {
    reports
        .iter()
        .find(|r| r.family == "image-registry")
        .unwrap_or_else(|| panic!("no registry regression in {reports:#?}"))
}

on_both_engines! {
    async fn the_seed_case_is_a_lone_replica_drained_and_its_harness_is_named(db) {
        let mut spec = spec(3, Class::SeedCase);
        // the other platforms dense enough to stand in contrast
        spec.scale = 0.15;
        let world = build(&spec).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let reports = evaluated(&db.store, &world, dir.path()).await;
        let r = registry(&reports);
        let a = &r.attribution;
        let m = a.mechanism.as_ref().expect("a mechanism");
        assert_eq!(m.kind, MechanismKind::SingleReplicaDrained, "{m:#?}");
        assert!(m.runs_examined >= 5 && m.runs_explained * 10 >= m.runs_examined * 9, "{} of {}", m.runs_explained, m.runs_examined);
        assert_eq!((m.replicas_regressed, m.replicas_healthy), (Some(1.0), Some(2.0)));
        assert!(m.summary.contains("one ready replica") && m.summary.contains("drained"), "{}", m.summary);
        assert_eq!(a.file_against, FileAgainst::TestEnvironment);
        // why only metal: the other platforms of the release stayed healthy
        assert!(a.contrast.iter().any(|c| c.platform == "aws"), "{:?}", a.contrast);
        assert!(a.summary.contains("Not the release as a whole: "), "{}", a.summary);
        assert_eq!(a.harness.as_deref(), Some("openshift-metal3/dev-scripts"));
        assert!(a.summary.contains("openshift-metal3/dev-scripts") && a.summary.contains(&m.summary), "{}", a.summary);
        filed_against_the_harness(r, &format!("{:?}", db.store.engine())).await;
        // every clause resolves to the intervals it speaks of, in the run's own file
        assert!(!m.claims.is_empty());
        for claim in &m.claims {
            assert!(!claim.intervals.is_empty(), "{claim:?}");
            let (job, build) = claim.run.rsplit_once('/').unwrap();
            let run_dir = dir.path().join(sheriff::synth::world::BUCKET).join("logs").join(job).join(build);
            for at in &claim.intervals {
                let text = std::fs::read(run_dir.join(&at.file)).unwrap_or_else(|e| panic!("{}: {e}", at.file));
                let file: serde_json::Value = serde_json::from_slice(&text).unwrap();
                let item = &file["items"][at.item as usize];
                let said = item.to_string();
                let named = if claim.text.contains("unreachable") {
                    "image-registry".to_string()
                } else {
                    // the pod or node the clause names
                    claim.text.split_whitespace().find(|w| said.contains(w.trim_matches(',')) && (w.starts_with("image-registry-") || w.starts_with("worker-"))).unwrap_or("?").to_string()
                };
                assert!(said.contains(named.trim_matches(',')), "{:?} → {said}", claim.text);
            }
        }
    }
}

/// The seed case filed in the fake Jira (v3 with a harness component, v2 without): the Ask and
/// the component go to the CI harness, the product is consulted; the mechanism and the healthy
/// platforms follow the four lines.
async fn filed_against_the_harness(r: &RegressionReport, engine: &str) {
    use sheriff::config::{JiraApi, JiraSettings, Secret};
    let incident = Incident::new(1, "sheriff-00000000000000cc", Snapshot::from_report(r));
    for (api, component) in [
        (JiraApi::V3, Some("Installer / openshift-metal3")),
        (JiraApi::V2, None),
    ] {
        let jira = FakeJira::start(
            &format!("mechanism-harness-{api:?}-{engine}"),
            Faults::none(),
        )
        .await;
        let settings = JiraSettings {
            url: jira.url.clone(),
            api,
            project: "OCPBUGS".into(),
            token: Some(Secret::new(common::jira::TOKEN)),
            harness_component: component.map(String::from),
            ..Default::default()
        };
        let sink = sheriff::adapters::notify::JiraSink::new(&settings).unwrap();
        sink.file(&incident, None).await.unwrap();
        let issue = &jira.issues()[0];
        match component {
            Some(c) => assert_eq!(
                issue.fields["components"],
                serde_json::json!([{ "name": c }])
            ),
            None => assert!(issue.fields.get("components").is_none(), "{}", issue.fields),
        }
        let description = match api {
            JiraApi::V2 => issue.fields["description"].as_str().unwrap().to_string(),
            JiraApi::V3 => issue.fields["description"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|block| block.to_string())
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        let lines: Vec<&str> = description.split("\n\n").collect();
        assert!(
            lines[3].contains("Ask: maintainers of the CI harness openshift-metal3/dev-scripts"),
            "{description}"
        );
        assert!(
            lines[3].contains("Image Registry is consulted, not blamed"),
            "{description}"
        );
        assert!(
            lines[4].contains("one ready replica") && lines[4].contains("the drain evicted it"),
            "{description}"
        );
        assert!(
            lines[5].contains("Not the release as a whole: ") && lines[5].contains("aws"),
            "{description}"
        );
        assert!(!description.contains("its timeline"), "{description}");
    }
}

/// Without pod intervals the replicas cannot be followed: the mechanism says so, and the
/// regression stays with the product's owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_pod_intervals_the_mechanism_is_unknown() {
    let db = crate::common::TestDb::sqlite().await;
    let mut spec = spec(3, Class::SeedCase);
    spec.pod_intervals = false;
    let world = build(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let reports = evaluated(&db.store, &world, dir.path()).await;
    let a = &registry(&reports).attribution;
    let m = a.mechanism.as_ref().expect("a mechanism");
    assert_eq!(
        (m.kind, m.unknown_because),
        (MechanismKind::Unknown, Some(UnknownBecause::NoPodIntervals)),
        "{m:#?}"
    );
    assert_ne!(a.file_against, FileAgainst::TestEnvironment);
}

/// Other planted mechanisms rank first over their own worlds (the registry's outages put where
/// a VIP moves, etcd elects a leader, both replicas sit on one drained worker, or the CI's
/// probe is down), whatever the decoys do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_planted_mechanisms_rank_first() {
    let kinds = [
        MechanismKind::ReplicasOnOneNode,
        MechanismKind::VipMoved,
        MechanismKind::EtcdLeaderChange,
        MechanismKind::CiNetwork,
    ];
    let mut right = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        for seed in [11, 12] {
            let db = crate::common::TestDb::sqlite().await;
            let mut spec = spec(seed + 10 * i as u64, Class::SeedCase);
            spec.mechanism = Some(kind);
            let world = build(&spec).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let reports = evaluated(&db.store, &world, dir.path()).await;
            let got = registry(&reports)
                .attribution
                .mechanism
                .as_ref()
                .map(|m| m.kind);
            right.push((kind, seed, got == Some(kind), got));
        }
    }
    let hits = right.iter().filter(|r| r.2).count();
    assert!(hits * 10 >= right.len() * 8, "{right:#?}");
}

/// Origin stops judging a monitor it cannot judge (the registry on single-replica clusters):
/// the scope's runs go on without the backend. The incident says since when there is no data,
/// and neither resolves nor goes stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_whose_backend_vanishes_says_no_data_since_and_stays_open() {
    let db = crate::common::TestDb::sqlite().await;
    let mut spec = spec(5, Class::SeedCase);
    // the other platforms dense enough to be told healthy: the scope is metal's
    spec.scale = 0.25;
    let mut world = build(&spec).unwrap();
    let cut = spec.end - chrono::Duration::days(3);
    let mut dropped = 0;
    for rec in &mut world.records {
        let d = &rec.run.dimensions;
        if rec.run.started_at >= cut && d.platform == "metal" && d.release == "4.15" {
            let before = rec.samples.len();
            rec.samples
                .retain(|s| !s.backend.starts_with("image-registry"));
            dropped += usize::from(rec.samples.len() < before);
        }
    }
    assert!(dropped > 20, "{dropped}");
    let settings = Settings::default();
    db.store
        .trouble()
        .apply(&settings.evaluate.ci_trouble)
        .await
        .unwrap();
    db.store
        .evaluations()
        .import_thresholds(Table::embedded().unwrap().rows(), "query_results.json")
        .await
        .unwrap();
    for chunk in world.records.chunks(1000) {
        db.store.runs().write_runs(chunk, false).await.unwrap();
    }
    let first = run_cycle(
        &db.store,
        &sheriff::application::warm::Warm::new(),
        &settings,
        CycleOptions {
            at: cut,
            dry_run: false,
        },
    )
    .await
    .unwrap();
    assert!(
        first
            .regressions
            .iter()
            .any(|r| r.family == "image-registry"),
        "{:#?}",
        first.regressions
    );
    for day in 1..=3 {
        let at = cut + chrono::Duration::days(day);
        run_cycle(
            &db.store,
            &sheriff::application::warm::Warm::new(),
            &settings,
            CycleOptions { at, dry_run: false },
        )
        .await
        .unwrap();
    }
    let incidents = db.store.incidents().all().await.unwrap();
    let i = incidents
        .iter()
        .find(|i| i.snapshot.family == "image-registry")
        .unwrap();
    assert_eq!(
        i.state,
        sheriff::domain::incidents::State::Ongoing,
        "{:?}",
        i.snapshot.summary
    );
    let since = i.snapshot.report.no_data_since.expect("no data since");
    assert!(
        since < cut && since > cut - chrono::Duration::days(1),
        "{since}"
    );
    assert!(
        i.snapshot.summary.contains("No data since")
            || i.snapshot
                .report
                .attribution
                .summary
                .contains("No data since")
    );
    let events = db.store.incidents().events(i.id).await.unwrap();
    assert!(
        events.iter().any(|e| format!("{e:?}").contains("no_data")),
        "{events:#?}"
    );
}
