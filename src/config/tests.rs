use super::database::redact_url_password;
use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect()
}

fn write(text: &str) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), text).unwrap();
    f
}

#[test]
fn a_secret_given_as_a_whole_section_is_not_echoed() {
    let e = Settings::load_from(
        Some(write("").path()),
        &env(&[("SHERIFF__SLACK", "xoxb-123-secret")]),
    )
    .unwrap_err()
    .to_string();
    assert!(!e.contains("xoxb-123-secret"), "{e}");
    assert!(e.contains("slack") && e.contains("SHERIFF__SLACK"), "{e}");
}

#[test]
fn list_settings_are_read_from_the_environment_comma_separated() {
    let s = Settings::load_from(
        None,
        &env(&[
            ("SHERIFF__SLACK__AUTHORIZED_USERS", "U01ALICE, U02BOB,,"),
            ("SHERIFF__SLACK__AUTHORIZED_GROUPS", "S0RELEASE"),
            ("SHERIFF__JIRA__FIX_STATUSES", "MODIFIED,ON_QA"),
            ("SHERIFF__JIRA__LABELS", ""),
            ("SHERIFF__EVALUATE__RECENT_DAYS", "1, 3"),
            ("SHERIFF__EVALUATE__PERCENTILES", "P50,P99"),
            ("SHERIFF__EVALUATE__CI_TROUBLE__LIVENESS", "*-liveness-*"),
            (
                "SHERIFF__SLACK__ROUTES",
                r#"[{ channel = "C0METAL", platform = "metal" }]"#,
            ),
        ]),
    )
    .unwrap();
    assert_eq!(s.slack.authorized_users, ["U01ALICE", "U02BOB"]);
    assert_eq!(s.slack.authorized_groups, ["S0RELEASE"]);
    assert_eq!(s.jira.fix_statuses, ["MODIFIED", "ON_QA"]);
    assert!(s.jira.labels.is_empty());
    assert_eq!(s.evaluate.recent_days, [1, 3]);
    assert_eq!(
        s.evaluate.percentiles,
        [crate::model::Percentile::P50, crate::model::Percentile::P99]
    );
    assert_eq!(s.evaluate.ci_trouble.liveness, ["*-liveness-*"]);
    assert_eq!(s.slack.routes.len(), 1);
    assert_eq!(
        (
            s.slack.routes[0].channel.as_str(),
            s.slack.routes[0].platform.as_deref()
        ),
        ("C0METAL", Some("metal"))
    );
    // a user id that reads as a number stays a string
    let s = Settings::load_from(
        None,
        &env(&[("SHERIFF__JIRA__NEVER_REOPEN", "42,Won't Fix")]),
    )
    .unwrap();
    assert_eq!(s.jira.never_reopen, ["42", "Won't Fix"]);
    // a bad element is named with its variable
    let err = Settings::load_from(None, &env(&[("SHERIFF__EVALUATE__RECENT_DAYS", "1,two")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("evaluate.recent_days") && err.contains("SHERIFF__EVALUATE__RECENT_DAYS"),
        "{err}"
    );
}

#[test]
fn half_configured_slack_or_jira_names_the_missing_setting() {
    let missing = |pairs: &[(&str, &str)]| {
        Settings::load_from(None, &env(pairs))
            .unwrap()
            .half_configured()
    };
    let token = ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-1");
    let channel = ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT");
    let signing = ("SHERIFF__SLACK__SIGNING_SECRET", "s3cret");
    let jira_url = ("SHERIFF__JIRA__URL", "https://issues.example.com");
    let project = ("SHERIFF__JIRA__PROJECT", "OCPBUGS");
    let jira_token = ("SHERIFF__JIRA__TOKEN", "t0ken");
    assert!(missing(&[]).is_empty());
    assert!(missing(&[token, channel, signing, jira_url, project, jira_token]).is_empty());
    for (given, key) in [
        (vec![token, signing], "`slack.channel`"),
        (vec![channel], "`slack.bot_token`"),
        (vec![signing], "`slack.bot_token`"),
        (vec![token, channel], "`slack.signing_secret`"),
        (vec![project], "`jira.url`"),
        (vec![jira_token], "`jira.url`"),
        (vec![jira_url, project], "`jira.token`"),
        (
            vec![jira_url, project, jira_token, ("SHERIFF__JIRA__API", "v3")],
            "`jira.user`",
        ),
    ] {
        let found = missing(&given);
        assert_eq!(found.len(), 1, "{given:?}: {found:?}");
        assert!(found[0].contains(key), "{given:?}: {found:?}");
    }
    // a route is a channel too, but the default channel is still needed for the rest
    let routes = (
        "SHERIFF__SLACK__ROUTES",
        r#"[{ channel = "C0METAL", platform = "metal" }]"#,
    );
    assert!(missing(&[routes])[0].contains("`slack.bot_token`"));
    assert!(missing(&[routes, token, signing])[0].contains("`slack.channel`"));
    let shown = missing(&[token]).join("\n");
    assert!(!shown.contains("xoxb-1"), "{shown}");
}

#[test]
fn defaults_use_a_sqlite_file() {
    let s = Settings::load_from(Some(write("").path()), &[]).unwrap();
    assert_eq!(s.database.url.engine(), Engine::Sqlite);
    assert_eq!(s.server.listen, "127.0.0.1:8080");
}

#[test]
fn environment_overrides_the_file() {
    let f = write("[server]\nlisten = \"127.0.0.1:9000\"\n");
    let s = Settings::load_from(
        Some(f.path()),
        &env(&[
            ("SHERIFF__SERVER__LISTEN", "0.0.0.0:8081"),
            (
                "SHERIFF__DATABASE__URL",
                "postgres://sheriff@db:5432/sheriff",
            ),
        ]),
    )
    .unwrap();
    assert_eq!(s.server.listen, "0.0.0.0:8081");
    assert_eq!(s.database.url.engine(), Engine::Postgres);
}

#[test]
fn an_unknown_key_is_an_error_naming_it() {
    let err = Settings::load_from(Some(write("[database]\nurll = \"x\"\n").path()), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("urll"), "{err}");
    let err = Settings::load_from(None, &env(&[("SHERIFF__SLACK__CHANEL", "x")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("chanel"), "{err}");
}

#[test]
fn an_invalid_database_url_is_an_error_naming_the_key() {
    let err = Settings::load_from(None, &env(&[("SHERIFF__DATABASE__URL", "mysql://x/y")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("database.url"), "{err}");
    assert!(err.contains("mysql://x/y"), "{err}");
}

#[test]
fn a_secret_in_the_file_is_refused() {
    let err = Settings::load_from(Some(write("[slack]\nbot_token = \"xoxb-1\"\n").path()), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("slack.bot_token"), "{err}");
    assert!(!err.contains("xoxb-1"), "{err}");
}

#[test]
fn secrets_never_print() {
    let secret_file = write("from-a-file\n");
    let s = Settings::load_from(
        None,
        &env(&[
            ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-very-secret"),
            ("SHERIFF__JIRA__TOKEN", "12345"),
            (
                "SHERIFF__SLACK__SIGNING_SECRET_FILE",
                secret_file.path().to_str().unwrap(),
            ),
            ("SHERIFF__DATABASE__URL", "postgres://u:hunter2@db/sheriff"),
        ]),
    )
    .unwrap();
    assert_eq!(
        s.slack.bot_token.as_ref().unwrap().expose(),
        "xoxb-very-secret"
    );
    assert_eq!(s.jira.token.as_ref().unwrap().expose(), "12345");
    assert_eq!(
        s.slack.signing_secret.as_ref().unwrap().expose(),
        "from-a-file"
    );
    let shown = format!("{}\n{:?}", s.to_redacted_toml(), s);
    for secret in ["xoxb-very-secret", "12345", "from-a-file", "hunter2"] {
        assert!(!shown.contains(secret), "{secret} leaked:\n{shown}");
    }
    assert!(shown.contains("[redacted]"));
}

#[test]
fn control_backends_follow_the_connection_type_and_never_control_themselves() {
    let a = AttributeSettings::default();
    assert_eq!(
        crate::domain::attribute::components::control_for(
            &a.controls,
            "image-registry-new-connections"
        )
        .as_deref(),
        Some("ingress-to-console-new-connections")
    );
    assert_eq!(
        crate::domain::attribute::components::control_for(
            &a.controls,
            "image-registry-reused-connections"
        )
        .as_deref(),
        Some("ingress-to-console-reused-connections")
    );
    assert_eq!(
        crate::domain::attribute::components::control_for(
            &a.controls,
            "ingress-to-console-new-connections"
        )
        .as_deref(),
        Some("kube-api-new-connections")
    );
    let s = Settings::load_from(
        Some(write("[attribute]\nfile_against = \"platform\"\n[[attribute.controls]]\nbackend = \"*\"\ncontrol = \"ingress-to-console-new-connections\"\n").path()),
        &[],
    )
    .unwrap();
    assert_eq!(s.attribute.file_against, FileAgainst::Platform);
    assert_eq!(
        crate::domain::attribute::components::control_for(
            &s.attribute.controls,
            "ingress-to-console-new-connections"
        ),
        None
    );
}

#[test]
fn a_bad_value_names_its_key() {
    let err = Settings::load_from(
        None,
        &env(&[("SHERIFF__DATABASE__MAX_CONNECTIONS", "lots")]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("database.max_connections"), "{err}");
    let err = Settings::load_from(None, &env(&[("SHERIFF__SERVER__LISTEN", "nowhere")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.listen"), "{err}");
}

#[test]
fn passwords_in_any_part_of_a_database_url_are_redacted() {
    for (url, leak) in [
        ("postgres://u:s3cr3t@h:5432/db", "s3cr3t"),
        (
            "postgres://u@127.0.0.1:1/db?password=LEAK&sslmode=disable",
            "LEAK",
        ),
        ("postgres://sheriff:s3cr3t/pw@h/db", "s3cr3t/pw"),
        ("postgres://sheriff:p@ss@h/db", "p@ss"),
    ] {
        let shown = redact_url_password(url);
        assert!(!shown.contains(leak), "{url} shows {shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
    assert_eq!(
        redact_url_password("postgres://u@h/db?sslmode=disable"),
        "postgres://u@h/db?sslmode=disable"
    );
    assert_eq!(
        redact_url_password("sqlite://sheriff.db"),
        "sqlite://sheriff.db"
    );
}

#[test]
fn a_secret_put_in_a_file_variable_is_not_echoed() {
    let err = Settings::load_from(
        None,
        &env(&[("SHERIFF__SLACK__BOT_TOKEN_FILE", "xoxb-oops-1234")]),
    )
    .unwrap_err()
    .to_string();
    assert!(!err.contains("xoxb-oops-1234"), "{err}");
    assert!(err.contains("slack.bot_token"), "{err}");
}

#[test]
fn a_missing_or_empty_credential_never_matches_a_secret() {
    let empty = Secret::new("");
    assert!(!empty.matches(None));
    assert!(!empty.matches(Some("")));
    let token = Secret::new("tok");
    assert!(!token.matches(None));
    assert!(!token.matches(Some("")));
    assert!(!token.matches(Some("to")));
    assert!(token.matches(Some("tok")));
}

#[test]
fn a_base64_token_with_slashes_put_in_a_file_variable_is_not_echoed() {
    for token in ["LEAK3/Zm9vYmFy+/==", "/Zm9vYmFyYmF6", "./Zm9v/YmFy"] {
        let err = Settings::load_from(None, &env(&[("SHERIFF__JIRA__TOKEN_FILE", token)]))
            .unwrap_err()
            .to_string();
        assert!(!err.contains(token), "{err}");
        assert!(err.contains("jira.token"), "{err}");
    }
    // a real path in a real folder is still shown, so a typo can be found
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("tokn");
    let err = Settings::load_from(
        None,
        &env(&[("SHERIFF__JIRA__TOKEN_FILE", missing.to_str().unwrap())]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
}

#[test]
fn an_empty_secret_is_an_error_naming_its_key() {
    for (var, key) in [
        ("SHERIFF__INGEST__PUSH_TOKEN", "ingest.push_token"),
        ("SHERIFF__SERVER__PAGES_TOKEN", "server.pages_token"),
        ("SHERIFF__SLACK__SIGNING_SECRET", "slack.signing_secret"),
        ("SHERIFF__DATABASE__PASSWORD", "database.password"),
    ] {
        for value in ["", "  "] {
            let err = Settings::load_from(None, &env(&[(var, value)])).unwrap_err();
            assert!(
                matches!(err, ConfigError::EmptySecret { .. }),
                "{var}={value:?}: {err}"
            );
            let text = err.to_string();
            assert!(text.contains(key) && text.contains(var), "{text}");
        }
    }
}

#[test]
fn an_empty_secret_file_or_one_with_a_blank_first_line_is_an_error_naming_its_key() {
    for content in ["", "\n", "   \nthe-token\n"] {
        let file = write(content);
        let err = Settings::load_from(
            None,
            &env(&[(
                "SHERIFF__SERVER__PAGES_TOKEN_FILE",
                file.path().to_str().unwrap(),
            )]),
        )
        .unwrap_err();
        assert!(
            matches!(err, ConfigError::EmptySecretFile { .. }),
            "{content:?}: {err}"
        );
        assert!(err.to_string().contains("server.pages_token_file"), "{err}");
    }
    let file = write("the-token\n");
    let s = Settings::load_from(
        None,
        &env(&[(
            "SHERIFF__SERVER__PAGES_TOKEN_FILE",
            file.path().to_str().unwrap(),
        )]),
    )
    .unwrap();
    assert_eq!(s.server.pages_token.unwrap().expose(), "the-token");
}

#[test]
fn numbers_that_would_overflow_a_date_or_a_timer_are_refused_naming_their_key() {
    for (var, value, key) in [
        (
            "SHERIFF__EVALUATE__WINDOW_DAYS",
            "4294967295",
            "evaluate.window_days",
        ),
        (
            "SHERIFF__EVALUATE__BASELINE_DAYS",
            "4294967295",
            "evaluate.baseline_days",
        ),
        (
            "SHERIFF__SERVER__IDLE_TIMEOUT_SECS",
            "9223372036854775807",
            "server.idle_timeout_secs",
        ),
        (
            "SHERIFF__SERVER__HEADER_TIMEOUT_SECS",
            "9223372036854775807",
            "server.header_timeout_secs",
        ),
        ("SHERIFF__SLACK__TIMEOUT_SECS", "inf", "slack.timeout_secs"),
        ("SHERIFF__SLACK__TIMEOUT_SECS", "nan", "slack.timeout_secs"),
        ("SHERIFF__JIRA__TIMEOUT_SECS", "-5", "jira.timeout_secs"),
        (
            "SHERIFF__OUTBOX__LEASE_SECS",
            "9223372036854775807",
            "outbox.lease_secs",
        ),
    ] {
        let err = Settings::load_from(None, &env(&[(var, value)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{var}={value}: {err}");
    }
}

#[test]
fn the_intervals_table_is_read_from_bigquery_only_as_a_plain_table_path() {
    let ok = env(&[
        ("SHERIFF__INGEST__INTERVALS", "bigquery"),
        (
            "SHERIFF__BIGQUERY__INTERVALS_TABLE",
            "ci_data_autodl.e2e_intervals",
        ),
    ]);
    let settings = Settings::load_from(None, &ok).unwrap();
    assert_eq!(settings.ingest.intervals, IntervalsMode::Bigquery);
    assert!(
        !settings.ingest.intervals.on_demand(false) && settings.ingest.intervals.on_demand(true)
    );
    for table in ["p.d.t", "d.t`; DROP TABLE x", "", "d."] {
        let err = Settings::load_from(None, &env(&[("SHERIFF__BIGQUERY__INTERVALS_TABLE", table)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`bigquery.intervals_table`"), "{table}: {err}");
    }
}

#[test]
fn ci_trouble_rules_and_limits_out_of_range_are_refused_naming_their_key() {
    for (var, value, key) in [
        (
            "SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_HORIZON_DAYS",
            "-9223372036854775807",
            "evaluate.ci_trouble.broken_horizon_days",
        ),
        (
            "SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_HORIZON_DAYS",
            "0",
            "evaluate.ci_trouble.broken_horizon_days",
        ),
        (
            "SHERIFF__EVALUATE__CI_TROUBLE__LIVENESS_ALLOWANCE_SECONDS",
            "-5",
            "evaluate.ci_trouble.liveness_allowance_seconds",
        ),
        (
            "SHERIFF__EVALUATE__CI_TROUBLE__ALL_BACKENDS_SHARE",
            "5",
            "evaluate.ci_trouble.all_backends_share",
        ),
        (
            "SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_SHARE",
            "-0.5",
            "evaluate.ci_trouble.broken_share",
        ),
    ] {
        let err = Settings::load_from(None, &env(&[(var, value)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{var}={value}: {err}");
    }
    for text in [
        "[evaluate.ci_trouble]\nbroken_share = nan\n",
        "[[evaluate.limits]]\nbackend = \"x\"\npercentile = \"P50\"\nseconds = nan\n",
        "[[evaluate.limits]]\nbackend = \"x\"\npercentile = \"P50\"\nseconds = -1.0\n",
    ] {
        let file = write(text);
        let err = Settings::load_from(Some(file.path()), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("broken_share") || err.contains("evaluate.limits.seconds"),
            "{text}: {err}"
        );
    }
    Settings::load_from(
        None,
        &env(&[("SHERIFF__EVALUATE__CI_TROUBLE__BROKEN_HORIZON_DAYS", "28")]),
    )
    .unwrap();
}

#[test]
fn a_bad_time_zone_is_reported_under_its_own_key() {
    let err = Settings::load_from(
        None,
        &env(&[("SHERIFF__SCHEDULE__TIMEZONE", "Mars/Olympus")]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`schedule.timezone`"), "{err}");
    for (var, key) in [
        ("SHERIFF__SCHEDULE__EVALUATE", "`schedule.evaluate`"),
        ("SHERIFF__RETENTION__SCHEDULE", "`retention.schedule`"),
    ] {
        let err = Settings::load_from(None, &env(&[(var, "0 0 30 2 *")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(key) && err.contains("never fires"),
            "{var}: {err}"
        );
    }
}

#[test]
fn urls_are_http_with_a_host_and_https_where_a_credential_goes() {
    for (var, value, key) in [
        ("SHERIFF__SLACK__API_URL", "http://", "slack.api_url"),
        (
            "SHERIFF__SERVER__PUBLIC_URL",
            "javascript:alert(1)",
            "server.public_url",
        ),
        (
            "SHERIFF__SLACK__WORKSPACE_URL",
            "javascript:alert(1)",
            "slack.workspace_url",
        ),
        (
            "SHERIFF__RELEASE_CONTROLLER__URLS__AMD64",
            "ftp://x",
            "release_controller.urls.amd64",
        ),
    ] {
        let err = Settings::load_from(None, &env(&[(var, value)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{var}={value}: {err}");
    }
    let with_token = |url: &str| {
        Settings::load_from(
            None,
            &env(&[
                ("SHERIFF__SLACK__API_URL", url),
                ("SHERIFF__SLACK__BOT_TOKEN", "xoxb-1"),
            ]),
        )
    };
    assert!(
        with_token("http://slack.example.com/api")
            .unwrap_err()
            .to_string()
            .contains("https")
    );
    with_token("https://slack.example.com/api").unwrap();
    with_token("http://127.0.0.1:9000/api").unwrap();
    with_token("http://localhost:9000/api").unwrap();
    with_token("http://[::1]:9000/api").unwrap();
    // the client sends these to slack.example.com, over plain http
    for disguised in [
        "http://slack.example.com\\@localhost/api",
        "http://slack.example.com\\@127.0.0.1/api",
    ] {
        let err = with_token(disguised).unwrap_err().to_string();
        assert!(err.contains("https"), "{disguised}: {err}");
    }
    // without a credential, plain http is fine (a proxy inside the cluster)
    Settings::load_from(
        None,
        &env(&[("SHERIFF__SLACK__API_URL", "http://slack-proxy/api")]),
    )
    .unwrap();
}

#[test]
fn github_takes_its_token_from_the_environment_or_a_file_over_https_and_checks_its_repositories() {
    let s = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TOKEN", "ghp_x")])).unwrap();
    assert_eq!(s.github.token.as_ref().map(Secret::expose), Some("ghp_x"));
    assert!(!s.github.enabled, "off until turned on");
    assert_eq!(s.github.api_url, "https://api.github.com");
    assert_eq!(
        s.github.repositories[0].repository,
        "openshift-metal3/dev-scripts"
    );
    let file = write("ghp_from_file\n");
    let path = file.path().to_string_lossy().to_string();
    let s = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TOKEN_FILE", &path)])).unwrap();
    assert_eq!(
        s.github.token.as_ref().map(Secret::expose),
        Some("ghp_from_file")
    );
    let err = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TOKEN", " ")])).unwrap_err();
    assert!(matches!(err, ConfigError::EmptySecret { .. }), "{err}");
    let in_file = Settings::load_from(Some(write("[github]\ntoken = \"ghp_x\"\n").path()), &[]);
    assert!(in_file.unwrap_err().to_string().contains("github.token"));
    let plain = env(&[
        ("SHERIFF__GITHUB__API_URL", "http://github.example.com"),
        ("SHERIFF__GITHUB__TOKEN", "ghp_x"),
    ]);
    assert!(
        Settings::load_from(None, &plain)
            .unwrap_err()
            .to_string()
            .contains("github.api_url")
    );
    let slow = Settings::load_from(None, &env(&[("SHERIFF__GITHUB__TIMEOUT_SECS", "0")]));
    assert!(
        slow.unwrap_err()
            .to_string()
            .contains("github.timeout_secs")
    );
    for bad in [
        "[[github.repositories]]\nplatform = \"metal\"\nrepository = \"dev-scripts\"\n",
        "[[github.repositories]]\nplatform = \"*\"\nrepository = \"o/r\"\npath = \"../x\"\n",
        "[[github.repositories]]\nplatform = \"\"\nrepository = \"o/r\"\n",
    ] {
        let err = Settings::load_from(Some(write(bad).path()), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("github.repositories"), "{bad}: {err}");
    }
}

#[test]
fn a_trial_of_evaluation_settings_reads_only_the_evaluate_section() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trial.toml");
    std::fs::write(
        &file,
        "[slack]\nbot_token_file = \"/nowhere/token\"\n[evaluate]\nmin_recent_runs = 3\n",
    )
    .unwrap();
    let evaluate = Settings::evaluate_from(&file).unwrap();
    assert_eq!(evaluate.min_recent_runs, 3);
    assert_eq!(
        evaluate.recent_days,
        EvaluateSettings::default().recent_days,
        "the rest stays at the defaults"
    );
    std::fs::write(&file, "[slack]\nchannel = \"#ci\"\n").unwrap();
    assert_eq!(
        Settings::evaluate_from(&file).unwrap().min_recent_runs,
        EvaluateSettings::default().min_recent_runs,
        "no [evaluate]: the defaults"
    );
}
