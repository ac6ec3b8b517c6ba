//! The dashboard's charts of how things stood over time and the viewer's own time zone:
//! the outbox's depth and dead letters hour by hour, a user's notes and chunks day by
//! day (nobody else's), the overnight passes with their counts, and instants on hover in
//! the zone an operator chose for their login alone, a bad choice changing nothing.

mod common;

use std::sync::Arc;

use common::api::TestApi;
use common::browser::Browser;
use nightshift::access::Actor;
use nightshift::consolidate::Pass;
use nightshift::db::clock::{to_rfc3339, ManualClock};
use nightshift::memory::{NewEvent, NewNote, Role};
use nightshift::notify::outbox::{enqueue_in, NewMessage, Outbox, Priority};
use nightshift::schedule::store::history::HistorySpan;
use nightshift::schedule::types::RunStatus;
use nightshift::spec::ScheduleSpec;

/// On the hour (and 8 h into a UTC day).
const START: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

async fn write(api: &TestApi, run: &str) {
    write_with(api, run, 100, 7 * DAY).await;
}

/// Writes a message for `run` to a channel that holds `room` waiting messages, living `ttl`.
async fn write_with(api: &TestApi, run: &str, room: i64, ttl: i64) {
    let mut plan = common::notify_plan("hook", room);
    plan.ttl_ms = [ttl; 3];
    let conn = api.app.db().conn().await.unwrap();
    let tx = conn.write_tx().await.unwrap();
    let message = NewMessage {
        kind: "run",
        run_id: Some(run),
        schedule_id: Some("sch-x"),
        user_id: "alice",
        priority: Priority::Normal,
        payload: serde_json::json!({"summary": run}),
    };
    enqueue_in(&tx, &plan, message, api.app.clock().now_ms())
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// A table row of the outbox's history: the hour, then waiting, written, delivered, dead.
fn outbox_row(hour: i64, counts: [i64; 4]) -> String {
    let at = to_rfc3339(hour);
    let mut row = format!("<tr><td>{}Z</td>", &at[..16]);
    for n in counts {
        row.push_str(&format!("<td>{n}</td>"));
    }
    row + "</tr>"
}

#[tokio::test]
async fn the_outbox_chart_follows_its_depth_and_dead_letters_hour_by_hour() {
    let clock = ManualClock::starting_at(START - 2 * DAY);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    // Two days back: one message that is still waiting now.
    write(&api, "run-old").await;
    clock.advance_ms(2 * DAY);
    // A dead letter from before deaths were timed: in no hour's depth.
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO outbox (message_id, idempotency_key, kind, user_id, channel_id, priority,
                             payload_json, status, attempts, next_attempt_at, expires_at,
                             last_error, created_at)
         VALUES ('msg-legacy', 'k-legacy', 'run', 'alice', 'hook', 'normal', '{}', 'dead', 3, 0, 0,
                 'refused', ?1)",
        [START + 60_000],
    )
    .await
    .unwrap();
    for run in ["run-1", "run-2", "run-3"] {
        write(&api, run).await;
    }
    clock.advance_ms(HOUR);
    let outbox = Outbox::new(api.app.db().clone());
    let now = api.app.clock().now_ms();
    let claimed = outbox.claim_due("sender", now, 60_000, 10).await.unwrap();
    assert_eq!(claimed.len(), 4);
    let by_run = |run: &str| {
        claimed
            .iter()
            .find(|m| m.run_id.as_deref() == Some(run))
            .unwrap()
            .clone()
    };
    assert!(outbox
        .delivered(&by_run("run-1"), "sender", now)
        .await
        .unwrap());
    outbox
        .failed(&by_run("run-2"), "sender", "gone", 0, now, Some(now))
        .await
        .unwrap();
    outbox
        .failed(&by_run("run-3"), "sender", "busy", 0, now + HOUR, None)
        .await
        .unwrap();
    clock.advance_ms(HOUR);
    write(&api, "run-4").await;

    let history = outbox
        .history(api.app.clock().now_ms(), HistorySpan::Day)
        .await
        .unwrap();
    assert_eq!(history.hours.len(), 24);
    let last = &history.hours[21..];
    assert_eq!(
        last.iter()
            .map(|h| (h.start, h.waiting, h.written, h.delivered, h.dead))
            .collect::<Vec<_>>(),
        [
            (START, 4, 3, 0, 0),
            (START + HOUR, 2, 0, 1, 1),
            (START + 2 * HOUR, 3, 1, 0, 0)
        ],
        "the old message waits throughout; run-2 died and run-1 was delivered in the second hour"
    );
    assert!(
        history.hours[..21].iter().all(|h| h.waiting == 1),
        "before: only the old message"
    );

    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui/outbox").await;
    assert_eq!(status, 200);
    for (hour, counts) in [
        (START, [4, 3, 0, 0]),
        (START + HOUR, [2, 0, 1, 1]),
        (START + 2 * HOUR, [3, 1, 0, 0]),
    ] {
        let row = outbox_row(hour, counts);
        assert!(page.contains(&row), "{row} in {page}");
    }
    assert!(page.contains("3 waiting now"), "{page}");
    // The week's span shows the old message's hour; the filter stays with the span.
    let (status, page) = browser.get("/ui/outbox?range=7d&status=dead").await;
    assert_eq!(status, 200);
    let row = outbox_row(START - 2 * DAY, [1, 1, 0, 0]);
    assert!(page.contains(&row), "{row} in {page}");
    assert!(page.contains("href=\"/ui/outbox?range=24h&amp;status=dead\""));
    let (status, page) = browser.get("/ui/outbox?range=1y").await;
    assert_eq!(status, 400, "an unknown span is refused");
    assert!(
        page.contains("<p class=\"error\" role=\"alert\">")
            && page.contains("unknown variant `1y`"),
        "refused as a page naming what was wrong: {page}"
    );
}

#[tokio::test]
async fn a_dead_letter_is_timed_when_it_expired_or_found_the_channel_full_and_a_retry_clears_it() {
    let clock = ManualClock::starting_at(START);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    // Lives an hour; the sender comes back three hours on.
    write_with(&api, "run-short", 2, HOUR).await;
    write_with(&api, "run-full-1", 2, 7 * DAY).await;
    // The channel holds two: the third is a dead letter as it is written.
    write_with(&api, "run-full-2", 2, 7 * DAY).await;
    let outbox = Outbox::new(api.app.db().clone());
    let dead = outbox.list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].run_id.as_deref(), Some("run-full-2"));
    clock.advance_ms(3 * HOUR);
    let now = api.app.clock().now_ms();
    let claimed = outbox.claim_due("sender", now, 60_000, 10).await.unwrap();
    assert_eq!(claimed.len(), 1, "the short-lived one expired");
    let history = outbox.history(now, HistorySpan::Day).await.unwrap();
    let hours: Vec<(i64, i64, i64, i64)> = history.hours[20..]
        .iter()
        .map(|h| (h.start, h.written, h.dead, h.waiting))
        .collect();
    assert_eq!(
        hours,
        [
            (START, 3, 1, 2),
            (START + HOUR, 0, 1, 1),
            (START + 2 * HOUR, 0, 0, 1),
            (START + 3 * HOUR, 0, 0, 1),
        ],
        "the full channel's is dead as written; the short one died when it expired, not when it was found"
    );
    let conn = api.app.db().conn().await.unwrap();
    let expired = dead_at(&conn, "run-short").await;
    assert_eq!(expired, Some(START + HOUR));
    // A retried dead letter waits again, its death forgotten.
    let message = outbox
        .list(Some("dead"), 10)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.run_id.as_deref() == Some("run-short"))
        .unwrap();
    outbox
        .retry(&message.message_id, now, &api.app.config().notify)
        .await
        .unwrap();
    assert_eq!(dead_at(&conn, "run-short").await, None);
}

async fn dead_at(conn: &nightshift::db::Conn, run: &str) -> Option<i64> {
    nightshift::db::query_scalar(conn, "SELECT dead_at FROM outbox WHERE run_id = ?1", [run])
        .await
        .unwrap()
}

#[tokio::test]
async fn a_users_memory_chart_counts_their_notes_as_they_stood_and_no_one_elses() {
    let clock = ManualClock::starting_at(START);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    let memory = api.app.memory();
    let first = memory
        .save_note("alice", &NewNote::new("Alice swims on Tuesdays"))
        .await
        .unwrap();
    memory
        .save_note("alice", &NewNote::new("Alice's sister is called Ana"))
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "chat-1",
            &[
                NewEvent::new(Role::User, "Book the pool for Tuesday"),
                NewEvent::new(Role::Assistant, "Booked for 7am."),
            ],
        )
        .await
        .unwrap();
    clock.advance_ms(DAY);
    memory.delete_note("alice", &first.note_id).await.unwrap();
    for i in 0..5 {
        memory
            .save_note("bob", &NewNote::new(format!("Bob's note {i}")))
            .await
            .unwrap();
    }
    clock.advance_ms(DAY);

    let chunks = common::count(
        memory,
        "SELECT count(*) FROM chunks WHERE user_id = 'alice'",
    )
    .await;
    assert!(chunks > 0);
    let days = memory
        .growth("alice", api.app.clock().now_ms())
        .await
        .unwrap();
    let today = START - START.rem_euclid(DAY) + 2 * DAY;
    let tail: Vec<(i64, i64, i64)> = days[days.len() - 3..]
        .iter()
        .map(|d| (d.start, d.notes, d.notes_change))
        .collect();
    assert_eq!(
        tail,
        [(today - 2 * DAY, 2, 2), (today - DAY, 1, -1), (today, 1, 0)],
        "the deleted note counts on the day it stood"
    );
    assert_eq!(days.last().unwrap().chunks, chunks);
    assert!(days[..days.len() - 3]
        .iter()
        .all(|d| d.notes == 0 && d.chunks == 0));

    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui/memory/alice").await;
    assert_eq!(status, 200);
    let day = |ms: i64| to_rfc3339(ms)[..10].to_string();
    let row = format!(
        "<tr><td>{}</td><td>2</td><td>+2</td><td>{}</td>",
        day(today - 2 * DAY),
        days[days.len() - 3].chunks
    );
    assert!(page.contains(&row), "{row} in {page}");
    let row = format!("<tr><td>{}</td><td>1</td><td>-1</td>", day(today - DAY));
    assert!(page.contains(&row), "{row} in {page}");
    assert!(page.contains(&format!("Chunks: {chunks} now")), "{page}");
    // Bob's five notes are his alone, and none of alice's changes are his.
    let bobs = memory
        .growth("bob", api.app.clock().now_ms())
        .await
        .unwrap();
    let changes: Vec<(i64, i64)> = bobs
        .iter()
        .filter(|d| d.notes_change != 0)
        .map(|d| (d.start, d.notes_change))
        .collect();
    assert_eq!(changes, [(today - DAY, 5)]);
    let (_, page) = browser.get("/ui/memory/bob").await;
    assert!(page.contains("Notes: 5 now"), "{page}");
    let row = format!("<tr><td>{}</td><td>5</td><td>+5</td>", day(today - DAY));
    assert!(page.contains(&row), "{row} in {page}");
    assert!(!page.contains("<td>-1</td>"), "{page}");
    let (status, page) = browser.get("/ui/memory/nobody").await;
    assert_eq!(status, 200);
    assert!(page.contains("Nothing changed in these days."), "{page}");
}

#[tokio::test]
async fn the_users_page_lists_the_overnight_passes_with_their_counts() {
    let api = TestApi::start(|_| {}).await;
    let browser = Browser::logged_in(&api).await;
    let (_, page) = browser.get("/ui/memory").await;
    assert!(page.contains("No pass has run yet."), "{page}");
    api.app
        .memory()
        .save_note("alice", &NewNote::new("Alice likes rain"))
        .await
        .unwrap();
    let reports = api
        .app
        .consolidator(None)
        .run(&[Pass::Expiry, Pass::Prune], None, None)
        .await
        .unwrap();
    assert_eq!(reports.len(), 2);
    let (status, page) = browser.get("/ui/memory").await;
    assert_eq!(status, 200);
    let table = page.split("id=\"pass-list\"").nth(1).expect("the passes");
    for report in &reports {
        assert!(
            table.contains(&format!("<td>{}</td>", report.pass)),
            "{table}"
        );
    }
    assert_eq!(table.matches(">succeeded<").count(), 2, "{table}");
}

/// The hover text of the first instant on `page`.
fn first_title(page: &str) -> String {
    let after = page.split("<time ").nth(1).expect("an instant");
    let title = after.split("title=\"").nth(1).unwrap();
    title[..title.find('"').unwrap()].to_string()
}

#[tokio::test]
async fn each_login_keeps_its_own_time_zone_and_a_bad_one_changes_nothing() {
    let clock = ManualClock::starting_at(START) as Arc<ManualClock>;
    let api = TestApi::start_on(clock, |_| {}).await;
    api.app
        .memory()
        .save_note("alice", &NewNote::new("Alice likes rain"))
        .await
        .unwrap();
    let mine = Browser::logged_in(&api).await;
    let theirs = Browser::logged_in(&api).await;
    let utc = "2027-01-15 08:00:00 UTC";
    let (_, page) = mine.get("/ui/memory").await;
    assert_eq!(first_title(&page), utc);

    let csrf = mine.csrf().await;
    let saved = mine
        .post(
            "/ui/settings",
            &[("csrf", &csrf), ("zone", "Asia/Kolkata")],
            None,
        )
        .await;
    assert_eq!(saved.status(), 303);
    let kolkata = "2027-01-15 13:30:00 IST (Asia/Kolkata)";
    let (_, page) = mine.get("/ui/memory").await;
    assert_eq!(first_title(&page), kolkata);
    let (_, page) = theirs.get("/ui/memory").await;
    assert_eq!(first_title(&page), utc, "another login keeps its own");
    let (_, page) = mine.get("/ui/settings").await;
    assert!(
        page.contains("<option value=\"Asia/Kolkata\" selected>"),
        "{page}"
    );

    // Refused, each changing nothing: an unknown zone, a form without its token, one
    // from another site.
    let refused = mine
        .post(
            "/ui/settings",
            &[("csrf", &csrf), ("zone", "Mars/Olympus\u{202e}")],
            None,
        )
        .await;
    assert_eq!(refused.status(), 400);
    let text = refused.text().await.unwrap();
    assert!(
        text.contains("unknown time zone `Mars/Olympus\\u{202e}`"),
        "{text}"
    );
    let refused = mine
        .post("/ui/settings", &[("zone", "Europe/Lisbon")], None)
        .await;
    assert_eq!(refused.status(), 403);
    let refused = mine
        .post(
            "/ui/settings",
            &[("csrf", &csrf), ("zone", "Europe/Lisbon")],
            Some("https://evil.example"),
        )
        .await;
    assert_eq!(refused.status(), 403);
    let (_, page) = mine.get("/ui/memory").await;
    assert_eq!(first_title(&page), kolkata);

    // Blank: back to UTC.
    let saved = mine
        .post("/ui/settings", &[("csrf", &csrf), ("zone", "")], None)
        .await;
    assert_eq!(saved.status(), 303);
    let (_, page) = mine.get("/ui/memory").await;
    assert_eq!(first_title(&page), utc);
}

/// One run of a triggered schedule, ended as succeeded.
async fn one_run(api: &TestApi, schedule_id: &str) {
    api.app
        .schedules()
        .trigger(&Actor::Operator, schedule_id, None, None)
        .await
        .unwrap();
    let claims = common::runs::claim_events(&api.app, "w").await;
    common::runs::finish(&api.app, &claims[0], RunStatus::Succeeded, "").await;
}

#[tokio::test]
async fn a_weeks_charts_are_worked_out_at_most_once_a_minute_and_say_so() {
    let clock = ManualClock::starting_at(START);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    let spec = ScheduleSpec {
        goal: "triage".into(),
        triggered: true,
        ..Default::default()
    };
    let schedule_id = api
        .app
        .add_schedule(&Actor::Operator, "alice", &spec)
        .await
        .unwrap()
        .schedule_id;
    one_run(&api, &schedule_id).await;
    let browser = Browser::logged_in(&api).await;
    let (_, week) = browser.get("/ui?range=7d").await;
    assert!(week.contains("over the last 7 days: 1 runs"), "{week}");
    assert!(!week.contains("The week's figures as of"), "fresh: {week}");

    clock.advance_ms(30_000);
    one_run(&api, &schedule_id).await;
    let (_, week) = browser.get("/ui?range=7d").await;
    assert!(week.contains("over the last 7 days: 1 runs"), "{week}");
    assert!(
        week.contains("The week's figures as of <time"),
        "a page that shows older figures says so: {week}"
    );
    let (_, day) = browser.get("/ui").await;
    assert!(day.contains("over the last 24 hours: 2 runs"), "{day}");

    clock.advance_ms(30_000);
    let (_, week) = browser.get("/ui?range=7d").await;
    assert!(week.contains("over the last 7 days: 2 runs"), "{week}");
}
