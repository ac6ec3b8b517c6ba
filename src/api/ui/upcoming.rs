//! `/ui/upcoming`: the next seven days (in the viewer's zone) as a calendar, a column a day, each
//! schedule's occurrences at the times they will be due, and those its skip dates and
//! calendars leave out shown as skipped. An overdue occurrence (due, not yet run) is on
//! today's column, marked so. Read from the active schedules due within the week, soonest
//! first, and a bounded number of occurrences worked out, so the page costs about the
//! same however many schedules there are and however often they run.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Days, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use maud::{html, Markup};

use super::failure;
use super::session::UiSession;
use super::views::{badge, layout, urlencode, Page, Script};
use crate::api::ApiState;
use crate::input::visible;
use crate::schedule::types::Schedule;
use crate::schedule::upcoming::{occurrences, Occurrence};

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
    let zone = session.zone;
    let starts = day_starts(now, zone);
    let names = day_names(now, zone);
    let until = starts[DAYS];
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
            let day = starts
                .partition_point(|&start| start <= at.at())
                .saturating_sub(1);
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
    view(&days, &names, zone, &read, &session.csrf).into_response()
}

/// When each of the calendar's days begins in `zone` (today's first), and the end of the
/// last: local midnights, so a day is 23 or 25 hours long when the clocks change. Where a
/// zone skips midnight, its day begins at the first whole hour it has; a date a zone
/// skipped altogether (Samoa's 2011-12-30) is an empty day.
fn day_starts(now: i64, zone: Tz) -> [i64; DAYS + 1] {
    let today = local_date(now, zone);
    let first_instant = |days: u64| {
        let date = today.checked_add_days(Days::new(days))?;
        (0..24).find_map(|hour| {
            let time = NaiveTime::from_hms_opt(hour, 0, 0)?;
            zone.from_local_datetime(&date.and_time(time)).earliest()
        })
    };
    std::array::from_fn(|i| {
        let i = i as u64;
        first_instant(i)
            .or_else(|| first_instant(i + 1))
            .map_or(now + i as i64 * 86_400_000, |start| {
                start.timestamp_millis()
            })
    })
}

/// What the page read and worked out.
struct Read {
    schedules: usize,
    total: i64,
    per_schedule: usize,
    /// The work budget ran out before every schedule read was worked out.
    cut_short: bool,
}

fn view(days: &[Vec<Entry>], names: &[String], zone: Tz, read: &Read, csrf: &str) -> Page {
    let body = html! {
        p.hint {
            "Days and times in " (zone.name()) " (your zone: " a href="/ui/settings" { "Settings" }
            "; each run's time in its schedule's zone on hover). "
            @if read.total as usize > read.schedules { "The " (read.schedules) " soonest of " (read.total) " active schedules due this week" }
            @else { (read.total) " active schedule(s) due this week" }
            ", the first " (read.per_schedule) " runs of each."
        }
        @if read.cut_short { p.warn role="status" { "Working out the week took too long: the schedules due soonest are shown, not all." } }
        div.week {
            @for (i, day) in days.iter().enumerate() {
                section.day aria-labelledby={ "day-" (i) } {
                    h2 id={ "day-" (i) } { (names[i]) @if i == 0 { " (today)" } }
                    @if day.is_empty() { p.hint { "Nothing." } } @else {
                        ol {
                            @for entry in day.iter().take(PER_DAY) { (entry_item(entry, zone)) }
                        }
                        @if day.len() > PER_DAY { p.hint { "and " (day.len() - PER_DAY) " more" } }
                    }
                }
            }
        }
    };
    layout("Upcoming", Some(csrf), Script::None, body)
}

fn entry_item(entry: &Entry, viewer: Tz) -> Markup {
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
            time datetime=(local) title=(local) { (clock(at, viewer)) }
            " "
            a href={ "/ui/schedules/" (urlencode(&s.schedule_id)) } { (visible(&label)) }
            " " span.hint { (visible(&s.user_id)) }
            @if entry.at.due.is_none() { " " (badge("skipped")) }
            @if entry.at.overdue { " " (badge("overdue")) }
        }
    }
}

/// The calendar's days' names in `zone`, today's first: "Sat 28 Nov". By the date, so a
/// date a zone skipped is named too.
fn day_names(now: i64, zone: Tz) -> [String; DAYS] {
    let today = local_date(now, zone);
    std::array::from_fn(|i| {
        today
            .checked_add_days(Days::new(i as u64))
            .map(|date| date.format("%a %-d %b").to_string())
            .unwrap_or_default()
    })
}

/// The date it is at `now` in `zone`.
fn local_date(now: i64, zone: Tz) -> chrono::NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(now)
        .unwrap_or_default()
        .with_timezone(&zone)
        .date_naive()
}

/// A time of day in `zone`: "14:05".
fn clock(ms: i64, zone: Tz) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.with_timezone(&zone).format("%H:%M").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HOUR_MS: i64 = 3_600_000;

    #[test]
    fn days_follow_the_viewers_midnights_through_a_clock_change() {
        // 2026-03-28T12:00:00Z: Lisbon moves to summer time early on the 29th.
        let now = 1_774_699_200_000;
        let starts = day_starts(now, Tz::Europe__Lisbon);
        assert_eq!(starts[0], 1_774_656_000_000, "midnight of the 28th, UTC+0");
        assert_eq!(starts[1] - starts[0], 24 * HOUR_MS);
        assert_eq!(
            starts[2] - starts[1],
            23 * HOUR_MS,
            "the 29th is an hour short"
        );
        assert_eq!(day_names(now, Tz::Europe__Lisbon)[2], "Mon 30 Mar");
        let tokyo = day_starts(now, Tz::Asia__Tokyo);
        assert_eq!(day_names(now, Tz::Asia__Tokyo)[0], "Sat 28 Mar");
        assert_eq!(
            tokyo[0], 1_774_623_600_000,
            "midnight in Tokyo is 15:00 UTC the day before"
        );
        // 2011-12-29T12:00:00Z, Samoa: the 30th never was.
        let apia = day_starts(1_325_160_000_000, Tz::Pacific__Apia);
        assert_eq!(apia[1], apia[2], "{apia:?}");
        let names = day_names(1_325_160_000_000, Tz::Pacific__Apia);
        assert_eq!(names[..3], ["Thu 29 Dec", "Fri 30 Dec", "Sat 31 Dec"]);
    }

    proptest! {
        #[test]
        fn every_zones_week_starts_today_and_runs_in_order(
            now in 0i64..4_102_444_800_000,
            zone in prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec()),
        ) {
            let starts = day_starts(now, zone);
            prop_assert!(starts[0] <= now && now < starts[1], "{starts:?} {now}");
            for pair in starts.windows(2) {
                prop_assert!((0..=26 * HOUR_MS).contains(&(pair[1] - pair[0])), "{starts:?}");
            }
        }
    }
}
