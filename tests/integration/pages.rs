//! The pages and their JSON twins through the router (no socket), on a generated month with the
//! metal image-registry regression: status and content type of every route, 404 for an unknown
//! incident, the chart with its series and marks, the sample links, the token when one is set,
//! and an interval message that tries to be HTML, escaped on every page.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::{Secret, Settings};
use sheriff::edge::server::{AppState, router};
use sheriff::synth::{self, Scenario};
use tower::ServiceExt;

use crate::common;

const HOSTILE: &str = "<img src=x onerror=alert(1)></script><script>alert(2)</script>";

fn today() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
}

/// The demo month ending today, its regression's condition message hostile.
fn scenario() -> Scenario {
    let mut s = Scenario::demo(today());
    s.payload_every_hours = 4;
    if let Some((_, _, _, _, message)) = s.planted[0].condition.as_mut() {
        *message = format!("replicas gone {HOSTILE}");
    }
    s
}

/// The month written as a bucket tree and ingested, then one cycle: incident #1.
async fn world(db: &common::TestDb, tweak: impl FnOnce(&mut Settings)) -> AppState {
    world_from_tree(db, tweak, |_| {}).await
}

/// [`world`], with the written tree changed by `tree` before it is ingested.
async fn world_from_tree(
    db: &common::TestDb,
    tweak: impl FnOnce(&mut Settings),
    tree: impl FnOnce(&std::path::Path),
) -> AppState {
    let dir = tempfile::tempdir().unwrap();
    synth::write_tree(&scenario(), dir.path()).unwrap();
    tree(dir.path());
    let mut settings = Settings::default();
    settings.jira.url = "https://issues.example.com".into();
    settings.slack.workspace_url = "https://example.slack.com".into();
    tweak(&mut settings);
    let source = sheriff::adapters::ingest::Source::Local(dir.path().to_path_buf());
    sheriff::adapters::ingest::ingest(&db.store, &settings.ingest, &source, &Default::default())
        .await
        .unwrap();
    run_cycle(
        &db.store,
        &sheriff::application::warm::Warm::new(),
        &settings,
        CycleOptions {
            at: today(),
            dry_run: false,
        },
    )
    .await
    .unwrap();
    let store = sheriff::store::Store::open(&db.settings).await.unwrap();
    AppState::new(
        Arc::new(store),
        Arc::new(sheriff::application::warm::Warm::new()),
        Arc::new(settings),
    )
}

async fn get(state: &AppState, path: &str, auth: Option<&str>) -> (StatusCode, String, String) {
    let mut req = Request::get(path);
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let response = router(state.clone())
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = axum::body::to_bytes(response.into_body(), 8 << 20)
        .await
        .unwrap();
    (status, kind, String::from_utf8(body.to_vec()).unwrap())
}

on_both_engines! {
    async fn every_page_and_json_route_answers_with_its_type_and_an_unknown_incident_is_404(db) {
        let state = world(&db, |_| {}).await;
        for (path, status, kind) in [
            ("/", 200, "text/html"),
            ("/?state=all&component=Image+Registry&release=4.14", 200, "text/html"),
            ("/incidents/1", 200, "text/html"),
            ("/incidents/999", 404, "text/html"),
            ("/incidents/not-a-number", 404, "text/html"),
            ("/explore", 200, "text/html"),
            ("/explore?backend=image-registry-new-connections&release=4.14&platform=metal", 200, "text/html"),
            ("/explore?backend=image-registry-new-connections&colour=blue", 400, "text/html"),
            ("/api/v1/incidents", 200, "application/json"),
            ("/api/v1/incidents/1", 200, "application/json"),
            ("/api/v1/incidents/999", 404, "application/json"),
            ("/api/v1/series?backend=image-registry-new-connections&platform=metal", 200, "application/json"),
            ("/api/v1/series", 400, "application/json"),
        ] {
            let (got, content, body) = get(&state, path, None).await;
            assert_eq!(got.as_u16(), status, "{path}: {body}");
            assert!(content.starts_with(kind), "{path}: {content}");
        }
        let (_, _, index) = get(&state, "/", None).await;
        assert!(index.contains("href=\"/incidents/1\""), "the open incident is listed");
        assert!(index.contains("Image Registry") && index.contains("platform=metal"));
        let (_, _, filtered) = get(&state, "/?component=Networking", None).await;
        assert!(!filtered.contains("href=\"/incidents/1\""), "the filter leaves it out");

        let (_, _, page) = get(&state, "/incidents/1", None).await;
        assert!(page.contains("<svg class=\"chart\""), "a chart");
        for mark in ["class=\"series p50 b0\" vector-effect=\"non-scaling-stroke\" d=\"M", "class=\"series p95 b0\" vector-effect=\"non-scaling-stroke\" d=\"M", "class=\"series disrupted\"", "class=\"onset\"", "class=\"onset-at\"", "class=\"reference\"", "class=\"window\"", "class=\"series control\""] {
            assert!(page.contains(mark), "{mark} missing");
        }
        assert!(page.matches("class=\"sample\" href=\"https://prow.ci.openshift.org/view/gs/").count() >= 3, "sample runs link to Prow");
        let variants: Vec<&str> =
            page.split("<td data-label=\"variant\">").skip(1).map(|s| s.split('<').next().unwrap_or("")).collect();
        assert!(variants.len() >= 3 && variants.iter().all(|v| v.contains(" · ")), "each sample run says its variant: {variants:?}");
        assert!(page.contains("network=ovn") && page.contains("network=sdn"), "a chart per network it is not specific to");
        assert!(page.contains("https://issues.example.com/browse/") || !page.contains("OCPBUGS"));

        let (_, _, json) = get(&state, "/api/v1/incidents/1", None).await;
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let days = v["charts"][0]["series"]["days"].as_array().unwrap();
        assert_eq!(days.len(), 56, "8 weeks of days");
        let runs: u64 = days.iter().map(|d| d["runs"].as_u64().unwrap()).sum();
        assert!(runs > 100, "{runs} runs charted");
        assert!(v["charts"][0]["marks"]["onset"].is_array());
        assert_eq!(v["events"][0]["kind"], "opened");
        let (_, _, series) = get(&state, "/api/v1/series?backend=image-registry-new-connections&platform=metal&window=14d", None).await;
        let s: serde_json::Value = serde_json::from_str(&series).unwrap();
        assert_eq!(s["answer"]["window_days"], 14);
        assert!(s["chart"]["series"]["days"].as_array().unwrap().len() == 56);
    }

    async fn the_incident_page_draws_every_backend_on_readable_charts_clipped_to_the_data_none_twice(db) {
        let state = world(&db, |_| {}).await;
        let (_, _, json) = get(&state, "/api/v1/incidents/1", None).await;
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let charts = v["charts"].as_array().unwrap();
        let backend = |s: &serde_json::Value| s["backend"].as_str().unwrap().to_string();

        // every backend of the incident on the main chart
        let mut drawn: Vec<String> = std::iter::once(&charts[0]["series"])
            .chain(charts[0]["other_backends"].as_array().unwrap())
            .map(backend)
            .collect();
        drawn.sort();
        let mut backends: Vec<String> = v["backends"].as_array().unwrap().iter().map(|b| b.as_str().unwrap().to_string()).collect();
        backends.sort();
        assert_eq!(backends.len(), 2, "the demo's incident has new and reused connections");
        assert_eq!(drawn, backends);
        let (_, _, page) = get(&state, "/incidents/1", None).await;
        let main = page.split("<h2>Not specific to").next().unwrap();
        for b in &backends {
            assert!(main.contains(&format!("<title>{b} P50</title>")), "{b} drawn");
            assert!(main.contains(&format!("<code>{b}</code>")), "{b} named in the legend");
        }

        // no small chart repeats another or the main one: within 4.14, from_release=4.13 and
        // upgrade_type=minor pick the same runs, so they share one chart named for both
        let days: Vec<&serde_json::Value> = charts.iter().map(|c| &c["series"]["days"]).collect();
        for (a, x) in days.iter().enumerate() {
            for (b, y) in days.iter().enumerate().skip(a + 1) {
                assert!(x != y, "{} and {} are the same chart", charts[a]["title"], charts[b]["title"]);
            }
        }
        let titles: Vec<&str> = charts[1..].iter().map(|c| c["title"].as_str().unwrap()).collect();
        assert!(titles.contains(&"from_release=4.13, upgrade_type=minor"), "{titles:?}");
        assert!(page.contains("from_release=4.13 and upgrade_type=minor are the same runs here, so one chart shows both."), "the shared chart is said plainly");
        assert!(titles.contains(&"network=ovn") && titles.contains(&"network=sdn"), "{titles:?}");
        assert_eq!(page.matches("class=\"chart-box small\"").count(), titles.len());
        assert_eq!(page.matches("class=\"legend\"").count(), 2, "one legend for the main chart, one for the small ones");

        // labels of 12 CSS px that nothing scales: no viewBox holds a text
        let texts: Vec<&str> = page.split("<text ").skip(1).map(|t| t.split('>').next().unwrap()).collect();
        assert!(texts.len() > 30, "{} labels", texts.len());
        assert!(texts.iter().all(|t| t.contains("font-size=\"12\"")), "{texts:?}");
        for plot in page.split("viewBox").skip(1) {
            assert!(!plot.split("</svg>").next().unwrap().contains("<text"), "a scaled label");
        }

        // the x axis starts at the first day with runs, not 8 weeks back
        let first = days[0].as_array().unwrap().iter().find(|d| d["runs"].as_u64().unwrap() > 0).unwrap();
        let first = chrono::DateTime::from_timestamp(first["day"].as_i64().unwrap(), 0).unwrap().format("%b %-d").to_string();
        let axis_start = main.split("text-anchor=\"middle\" font-size=\"12\">").nth(1).unwrap().split('<').next().unwrap();
        assert_eq!(axis_start, first);
        assert!(main.contains(&format!("<h2>Trend, {first} – ")), "the heading names the days shown");
        assert!(days[0].as_array().unwrap().first().unwrap()["runs"] == 0, "the days asked for start earlier");
    }

    async fn an_interval_message_that_tries_to_be_html_is_escaped_on_every_page(db) {
        let state = world(&db, |_| {}).await;
        let (_, _, page) = get(&state, "/incidents/1", None).await;
        assert!(page.contains("replicas gone &lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;"), "the message is shown, escaped");
        for path in ["/", "/incidents/1", "/explore?backend=image-registry-new-connections", "/?state=all"] {
            let (_, _, body) = get(&state, path, None).await;
            assert!(!body.contains("<img src=x"), "{path} carries the raw tag");
            assert!(!body.contains("<script"), "{path} carries a script");
            assert_eq!(body.matches("</script>").count(), 0, "{path}");
        }
        // the JSON twin carries it as data, served as JSON that no browser may sniff as HTML
        let response = router(state.clone()).oneshot(Request::get("/api/v1/incidents/1").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert!(response.headers()["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"));
    }

    async fn a_prow_link_that_is_no_web_address_never_becomes_a_link(db) {
        let state = world_from_tree(&db, |_| {}, |root| {
            let mut stack = vec![root.to_path_buf()];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.file_name().is_some_and(|n| n == "prowjob.json") {
                        let text = std::fs::read_to_string(&p).unwrap();
                        std::fs::write(&p, text.replace("https://prow.ci.openshift.org", "javascript:alert('url')//prow")).unwrap();
                    }
                }
            }
        })
        .await;
        let (status, _, page) = get(&state, "/incidents/1", None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(page.contains("class=\"sample\""), "the sample runs are still links");
        assert!(!page.contains("javascript:"), "a javascript: link on the page");
    }

    async fn with_a_pages_token_the_pages_ask_for_it_and_health_stays_open(db) {
        let state = world(&db, |s| s.server.pages_token = Some(Secret::new("pages-secret"))).await;
        let (status, _, body) = get(&state, "/incidents/1", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(!body.contains("pages-secret"));
        let response = router(state.clone()).oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.headers()["www-authenticate"], "Basic realm=\"sheriff\"");
        assert_eq!(get(&state, "/api/v1/incidents", Some("Bearer wrong")).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(get(&state, "/api/v1/incidents", Some("Bearer pages-secret")).await.0, StatusCode::OK);
        // basic auth, any user: "triage:pages-secret"
        assert_eq!(get(&state, "/", Some("Basic dHJpYWdlOnBhZ2VzLXNlY3JldA==")).await.0, StatusCode::OK);
        assert_eq!(get(&state, "/", Some("Basic dHJpYWdlOndyb25n")).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(get(&state, "/healthz", None).await.0, StatusCode::OK);
    }

    async fn a_misspelt_backend_on_explore_is_called_unknown_with_the_nearest_names(db) {
        let state = world(&db, |_| {}).await;
        let (status, _, page) = get(&state, "/explore?backend=image-registry-new-connectionz", None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(page.contains("Unknown backend image-registry-new-connectionz"), "{page}");
        assert!(page.contains("Did you mean image-registry-new-connections"), "{page}");
        let (_, _, known) = get(&state, "/explore?backend=image-registry-new-connections", None).await;
        assert!(!known.contains("Unknown backend"));
    }

    async fn an_empty_pages_token_opens_nothing_to_an_empty_password(db) {
        // loading refuses an empty token; this holds even for settings built in code
        let state = world(&db, |s| s.server.pages_token = Some(Secret::new(""))).await;
        assert_eq!(get(&state, "/", None).await.0, StatusCode::UNAUTHORIZED);
        // basic "x:" (an empty password) and an empty bearer
        assert_eq!(get(&state, "/", Some("Basic eDo=")).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(get(&state, "/", Some("Bearer ")).await.0, StatusCode::UNAUTHORIZED);
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

on_both_engines! {
    async fn the_slack_parent_and_the_jira_description_link_to_pages_that_answer_on_a_running_serve(db) {
        use crate::common::{faults::Faults, jira::FakeJira, slack::FakeSlack};
        let engine = format!("links-{:?}", db.store.engine());
        let (slack, jira) = (FakeSlack::start(&engine, Faults::none()).await, FakeJira::start(&engine, Faults::none()).await);
        let port = free_port();
        let mut s = Settings { database: db.settings.clone(), ..Settings::default() };
        s.server.listen = format!("127.0.0.1:{port}");
        s.server.public_url = format!("http://127.0.0.1:{port}");
        s.slack.api_url = slack.api_url();
        s.slack.bot_token = Some(Secret::new(common::slack::TOKEN));
        s.slack.channel = "C0DISRUPT".into();
        s.slack.min_post_interval_ms = 0;
        s.jira.url = jira.url.clone();
        s.jira.project = "OCPBUGS".into();
        s.jira.token = Some(Secret::new(common::jira::TOKEN));
        for chunk in synth::run_records(&scenario()).chunks(1_000) {
            db.store.runs().write_runs(chunk, false).await.unwrap();
        }
        sheriff::init_crypto();
        let app = sheriff::edge::serve::App::build(s.clone()).await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(app.run_until_stopped(async move { let _ = stopped.await; }));
        let store = Arc::new(sheriff::store::Store::open(&db.settings).await.unwrap());
        run_cycle(&store, &sheriff::application::warm::Warm::new(), &s, CycleOptions { at: today(), dry_run: false }).await.unwrap();
        sheriff::application::outbox::deliver_for_a_while(store.clone(), &s).await.unwrap();
        let parent = slack.messages().into_iter().find(|m| m.key.as_deref() == Some("slack_post:1")).expect("posted");
        let blocks = parent.blocks.to_string();
        let page = format!("http://127.0.0.1:{port}/incidents/1");
        assert!(blocks.contains(&format!("<{page}|Full view>")), "{blocks}");
        let description = jira.issues()[0].fields["description"].to_string();
        assert!(description.contains(&page), "{description}");
        let http = reqwest::Client::new();
        for url in [page.clone(), format!("http://127.0.0.1:{port}/")] {
            let r = http.get(&url).send().await.unwrap();
            assert_eq!(r.status(), 200, "{url}");
            assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
            assert!(r.text().await.unwrap().contains("<svg class=\"chart\"") || url.ends_with('/'));
        }
        let _ = stop.send(());
        running.await.unwrap().unwrap();
    }
}
