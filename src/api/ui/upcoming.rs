//! `/ui/upcoming`: the next seven days (UTC) as a calendar, a column a day, each
//! schedule's occurrences at the times they will be due, and those its skip dates and
//! calendars leave out shown as skipped. An overdue occurrence (due, not yet run) is on
//! today's column, marked so. Read from the active schedules due within the week, soonest
//! first, and a bounded number of occurrences worked out, so the page costs about the
//! same however many schedules there are and however often they run.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{html, Markup};

use super::failure;
use super::session::UiSession;
use super::views::{badge, layout, urlencode, Page, Script};
use crate::api::ApiState;
use crate::input::visible;
use crate::schedule::types::Schedule;
use crate::schedule::upcoming::{occurrences, Occurrence};

const DAY_MS: i64 = 86_400_000;
/// Days the calendar shows, today first.
const DAYS: usize = 7;
/// Schedules read: the soonest due.
const SCHEDULES: i64 = 1_000;
/// Occurrences worked out for a page, shared among its schedules (a schedule every
/// minute has 10,080 a week): each gets this over their number, from 8 to 200.
const OCCURRENCES: usize = 20_000;
/// Occurrences listed in a day; the rest counted.
const PER_DAY: usize = 40;

/// How long working out the occurrences may take before the page shows what it has.
const WORK_BUDGET: Duration = Duration::from_millis(250);

/// One entry of a day.
struct Entry<'a> {
    schedule: &'a Schedule,
    at: Occurrence,
}

pub async fn page(State(state): State<ApiState>, session: UiSession) -> Response {
    let now = state.app.clock().now_ms();
    let today = now - now.rem_euclid(DAY_MS);
    let until = today + DAYS as i64 * DAY_MS;
    let (schedules, total) = match state.app.schedules().due_before(until, SCHEDULES).await {
        Ok(found) => found,
        Err(err) => return failure(err),
    };
    let per_schedule = (OCCURRENCES / schedules.len().max(1)).clamp(8, 200);
    // CPU work (cadences and skip rules): on a blocking thread, within its budget.
    let worked = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + WORK_BUDGET;
        let mut found = Vec::with_capacity(schedules.len());
        for schedule in &schedules {
            if Instant::now() > deadline {
                break;
            }
            found.push(occurrences(schedule, now, until, per_schedule));
        }
        (schedules, found)
    })
    .await;
    let Ok((schedules, found)) = worked else {
        return failure(crate::error::Error::new(
            crate::error::ErrorKind::Internal,
            "working out the week failed",
        ));
    };
    let cut_short = found.len() < schedules.len();
    let mut days: Vec<Vec<Entry>> = (0..DAYS).map(|_| Vec::new()).collect();
    for (schedule, occurrences) in schedules.iter().zip(found) {
        for at in occurrences {
            // An overdue occurrence is today's business, whenever it was due.
            let day = ((at.at() - today).max(0) / DAY_MS) as usize;
            if let Some(day) = days.get_mut(day) {
                day.push(Entry { schedule, at });
            }
        }
    }
    for day in &mut days {
        day.sort_by(|a, b| {
            (a.at.at(), &a.schedule.schedule_id).cmp(&(b.at.at(), &b.schedule.schedule_id))
        });
    }
    let read = Read {
        schedules: schedules.len(),
        total,
        per_schedule,
        cut_short,
    };
    view(&days, today, &read, &session.csrf).into_response()
}

/// What the page read and worked out.
struct Read {
    schedules: usize,
    total: i64,
    per_schedule: usize,
    /// The work budget ran out before every schedule read was worked out.
    cut_short: bool,
}

fn view(days: &[Vec<Entry>], today: i64, read: &Read, csrf: &str) -> Page {
    let body = html! {
        p.hint {
            "Days and times in UTC (each run's time in its schedule's zone on hover). "
            @if read.total as usize > read.schedules { "The " (read.schedules) " soonest of " (read.total) " active schedules due this week" }
            @else { (read.total) " active schedule(s) due this week" }
            ", the first " (read.per_schedule) " runs of each."
        }
        @if read.cut_short { p.warn role="status" { "Working out the week took too long: the schedules due soonest are shown, not all." } }
        div.week {
            @for (i, day) in days.iter().enumerate() {
                @let start = today + i as i64 * DAY_MS;
                section.day aria-labelledby={ "day-" (i) } {
                    h2 id={ "day-" (i) } { (day_name(start)) @if i == 0 { " (today)" } }
                    @if day.is_empty() { p.hint { "Nothing." } } @else {
                        ol {
                            @for entry in day.iter().take(PER_DAY) { (entry_item(entry)) }
                        }
                        @if day.len() > PER_DAY { p.hint { "and " (day.len() - PER_DAY) " more" } }
                    }
                }
            }
        }
    };
    layout("Upcoming", Some(csrf), Script::None, body)
}

fn entry_item(entry: &Entry) -> Markup {
    let s = entry.schedule;
    let label = s
        .name
        .clone()
        .unwrap_or_else(|| crate::text::truncate_chars(&s.goal, 60).to_string());
    let at = entry.at.at();
    let zone = s.cadence.zone();
    let local = DateTime::<Utc>::from_timestamp_millis(at)
        .map(|t| t.with_timezone(&zone).to_rfc3339())
        .unwrap_or_default();
    html! {
        li class=[entry.at.due.is_none().then_some("skipped")] {
            time datetime=(local) title=(local) { (clock(at)) }
            " "
            a href={ "/ui/schedules/" (urlencode(&s.schedule_id)) } { (visible(&label)) }
            " " span.hint { (visible(&s.user_id)) }
            @if entry.at.due.is_none() { " " (badge("skipped")) }
            @if entry.at.overdue { " " (badge("overdue")) }
        }
    }
}

/// A day's name: "Sat 28 Nov".
fn day_name(start: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(start)
        .map(|t| t.format("%a %-d %b").to_string())
        .unwrap_or_default()
}

/// A time of day, UTC: "14:05".
fn clock(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%H:%M").to_string())
        .unwrap_or_default()
}
