//! `sheriff serve`: started in-process (`spawn_app`) for what needs no process of its own — a
//! second replica on one SQLite file refused, scheduled ingests, `/readyz` while the database
//! is down — and run as operators run it, as real processes, for what does: two replicas on
//! PostgreSQL evaluating each tick once and delivering each side effect once when the one
//! running a cycle is SIGKILLed, SIGTERM during a cycle, `/metrics`, request ids in the
//! structured logs, and `--cycle-now`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::faults::Faults;
use common::jira::FakeJira;
use common::slack::FakeSlack;
use sheriff::store::Store;
use sheriff::synth;

/// One `sheriff serve` process, its port and its log (JSON lines).
struct Replica {
    name: String,
    child: Child,
    port: u16,
    log: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Replica {
    fn start(name: &str, dir: &Path, env: &[(String, String)]) -> Replica {
        Replica::start_with(name, dir, env, &[])
    }

    /// Like [`Replica::start`], with more arguments after `serve`.
    fn start_with(name: &str, dir: &Path, env: &[(String, String)], args: &[&str]) -> Replica {
        let port = free_port();
        let log = dir.join(format!("{name}.log"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sheriff"));
        for (k, _) in std::env::vars() {
            if k.starts_with("SHERIFF__") {
                cmd.env_remove(k);
            }
        }
        // An empty folder: the repository's config/sheriff.toml is not read.
        cmd.arg("serve")
            .args(args)
            .current_dir(dir)
            .env("RUST_LOG", "info,sqlx=warn")
            .env("SHERIFF__LOG__FORMAT", "json")
            .env("HOSTNAME", name)
            .env("SHERIFF__SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        let child = cmd.spawn().expect("start sheriff serve");
        Replica {
            name: name.into(),
            child,
            port,
            log,
        }
    }

    /// Its name in leases: host and process id.
    fn holder(&self) -> String {
        format!("{}-{}", self.name, self.child.id())
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    async fn wait_healthy(&mut self) {
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Ok(r) = client.get(self.url("/healthz")).send().await
                && r.status().is_success()
            {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "{} exited ({status}) before serving:\n{}",
                    self.name,
                    self.log_text()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{} never became healthy",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Waits for the process to end, at most `limit`.
    async fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Settings for a replica: the database, a tick every second, the fakes.
fn service_env(url: &str, slack: &FakeSlack, jira: &FakeJira) -> Vec<(String, String)> {
    [
        ("SHERIFF__DATABASE__URL", url.to_string()),
        ("SHERIFF__SCHEDULE__EVALUATE", "* * * * * *".into()),
        ("SHERIFF__SLACK__API_URL", slack.api_url()),
        ("SHERIFF__SLACK__BOT_TOKEN", common::slack::TOKEN.into()),
        ("SHERIFF__SLACK__CHANNEL", "C0DISRUPT".into()),
        ("SHERIFF__SLACK__MIN_POST_INTERVAL_MS", "0".into()),
        (
            "SHERIFF__SLACK__SIGNING_SECRET",
            "serve-test-signing-secret".into(),
        ),
        ("SHERIFF__JIRA__URL", jira.url.clone()),
        ("SHERIFF__JIRA__TOKEN", common::jira::TOKEN.into()),
        ("SHERIFF__JIRA__PROJECT", "OCPBUGS".into()),
        ("SHERIFF__OUTBOX__LEASE_SECS", "3".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A month of runs ending today with the metal registry regression in its last week.
async fn load_regression(store: &Store) {
    let today = chrono::Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    common::load_metal_regression(store, 11, today + chrono::Duration::days(1)).await;
}

/// What the replicas left in the database: ticks claimed (and by whom) and cycles recorded.
enum Raw {
    Postgres(sqlx::PgPool),
    Sqlite(sqlx::SqlitePool),
}

const TICKS: &str = "SELECT name, holder FROM leases WHERE name LIKE 'evaluate@%'";
const CYCLES: &str = "SELECT evaluated_at FROM eval_cycles";

impl Raw {
    async fn connect(url: &str) -> Raw {
        if url.starts_with("postgres") {
            Raw::Postgres(sqlx::PgPool::connect(url).await.unwrap())
        } else {
            Raw::Sqlite(sqlx::SqlitePool::connect(url).await.unwrap())
        }
    }

    /// Tick (Unix seconds) → the replica that claimed it.
    async fn ticks(&self) -> BTreeMap<i64, String> {
        let rows: Vec<(String, String)> = match self {
            Raw::Postgres(p) => sqlx::query_as(TICKS).fetch_all(p).await.unwrap(),
            Raw::Sqlite(p) => sqlx::query_as(TICKS).fetch_all(p).await.unwrap(),
        };
        rows.into_iter()
            .map(|(name, holder)| (name["evaluate@".len()..].parse().unwrap(), holder))
            .collect()
    }

    async fn cycles(&self) -> Vec<i64> {
        match self {
            Raw::Postgres(p) => sqlx::query_scalar(CYCLES).fetch_all(p).await.unwrap(),
            Raw::Sqlite(p) => sqlx::query_scalar(CYCLES).fetch_all(p).await.unwrap(),
        }
    }

    /// The tick being evaluated now and who has it: claimed, with no cycle recorded at or after it.
    async fn cycle_in_progress(&self) -> Option<(i64, String)> {
        let (tick, holder) = self.ticks().await.into_iter().next_back()?;
        let done = self.cycles().await.iter().any(|&at| at >= tick);
        (!done).then_some((tick, holder))
    }

    /// Each recorded cycle under the tick it ran for (the latest claimed tick at or before it).
    async fn cycles_by_tick(&self) -> BTreeMap<i64, usize> {
        let ticks = self.ticks().await;
        let mut by_tick = BTreeMap::new();
        for at in self.cycles().await {
            let tick = *ticks
                .range(..=at)
                .next_back()
                .expect("a cycle without a claimed tick")
                .0;
            *by_tick.entry(tick).or_default() += 1;
        }
        by_tick
    }
}

/// Waits for `condition`, at most `limit`.
async fn wait_until<F, Fut>(limit: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !condition().await {
        assert!(started.elapsed() < limit, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Scrapes `/metrics` and parses every sample line into name{labels} → value.
/// Checks the exposition against Prometheus' conventions: `promtool check metrics` when it is
/// installed (CI installs it) reports nothing, and in any case every family has its HELP and
/// TYPE and every counter ends in `_total`.
fn check_conventions(text: &str) {
    let mut families: BTreeMap<String, (bool, Option<String>)> = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.splitn(4, ' ');
        match (words.next(), words.next(), words.next(), words.next()) {
            (Some("#"), Some("HELP"), Some(name), Some(help)) if !help.trim().is_empty() => {
                families.entry(name.into()).or_default().0 = true;
            }
            (Some("#"), Some("TYPE"), Some(name), Some(kind)) => {
                families.entry(name.into()).or_default().1 = Some(kind.to_string());
            }
            _ => {}
        }
    }
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_count", "_sum", "_bucket"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|f| families.contains_key(*f))
            .unwrap_or(name);
        let (help, kind) = families
            .get(family)
            .unwrap_or_else(|| panic!("{family} has no HELP or TYPE"));
        assert!(*help, "{family} has no HELP text");
        assert!(kind.is_some(), "{family} has no TYPE");
        if kind.as_deref() == Some("counter") {
            assert!(
                family.ends_with("_total"),
                "counter {family} does not end in _total"
            );
        }
    }
    if let Ok(mut child) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.trim().is_empty(),
            "promtool check metrics: {said}"
        );
    }
}

async fn scrape(url: &str) -> BTreeMap<String, f64> {
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    check_conventions(&text);
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (series, value) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("not a sample line: {l}"));
            (
                series.to_string(),
                value
                    .parse::<f64>()
                    .unwrap_or_else(|_| panic!("not a number: {l}")),
            )
        })
        .collect()
}

/// Slack messages by metadata key and Jira issues: each side effect exactly once.
fn assert_delivered_once(slack: &FakeSlack, jira: &FakeJira, incidents: usize) {
    let by_key = slack.count_by_key();
    assert!(!by_key.is_empty(), "nothing was posted");
    for (key, n) in &by_key {
        assert_eq!(*n, 1, "Slack message {key} posted {n} times");
    }
    assert_eq!(
        jira.issues().len(),
        incidents,
        "one Jira issue per incident"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_evaluate_each_tick_once_and_carry_on_when_the_leader_dies() {
    let Some(db) = common::TestDb::postgres().await else {
        eprintln!("skipped: {} is not set", common::POSTGRES_ENV);
        return;
    };
    load_regression(&db.store).await;
    let slack = FakeSlack::start("serve-replicas", Faults::none()).await;
    let jira = FakeJira::start("serve-replicas", Faults::none()).await;
    let env = service_env(&db.url(), &slack, &jira);
    let dir = tempfile::tempdir().unwrap();
    let mut replicas = [
        Replica::start("replica-a", dir.path(), &env),
        Replica::start("replica-b", dir.path(), &env),
    ];
    for r in &mut replicas {
        r.wait_healthy().await;
    }
    let raw = Raw::connect(&db.url()).await;

    // a few cycles with both, then the one evaluating is killed in the middle of its cycle
    wait_until(Duration::from_secs(120), "5 cycles", || async {
        raw.cycles().await.len() >= 5
    })
    .await;
    // the first side effects are out; whichever replica sent them counted the calls
    wait_until(Duration::from_secs(60), "the first deliveries", || async {
        let o = db
            .store
            .outbox()
            .counts(chrono::Utc::now().timestamp())
            .await
            .unwrap();
        o.pending == 0 && !jira.issues().is_empty()
    })
    .await;
    let mut calls = BTreeSet::new();
    for r in &replicas {
        calls.extend(scrape(&r.url("/metrics")).await.into_keys());
    }
    let started = Instant::now();
    let (killed_tick, leader) = loop {
        if let Some(found) = raw.cycle_in_progress().await {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no cycle in progress seen"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let dead = replicas
        .iter()
        .position(|r| r.holder() == leader)
        .expect("the leader is one of ours");
    replicas[dead].signal("KILL");
    replicas[dead]
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("killed");
    let survivor = 1 - dead;

    // the survivor takes every later tick: 20 cycles in all
    wait_until(Duration::from_secs(180), "20 cycles", || async {
        raw.cycles().await.len() >= 20
    })
    .await;
    // and delivers what the dead one left (its claims lapse after the lease)
    wait_until(
        Duration::from_secs(60),
        "Slack and Jira delivery",
        || async {
            let o = db
                .store
                .outbox()
                .counts(chrono::Utc::now().timestamp())
                .await
                .unwrap();
            o.pending == 0 && !jira.issues().is_empty()
        },
    )
    .await;
    let metrics = scrape(&replicas[survivor].url("/metrics")).await;
    replicas[survivor].signal("TERM");
    let status = replicas[survivor]
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("stops within 10 s");
    assert!(status.success(), "{status}");

    let ticks = raw.ticks().await;
    let by_tick = raw.cycles_by_tick().await;
    assert!(by_tick.values().sum::<usize>() >= 20);
    for (tick, n) in &by_tick {
        assert_eq!(*n, 1, "tick {tick} was evaluated {n} times");
    }
    let holders: BTreeSet<&String> = ticks.values().collect();
    assert_eq!(holders.len(), 2, "both replicas took ticks: {ticks:?}");
    let last = *ticks.keys().next_back().unwrap();
    for (tick, holder) in &ticks {
        if *tick > killed_tick {
            assert_eq!(
                holder,
                &replicas[survivor].holder(),
                "tick {tick} after the kill"
            );
        }
        // a claimed tick without a cycle: the killed one, or the one running when the survivor stopped
        if !by_tick.contains_key(tick) {
            assert!(
                *tick == killed_tick || *tick == last,
                "tick {tick} claimed by {holder} was never evaluated"
            );
        }
    }
    let ticks_after_kill = ticks.keys().filter(|t| **t > killed_tick).count();
    eprintln!(
        "{} ticks claimed, {} cycles; {} killed during tick {killed_tick}; {ticks_after_kill} ticks after",
        ticks.len(),
        by_tick.values().sum::<usize>(),
        replicas[dead].holder()
    );
    eprintln!("{ticks:?}");
    assert!(
        ticks_after_kill >= 5,
        "the survivor carried on: {ticks_after_kill} ticks"
    );

    let incidents = db.store.incidents().all().await.unwrap();
    assert!(!incidents.is_empty());
    assert_delivered_once(&slack, &jira, incidents.len());
    assert_eq!(
        db.store
            .outbox()
            .counts(chrono::Utc::now().timestamp())
            .await
            .unwrap()
            .dead,
        0
    );

    // what operators scrape: cycles, groups, incidents, outbox, Slack and Jira calls, freshness
    for name in [
        "sheriff_cycles_total{",
        "sheriff_cycle_seconds_count",
        "sheriff_groups_evaluated",
        "sheriff_jobs_total{job=\"evaluate\"",
        "sheriff_incidents{state=\"new\"}",
        "sheriff_outbox_entries{state=\"dead\"}",
        "sheriff_outbox_oldest_pending_seconds",
        "sheriff_data_age_seconds{job=",
    ] {
        assert!(
            metrics.keys().any(|k| k.starts_with(name)),
            "{name} missing from {:#?}",
            metrics.keys()
        );
    }
    calls.extend(metrics.into_keys());
    for name in [
        "sheriff_slack_request_seconds",
        "sheriff_jira_request_seconds",
    ] {
        assert!(
            calls
                .iter()
                .any(|k| k.starts_with(name) && k.contains("status=\"200\"")),
            "{name}: {calls:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_cycle_stops_within_ten_seconds_and_loses_nothing() {
    let db = common::TestDb::sqlite().await;
    load_regression(&db.store).await;
    let slack = FakeSlack::start("serve-sigterm", Faults::none()).await;
    let jira = FakeJira::start("serve-sigterm", Faults::none()).await;
    let env = service_env(&db.url(), &slack, &jira);
    let dir = tempfile::tempdir().unwrap();
    let raw = Raw::connect(&db.url()).await;

    let mut first = Replica::start("replica-a", dir.path(), &env);
    first.wait_healthy().await;
    let answer = reqwest::Client::new()
        .get(first.url("/readyz"))
        .header("x-request-id", "probe-42")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["x-request-id"], "probe-42");
    wait_until(Duration::from_secs(60), "a cycle in progress", || async {
        raw.cycle_in_progress().await.is_some()
    })
    .await;
    let asked = Instant::now();
    first.signal("TERM");
    let status = first
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("stopped within 10 s");
    assert!(status.success(), "{status}\n{}", first.log_text());
    eprintln!("stopped {:?} after SIGTERM", asked.elapsed());
    let log = first.log_text();
    assert!(
        log.contains("shutting down") && log.contains("stopped"),
        "{log}"
    );
    // the request made while it ran carried its id into the JSON log lines
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["span"]["request_id"] == "probe-42" && l["status"] == 200),
        "{log}"
    );

    // nothing lost: whatever the cycles recorded is delivered by the next start, once
    let by_tick = raw.cycles_by_tick().await;
    assert!(by_tick.values().all(|n| *n == 1), "{by_tick:?}");
    let mut second = Replica::start("replica-b", dir.path(), &env);
    second.wait_healthy().await;
    wait_until(
        Duration::from_secs(60),
        "delivery after the restart",
        || async {
            let o = db
                .store
                .outbox()
                .counts(chrono::Utc::now().timestamp())
                .await
                .unwrap();
            o.pending == 0
                && !db.store.incidents().all().await.unwrap().is_empty()
                && !jira.issues().is_empty()
        },
    )
    .await;
    second.signal("TERM");
    second
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("stopped within 10 s");
    let incidents = db.store.incidents().all().await.unwrap();
    assert_delivered_once(&slack, &jira, incidents.len());
    assert_eq!(
        db.store
            .outbox()
            .counts(chrono::Utc::now().timestamp())
            .await
            .unwrap()
            .dead,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_cycle_now_evaluates_at_start_and_posts_without_waiting_for_the_first_tick() {
    let db = common::TestDb::sqlite().await;
    load_regression(&db.store).await;
    db.store.close().await;
    let slack = FakeSlack::start("serve-cycle-now", Faults::none()).await;
    let jira = FakeJira::start("serve-cycle-now", Faults::none()).await;
    // the default schedule (every 6 hours), held off to next year so no tick can come first
    let mut env = service_env(&db.url(), &slack, &jira);
    env.retain(|(k, _)| k != "SHERIFF__SCHEDULE__EVALUATE");
    env.push(("SHERIFF__SCHEDULE__EVALUATE".into(), "0 0 1 1 *".into()));
    let dir = tempfile::tempdir().unwrap();
    let mut replica = Replica::start_with("cycle-now", dir.path(), &env, &["--cycle-now"]);
    replica.wait_healthy().await;
    let raw = Raw::connect(&db.url()).await;
    wait_until(Duration::from_secs(120), "the cycle at start", || async {
        !raw.cycles().await.is_empty()
    })
    .await;
    wait_until(Duration::from_secs(60), "its incident in Slack", || async {
        !slack.messages().is_empty()
    })
    .await;
    assert_eq!(
        raw.cycles().await.len(),
        1,
        "one cycle at start, none on the schedule"
    );
    let log = replica.log_text();
    assert!(
        log.contains("a first cycle runs now (--cycle-now)"),
        "{log}"
    );
    assert!(log.contains("the cycle at start finished"), "{log}");
    replica.signal("TERM");
    assert!(
        replica
            .wait_exit(Duration::from_secs(10))
            .await
            .is_some_and(|s| s.success())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_replica_on_one_sqlite_file_refuses_to_start_and_says_why() {
    let db = common::TestDb::sqlite().await;
    let settings = || sheriff::config::Settings {
        database: db.settings.clone(),
        ..Default::default()
    };
    let first = common::app::spawn_app(settings()).await;
    let refused = common::app::try_spawn_app(settings())
        .await
        .err()
        .expect("the second one refuses");
    let why = format!("{refused:#}");
    assert!(
        why.contains("another `sheriff serve` is running on this SQLite database"),
        "{why}"
    );
    assert!(why.contains("PostgreSQL"), "{why}");
    // the first one is unharmed, and answers with request ids: the caller's, or its own
    let answer = reqwest::Client::new()
        .get(first.url("/readyz"))
        .header("x-request-id", "probe-42")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-request-id"], "probe-42");
    let own = reqwest::get(first.url("/healthz")).await.unwrap();
    let id = own.headers()["x-request-id"].to_str().unwrap().to_string();
    assert!(
        id.starts_with(&sheriff::support::process::hostname()),
        "{id}"
    );
    let took = first.stop().await;
    assert!(took < Duration::from_secs(10), "{took:?}");
    // and once it has stopped, its lease is given back: a new replica starts at once
    common::app::spawn_app(settings()).await.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_fails_while_the_database_is_down_and_recovers() {
    use axum::body::Body;
    use tower::ServiceExt;
    let Some(db) = common::TestDb::postgres().await else {
        eprintln!("skipped: {} is not set", common::POSTGRES_ENV);
        return;
    };
    // the same database, reached through a proxy the test can take down
    let mut url = reqwest::Url::parse(&db.url()).unwrap();
    let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let target = tokio::net::lookup_host(target)
        .await
        .unwrap()
        .next()
        .unwrap();
    let proxy = common::proxy::Proxy::start(target).await;
    url.set_host(Some("127.0.0.1")).unwrap();
    url.set_port(Some(proxy.port)).unwrap();
    let mut settings = db.settings.clone();
    settings.url = url.as_str().parse().unwrap();
    settings.acquire_timeout_secs = 1;
    let store = std::sync::Arc::new(Store::open(&settings).await.unwrap());
    let state = sheriff::edge::server::AppState::new(
        store,
        std::sync::Arc::new(sheriff::application::warm::Warm::new()),
        std::sync::Arc::new(sheriff::config::Settings::default()),
    );
    let ready = || async {
        let r = sheriff::edge::server::router(state.clone())
            .oneshot(
                axum::http::Request::get("/readyz")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        (
            r.status().as_u16(),
            r.headers().contains_key("x-request-id"),
        )
    };
    assert_eq!(ready().await, (200, true));
    proxy.down();
    let started = Instant::now();
    assert_eq!(ready().await.0, 503);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(ready().await.0, 503, "still down");
    let health = sheriff::edge::server::router(state.clone())
        .oneshot(
            axum::http::Request::get("/healthz")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "alive, only not ready");
    proxy.up();
    wait_until(Duration::from_secs(10), "ready again", || async {
        ready().await.0 == 200
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_ingest_takes_only_new_runs_on_its_own_schedule() {
    let db = common::TestDb::sqlite().await;
    let tree = tempfile::tempdir().unwrap();
    let today = chrono::Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    let scenario = |seed: u64| {
        let mut s = synth::Scenario::month(seed, today + chrono::Duration::days(1));
        s.days = 2;
        s.start = today - chrono::Duration::days(1);
        s
    };
    let first = synth::write_tree(&scenario(21), tree.path())
        .unwrap()
        .runs
        .len() as i64;
    let mut settings = sheriff::config::Settings::default();
    settings.database = db.settings.clone();
    settings.schedule.evaluate = "0 0 1 1 *".into();
    settings
        .schedule
        .ingest
        .push(sheriff::config::IngestSchedule {
            source: tree.path().display().to_string(),
            cron: "* * * * * *".into(),
            since_days: 14,
        });
    let app = common::app::spawn_app(settings).await;
    wait_until(Duration::from_secs(60), "the first runs", || async {
        db.store.runs().count_runs().await.unwrap() == first
    })
    .await;
    // runs that appear later are taken on a later tick; the ones already stored are skipped
    let second = synth::write_tree(&scenario(22), tree.path())
        .unwrap()
        .runs
        .len() as i64;
    wait_until(Duration::from_secs(60), "the new runs", || async {
        db.store.runs().count_runs().await.unwrap() == first + second
    })
    .await;
    let metrics = scrape(&app.url("/metrics")).await;
    let count = |outcome: &str| {
        metrics
            .iter()
            .filter(|(k, _)| {
                k.starts_with("sheriff_ingest_runs_total") && k.contains("via=\"schedule\"")
            })
            .filter(|(k, _)| k.contains(&format!("outcome=\"{outcome}\"")))
            .map(|(_, v)| *v)
            .sum::<f64>()
    };
    // counters are per process, and other tests of this binary ingest too: at least these
    assert!(count("ingested") >= (first + second) as f64, "{metrics:#?}");
    assert!(count("skipped") >= first as f64, "{metrics:#?}");
    let took = app.stop().await;
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Reads from `stream` until the server closes it or `limit` passes; what it said and whether
/// it closed.
async fn until_closed(stream: &mut tokio::net::TcpStream, limit: Duration) -> (String, bool) {
    use tokio::io::AsyncReadExt as _;
    let mut said = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (String::from_utf8_lossy(&said).into(), false),
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&said).into(), true),
            Ok(Ok(n)) => said.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_silent_clients_are_cut_off_by_the_header_idle_and_request_limits() {
    use tokio::io::AsyncWriteExt as _;
    let db = common::TestDb::sqlite().await;
    let mut settings = sheriff::config::Settings {
        database: db.settings.clone(),
        ..Default::default()
    };
    settings.server.header_timeout_secs = 1;
    settings.server.idle_timeout_secs = 2;
    settings.server.request_timeout_secs = 1;
    let app = common::app::spawn_app(settings).await;
    let started = Instant::now();
    // a head that never ends
    let mut head = tokio::net::TcpStream::connect(app.address).await.unwrap();
    head.write_all(b"POST /slack/commands HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // a head sent a byte every half second
    let mut trickle = tokio::net::TcpStream::connect(app.address).await.unwrap();
    let dribble = tokio::spawn(async move {
        for b in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
        {
            if trickle.write_all(&[*b]).await.is_err() {
                return (true, Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        (false, Instant::now())
    });
    // a connection that says nothing at all
    let mut silent = tokio::net::TcpStream::connect(app.address).await.unwrap();
    // a body that never comes
    let mut body = tokio::net::TcpStream::connect(app.address).await.unwrap();
    body.write_all(b"POST /slack/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntext=he").await.unwrap();

    let (_, closed) = until_closed(&mut head, Duration::from_secs(5)).await;
    assert!(closed, "an unfinished head is cut off");
    let (answer, _) = until_closed(&mut body, Duration::from_secs(6)).await;
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "a body that never comes gets 408: {answer:?}"
    );
    let (_, closed) = until_closed(&mut silent, Duration::from_secs(6)).await;
    assert!(closed, "a silent connection is closed");
    let (cut, at) = dribble.await.unwrap();
    assert!(
        cut && at - started < Duration::from_secs(8),
        "a trickled head is cut off, not served"
    );
    // and a normal client is served as ever
    assert_eq!(
        reqwest::get(app.url("/healthz")).await.unwrap().status(),
        200
    );
    app.stop().await;
}

/// A `serve` killed (SIGKILL, out of memory) leaves its SQLite lease behind; a restart on the
/// same host sees that the lease's process is gone and takes over at once, while a live
/// holder is named, with when its lease lapses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_takes_over_the_sqlite_lease_of_a_dead_process_of_this_host_at_once() {
    let db = common::TestDb::sqlite().await;
    let now = chrono::Utc::now().timestamp();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let killed = format!("{}-{dead}", sheriff::support::process::hostname());
    assert!(
        db.store
            .leases()
            .take("sqlite-replica", &killed, now, 30)
            .await
            .unwrap()
    );
    sheriff::application::scheduler::claim_sqlite(&db.store, "the-restart")
        .await
        .expect("takes over from the dead process");
    assert_eq!(
        db.store
            .leases()
            .holder("sqlite-replica")
            .await
            .unwrap()
            .unwrap()
            .0,
        "the-restart"
    );

    // a holder that may be alive (another host) is waited for, and named
    db.store
        .leases()
        .release("sqlite-replica", "the-restart")
        .await
        .unwrap();
    assert!(
        db.store
            .leases()
            .take("sqlite-replica", "another-host-1", now, 30)
            .await
            .unwrap()
    );
    let why = format!(
        "{:#}",
        sheriff::application::scheduler::claim_sqlite(&db.store, "the-restart")
            .await
            .unwrap_err()
    );
    assert!(
        why.contains("another-host-1") && why.contains("lapses in"),
        "{why}"
    );
    // and so is a live process of this host (this one)
    let me = sheriff::support::process::replica_id();
    db.store
        .leases()
        .release("sqlite-replica", "another-host-1")
        .await
        .unwrap();
    assert!(
        db.store
            .leases()
            .take("sqlite-replica", &me, now, 30)
            .await
            .unwrap()
    );
    assert!(
        sheriff::application::scheduler::claim_sqlite(&db.store, "the-restart")
            .await
            .is_err()
    );
}

/// A connection that says nothing is closed once the head's time is up, an HTTP/2 connection
/// with no request is closed once idle however busily it answers pings, and no more than
/// `server.max_connections` are open at once: the next waits until one closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_idle_http2_connections_are_closed_and_connections_are_capped() {
    let db = common::TestDb::sqlite().await;
    let mut settings = sheriff::config::Settings {
        database: db.settings.clone(),
        ..Default::default()
    };
    settings.server.header_timeout_secs = 1;
    settings.server.idle_timeout_secs = 3;
    settings.server.max_connections = 2;
    let app = common::app::spawn_app(settings).await;

    // silent: closed at the head's limit, not the idle one
    let started = Instant::now();
    let mut silent = tokio::net::TcpStream::connect(app.address).await.unwrap();
    let (_, closed) = until_closed(&mut silent, Duration::from_secs(5)).await;
    assert!(
        closed && started.elapsed() < Duration::from_millis(2_500),
        "closed after {:?}",
        started.elapsed()
    );

    // HTTP/2 with prior knowledge, one request, then none: the client answers every ping
    let stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake::<_, _, axum::body::Body>(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    let driven = tokio::spawn(conn);
    let answer = sender
        .send_request(
            axum::http::Request::get(app.url("/healthz"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let started = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(10), driven).await;
    assert!(ended.is_ok(), "an idle HTTP/2 connection is closed");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "closed after {:?}",
        started.elapsed()
    );

    // two silent connections take both slots: a third is served once the first byte's time
    // frees one
    let _a = tokio::net::TcpStream::connect(app.address).await.unwrap();
    let _b = tokio::net::TcpStream::connect(app.address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    assert_eq!(
        reqwest::get(app.url("/healthz")).await.unwrap().status(),
        200
    );
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "served at once, past the cap: {:?}",
        started.elapsed()
    );
    app.stop().await;
}
