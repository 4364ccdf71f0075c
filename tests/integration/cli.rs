//! The `sheriff` binary end to end: `migrate`, `config check`, `demo`, `healthcheck`, and what
//! `serve` says at start.

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
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
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
    assert!(
        text(&second).contains("nothing to apply"),
        "{}",
        text(&second)
    );
}

#[test]
fn config_check_rejects_an_unknown_key_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sheriff.toml");
    std::fs::write(&file, "[slack]\nchanel = \"#ci\"\n").unwrap();
    let out = sheriff(
        &["--config", file.to_str().unwrap(), "config", "check"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("slack.chanel"), "{}", text(&out));
}

/// `bench quality --config` scores a file's `[evaluate]` settings: one `config check` would
/// refuse is named, and no world is replayed with it.
#[test]
fn the_scorecard_refuses_evaluate_settings_that_config_check_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trial.toml");
    std::fs::write(&file, "[evaluate]\nmin_recent_runs = 0\n").unwrap();
    let args = ["bench", "quality", "--seeds", "1", "--config"];
    let out = sheriff(&[&args[..], &[file.to_str().unwrap()]].concat(), &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("evaluate.min_recent_runs"), "{shown}");
    // a deployment's other sections are not read; a misspelt evaluation key is named
    std::fs::write(
        &file,
        "[slack]\nbot_token_file = \"/nowhere/token\"\n[evaluate]\nmin_recnt_runs = 3\n",
    )
    .unwrap();
    let out = sheriff(&[&args[..], &[file.to_str().unwrap()]].concat(), &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("min_recnt_runs") && !shown.contains("/nowhere"),
        "{shown}"
    );
    let missing = dir.path().join("missing.toml");
    let out = sheriff(&[&args[..], &[missing.to_str().unwrap()]].concat(), &[]);
    assert!(
        !out.status.success() && text(&out).contains("missing.toml"),
        "{}",
        text(&out)
    );
}

#[test]
fn config_check_rejects_an_invalid_database_url_naming_it() {
    let out = sheriff(
        &["config", "check"],
        &[("SHERIFF__DATABASE__URL", "mysql://root:pw@db/x")],
    );
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
        (
            "SHERIFF__DATABASE__URL",
            "postgres://sheriff:url-password-value@db:5432/sheriff",
        ),
    ];
    // Slack and Jira whole, so the settings are valid and printed
    let complete = [
        ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT"),
        ("SHERIFF__JIRA__URL", "https://issues.example.com"),
        ("SHERIFF__JIRA__PROJECT", "OCPBUGS"),
    ];
    for format in ["text", "json"] {
        let out = sheriff(
            &["config", "check", "--format", format],
            &[&secrets[..], &complete].concat(),
        );
        assert!(out.status.success(), "{}", text(&out));
        let shown = text(&out);
        for (_, secret) in secrets {
            let password = secret.split([':', '@']).nth(2).unwrap_or(secret);
            assert!(
                !shown.contains(secret) && !shown.contains(password),
                "{secret} leaked: {shown}"
            );
        }
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

#[test]
fn list_settings_come_from_the_environment_comma_separated() {
    let out = sheriff(
        &["config", "check", "--format", "json"],
        &[
            ("SHERIFF__SLACK__AUTHORIZED_USERS", "U01ALICE,U02BOB"),
            ("SHERIFF__SLACK__AUTHORIZED_GROUPS", " S0RELEASE "),
            ("SHERIFF__JIRA__FIX_STATUSES", "MODIFIED, ON_QA,Verified"),
            ("SHERIFF__JIRA__LABELS", "sheriff,disruption"),
            ("SHERIFF__EVALUATE__RECENT_DAYS", "2,4"),
            ("SHERIFF__EVALUATE__EXCLUDE", ""),
            (
                "SHERIFF__SLACK__ROUTES",
                r#"[{ channel = "C0METAL", platform = "metal" }]"#,
            ),
            ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT"),
            ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-lists"),
            ("SHERIFF__SLACK__SIGNING_SECRET", "lists-secret"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["settings"];
    assert_eq!(
        s["slack"]["authorized_users"],
        serde_json::json!(["U01ALICE", "U02BOB"])
    );
    assert_eq!(
        s["slack"]["authorized_groups"],
        serde_json::json!(["S0RELEASE"])
    );
    assert_eq!(
        s["jira"]["fix_statuses"],
        serde_json::json!(["MODIFIED", "ON_QA", "Verified"])
    );
    assert_eq!(
        s["jira"]["labels"],
        serde_json::json!(["sheriff", "disruption"])
    );
    assert_eq!(s["evaluate"]["recent_days"], serde_json::json!([2, 4]));
    assert_eq!(s["evaluate"]["exclude"], serde_json::json!([]));
    assert_eq!(
        s["slack"]["routes"],
        serde_json::json!([{ "channel": "C0METAL", "platform": "metal" }])
    );
    // a list element of the wrong kind names the setting and its variable
    let bad = sheriff(
        &["config", "check"],
        &[("SHERIFF__EVALUATE__RECENT_DAYS", "1,two")],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad).contains("evaluate.recent_days"),
        "{}",
        text(&bad)
    );
}

#[test]
fn config_check_refuses_a_half_configured_slack_or_jira_naming_what_is_missing() {
    let token = ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-half-configured");
    let channel = ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT");
    let signing = ("SHERIFF__SLACK__SIGNING_SECRET", "half-configured-signing");
    let jira_url = ("SHERIFF__JIRA__URL", "https://issues.example.com");
    let project = ("SHERIFF__JIRA__PROJECT", "OCPBUGS");
    let jira_token = ("SHERIFF__JIRA__TOKEN", "half-configured-jira");
    for (env, missing) in [
        (vec![token, signing], "slack.channel"),
        (vec![channel], "slack.bot_token"),
        (vec![token, channel], "slack.signing_secret"),
        (vec![jira_url, project], "jira.token"),
        (vec![project, jira_token], "jira.url"),
    ] {
        let out = sheriff(&["config", "check"], &env);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {shown}");
        assert!(
            shown.contains(&format!("`{missing}` is missing")),
            "{env:?}: {shown}"
        );
        for secret in [
            "xoxb-half-configured",
            "half-configured-signing",
            "half-configured-jira",
        ] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        let json = sheriff(&["config", "check", "--format", "json"], &env);
        assert_eq!(json.status.code(), Some(2));
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(v["valid"], false);
        assert!(v["missing"][0].as_str().unwrap().contains(missing), "{v}");
        // and `serve` does not start on it
        let serve = sheriff(
            &["serve"],
            &[
                env.as_slice(),
                &[("SHERIFF__SERVER__LISTEN", "127.0.0.1:0")],
            ]
            .concat(),
        );
        assert_eq!(serve.status.code(), Some(2), "{env:?}: {}", text(&serve));
        assert!(text(&serve).contains(missing), "{}", text(&serve));
    }
    let whole = sheriff(
        &["config", "check"],
        &[token, channel, signing, jira_url, project, jira_token],
    );
    assert!(whole.status.success(), "{}", text(&whole));
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/{name}",
        crate::common::manifest_dir().display()
    )
}

#[test]
fn thresholds_import_reads_every_generation_of_the_historical_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    for (file, rows, schema) in [
        (
            "origin_query_results_era4.12_legacy_excerpt.json",
            12,
            "oldest",
        ),
        (
            "origin_query_results_era4.13_jobruns_excerpt.json",
            35,
            "4.13",
        ),
        (
            "origin_query_results_era4.15-4.16_full_schema_excerpt.json",
            58,
            "current",
        ),
    ] {
        let out = sheriff(
            &["thresholds", "import", &fixture(file)],
            &[("SHERIFF__DATABASE__URL", &url)],
        );
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains(&format!("imported {rows} rows")),
            "{}",
            text(&out)
        );
        assert!(text(&out).contains(schema), "{}", text(&out));
    }
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"BackendName": "x", "Release": "4.14", "P95": "lots", "P99": "1"}]"#,
    )
    .unwrap();
    let out = sheriff(
        &["thresholds", "import", bad.to_str().unwrap()],
        &[("SHERIFF__DATABASE__URL", &url)],
    );
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

    let metal = truth
        .runs
        .iter()
        .filter(|r| r.job.contains("-metal-"))
        .count() as u64;
    let out = sheriff(
        &[
            "ingest",
            tree.to_str().unwrap(),
            "--job=-metal-",
            "--format",
            "json",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ingested"], metal);
    assert_eq!(
        (json["skipped"].as_u64(), json["failed"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(json["errors"].as_array().unwrap().is_empty());

    let recent = truth
        .runs
        .iter()
        .filter(|r| !r.job.contains("-metal-") && r.started_at >= sheriff::synth::day(2026, 11, 8))
        .count() as u64;
    let out = sheriff(
        &[
            "ingest",
            tree.to_str().unwrap(),
            "--since",
            "2026-11-08",
            "--format",
            "json",
        ],
        &env,
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ingested"], recent, "{json}");

    let out = sheriff(&["ingest", "/no/such/folder"], &env);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("neither a gs:// or bq:// URL nor a directory"),
        "{}",
        text(&out)
    );
}

/// Runs `sheriff` unable to read what its permissions forbid: as root (which reads any folder)
/// without the capabilities that let it, else as it is.
fn sheriff_without_override(args: &[&str], env: &[(&str, &str)]) -> Output {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        return sheriff(args, env);
    }
    let mut cmd = Command::new("setpriv");
    cmd.arg("--bounding-set=-dac_override,-dac_read_search")
        .arg(env!("CARGO_BIN_EXE_sheriff"))
        .args(args);
    cmd.env("RUST_LOG", "warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("setpriv (util-linux) runs sheriff")
}

#[test]
fn a_run_folder_that_cannot_be_read_is_named_as_failed_not_left_out() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = sheriff::synth::Scenario::month(5, sheriff::synth::day(2026, 11, 10));
    scenario.days = 2;
    scenario.start = sheriff::synth::day(2026, 11, 8);
    let truth = sheriff::synth::write_tree(&scenario, dir.path()).unwrap();
    let tree = dir.path().join(&scenario.bucket);
    let run = &truth.runs[0];
    let folder = tree.join(&run.path);
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o000)).unwrap();
    let url = format!("sqlite://{}", dir.path().join("i.db").display());
    let out = sheriff_without_override(
        &["ingest", tree.to_str().unwrap(), "--format", "json"],
        &[("SHERIFF__DATABASE__URL", url.as_str())],
    );
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    assert_eq!(json["failed"], 1, "{json}");
    let errors = json["errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e["run"] == run.path.as_str()
            && e["error"].as_str().unwrap().contains("Permission denied")),
        "{json}"
    );
    assert_eq!(json["ingested"], truth.runs.len() as u64 - 1, "{json}");
}

#[test]
fn the_demo_finds_the_planted_regression_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    // Slack configured: the demo still posts nothing, and says so truly
    let out = sheriff(
        &["demo", "--dir", dir.path().to_str().unwrap()],
        &[
            ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-demo-never-used"),
            ("SHERIFF__SLACK__API_URL", "http://127.0.0.1:9/api"),
            ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("no bot token configured"), "{shown}");
    assert!(
        shown.contains("a bot token is configured, but the demo never posts"),
        "{shown}"
    );
    assert!(shown.contains("sheriff.db is console-only"), "{shown}");
    assert!(
        shown.contains("To go live")
            && shown.contains("sheriff serve --config sheriff.toml --cycle-now"),
        "{shown}"
    );
    assert!(
        shown.contains("sheriff ingest --config sheriff.toml gs://test-platform-results/logs"),
        "{shown}"
    );
    // served with Slack on, its console-only incident is pointed out
    let demo_db = format!("sqlite://{}", dir.path().join("sheriff.db").display());
    let slack = [
        ("SHERIFF__DATABASE__URL", demo_db.as_str()),
        ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-demo-never-used"),
        ("SHERIFF__SLACK__API_URL", "http://127.0.0.1:9/api"),
        ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT"),
        ("SHERIFF__SLACK__SIGNING_SECRET", "demo-signing"),
    ];
    let log = serve_log(&[], &slack);
    assert!(
        log.contains("1 open incident(s) (#1) were announced on the console only"),
        "{log}"
    );
    assert!(!serve_log(&[], &slack[1..]).contains("console only"));
    assert!(shown.contains("1 regression(s):"), "{shown}");
    assert!(
        shown.contains("image-registry disruption regressed on metal 4.14"),
        "{shown}"
    );
    assert!(
        shown.contains("image-registry Available=False (NoReplicasAvailable)"),
        "{shown}"
    );
    assert!(shown.contains("Image Registry"), "{shown}");
    assert!(dir.path().join("sheriff.db").exists());
}

#[test]
fn healthcheck_succeeds_against_a_running_server_and_fails_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let env = [
        ("SHERIFF__DATABASE__URL", url.as_str()),
        ("SHERIFF__SERVER__LISTEN", listen.as_str()),
    ];
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

/// `sheriff serve` in an empty folder on a fresh SQLite file, its stderr a pipe; the log it
/// wrote once it answered /healthz, then it is stopped.
fn serve_log(args: &[&str], env: &[(&str, &str)]) -> String {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sheriff"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SHERIFF__") {
            cmd.env_remove(k);
        }
    }
    let mut server = cmd
        .arg("serve")
        .args(args)
        .env("SHERIFF__DATABASE__URL", &url)
        .env("SHERIFF__SERVER__LISTEN", &listen)
        .env("RUST_LOG", "info,sqlx=warn")
        .envs(env.iter().copied())
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let health = [("SHERIFF__SERVER__LISTEN", listen.as_str())];
    let healthy = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        sheriff(&["healthcheck"], &health).status.success()
    });
    let _ = Command::new("kill")
        .args(["-s", "TERM", &server.id().to_string()])
        .status();
    let mut log = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let _ = server.wait();
    assert!(healthy, "sheriff serve never answered /healthz:\n{log}");
    log
}

#[test]
fn serve_logs_its_schedules_next_tick_and_integrations_at_start_without_colour_in_a_pipe() {
    let log = serve_log(&[], &[]);
    // stderr is a pipe, not a terminal: plain text, no colour codes
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a redirected log:\n{log:?}"
    );
    assert!(
        log.contains("sheriff serve listening on http://127.0.0.1:"),
        "{log}"
    );
    assert!(log.contains("schedule evaluate: `0 */6 * * *`"), "{log}");
    assert!(log.contains("schedule prune: `30 3 * * *`"), "{log}");
    assert!(
        log.contains("`serve --cycle-now` runs one at start"),
        "{log}"
    );
    assert!(
        log.contains("integrations: slack off, jira off, pages_auth off, push off"),
        "{log}"
    );
    assert!(log.contains("messages are shown on the console"), "{log}");
}

#[test]
fn serve_start_log_in_json_names_the_next_tick_and_what_is_on() {
    let log = serve_log(
        &[],
        &[
            ("SHERIFF__LOG__FORMAT", "json"),
            ("SHERIFF__SCHEDULE__EVALUATE", "15 */2 * * *"),
            ("SHERIFF__SLACK__API_URL", "http://127.0.0.1:9/api"),
            ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-start-log-secret"),
            ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT"),
            ("SHERIFF__SLACK__SIGNING_SECRET", "start-log-signing"),
            ("SHERIFF__SERVER__PAGES_TOKEN", "start-log-pages"),
        ],
    );
    assert!(
        !log.contains("xoxb-start-log-secret") && !log.contains("start-log-pages"),
        "{log}"
    );
    let events: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let evaluate = events
        .iter()
        .find(|e| e["job"] == "evaluate" && e["cron"].is_string())
        .unwrap_or_else(|| panic!("no schedule line for evaluate:\n{log}"));
    assert_eq!(evaluate["cron"], "15 */2 * * *");
    let next = chrono::DateTime::parse_from_rfc3339(evaluate["next"].as_str().unwrap()).unwrap();
    let now = chrono::Utc::now();
    assert!(
        next > now - chrono::Duration::seconds(30) && next <= now + chrono::Duration::hours(2),
        "{next}"
    );
    assert_eq!(chrono::Timelike::minute(&next), 15, "{next}");
    assert_eq!(chrono::Timelike::hour(&next) % 2, 0, "{next}");
    let on = events
        .iter()
        .find(|e| e["slack"].is_boolean())
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(
        (&on["slack"], &on["jira"], &on["pages_auth"]),
        (&true.into(), &false.into(), &true.into())
    );
    assert!(
        events.iter().any(|e| e["integration"] == "slack"
            && e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("posts to C0DISRUPT")),
        "{log}"
    );
}

#[test]
fn a_backfill_takes_a_bigquery_dataset_and_its_days_only() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("b.db").display());
    let env = [
        ("SHERIFF__DATABASE__URL", url.as_str()),
        ("SHERIFF__BIGQUERY__TOKEN", "t"),
    ];
    let out = sheriff(&["ingest", "bq://p/d", "--from", "2026-11-01"], &env);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--backfill"), "{}", text(&out));
    let out = sheriff(&["ingest", "bq://p/d", "--backfill"], &env);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--from"), "{}", text(&out));
    let out = sheriff(
        &[
            "ingest",
            "bq://p/d",
            "--backfill",
            "--from",
            "2026-11-01",
            "--force",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let folder = dir.path().to_str().unwrap();
    let out = sheriff(
        &["ingest", folder, "--backfill", "--from", "2026-11-01"],
        &env,
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--backfill reads a BigQuery dataset"),
        "{}",
        text(&out)
    );
    let out = sheriff(
        &[
            "ingest",
            "bq://p/d",
            "--backfill",
            "--from",
            "2026-11-01",
            "--to",
            "2099-01-01",
        ],
        &env,
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("bigquery.overlap_hours"),
        "{}",
        text(&out)
    );
}

#[test]
fn resolving_without_a_reason_is_refused_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    for args in [
        &["incidents", "resolve", "1"][..],
        &["incidents", "resolve", "1", "--reason", " "],
    ] {
        let out = sheriff(args, &[("SHERIFF__DATABASE__URL", &url)]);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("`--reason` is required"),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn a_reader_that_closes_stdout_early_ends_sheriff_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader); // closed before sheriff writes a byte, as `| head -c 10` does after ten
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sheriff"))
        .args(["config", "check"])
        .env("RUST_LOG", "warn")
        .current_dir(dir.path())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

#[test]
fn not_a_regression_is_a_command_line_action_too() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let out = sheriff(
        &[
            "incidents",
            "not-a-regression",
            "1",
            "--reason",
            "a lab change",
        ],
        &[("SHERIFF__DATABASE__URL", &url)],
    );
    assert!(text(&out).contains("no incident 1"), "{}", text(&out));
}
