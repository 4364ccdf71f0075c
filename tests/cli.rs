//! The `sheriff` binary end to end: `migrate` and `config check`.

mod common;

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
