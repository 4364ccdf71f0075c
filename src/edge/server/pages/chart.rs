//! The trend chart, drawn on the server as SVG: each backend's daily P50 and P95 (lines, seconds
//! on the left), the share of runs disrupted (bars, on the right), a control backend on the same
//! runs (dashed), the reference period and the current window shaded, the onset interval and
//! its most likely time marked, and a fix point or an accepted level once there is one. Every
//! text goes through maud, which escapes it. No script, no outside request.
//!
//! The x axis spans the days that have runs, not the days asked for. The chart is as wide as its
//! box: the SVG has no `viewBox`, so nothing in it is scaled and its text keeps its size in CSS
//! pixels at any width. Positions across are percentages of the plot; only the lines, which a
//! percentage cannot draw, sit in an inner SVG stretched to the plot with strokes kept unscaled.
//! The box's padding holds the axis labels (`.chart-box` in the page's stylesheet).

use maud::{Markup, html};
use serde::Serialize;

use crate::application::series::{DayPoint, Series};
use crate::model::{DAY, HOUR};

const TOP: f64 = 14.0;
const BOTTOM: f64 = 30.0;
/// The inner SVG's width in its own units: x runs from 0 to this across the plot.
const PLOT_UNITS: f64 = 1000.0;
/// Every label's size, in CSS pixels (nothing scales it).
pub const FONT_PX: u32 = 12;

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

/// How large a chart is drawn: the main one, or one of a group of small ones side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Main,
    Small,
}

impl Size {
    fn height(self) -> f64 {
        match self {
            Size::Main => 260.0,
            Size::Small => 170.0,
        }
    }
    /// Date labels along the x axis, at most: a small chart's plot can be 250 px wide.
    fn max_dates(self) -> i64 {
        match self {
            Size::Main => 8,
            Size::Small => 5,
        }
    }
}

/// One chart: its series (one per backend, the first the one whose disruption the bars show),
/// the control backend's on the same runs, its marks.
pub struct Chart<'a> {
    pub title: &'a str,
    pub series: Vec<&'a Series>,
    pub control: Option<&'a Series>,
    pub marks: &'a Marks,
    pub size: Size,
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

/// The days the chart spans: from the first day any of its series has runs to the end of the
/// last such day. A chart with no runs at all spans the days it was given.
pub fn domain(c: &Chart<'_>) -> (i64, i64) {
    let all = || {
        c.series
            .iter()
            .copied()
            .chain(c.control)
            .flat_map(|s| s.days.iter())
    };
    let with_runs = all().filter(|d| d.runs > 0).map(|d| d.day);
    match (with_runs.clone().min(), with_runs.max()) {
        (Some(a), Some(b)) => (a, b + DAY),
        _ => (
            all().map(|d| d.day).min().unwrap_or(0),
            all().map(|d| d.day + DAY).max().unwrap_or(DAY),
        ),
    }
}

/// "Nov 6 – Dec 4": the days a chart spans, for its heading.
pub fn span_words(c: &Chart<'_>) -> String {
    let (t0, t1) = domain(c);
    format!("{} – {}", date(t0), date(t1 - DAY))
}

fn date(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0).map_or(String::new(), |d| d.format("%b %-d").to_string())
}

struct Scale {
    t0: i64,
    t1: i64,
    top: f64,
    height: f64,
}

impl Scale {
    /// Across, as a share (0–1) of the plot's width.
    fn share(&self, t: i64) -> f64 {
        let span = (self.t1 - self.t0).max(1) as f64;
        (t.clamp(self.t0, self.t1) - self.t0) as f64 / span
    }
    /// Across, as an SVG percentage.
    fn x(&self, t: i64) -> String {
        format!("{:.2}%", self.share(t) * 100.0)
    }
    fn width(&self, from: i64, to: i64) -> f64 {
        (self.share(to) - self.share(from)) * 100.0
    }
    fn plot_height(&self) -> f64 {
        self.height - TOP - BOTTOM
    }
    fn y(&self, v: f64) -> f64 {
        TOP + (1.0 - (v / self.top).clamp(0.0, 1.0)) * self.plot_height()
    }
    fn share_y(&self, share: f64) -> f64 {
        TOP + (1.0 - share.clamp(0.0, 1.0)) * self.plot_height()
    }
}

/// A path through a series' days (day centres) in the inner SVG's units, broken where a day has
/// no runs.
fn path(s: &Series, scale: &Scale, value: impl Fn(&DayPoint) -> Option<f64>) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for p in s
        .days
        .iter()
        .filter(|p| p.day >= scale.t0 && p.day < scale.t1)
    {
        match value(p) {
            Some(v) => {
                let cmd = if pen_down { 'L' } else { 'M' };
                let x = scale.share(p.day + DAY / 2) * PLOT_UNITS;
                d.push_str(&format!("{cmd}{x:.1},{:.1} ", scale.y(v) - TOP));
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    d.trim_end().to_string()
}

fn band(scale: &Scale, class: &str, (from, to): (i64, i64), label: &str) -> Markup {
    let width = scale.width(from, to);
    html! {
        @if width > 0.0 {
            rect class=(class) x=(scale.x(from)) y=(TOP) width=(format!("{width:.2}%")) height=(scale.plot_height()) {
                title { (label) }
            }
        }
    }
}

/// Days between date labels: the shortest of 1, 2, 7, 14, 28… that keeps them under `max`.
fn date_step(span_days: i64, max: i64) -> i64 {
    [1, 2, 7, 14, 28]
        .into_iter()
        .chain((2..).map(|k| 28 * k))
        .find(|step| span_days / step < max)
        .unwrap_or(span_days.max(1))
}

fn axes(scale: &Scale, size: Size) -> Markup {
    let ticks: Vec<f64> = (0..=4).map(|k| scale.top * f64::from(k) / 4.0).collect();
    let step = date_step((scale.t1 - scale.t0) / DAY, size.max_dates()) * DAY;
    let dates: Vec<i64> = (0..)
        .map(|k| scale.t0 + k * step)
        .take_while(|t| *t < scale.t1)
        .collect();
    let below = scale.height - 10.0;
    html! {
        g class="axes" {
            @for v in &ticks {
                @let y = format!("{:.1}", scale.y(*v));
                line class="grid" x1="0" x2="100%" y1=(y) y2=(y) {}
                text class="tick" x="0" dx="-6" y=(format!("{:.1}", scale.y(*v) + 4.0)) text-anchor="end" font-size=(FONT_PX) { (crate::model::secs(*v)) }
            }
            @for k in 0..=2 {
                @let share = f64::from(k) / 2.0;
                text class="tick" x="100%" dx="6" y=(format!("{:.1}", scale.share_y(share) + 4.0)) font-size=(FONT_PX) { (format!("{:.0}%", share * 100.0)) }
            }
            @for t in &dates {
                text class="tick" x=(scale.x(*t)) y=(below) text-anchor="middle" font-size=(FONT_PX) { (date(*t)) }
            }
        }
    }
}

/// The lines of every series, in the inner SVG stretched over the plot.
fn lines(c: &Chart<'_>, scale: &Scale) -> Markup {
    html! {
        svg class="plot" x="0" y=(TOP) width="100%" height=(scale.plot_height())
            viewBox=(format!("0 0 {PLOT_UNITS} {}", scale.plot_height())) preserveAspectRatio="none" {
            @if let Some(control) = c.control {
                path class="series control" vector-effect="non-scaling-stroke" d=(path(control, scale, |p| p.p50)) {
                    title { (format!("control: {} P50", control.backend)) }
                }
            }
            @for (k, s) in c.series.iter().enumerate().rev() {
                path class=(format!("series p95 b{}", k % 4)) vector-effect="non-scaling-stroke" d=(path(s, scale, |p| p.p95)) { title { (format!("{} P95", s.backend)) } }
                path class=(format!("series p50 b{}", k % 4)) vector-effect="non-scaling-stroke" d=(path(s, scale, |p| p.p50)) { title { (format!("{} P50", s.backend)) } }
            }
        }
    }
}

/// The chart as an inline `<svg>`, inside the box whose padding holds its axis labels.
pub fn svg(c: &Chart<'_>) -> Markup {
    let (t0, t1) = domain(c);
    let max = c
        .series
        .iter()
        .copied()
        .chain(c.control)
        .flat_map(|s| {
            s.days
                .iter()
                .filter(|d| d.day >= t0 && d.day < t1)
                .filter_map(|d| d.p95.or(d.p50))
        })
        .chain(c.marks.accepted.as_ref().map(|a| a.0))
        .fold(0.0, f64::max);

    let scale = Scale {
        t0,
        t1,
        top: nice_top(max * 1.1),
        height: c.size.height(),
    };

    let shown = |p: &&DayPoint| p.day >= t0 && p.day < t1;
    let bar_w = 70.0 / ((t1 - t0) / DAY).max(1) as f64;
    let size = match c.size {
        Size::Main => "main",
        Size::Small => "small",
    };

    html! {
        div class=(format!("chart-box {size}")) {
        svg class="chart" width="100%" height=(scale.height) role="img" aria-label=(c.title) data-series="p50 p95 disrupted" {
            title { (c.title) }
            @if let Some(r) = c.marks.reference { (band(&scale, "reference", r, "reference period")) }
            @if let Some(w) = c.marks.window { (band(&scale, "window", w, "current window")) }
            @if let Some((earliest, at, latest)) = c.marks.onset {
                (band(&scale, "onset", (earliest, latest.max(earliest + HOUR)), "onset interval"))
                @if at >= t0 && at <= t1 {
                    line class="onset-at" x1=(scale.x(at)) x2=(scale.x(at)) y1=(TOP) y2=(scale.height - BOTTOM) {
                        title { "onset" }
                    }
                }
            }
            (axes(&scale, c.size))
            @if let Some(s) = c.series.first() {
                g class="series disrupted" {
                    @for p in s.days.iter().filter(shown) {
                        @if let Some(share) = p.disrupted.filter(|x| *x > 0.0) {
                            rect x=(format!("{:.2}%", scale.share(p.day + DAY / 2) * 100.0 - bar_w / 2.0)) y=(format!("{:.1}", scale.share_y(share)))
                                width=(format!("{bar_w:.2}%")) height=(format!("{:.1}", scale.height - BOTTOM - scale.share_y(share))) {
                                title { (format!("{:.0}% of {} runs disrupted", share * 100.0, p.runs)) }
                            }
                        }
                    }
                }
            }
            (lines(c, &scale))
            @if let Some((t, label)) = &c.marks.fix {
                @if *t >= t0 && *t <= t1 {
                    line class="fix" x1=(scale.x(*t)) x2=(scale.x(*t)) y1=(TOP) y2=(scale.height - BOTTOM) {
                        title { (label) }
                    }
                }
            }
            @if let Some((v, label)) = &c.marks.accepted {
                line class="accepted" x1="0" x2="100%" y1=(format!("{:.1}", scale.y(*v))) y2=(format!("{:.1}", scale.y(*v))) {
                    title { (label) }
                }
            }
        }
        }
    }
}

/// The legend of a chart, or of a group of charts drawn alike: it names every backend drawn.
pub fn legend(c: &Chart<'_>) -> Markup {
    html! {
        p class="legend" {
            @for (k, s) in c.series.iter().enumerate() {
                span class="backend" {
                    span class=(format!("key p50 b{}", k % 4)) { "P50" } " "
                    span class=(format!("key p95 b{}", k % 4)) { "P95" } " "
                    code { (s.backend) }
                }
                " "
            }
            @if let Some(s) = c.series.first() {
                span class="key disrupted" {
                    "share of runs disrupted"
                    @if c.series.len() > 1 { ", " (s.backend) }
                    " (right axis)"
                }
                " "
            }
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

    fn series(backend: &str, values: &[Option<f64>]) -> Series {
        let days = values
            .iter()
            .enumerate()
            .map(|(k, v)| DayPoint {
                day: k as i64 * DAY,
                runs: if v.is_some() { 4 } else { 0 },
                p50: *v,
                p95: v.map(|x| x * 2.0),
                disrupted: v.map(|_| 0.5),
            })
            .collect();
        Series {
            backend: backend.into(),
            label: String::new(),
            variants: 1,
            days,
        }
    }

    fn chart<'a>(series: Vec<&'a Series>, marks: &'a Marks, size: Size) -> Chart<'a> {
        Chart {
            title: "t",
            series,
            control: None,
            marks,
            size,
        }
    }

    /// The `d` of the first path with this class.
    fn path_of<'a>(svg: &'a str, class: &str) -> &'a str {
        let after = svg
            .split(&format!("class=\"{class}\""))
            .nth(1)
            .unwrap_or_else(|| panic!("{class} missing"));
        after
            .split("d=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
    }

    #[test]
    fn a_chart_draws_its_series_breaks_them_at_gaps_and_marks_what_it_is_given() {
        let mut s = series(
            "image-registry-new-connections",
            &[Some(2.0), Some(3.0), Some(0.0), Some(30.0)],
        );
        s.days[2].p50 = None;
        let marks = Marks {
            window: Some((2 * DAY, 4 * DAY)),
            reference: Some((0, 2 * DAY)),
            onset: Some((DAY, DAY + 3600, 2 * DAY)),
            fix: Some((3 * DAY, "fix payload <x>".into())),
            accepted: Some((25.0, "accepted P50 ≤ 25s".into())),
        };
        let c = Chart {
            title: "t & <t>",
            series: vec![&s],
            control: None,
            marks: &marks,
            size: Size::Main,
        };
        let out = svg(&c).into_string();
        assert!(
            out.starts_with("<div class=\"chart-box main\"><svg class=\"chart\""),
            "{out}"
        );
        for class in [
            "series p50 b0",
            "series p95 b0",
            "series disrupted",
            "reference",
            "window",
            "onset",
            "onset-at",
            "fix",
            "accepted",
        ] {
            assert!(
                out.contains(&format!("class=\"{class}\"")),
                "{class} missing"
            );
        }
        let p50 = path_of(&out, "series p50 b0");
        assert_eq!(p50.matches('M').count(), 2, "a gap breaks the line: {p50}");
        assert!(out.contains("t &amp; &lt;t&gt;") && out.contains("fix payload &lt;x&gt;"));
        assert_eq!(nice_top(31.0), 50.0);
        assert_eq!(nice_top(2.0), 5.0);
    }

    #[test]
    fn every_label_is_drawn_at_twelve_css_pixels_and_nothing_scales_it() {
        let s = series("b", &[Some(2.0), Some(40.0), Some(3.0)]);
        let marks = Marks::default();
        for size in [Size::Main, Size::Small] {
            let out = svg(&chart(vec![&s], &marks, size)).into_string();
            let texts: Vec<&str> = out
                .split("<text ")
                .skip(1)
                .map(|t| t.split('>').next().unwrap())
                .collect();
            assert!(texts.len() >= 8, "{size:?}: {} labels", texts.len());
            for t in &texts {
                let px: u32 = t
                    .split("font-size=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(px >= 11, "{size:?}: a {px} px label: {t}");
            }
            // a viewBox would scale what it holds with the width: only the lines' inner SVG has
            // one, and it holds no text; nothing is transformed
            assert_eq!(out.matches("viewBox").count(), 1, "{out}");
            let plot = out
                .split("<svg class=\"plot\"")
                .nth(1)
                .unwrap()
                .split("</svg>")
                .next()
                .unwrap();
            assert!(
                plot.contains("viewBox") && !plot.contains("<text"),
                "{plot}"
            );
            assert!(!out.contains("transform"), "{out}");
            assert_eq!(
                plot.matches("<path ").count(),
                plot.matches("vector-effect=\"non-scaling-stroke\"").count()
            );
        }
    }

    #[test]
    fn the_x_axis_spans_the_days_with_runs_and_no_more() {
        // 56 days asked for, runs on days 20 to 40 only
        let values: Vec<Option<f64>> = (0..56)
            .map(|d| (20..=40).contains(&d).then_some(2.0))
            .collect();
        let s = series("b", &values);
        let marks = Marks {
            reference: Some((0, 30 * DAY)),
            ..Marks::default()
        };
        let c = chart(vec![&s], &marks, Size::Main);
        assert_eq!(domain(&c), (20 * DAY, 41 * DAY));
        assert_eq!(span_words(&c), "Jan 21 – Feb 10");
        let out = svg(&c).into_string();
        let dates: Vec<&str> = out
            .split("text-anchor=\"middle\" font-size=\"12\">")
            .skip(1)
            .map(|t| t.split('<').next().unwrap())
            .collect();
        assert_eq!(
            dates,
            ["Jan 21", "Jan 28", "Feb 4"],
            "weekly from the first day with runs"
        );
        assert!(
            out.contains("x=\"0.00%\" y=\"14\" width=\"47.62%\""),
            "the reference band starts at the axis: {out}"
        );
        // the lines run from the first day's centre to the last one's, over the whole plot
        let p50 = path_of(&out, "series p50 b0");
        let y = Scale {
            t0: 0,
            t1: DAY,
            top: 5.0,
            height: Size::Main.height(),
        }
        .y(2.0)
            - TOP;
        assert!(
            p50.starts_with(&format!("M23.8,{y:.1}")) && p50.ends_with(&format!("L976.2,{y:.1}")),
            "{p50}"
        );
        // a control with runs earlier widens the axis to its days too
        let control = series(
            "control",
            &(0..56)
                .map(|d| (10..=40).contains(&d).then_some(0.0))
                .collect::<Vec<_>>(),
        );
        let with_control = Chart {
            control: Some(&control),
            ..chart(vec![&s], &marks, Size::Main)
        };
        assert_eq!(domain(&with_control), (10 * DAY, 41 * DAY));
        // no runs at all: the days given
        let empty = series("b", &[None, None, None]);
        assert_eq!(
            domain(&chart(vec![&empty], &marks, Size::Small)),
            (0, 3 * DAY)
        );
    }

    #[test]
    fn date_labels_thin_out_to_fit_the_chart() {
        assert_eq!(date_step(28, Size::Main.max_dates()), 7);
        assert_eq!(date_step(56, Size::Main.max_dates()), 14);
        assert_eq!(date_step(28, Size::Small.max_dates()), 7);
        assert_eq!(date_step(56, Size::Small.max_dates()), 14);
        assert_eq!(date_step(3, Size::Small.max_dates()), 1);
        assert_eq!(date_step(400, Size::Main.max_dates()), 56);
    }

    #[test]
    fn every_backend_is_drawn_in_its_own_colour_and_named_in_the_legend() {
        let new = series("image-registry-new-connections", &[Some(2.0), Some(30.0)]);
        let reused = series(
            "image-registry-reused-connections",
            &[Some(1.0), Some(20.0)],
        );
        let marks = Marks::default();
        let c = chart(vec![&new, &reused], &marks, Size::Main);
        let out = svg(&c).into_string();
        for (k, b) in [(0, &new), (1, &reused)] {
            for p in ["p50", "p95"] {
                let d = path_of(&out, &format!("series {p} b{k}"));
                assert!(
                    d.starts_with('M') && d.contains('L'),
                    "{p} of {}: {d}",
                    b.backend
                );
            }
            assert!(
                out.contains(&format!("<title>{} P50</title>", b.backend)),
                "{}",
                b.backend
            );
        }
        let legend = legend(&c).into_string();
        assert!(
            legend.contains("<code>image-registry-new-connections</code>"),
            "{legend}"
        );
        assert!(
            legend.contains("<code>image-registry-reused-connections</code>"),
            "{legend}"
        );
        assert!(
            legend.contains("share of runs disrupted, image-registry-new-connections"),
            "the bars say whose"
        );
    }
}
