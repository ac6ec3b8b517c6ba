//! The dashboard's charts of how things stood over time (as opposed to what happened in
//! each hour): the outbox's depth with its dead letters, and a user's notes and chunks.
//! Drawn on the server as SVG like [`super::charts`], each with its figures as a table
//! and every point's values in its title.

use maud::{html, Markup};

use super::charts::{hour_label, AXIS, HEIGHT, WIDTH};
use crate::db::clock::to_rfc3339;
use crate::memory::DayOfMemory;
use crate::notify::outbox::{HourOfOutbox, OutboxHistory};
use crate::schedule::store::history::HistorySpan;

const WAITING_COLOUR: &str = "#2874a6";
const DEAD_COLOUR: &str = "#c0392b";
const NOTES_COLOUR: &str = "#2e8b57";
const CHUNKS_COLOUR: &str = "#2874a6";

/// An instant to the minute, UTC: `2026-11-27T14:00Z`.
fn minute(ms: i64) -> String {
    let at = to_rfc3339(ms);
    format!("{}Z", at.get(..16).unwrap_or(&at))
}

/// The points of a line through `values`, scaled so `most` touches the top.
fn polyline(values: impl Iterator<Item = i64>, slot: f64, most: i64) -> String {
    let scale = (HEIGHT - AXIS - 8.0) / most.max(1) as f64;
    values
        .enumerate()
        .map(|(i, v)| {
            let x = i as f64 * slot + slot / 2.0;
            let y = HEIGHT - AXIS - v as f64 * scale;
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn outbox_title(hour: &HourOfOutbox) -> String {
    format!(
        "{}: {} waiting at the hour's end; {} written, {} delivered, {} dead letters",
        minute(hour.start),
        hour.waiting,
        hour.written,
        hour.delivered,
        hour.dead
    )
}

/// The outbox's depth at each hour's end (a line) and its new dead letters (bars), on one
/// scale, with links to the other span (keeping `status`, the list's filter) and a table.
pub fn outbox(history: &OutboxHistory, status: Option<&str>) -> Markup {
    let hours = &history.hours;
    let most = hours
        .iter()
        .map(|h| h.waiting.max(h.dead))
        .max()
        .unwrap_or(0);
    let scale = (HEIGHT - AXIS - 8.0) / most.max(1) as f64;
    let slot = WIDTH / hours.len().max(1) as f64;
    let bar = (slot * 0.6).max(1.0);
    let dead: i64 = hours.iter().map(|h| h.dead).sum();
    let deepest = hours.iter().map(|h| h.waiting).max().unwrap_or(0);
    let now_waiting = hours.last().map_or(0, |h| h.waiting);
    let label_every = super::charts::label_every(history.span);
    let summary = format!(
        "The outbox by hour over the last {}: {now_waiting} waiting now, at most {deepest} at an hour's end; {dead} new dead letters",
        if history.span == HistorySpan::Day { "24 hours" } else { "7 days" }
    );
    let filter = status
        .map(|s| format!("&status={}", super::views::urlencode(s)))
        .unwrap_or_default();
    html! {
        section #outbox-chart {
            h2 { "Over time" }
            p.chart-spans {
                @for span in [HistorySpan::Day, HistorySpan::Week] {
                    @if span == history.span { strong { (span.as_str()) } } @else {
                        a href={ "/ui/outbox?range=" (span.as_str()) (filter) } { (span.as_str()) }
                    }
                    " "
                }
                span.hint { "(UTC; delivered messages are kept for "
                    code { "consolidation.outbox_retention_days" } ": were that shorter than the span, the depth before then would count too few)" }
            }
            svg.chart viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img" aria-label=(summary)
                preserveAspectRatio="none" {
                @for (i, hour) in hours.iter().enumerate() {
                    g {
                        title { (outbox_title(hour)) }
                        @if hour.dead > 0 {
                            @let h = hour.dead as f64 * scale;
                            rect x=(format!("{:.1}", i as f64 * slot + (slot - bar) / 2.0))
                                y=(format!("{:.1}", HEIGHT - AXIS - h)) width=(format!("{bar:.1}"))
                                height=(format!("{h:.1}")) fill=(DEAD_COLOUR) {}
                        }
                        circle cx=(format!("{:.1}", i as f64 * slot + slot / 2.0))
                            cy=(format!("{:.1}", HEIGHT - AXIS - hour.waiting as f64 * scale))
                            r="2" fill=(WAITING_COLOUR) {}
                        @if i % label_every == 0 {
                            text x=(format!("{:.1}", i as f64 * slot)) y=(format!("{:.1}", HEIGHT - 4.0)) font-size="10" {
                                (hour_label(hour.start, history.span))
                            }
                        }
                    }
                }
                polyline points=(polyline(hours.iter().map(|h| h.waiting), slot, most))
                    fill="none" stroke=(WAITING_COLOUR) stroke-width="1.5" {}
            }
            ul.legend {
                li { span class="swatch sw-waiting" {} " waiting (line)" }
                li { span class="swatch sw-dead" {} " new dead letters (bars)" }
            }
            details {
                summary { "The same as a table" }
                table #outbox-history {
                    thead { tr { th { "Hour (UTC)" } th { "Waiting at its end" } th { "Written" } th { "Delivered" } th { "Dead letters" } } }
                    tbody {
                        @for hour in hours.iter().filter(|h| h.waiting + h.written + h.delivered + h.dead > 0) {
                            tr {
                                td { (minute(hour.start)) }
                                td { (hour.waiting) } td { (hour.written) } td { (hour.delivered) } td { (hour.dead) }
                            }
                        }
                    }
                }
                @if hours.iter().all(|h| h.waiting + h.written + h.delivered + h.dead == 0) {
                    p { "Nothing was written, delivered or waiting in this time." }
                }
            }
        }
    }
}

/// One series of a user's memory over days.
fn day_line(
    id: &str,
    name: &str,
    colour: &str,
    days: &[DayOfMemory],
    value: fn(&DayOfMemory) -> i64,
) -> Markup {
    let slot = WIDTH / days.len().max(1) as f64;
    let most = days.iter().map(value).max().unwrap_or(0);
    let scale = (HEIGHT - AXIS - 8.0) / most.max(1) as f64;
    let first = days.first().map(value).unwrap_or(0);
    let last = days.last().map(value).unwrap_or(0);
    let summary = format!(
        "{name} over the last {} days: {first} then, {last} now, at most {most}",
        days.len()
    );
    html! {
        figure.trend {
            figcaption { span class={ "swatch sw-" (id) } {} " " (name) ": " (last) " now" }
            svg.chart #(format!("{id}-chart")) viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img" aria-label=(summary)
                preserveAspectRatio="none" {
                @for (i, day) in days.iter().enumerate() {
                    g {
                        title { (to_rfc3339(day.start).get(..10).unwrap_or_default()) ": " (value(day)) " " (name.to_lowercase()) }
                        circle cx=(format!("{:.1}", i as f64 * slot + slot / 2.0))
                            cy=(format!("{:.1}", HEIGHT - AXIS - value(day) as f64 * scale))
                            r="2.5" fill=(colour) {}
                        @if i % 7 == 0 {
                            text x=(format!("{:.1}", i as f64 * slot)) y=(format!("{:.1}", HEIGHT - 4.0)) font-size="10" {
                                (to_rfc3339(day.start).get(5..10).unwrap_or_default())
                            }
                        }
                    }
                }
                polyline points=(polyline(days.iter().map(value), slot, most))
                    fill="none" stroke=(colour) stroke-width="1.5" {}
            }
        }
    }
}

/// A user's notes and chunks a day at a time, each on its own scale, with a table.
pub fn memory_growth(days: &[DayOfMemory]) -> Markup {
    html! {
        section #memory-growth {
            h2 { "Over time" }
            p.hint { "At each day's end (UTC): the user's current notes (every agent's and the shared ones; from their versions, so deleted notes count on the days they stood) and the chunks search reads (those still kept, by the day each was written)." }
            div.trends {
                (day_line("notes", "Notes", NOTES_COLOUR, days, |d| d.notes))
                (day_line("chunks", "Chunks", CHUNKS_COLOUR, days, |d| d.chunks))
            }
            details {
                summary { "The same as a table" }
                table #memory-by-day {
                    thead { tr { th { "Day (UTC)" } th { "Notes" } th { "Change" } th { "Chunks" } th { "Written" } } }
                    tbody {
                        @for day in days.iter().filter(|d| d.notes_change != 0 || d.chunks_written != 0) {
                            tr {
                                td { (to_rfc3339(day.start).get(..10).unwrap_or_default()) }
                                td { (day.notes) }
                                td { @if day.notes_change > 0 { "+" } (day.notes_change) }
                                td { (day.chunks) }
                                td { (day.chunks_written) }
                            }
                        }
                    }
                }
                @if days.iter().all(|d| d.notes_change == 0 && d.chunks_written == 0) {
                    p { "Nothing changed in these days." }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(start: i64, waiting: i64, dead: i64) -> HourOfOutbox {
        HourOfOutbox {
            start,
            waiting,
            dead,
            ..Default::default()
        }
    }

    #[test]
    fn each_hour_says_its_depth_and_dead_letters() {
        let start = 1_800_000_000_000; // on the hour
        let history = OutboxHistory {
            span: HistorySpan::Day,
            hours: (0..24)
                .map(|i| {
                    hour(
                        start + i * 3_600_000,
                        if i == 5 { 12 } else { 0 },
                        i64::from(i == 7),
                    )
                })
                .collect(),
        };
        let svg = outbox(&history, Some("dead")).into_string();
        assert!(
            svg.contains("12 waiting at the hour&#39;s end")
                || svg.contains("12 waiting at the hour's end"),
            "{svg}"
        );
        assert!(svg.contains("1 dead letters"), "{svg}");
        assert_eq!(
            svg.matches("<rect").count(),
            1,
            "one hour had a dead letter"
        );
        assert!(
            svg.contains("href=\"/ui/outbox?range=7d&amp;status=dead\""),
            "{svg}"
        );
        // The deepest hour's point is at the top of the drawing area.
        assert!(svg.contains(&format!("cy=\"{:.1}\"", 8.0)), "{svg}");
    }

    #[test]
    fn an_idle_outbox_says_so() {
        let history = OutboxHistory {
            span: HistorySpan::Week,
            hours: vec![HourOfOutbox::default(); 168],
        };
        let html = outbox(&history, None).into_string();
        assert!(html.contains("Nothing was written"), "{html}");
    }
}
