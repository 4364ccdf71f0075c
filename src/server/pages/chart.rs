//! The trend chart, drawn on the server as SVG: a series' daily P50 and P95 (lines, seconds on
//! the left), the share of runs disrupted (bars, on the right), a control backend on the same
//! runs (dashed), the reference period and the current window shaded, the onset interval and
//! its most likely time marked, and a fix point or an accepted level once there is one. Every
//! text goes through maud, which escapes it. No script, no outside request.

use maud::{Markup, html};
use serde::Serialize;

use crate::series::Series;

const W: f64 = 720.0;
const H: f64 = 260.0;
const LEFT: f64 = 46.0;
const RIGHT: f64 = 44.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 30.0;
const DAY: i64 = 86_400;

/// What a chart marks besides its series (Unix seconds).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Marks {
    /// The current window and the reference period.
    pub window: Option<(i64, i64)>,
    pub reference: Option<(i64, i64)>,
    /// The onset interval and its most likely time.
    pub onset: Option<(i64, i64, i64)>,
    /// A fix point and its label (the fix payload, or the claim).
    pub fix: Option<(i64, String)>,
    /// An accepted level (seconds) and its label.
    pub accepted: Option<(f64, String)>,
}

/// One chart: its series, the control backend's on the same runs, its marks.
pub struct Chart<'a> {
    pub title: &'a str,
    pub series: &'a Series,
    pub control: Option<&'a Series>,
    pub marks: &'a Marks,
}

/// A value scale rounded up to a readable top: 5, 10, 20, 50, 100, …
fn nice_top(max: f64) -> f64 {
    let max = max.max(5.0);
    let mut step = 1.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * step * 5.0 >= max {
                return m * step * 5.0;
            }
        }
        step *= 10.0;
    }
}

struct Scale {
    t0: i64,
    t1: i64,
    top: f64,
}

impl Scale {
    fn x(&self, t: i64) -> f64 {
        let span = (self.t1 - self.t0).max(1) as f64;
        LEFT + (t.clamp(self.t0, self.t1) - self.t0) as f64 / span * (W - LEFT - RIGHT)
    }
    fn y(&self, v: f64) -> f64 {
        TOP + (1.0 - (v / self.top).clamp(0.0, 1.0)) * (H - TOP - BOTTOM)
    }
    fn share_y(&self, share: f64) -> f64 {
        TOP + (1.0 - share.clamp(0.0, 1.0)) * (H - TOP - BOTTOM)
    }
}

/// A path through a series' days (day centres), broken where a day has no runs.
fn path(s: &Series, scale: &Scale, value: impl Fn(&crate::series::DayPoint) -> Option<f64>) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for p in &s.days {
        match value(p) {
            Some(v) => {
                let cmd = if pen_down { 'L' } else { 'M' };
                d.push_str(&format!("{cmd}{:.1},{:.1} ", scale.x(p.day + DAY / 2), scale.y(v)));
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    d.trim_end().to_string()
}

fn band(scale: &Scale, class: &str, (from, to): (i64, i64), label: &str) -> Markup {
    let (x0, x1) = (scale.x(from), scale.x(to));
    html! {
        @if x1 > x0 {
            rect class=(class) x=(format!("{x0:.1}")) y=(TOP) width=(format!("{:.1}", x1 - x0)) height=(H - TOP - BOTTOM) {
                title { (label) }
            }
        }
    }
}

fn axes(scale: &Scale) -> Markup {
    let ticks: Vec<f64> = (0..=4).map(|k| scale.top * f64::from(k) / 4.0).collect();
    let weeks: Vec<i64> = (0..).map(|w| scale.t0 + w * 7 * DAY).take_while(|t| *t <= scale.t1).collect();
    html! {
        g class="axes" {
            @for v in &ticks {
                line class="grid" x1=(LEFT) x2=(W - RIGHT) y1=(format!("{:.1}", scale.y(*v))) y2=(format!("{:.1}", scale.y(*v))) {}
                text class="tick" x=(LEFT - 6.0) y=(format!("{:.1}", scale.y(*v) + 4.0)) text-anchor="end" { (crate::model::secs(*v)) }
            }
            @for k in 0..=2 {
                @let share = f64::from(k) / 2.0;
                text class="tick" x=(W - RIGHT + 6.0) y=(format!("{:.1}", scale.share_y(share) + 4.0)) { (format!("{:.0}%", share * 100.0)) }
            }
            @for t in &weeks {
                text class="tick" x=(format!("{:.1}", scale.x(*t))) y=(H - 10.0) text-anchor="middle" {
                    (chrono::DateTime::from_timestamp(*t, 0).map_or(String::new(), |d| d.format("%b %-d").to_string()))
                }
            }
        }
    }
}

/// The chart as an inline `<svg>`.
pub fn svg(c: &Chart<'_>) -> Markup {
    let s = c.series;
    let (t0, t1) = match (s.days.first(), s.days.last()) {
        (Some(a), Some(b)) => (a.day, b.day + DAY),
        _ => (0, DAY),
    };
    let control_max = c.control.into_iter().flat_map(|x| x.days.iter().filter_map(|d| d.p95.or(d.p50)));
    let max = s
        .days
        .iter()
        .filter_map(|d| d.p95.or(d.p50))
        .chain(control_max)
        .chain(c.marks.accepted.as_ref().map(|a| a.0))
        .fold(0.0, f64::max);
    let scale = Scale { t0, t1, top: nice_top(max * 1.1) };
    let bar_w = ((W - LEFT - RIGHT) / s.days.len().max(1) as f64 * 0.7).max(1.0);
    html! {
        svg class="chart" viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(c.title) data-series="p50 p95 disrupted" {
            title { (c.title) }
            @if let Some(r) = c.marks.reference { (band(&scale, "reference", r, "reference period")) }
            @if let Some(w) = c.marks.window { (band(&scale, "window", w, "current window")) }
            @if let Some((earliest, at, latest)) = c.marks.onset {
                (band(&scale, "onset", (earliest, latest.max(earliest + 3600)), "onset interval"))
                line class="onset-at" x1=(format!("{:.1}", scale.x(at))) x2=(format!("{:.1}", scale.x(at))) y1=(TOP) y2=(H - BOTTOM) {
                    title { "onset" }
                }
            }
            (axes(&scale))
            g class="series disrupted" {
                @for p in &s.days {
                    @if let Some(share) = p.disrupted.filter(|x| *x > 0.0) {
                        rect x=(format!("{:.1}", scale.x(p.day + DAY / 2) - bar_w / 2.0)) y=(format!("{:.1}", scale.share_y(share)))
                            width=(format!("{bar_w:.1}")) height=(format!("{:.1}", H - BOTTOM - scale.share_y(share))) {
                            title { (format!("{:.0}% of {} runs disrupted", share * 100.0, p.runs)) }
                        }
                    }
                }
            }
            @if let Some(control) = c.control {
                path class="series control" d=(path(control, &scale, |p| p.p50)) {
                    title { (format!("control: {} P50", control.backend)) }
                }
            }
            path class="series p95" d=(path(s, &scale, |p| p.p95)) { title { (format!("{} P95", s.backend)) } }
            path class="series p50" d=(path(s, &scale, |p| p.p50)) { title { (format!("{} P50", s.backend)) } }
            @if let Some((t, label)) = &c.marks.fix {
                line class="fix" x1=(format!("{:.1}", scale.x(*t))) x2=(format!("{:.1}", scale.x(*t))) y1=(TOP) y2=(H - BOTTOM) {
                    title { (label) }
                }
            }
            @if let Some((v, label)) = &c.marks.accepted {
                line class="accepted" x1=(LEFT) x2=(W - RIGHT) y1=(format!("{:.1}", scale.y(*v))) y2=(format!("{:.1}", scale.y(*v))) {
                    title { (label) }
                }
            }
        }
    }
}

/// The legend under a chart.
pub fn legend(c: &Chart<'_>) -> Markup {
    html! {
        p class="legend" {
            span class="key p50" { "P50" } " "
            span class="key p95" { "P95" } " "
            span class="key disrupted" { "share of runs disrupted (right axis)" } " "
            @if let Some(control) = c.control { span class="key control" { "control: " (control.backend) " P50" } " " }
            @if c.marks.reference.is_some() { span class="key reference" { "reference" } " " }
            @if c.marks.window.is_some() { span class="key window" { "window" } " " }
            @if c.marks.onset.is_some() { span class="key onset" { "onset" } " " }
            @if let Some((_, label)) = &c.marks.fix { span class="key fix" { (label) } " " }
            @if let Some((_, label)) = &c.marks.accepted { span class="key accepted" { (label) } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::DayPoint;

    fn series(values: &[Option<f64>]) -> Series {
        let days = values
            .iter()
            .enumerate()
            .map(|(k, v)| DayPoint {
                day: k as i64 * DAY,
                runs: 4,
                p50: *v,
                p95: v.map(|x| x * 2.0),
                disrupted: Some(0.5),
            })
            .collect();
        Series { backend: "image-registry-new-connections".into(), label: String::new(), variants: 1, days }
    }

    #[test]
    fn a_chart_draws_its_series_breaks_them_at_gaps_and_marks_what_it_is_given() {
        let s = series(&[Some(2.0), Some(3.0), None, Some(30.0)]);
        let marks = Marks {
            window: Some((2 * DAY, 4 * DAY)),
            reference: Some((0, 2 * DAY)),
            onset: Some((DAY, DAY + 3600, 2 * DAY)),
            fix: Some((3 * DAY, "fix payload <x>".into())),
            accepted: Some((25.0, "accepted P50 ≤ 25s".into())),
        };
        let out = svg(&Chart { title: "t & <t>", series: &s, control: None, marks: &marks }).into_string();
        assert!(out.starts_with("<svg class=\"chart\""), "{out}");
        for class in [
            "series p50",
            "series p95",
            "series disrupted",
            "reference",
            "window",
            "onset",
            "onset-at",
            "fix",
            "accepted",
        ] {
            assert!(out.contains(&format!("class=\"{class}\"")), "{class} missing");
        }
        let p50 = out.split("class=\"series p50\" d=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(p50.matches('M').count(), 2, "a gap breaks the line: {p50}");
        assert!(out.contains("t &amp; &lt;t&gt;") && out.contains("fix payload &lt;x&gt;"));
        assert_eq!(nice_top(31.0), 50.0);
        assert_eq!(nice_top(2.0), 5.0);
    }
}
