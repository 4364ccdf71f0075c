//! The `sheriff` binary end to end: `migrate` and `config check`.

use std::process::{Command, Output};

fn sheriff(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sheriff"));
    cmd.args(args).env("RUST_LOG", "warn");
    for (k, _) in std::env::vars() {
        if k.starts_with("SHERIFF__") {
            cmd.env_remove(k);
        }
    }
    // Run from an empty folder so the repository's config/sheriff.toml is not picked up.
    let dir = tempfile::tempdir().unwrap();
    cmd.current_dir(dir.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run sheriff")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

on_both_engines! {
    async fn migrate_twice_is_a_no_op_the_second_time(db) {
        let url = db.url();
        db.store.close().await;
        // TestDb already migrated; a fresh file or database would show the first apply too.
        let first = sheriff(&["migrate"], &[("SHERIFF__DATABASE__URL", &url)]);
        assert!(first.status.success(), "{}", text(&first));
        assert!(text(&first).contains("nothing to apply"), "{}", text(&first));
    }
}

#[test]
fn migrate_applies_then_does_nothing_on_a_new_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("new/sheriff.db").display());
    let first = sheriff(&["migrate"], &[("SHERIFF__DATABASE__URL", &url)]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(text(&first).contains("applied"), "{}", text(&first));
    let second = sheriff(&["migrate"], &[("SHERIFF__DATABASE__URL", &url)]);
    assert!(text(&second).contains("nothing to apply"), "{}", text(&second));
}

#[test]
fn config_check_rejects_an_unknown_key_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sheriff.toml");
    std::fs::write(&file, "[slack]\nchanel = \"#ci\"\n").unwrap();
    let out = sheriff(&["--config", file.to_str().unwrap(), "config", "check"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("slack.chanel"), "{}", text(&out));
}

#[test]
fn config_check_rejects_an_invalid_database_url_naming_it() {
    let out = sheriff(&["config", "check"], &[("SHERIFF__DATABASE__URL", "mysql://root:pw@db/x")]);
    assert_eq!(out.status.code(), Some(2));
    let shown = text(&out);
    assert!(shown.contains("database.url"), "{shown}");
    assert!(!shown.contains("pw@"), "password leaked: {shown}");
}

#[test]
fn config_check_never_prints_a_secret() {
    let secrets = [
        ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-secret-token-value"),
        ("SHERIFF__SLACK__SIGNING_SECRET", "signing-secret-value"),
        ("SHERIFF__JIRA__TOKEN", "jira-token-value"),
        ("SHERIFF__DATABASE__PASSWORD", "db-password-value"),
        ("SHERIFF__DATABASE__URL", "postgres://sheriff:url-password-value@db:5432/sheriff"),
    ];
    for format in ["text", "json"] {
        let out = sheriff(&["config", "check", "--format", format], &secrets);
        assert!(out.status.success(), "{}", text(&out));
        let shown = text(&out);
        for (_, secret) in secrets {
            let password = secret.split([':', '@']).nth(2).unwrap_or(secret);
            assert!(!shown.contains(secret) && !shown.contains(password), "{secret} leaked: {shown}");
        }
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", crate::common::manifest_dir().display())
}

#[test]
fn thresholds_import_reads_every_generation_of_the_historical_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    for (file, rows, schema) in [
        ("origin_query_results_era4.12_legacy_excerpt.json", 12, "oldest"),
        ("origin_query_results_era4.13_jobruns_excerpt.json", 35, "4.13"),
        ("origin_query_results_era4.15-4.16_full_schema_excerpt.json", 58, "current"),
    ] {
        let out = sheriff(&["thresholds", "import", &fixture(file)], &[("SHERIFF__DATABASE__URL", &url)]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains(&format!("imported {rows} rows")), "{}", text(&out));
        assert!(text(&out).contains(schema), "{}", text(&out));
    }
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"[{"BackendName": "x", "Release": "4.14", "P95": "lots", "P99": "1"}]"#).unwrap();
    let out = sheriff(&["thresholds", "import", bad.to_str().unwrap()], &[("SHERIFF__DATABASE__URL", &url)]);
    assert!(!out.status.success());
    assert!(text(&out).contains("row 0: P95"), "{}", text(&out));
}

#[test]
fn ingest_prints_the_json_contract_and_honours_job_and_since() {
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = sheriff::synth::Scenario::month(5, sheriff::synth::day(2026, 11, 10));
    scenario.days = 4;
    scenario.start = sheriff::synth::day(2026, 11, 6);
    let truth = sheriff::synth::write_tree(&scenario, dir.path()).unwrap();
    let url = format!("sqlite://{}", dir.path().join("i.db").display());
    let tree = dir.path().join(&scenario.bucket);
    let env = [("SHERIFF__DATABASE__URL", url.as_str())];

    let metal = truth.runs.iter().filter(|r| r.job.contains("-metal-")).count() as u64;
    let out = sheriff(&["ingest", tree.to_str().unwrap(), "--job=-metal-", "--format", "json"], &env);
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ingested"], metal);
    assert_eq!((json["skipped"].as_u64(), json["failed"].as_u64()), (Some(0), Some(0)));
    assert!(json["errors"].as_array().unwrap().is_empty());

    let recent = truth
        .runs
        .iter()
        .filter(|r| !r.job.contains("-metal-") && r.started_at >= sheriff::synth::day(2026, 11, 8))
        .count() as u64;
    let out = sheriff(&["ingest", tree.to_str().unwrap(), "--since", "2026-11-08", "--format", "json"], &env);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ingested"], recent, "{json}");

    let out = sheriff(&["ingest", "/no/such/folder"], &env);
    assert!(!out.status.success());
    assert!(text(&out).contains("neither a gs:// or bq:// URL nor a directory"), "{}", text(&out));
}

#[test]
fn the_demo_finds_the_planted_regression_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let out = sheriff(&["demo", "--dir", dir.path().to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("1 regression(s):"), "{shown}");
    assert!(shown.contains("image-registry disruption regressed on metal 4.14"), "{shown}");
    assert!(shown.contains("image-registry Available=False (NoReplicasAvailable)"), "{shown}");
    assert!(shown.contains("Image Registry"), "{shown}");
    assert!(dir.path().join("sheriff.db").exists());
}

#[test]
fn healthcheck_succeeds_against_a_running_server_and_fails_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let env = [("SHERIFF__DATABASE__URL", url.as_str()), ("SHERIFF__SERVER__LISTEN", listen.as_str())];
    let down = sheriff(&["healthcheck"], &env);
    assert!(!down.status.success());
    let mut server = Command::new(env!("CARGO_BIN_EXE_sheriff"))
        .arg("serve")
        .env("SHERIFF__DATABASE__URL", &url)
        .env("SHERIFF__SERVER__LISTEN", &listen)
        .env("RUST_LOG", "warn")
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let mut healthy = false;
    for _ in 0..100 {
        if sheriff(&["healthcheck"], &env).status.success() {
            healthy = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(healthy, "sheriff serve never answered /healthz on {listen}");
}
