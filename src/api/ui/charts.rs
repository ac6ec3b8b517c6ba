//! Charts drawn on the server as SVG (no script), each with the same figures as a table
//! beside it for a reader that cannot see it, and colour never the only cue: each series
//! is named in the legend and in each bar's title.

use maud::{html, Markup};

use crate::db::clock::to_rfc3339;
use crate::schedule::store::history::{HistorySpan, HourOfRuns, RunHistory};
use crate::schedule::store::lateness::{bucket_label, HourOfLateness, LatenessHistory, BOUNDS_MS};

/// The chart's drawing area, in SVG units (it scales to the page's width).
pub(super) const WIDTH: f64 = 720.0;
pub(super) const HEIGHT: f64 = 160.0;
/// Room under the bars for the hour labels.
pub(super) const AXIS: f64 = 18.0;

/// A series of the runs chart: its name, its colour (the bars'; the legend's swatch is
/// `.sw-NAME` in the stylesheet, the same), and its count in an hour.
struct Series {
    name: &'static str,
    colour: &'static str,
    count: fn(&HourOfRuns) -> i64,
}

const SERIES: [Series; 5] = [
    Series {
        name: "succeeded",
        colour: "#2e8b57",
        count: |h| h.succeeded,
    },
    Series {
        name: "failed",
        colour: "#c0392b",
        count: |h| h.failed,
    },
    Series {
        name: "cancelled",
        colour: "#7f8c8d",
        count: |h| h.cancelled,
    },
    Series {
        name: "skipped",
        colour: "#d4ac0d",
        count: |h| h.skipped,
    },
    Series {
        name: "running",
        colour: "#2874a6",
        count: |h| h.going,
    },
];

/// An hour's start as its label, UTC: `HH:00` over a day, `MM-DD` (a day's first hour)
/// over a week.
pub(super) fn hour_label(start: i64, span: HistorySpan) -> String {
    let at = to_rfc3339(start);
    let part = match span {
        HistorySpan::Day => at.get(11..16),
        HistorySpan::Week => at.get(5..10),
    };
    part.unwrap_or_default().to_string()
}

/// The hour in words: `2026-11-27T14:00Z: 12 succeeded, 1 failed`.
fn hour_title(hour: &HourOfRuns) -> String {
    let counts: Vec<String> = SERIES
        .iter()
        .filter(|s| (s.count)(hour) > 0)
        .map(|s| format!("{} {}", (s.count)(hour), s.name))
        .collect();
    let when = to_rfc3339(hour.start);
    let when = when.get(..16).unwrap_or(&when);
    if counts.is_empty() {
        format!("{when}Z: no runs")
    } else {
        format!("{when}Z: {}", counts.join(", "))
    }
}

/// Hours between a chart's axis labels: every 3 over a day, every day over a week.
pub(super) fn label_every(span: HistorySpan) -> usize {
    match span {
        HistorySpan::Day => 3,
        HistorySpan::Week => 24,
    }
}

/// Where a pointer shows a chart's figures: each hour over a day, each day over a week
/// (a week's 168 titles would double the page).
pub(super) struct HoverRegion {
    pub hours: std::ops::Range<usize>,
    pub x: f64,
    pub width: f64,
}

/// The hover regions of hours starting at `starts` (oldest first): an hour each over a
/// day, a UTC day's hours each over a week.
pub(super) fn hover_regions(
    starts: impl Iterator<Item = i64>,
    slot: f64,
    span: HistorySpan,
) -> Vec<HoverRegion> {
    let mut regions: Vec<HoverRegion> = Vec::new();
    let mut last_day = None;
    for (i, start) in starts.enumerate() {
        let day = start.div_euclid(24 * 3_600_000);
        let joins = span == HistorySpan::Week && last_day == Some(day);
        last_day = Some(day);
        match regions.last_mut() {
            Some(region) if joins => {
                region.hours.end = i + 1;
                region.width += slot;
            }
            _ => regions.push(HoverRegion {
                hours: i..i + 1,
                x: i as f64 * slot,
                width: slot,
            }),
        }
    }
    regions
}

/// Each series' bars as one path, stacked from the bottom in the legend's order.
fn series_paths(hours: &[HourOfRuns], slot: f64, bar: f64, scale: f64) -> Vec<String> {
    let mut paths = vec![String::new(); SERIES.len()];
    for (i, hour) in hours.iter().enumerate() {
        let x = i as f64 * slot + (slot - bar) / 2.0;
        let mut top = HEIGHT - AXIS;
        for (series, path) in SERIES.iter().zip(&mut paths) {
            let n = (series.count)(hour);
            if n > 0 {
                let h = n as f64 * scale;
                top -= h;
                path.push_str(&format!("M{x:.1} {top:.1}h{bar:.1}v{h:.1}h-{bar:.1}z"));
            }
        }
    }
    paths
}

/// The runs of a region's hours in words: an hour's as [`hour_title`], a day's summed
/// (`2026-11-27: 288 succeeded, 3 failed`).
fn runs_title(hours: &[HourOfRuns], span: HistorySpan) -> String {
    match (span, hours) {
        (HistorySpan::Day, [hour]) => hour_title(hour),
        _ => {
            let Some(first) = hours.first() else {
                return String::new();
            };
            let mut sum = HourOfRuns {
                start: first.start,
                ..Default::default()
            };
            for h in hours {
                sum.succeeded += h.succeeded;
                sum.failed += h.failed;
                sum.cancelled += h.cancelled;
                sum.skipped += h.skipped;
                sum.going += h.going;
            }
            let title = hour_title(&sum);
            let day = to_rfc3339(first.start);
            match title.split_once("Z: ") {
                Some((_, counts)) => format!("{}: {counts}", day.get(..10).unwrap_or(&day)),
                None => title,
            }
        }
    }
}

/// Runs per hour by status, stacked bars, with links to the other span and a table.
pub fn runs_per_hour(history: &RunHistory) -> Markup {
    let hours = &history.hours;
    let busiest = hours.iter().map(HourOfRuns::total).max().unwrap_or(0);
    let most = busiest.max(1);
    let total: i64 = hours.iter().map(HourOfRuns::total).sum();
    let failed: i64 = hours.iter().map(|h| h.failed).sum();
    let slot = WIDTH / hours.len().max(1) as f64;
    let bar = (slot * 0.8).max(1.0);
    let scale = (HEIGHT - AXIS) / most as f64;
    // A label every 3 hours over a day, every day over a week.
    let label_every = label_every(history.span);
    let span_words = match history.span {
        HistorySpan::Day => "the last 24 hours",
        HistorySpan::Week => "the last 7 days",
    };
    let summary = format!(
        "Runs per hour by status over {span_words}: {total} runs, {failed} failed; at most {busiest} in an hour"
    );
    html! {
        section #runs-chart {
            h2 { "Runs per hour" }
            p.chart-spans {
                @for span in [HistorySpan::Day, HistorySpan::Week] {
                    @if span == history.span { strong { (span.as_str()) } } @else {
                        a href={ "/ui?range=" (span.as_str()) } { (span.as_str()) }
                    }
                    " "
                }
                span.hint { "(by the hour each occurrence was for, UTC; of the runs still kept: each schedule keeps its last "
                    code { "scheduler.history_keep" } ")" }
            }
            svg.chart viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img" aria-label=(summary)
                preserveAspectRatio="none" {
                // A path a series: a week's bars cost a few bytes each.
                @for (series, bars) in SERIES.iter().zip(series_paths(hours, slot, bar, scale)) {
                    @if !bars.is_empty() { path d=(bars) fill=(series.colour) {} }
                }
                @for region in hover_regions(hours.iter().map(|h| h.start), slot, history.span) {
                    g {
                        title { (runs_title(&hours[region.hours.clone()], history.span)) }
                        rect x=(format!("{:.1}", region.x)) y="0" width=(format!("{:.1}", region.width))
                            height=(format!("{:.1}", HEIGHT - AXIS)) fill="transparent" {}
                    }
                }
                @for (i, hour) in hours.iter().enumerate().step_by(label_every) {
                    text x=(format!("{:.1}", i as f64 * slot + (slot - bar) / 2.0)) y=(format!("{:.1}", HEIGHT - 4.0)) font-size="10" {
                        (hour_label(hour.start, history.span))
                    }
                }
            }
            ul.legend {
                @for series in &SERIES {
                    // A class, not a style attribute: the pages' policy allows no inline style.
                    li { span class={ "swatch sw-" (series.name) } {} " " (series.name) }
                }
            }
            details {
                summary { "The same as a table" }
                table #runs-per-hour {
                    thead { tr { th { "Hour (UTC)" } @for series in &SERIES { th { (series.name) } } } }
                    tbody {
                        @for hour in hours.iter().filter(|h| h.total() > 0) {
                            tr {
                                td { (to_rfc3339(hour.start).get(..16).unwrap_or_default()) "Z" }
                                @for series in &SERIES { td { ((series.count)(hour)) } }
                            }
                        }
                    }
                }
                @if total == 0 { p { "No runs in this time." } }
            }
        }
    }
}

/// The lateness chart's two series: p50 and p99, by colour (`.sw-NAME`) and by shape
/// (a dot for the median, a square for the 99th percentile), and named in every title.
const P50_COLOUR: &str = "#2874a6";
const P99_COLOUR: &str = "#c0392b";

/// The y of a bucket: the fastest at the bottom, "over an hour" at the top.
fn bucket_y(bucket: usize) -> f64 {
    let top = 8.0;
    let bottom = HEIGHT - AXIS;
    bottom - (bottom - top) * bucket as f64 / BOUNDS_MS.len() as f64
}

/// How late runs started, p50 and p99 by hour, with a table.
pub fn lateness(history: &LatenessHistory) -> Markup {
    let hours = &history.hours;
    let slot = WIDTH / hours.len().max(1) as f64;
    let label_every = label_every(history.span);
    let runs: i64 = hours.iter().map(|h| h.runs).sum();
    let worst = hours.iter().filter_map(|h| h.p99).max();
    let summary = match worst {
        Some(worst) => format!(
            "How late runs started, by hour: {runs} runs; the worst hour's p99 {}",
            bucket_label(worst)
        ),
        None => "How late runs started, by hour: no runs started in this time".to_string(),
    };
    html! {
        section #lateness-chart {
            h2 { "Lateness" }
            p.hint { "How long after its time each run started (p50 and p99 of each hour, to the nearest step of the scale), by the hour its occurrence was for, UTC; backfills and skipped runs left out." }
            svg.chart viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img" aria-label=(summary)
                preserveAspectRatio="none" {
                @for bucket in [2usize, 5, 10, 14] {
                    text x="2" y=(format!("{:.1}", bucket_y(bucket) + 3.0)) font-size="9" { (bucket_label(bucket)) }
                }
                @let (ranges, dots, squares) = lateness_paths(hours, slot);
                @if !ranges.is_empty() {
                    path d=(ranges) stroke="#999" stroke-width="1" fill="none" {}
                    path d=(dots) fill=(P50_COLOUR) {}
                    path d=(squares) fill=(P99_COLOUR) {}
                }
                @for region in hover_regions(hours.iter().map(|h| h.start), slot, history.span) {
                    @let hours_of = &hours[region.hours.clone()];
                    @if hours_of.iter().any(|h| h.runs > 0) {
                        g {
                            title { (lateness_region_title(hours_of)) }
                            rect x=(format!("{:.1}", region.x)) y="0" width=(format!("{:.1}", region.width))
                                height=(format!("{:.1}", HEIGHT - AXIS)) fill="transparent" {}
                        }
                    }
                }
                @for (i, hour) in hours.iter().enumerate().step_by(label_every) {
                    text x=(format!("{:.1}", i as f64 * slot)) y=(format!("{:.1}", HEIGHT - 4.0)) font-size="10" {
                        (hour_label(hour.start, history.span))
                    }
                }
            }
            ul.legend {
                li { span class="swatch sw-p50" {} " p50 (dot)" }
                li { span class="swatch sw-p99" {} " p99 (square)" }
            }
            details {
                summary { "The same as a table" }
                table #lateness {
                    thead { tr { th { "Hour (UTC)" } th { "Runs" } th { "p50" } th { "p99" } } }
                    tbody {
                        @for hour in hours.iter().filter(|h| h.runs > 0) {
                            tr {
                                td { (to_rfc3339(hour.start).get(..16).unwrap_or_default()) "Z" }
                                td { (hour.runs) }
                                td { (hour.p50.map(bucket_label).unwrap_or_default()) }
                                td { (hour.p99.map(bucket_label).unwrap_or_default()) }
                            }
                        }
                    }
                }
                @if runs == 0 { p { "No runs started in this time." } }
            }
        }
    }
}

/// Each hour's p50 to p99 line, p50 dot and p99 square, as three paths.
fn lateness_paths(hours: &[HourOfLateness], slot: f64) -> (String, String, String) {
    let (mut ranges, mut dots, mut squares) = (String::new(), String::new(), String::new());
    for (i, hour) in hours.iter().enumerate() {
        let (Some(p50), Some(p99)) = (hour.p50, hour.p99) else {
            continue;
        };
        let x = i as f64 * slot + slot / 2.0;
        let (y50, y99) = (bucket_y(p50), bucket_y(p99));
        ranges.push_str(&format!("M{x:.1} {y50:.1}V{y99:.1}"));
        dots.push_str(&format!(
            "M{:.1} {y50:.1}a2.5 2.5 0 1 0 5 0a2.5 2.5 0 1 0 -5 0",
            x - 2.5
        ));
        squares.push_str(&format!("M{:.1} {:.1}h5v5h-5z", x - 2.5, y99 - 2.5));
    }
    (ranges, dots, squares)
}

/// A region's lateness in words: an hour's as [`lateness_title`], a day's as its runs and
/// its worst hour's p99.
fn lateness_region_title(hours: &[HourOfLateness]) -> String {
    match hours {
        [hour] => match (hour.p50, hour.p99) {
            (Some(p50), Some(p99)) => lateness_title(hour.start, hour.runs, p50, p99),
            _ => String::new(),
        },
        _ => {
            let runs: i64 = hours.iter().map(|h| h.runs).sum();
            let day = hours
                .first()
                .map(|h| to_rfc3339(h.start))
                .unwrap_or_default();
            let worst = hours.iter().filter_map(|h| h.p99).max();
            format!(
                "{}: {runs} runs, the worst hour's p99 {}",
                day.get(..10).unwrap_or(&day),
                worst.map(bucket_label).unwrap_or_default()
            )
        }
    }
}

/// An hour's lateness in words: `2026-11-27T14:00Z: 12 runs, p50 ≤ 100 ms, p99 ≤ 2.5 s`.
fn lateness_title(start: i64, runs: i64, p50: usize, p99: usize) -> String {
    let when = to_rfc3339(start);
    let when = when.get(..16).unwrap_or(&when);
    format!(
        "{when}Z: {runs} runs, p50 {}, p99 {}",
        bucket_label(p50),
        bucket_label(p99)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(counts: &[(i64, i64)]) -> RunHistory {
        RunHistory {
            span: HistorySpan::Day,
            hours: (0..24)
                .map(|i| {
                    let (succeeded, failed) = counts.get(i as usize).copied().unwrap_or((0, 0));
                    HourOfRuns {
                        start: 1_800_000_000_000 + i * 3_600_000,
                        succeeded,
                        failed,
                        ..Default::default()
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn bars_are_as_tall_as_their_counts_and_say_them() {
        let page = runs_per_hour(&history(&[(4, 0), (2, 2)])).into_string();
        // The tallest hour fills the drawing area; the others in proportion.
        assert!(page.contains("v142.0h"), "{page}");
        assert!(page.contains("v71.0h"), "{page}");
        assert!(page.contains("2 succeeded, 2 failed"), "{page}");
        assert!(page.contains("8 runs, 2 failed"), "{page}");
        // The table lists the two hours with runs, not the empty ones.
        assert_eq!(page.matches("<tr><td>").count(), 2, "{page}");
    }

    #[test]
    fn a_week_says_each_days_runs_on_hover() {
        let week = RunHistory {
            span: HistorySpan::Week,
            hours: (0..168)
                .map(|i| HourOfRuns {
                    start: 1_800_000_000_000 + i * 3_600_000,
                    succeeded: 2,
                    failed: i64::from(i == 30),
                    ..Default::default()
                })
                .collect(),
        };
        let page = runs_per_hour(&week).into_string();
        // From 08:00 on the 15th: 16 hours of it, six whole days, 8 hours of the 22nd.
        assert_eq!(page.matches("<title>").count(), 8, "a title a UTC day");
        assert!(
            page.contains("<title>2027-01-16: 48 succeeded, 1 failed</title>"),
            "{page}"
        );
        assert_eq!(
            page.matches("<tr><td>").count(),
            168,
            "every hour in the table"
        );
    }

    #[test]
    fn an_empty_span_says_so() {
        let page = runs_per_hour(&history(&[])).into_string();
        assert!(page.contains("No runs in this time."));
        assert!(page.contains("0 runs, 0 failed"));
        assert!(!page.contains("<path"));
    }

    #[test]
    fn lateness_points_sit_at_their_buckets_and_say_them() {
        use crate::schedule::store::lateness::HourOfLateness;
        let history = LatenessHistory {
            span: HistorySpan::Day,
            hours: (0..24)
                .map(|i| HourOfLateness {
                    start: 1_800_000_000_000 + i * 3_600_000,
                    runs: if i == 3 { 40 } else { 0 },
                    p50: (i == 3).then_some(2),
                    p99: (i == 3).then_some(6),
                })
                .collect(),
        };
        let page = lateness(&history).into_string();
        assert!(
            page.contains("40 runs, p50 ≤ 100 ms, p99 ≤ 2.5 s"),
            "{page}"
        );
        assert!(
            page.contains("the worst hour&#39;s p99 ≤ 2.5 s")
                || page.contains("the worst hour's p99 ≤ 2.5 s"),
            "{page}"
        );
        assert_eq!(page.matches("a2.5 2.5 0 1 0 5 0").count(), 1, "one dot");
        assert!(page.contains(&format!(" {:.1}a2.5", bucket_y(2))), "{page}");
        assert_eq!(page.matches("<tr><td>").count(), 1);
        assert!(bucket_y(6) < bucket_y(2), "slower is higher");
    }
}
