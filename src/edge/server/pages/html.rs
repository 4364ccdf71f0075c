//! The pages, as maud templates: every value is escaped unless a template says otherwise, and
//! none does. One small stylesheet inline, no script, no outside request; readable on a phone.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::chart::{self, Chart, Size};
use super::{ChartData, IncidentRow, IndexFilter};
use crate::domain::incidents::{Event, Incident};
use crate::model::{HOUR, secs, secs_or_dash};
use crate::support::render::time as when;
use crate::support::render::web_link;

const STYLE: &str = r#"
:root { color-scheme: light; --fg: #1d1d1f; --muted: #5f6368; --line: #d9dce1; --bad: #c5221f; --ok: #188038; --warn: #b06000; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: #fafafa; }
header { background: #24292f; color: #fff; padding: .6rem 1rem; display: flex; gap: 1.2rem; align-items: baseline; flex-wrap: wrap; }
header a { color: #fff; text-decoration: none; } header .brand { font-weight: 700; }
main { max-width: 1100px; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.35rem; margin: .2rem 0 .6rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; background: #fff; } th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: .85rem; }
.scroll { overflow-x: auto; }
.state { font-weight: 600; } .state.new, .state.reopened { color: var(--bad); } .state.ongoing { color: var(--warn); } .state.resolved { color: var(--ok); } .state.stale { color: var(--muted); }
.muted { color: var(--muted); } .fields { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; background: #fff; padding: .6rem .8rem; border: 1px solid var(--line); }
.fields dt { color: var(--muted); } .fields dd { margin: 0; }
form.filters { display: flex; gap: .6rem; flex-wrap: wrap; margin: .4rem 0 .8rem; } form.filters label { font-size: .85rem; color: var(--muted); }
input, select, button { font: inherit; padding: .2rem .4rem; }
.chart-box { background: #fff; border: 1px solid var(--line); padding: 0 46px 0 50px; }
.chart { display: block; width: 100%; overflow: visible; }
.chart .grid { stroke: #eceef1; } .chart .tick { fill: var(--muted); }
.chart .reference { fill: #e8f0fe; } .chart .window { fill: #e6f4ea; } .chart .onset { fill: #fce8e6; } .chart .onset-at { stroke: var(--bad); stroke-width: 1.5; }
.chart .series { fill: none; stroke-width: 2; } .chart .p95 { stroke-width: 1.3; }
.chart .p50.b0 { stroke: #1a73e8; } .chart .p95.b0 { stroke: #9334e6; } .chart .p50.b1 { stroke: #00897b; } .chart .p95.b1 { stroke: #004d40; }
.chart .p50.b2 { stroke: #e37400; } .chart .p95.b2 { stroke: #8d4e00; } .chart .p50.b3 { stroke: #d01884; } .chart .p95.b3 { stroke: #8e0e58; }
.chart .control { stroke: #5f6368; stroke-dasharray: 5 4; stroke-width: 1.5; } .chart .disrupted rect { fill: #fbbc04; opacity: .35; }
.chart .fix { stroke: var(--ok); stroke-width: 2; stroke-dasharray: 2 3; } .chart .accepted { stroke: var(--warn); stroke-dasharray: 8 4; }
.legend { font-size: .85rem; color: var(--muted); } .key::before { content: ""; display: inline-block; width: .9em; height: .9em; margin-right: .25em; vertical-align: -.1em; }
.key.p50.b0::before { background: #1a73e8; } .key.p95.b0::before { background: #9334e6; } .key.p50.b1::before { background: #00897b; } .key.p95.b1::before { background: #004d40; }
.key.p50.b2::before { background: #e37400; } .key.p95.b2::before { background: #8d4e00; } .key.p50.b3::before { background: #d01884; } .key.p95.b3::before { background: #8e0e58; }
.legend .key { display: inline-block; } .legend code { font-size: 1em; overflow-wrap: anywhere; } .key.disrupted::before { background: #fbbc0488; } .key.control::before { border-top: 2px dashed #5f6368; }
.key.reference::before { background: #e8f0fe; } .key.window::before { background: #e6f4ea; } .key.onset::before { background: #fce8e6; } .key.fix::before { border-top: 2px dotted #188038; } .key.accepted::before { border-top: 2px dashed #b06000; }
figure { margin: 0; } .charts figure { display: flex; flex-direction: column; justify-content: space-between; } figcaption { margin-top: .2rem; } h3 { font-size: 1rem; margin: .4rem 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(300px, 100%), 1fr)); gap: .4rem 1rem; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .88em; }
@media (max-width: 640px) {
  main { padding: .6rem; } th, td { padding: .3rem; font-size: .9rem; } .fields { grid-template-columns: 1fr; }
  .chart-box { padding: 0 40px 0 44px; }
  table.cards thead { display: none; }
  table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; }
  table.cards { background: none; }
  table.cards tr { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin-bottom: .6rem; padding: .35rem .6rem; }
  table.cards td { display: grid; grid-template-columns: 6.5rem 1fr; gap: .6rem; border: 0; padding: .15rem 0; overflow-wrap: anywhere; }
  table.cards td:empty { display: none; }
  table.cards td::before { content: attr(data-label); color: var(--muted); font-size: .85rem; }
}
"#;

/// Every page: the header, the title, the body.
pub fn layout(title: &str, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " — sheriff" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    a class="brand" href="/" { "sheriff" }
                    a href="/" { "Incidents" }
                    a href="/explore" { "Explore" }
                }
                main { (*body) }
            }
        }
    }
}

fn state_cell(i: &Incident) -> Markup {
    let how = i
        .resolution
        .filter(|_| !i.state.is_open())
        .map(crate::words::resolved_as);
    html! {
        span class=(format!("state {}", i.state.as_str())) { (i.state.as_str()) }
        @if let Some(how) = how { " " span class="muted" { "(" (how) ")" } }
    }
}

/// "P50 31s / reference 2s".
pub fn now_vs_reference(i: &Incident) -> String {
    let s = &i.snapshot;
    let (now, reference) = s.now_and_reference();
    format!(
        "{} {} / reference {}",
        s.percentile,
        secs(now),
        secs_or_dash(reference)
    )
}

fn age(seconds: i64) -> String {
    let h = seconds.max(0) / HOUR;
    if h >= 48 {
        format!("{}d", h / 24)
    } else {
        format!("{h}h")
    }
}

fn links(row: &IncidentRow) -> Markup {
    html! {
        @if let (Some(key), Some(url)) = (&row.incident.jira_key, row.jira_url.as_deref().and_then(web_link)) { a href=(url) { (key) } " " }
        @if let Some(url) = row.slack_url.as_deref().and_then(web_link) { a href=(url) { "thread" } }
    }
}

fn select(name: &str, label: &str, options: &[String], chosen: Option<&str>) -> Markup {
    html! {
        label { (label) " "
            select name=(name) {
                option value="" selected[chosen.is_none()] { "any" }
                @for o in options { option value=(o) selected[chosen == Some(o.as_str())] { (o) } }
            }
        }
    }
}

/// `/`: open incidents, then recently resolved ones, with filters.
pub fn index(
    rows: &[IncidentRow],
    filter: &IndexFilter,
    components: &[String],
    releases: &[String],
    now: i64,
) -> Markup {
    let (open, resolved): (Vec<&IncidentRow>, Vec<&IncidentRow>) =
        rows.iter().partition(|r| r.incident.state.is_open());

    let states = ["open", "resolved", "all"].map(String::from);
    let table = |list: &[&IncidentRow]| {
        html! {
            div class="scroll" { table class="cards incidents" {
                thead { tr { th { "#" } th { "state" } th { "component" } th { "backend" } th { "scope" } th { "onset" } th { "age" } th { "now / reference" } th { "links" } } }
                tbody {
                    @for r in list {
                        @let i = &r.incident;
                        tr {
                            td data-label="#" { a href=(format!("/incidents/{}", i.id)) { "#" (i.id) } }
                            td data-label="state" { (state_cell(i)) }
                            td data-label="component" { (i.snapshot.component) }
                            td data-label="backend" { (i.snapshot.family) " " (i.snapshot.release) }
                            td data-label="scope" { (i.snapshot.scope.describe()) }
                            td data-label="onset" { (i.onset().map_or_else(|| "not known".to_string(), |o| crate::words::regression::onset(&o))) }
                            td data-label="age" { (age(now - i.opened_at)) }
                            td data-label="now / reference" class="mono" { (now_vs_reference(i)) }
                            td data-label="links" { (links(r)) }
                        }
                    }
                }
            } }
        }
    };

    layout(
        "Incidents",
        &html! {
            h1 { "Disruption incidents" }
            form class="filters" method="get" action="/" {
                (select("component", "component", components, filter.component.as_deref()))
                (select("release", "release", releases, filter.release.as_deref()))
                (select("state", "state", &states, filter.state.as_deref()))
                button type="submit" { "Filter" }
            }
            h2 { "Open (" (open.len()) ")" }
            @if open.is_empty() { p class="muted" { "No open incidents." } } @else { (table(&open)) }
            h2 { "Resolved in the last 14 days (" (resolved.len()) ")" }
            @if resolved.is_empty() { p class="muted" { "None." } } @else { (table(&resolved)) }
            p class="muted" { "JSON: " a href="/api/v1/incidents" { "/api/v1/incidents" } }
        },
    )
}

fn chart_of(c: &ChartData, size: Size) -> Chart<'_> {
    let series = std::iter::once(&c.series)
        .chain(&c.other_backends)
        .collect();
    Chart {
        title: &c.title,
        series,
        control: c.control.as_ref(),
        marks: &c.marks,
        size,
    }
}

/// A chart with its legend under it.
fn chart_block(c: &ChartData) -> Markup {
    let chart = chart_of(c, Size::Main);
    html! {
        figure {
            (chart::svg(&chart))
            figcaption { (chart::legend(&chart)) }
        }
    }
}

/// Small charts drawn alike, each under its title, and one legend for them all.
fn chart_group(charts: &[ChartData]) -> Markup {
    html! {
        div class="charts" {
            @for c in charts { figure { h3 { (c.title) } (chart::svg(&chart_of(c, Size::Small))) } }
        }
        @if let Some(first) = charts.first() { (chart::legend(&chart_of(first, Size::Small))) }
        // a chart titled `from_release=4.13, upgrade_type=minor` draws both variants at once
        @for c in charts.iter().filter(|c| c.title.contains(", ")) {
            p class="muted" { (c.title.replace(", ", " and ")) " are the same runs here, so one chart shows "
                (if c.title.matches(", ").count() == 1 { "both." } else { "them all." })
            }
        }
    }
}

fn history(events: &[Event]) -> Markup {
    html! {
        div class="scroll" { table class="cards" {
            thead { tr { th { "when" } th { "who" } th { "what" } th { "detail" } } }
            tbody { @for e in events.iter().rev() { tr {
                td data-label="when" class="mono" { (when(e.at)) } td data-label="who" { (crate::words::person(&e.actor)) }
                td data-label="what" { (e.kind) } td data-label="detail" { (e.detail) }
            } } }
        } }
    }
}

/// `/incidents/{id}`: the headline, the attribution in words, the charts, the evidence.
pub fn incident(row: &IncidentRow, events: &[Event], charts: &[ChartData]) -> Markup {
    let i = &row.incident;
    let s = &i.snapshot;
    let r = &s.report;
    let (main_chart, parts) = charts
        .split_first()
        .map_or((None, &[][..]), |(a, b)| (Some(a), b));

    layout(
        &format!("#{} {}", i.id, s.family),
        &html! {
            h1 { "#" (i.id) " " (crate::words::issue::summary(i)) }
            p { (s.summary) }
            dl class="fields" {
                dt { "state" } dd { (state_cell(i)) }
                dt { "component" } dd {
                    (s.component)
                    @if let Some(p) = &r.attribution.platform_component { " (platform: " (p) ")" }
                }
                @if !r.attribution.independence.is_empty() { dt { "independent of" } dd { (r.attribution.independence.join("; ")) } }
                dt { "scope" } dd { (s.release) " " (s.scope.describe()) }
                dt { "now / reference" } dd class="mono" { (now_vs_reference(i)) }
                dt { "regressed" } dd { (i.onset().map_or_else(|| "not known".to_string(), |o| crate::words::regression::onset(&o))) }
                @if let Some(w) = r.onset.as_ref().and_then(crate::words::regression::payload_window) { dt { "payloads" } dd { (w) } }
                @if let Some(c) = &i.fix { dt { "fix" } dd { (crate::words::fix::claim(c)) @for v in &c.verdicts { br; (v.text) } } }
                @if let Some(a) = &i.allowance { dt { "accepted" } dd { (crate::words::accepted_level(a)) } }
                @if row.jira_url.is_some() || row.slack_url.is_some() { dt { "links" } dd { (links(row)) } }
            }
            @if let Some(c) = main_chart {
                h2 { "Trend, " (chart::span_words(&chart_of(c, Size::Main))) }
                (chart_block(c))
            }
            @if !parts.is_empty() {
                h2 { "Not specific to " (r.not_specific_to.join(", ")) }
                (chart_group(parts))
            }
            h2 { "Attribution" }
            ul { @for e in &r.attribution.evidence { li { (e) } } }
            @if !r.attribution.conditions.is_empty() {
                h2 { "Correlated conditions" }
                div class="scroll" { table class="cards" {
                    thead { tr { th { "operator" } th { "condition" } th { "reason" } th { "message" } th { "runs" } } }
                    tbody { @for c in &r.attribution.conditions { tr {
                        td data-label="operator" { (c.operator) } td data-label="condition" { (c.label()) } td data-label="reason" { (c.reason) }
                        td data-label="message" { (c.message) } td data-label="runs" { (c.runs_with) " of " (c.runs) }
                    } } }
                } }
            }
            @if !r.suspect_changes.is_empty() {
                h2 { "Suspect changes" }
                ul { @for c in &r.suspect_changes { li {
                    @if let Some(url) = web_link(&c.url) { a href=(url) { (c.reference()) } }
                    @else { (c.reference()) }
                    " " (c.title)
                    @if !c.why.is_empty() { " — " (c.why) }
                } } }
            }
            @if r.outside_pending { p { (crate::words::regression::OUTSIDE_PENDING) } }
            h2 { "Sample runs" }
            div class="scroll" { table class="cards" {
                thead { tr { th { "kind" } th { "seconds" } th { "variant" } th { "job" } th { "run" } } }
                tbody { @for j in &r.sample_jobs { tr {
                    td data-label="kind" { (j.kind.as_str()) } td data-label="seconds" class="mono" { (j.seconds) "s" }
                    td data-label="variant" { (j.variant) } td data-label="job" { (j.job) }
                    td data-label="run" { @if let Some(url) = web_link(&j.url) { a class="sample" href=(url) { (j.build_id) } } @else { (j.build_id) } }
                } } }
            } }
            h2 { "History" }
            (history(events))
            p class="muted" { "JSON: " a href=(format!("/api/v1/incidents/{}", i.id)) { "/api/v1/incidents/" (i.id) } }
        },
    )
}

/// `/explore`: the `query` answer as a page, with the chart.
pub fn explore(
    form: &[(String, String)],
    answer: Option<&crate::application::query::QueryAnswer>,
    chart: Option<&ChartData>,
    error: Option<&str>,
) -> Markup {
    let value = |k: &str| {
        form.iter()
            .find(|(f, _)| f == k)
            .map_or("", |(_, v)| v.as_str())
    };

    layout(
        "Explore",
        &html! {
            h1 { "Explore a backend" }
            form class="filters" method="get" action="/explore" {
                @for (k, hint) in [("backend", "image-registry-new-connections"), ("release", "4.14"), ("platform", "metal"), ("network", "ovn"), ("upgrade", "micro"), ("topology", "ha"), ("arch", "amd64"), ("window", "7d")] {
                    label { (k) " " input name=(k) value=(value(k)) placeholder=(hint) size="14"; }
                }
                button type="submit" { "Show" }
            }
            @if let Some(e) = error { p class="state new" { (e) } }
            @if let Some(a) = answer.filter(|a| !a.known_backend) {
                p class="state new" {
                    "Unknown backend " (a.backend) ": no stored run has recorded it."
                    @if !a.similar.is_empty() { " Did you mean " (a.similar.join(", ")) "?" }
                }
            }
            @if let Some(a) = answer {
                p { (a.backend) ": " (a.runs) " runs in the last " (a.window_days) " days over " (a.variants) " variants, " (a.disrupted_runs) " disrupted; before: " (a.baseline_runs) " runs, known episodes included (raw)." }
                div class="scroll" { table {
                    thead { tr { th { "percentile" } th { "now" } th { "reference" } th { "before (raw)" } } }
                    tbody { @for (p, v) in &a.percentiles { tr {
                        td { (p) } td class="mono" { (secs_or_dash(*v)) } td class="mono" { (secs_or_dash(a.thresholds.get(p).copied())) }
                        td class="mono" { (secs_or_dash(a.baseline.get(p).copied().flatten())) }
                    } } }
                } }
            }
            @if let Some(c) = chart { h2 { "Trend, " (chart::span_words(&chart_of(c, Size::Main))) } (chart_block(c)) }
        },
    )
}

/// A page for a request sheriff cannot answer: the status and a plain reason.
pub fn problem(title: &str, reason: &str) -> Markup {
    layout(
        title,
        &html! { h1 { (title) } p { (reason) } p { a href="/" { "All incidents" } } },
    )
}
