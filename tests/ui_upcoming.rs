//! The dashboard's week: the next seven days' occurrences of every active schedule, each
//! on its day at its time, skipped dates shown as skipped, run limits and pauses kept,
//! and an occurrence that is due but not yet run on today's column — on a manual clock.

mod common;

use common::api::TestApi;
use common::browser::Browser;
use nightshift::access::Actor;
use nightshift::db::clock::ManualClock;
use nightshift::spec::ScheduleSpec;

/// 2026-11-28T08:00:00Z, a Saturday.
const SATURDAY_8AM: i64 = 1_795_852_800_000;
const HOUR_MS: i64 = 3_600_000;

async fn add(api: &TestApi, spec: ScheduleSpec) -> String {
    api.app
        .add_schedule(&Actor::Operator, "alice", &spec)
        .await
        .unwrap()
        .schedule_id
}

fn named(name: &str) -> ScheduleSpec {
    ScheduleSpec {
        name: Some(name.into()),
        goal: format!("do {name}"),
        tz: Some("UTC".into()),
        ..Default::default()
    }
}

/// The page's day columns, in order: each column's HTML.
fn days(page: &str) -> Vec<&str> {
    page.split("<section class=\"day\"").skip(1).collect()
}

#[tokio::test]
async fn the_week_shows_each_schedules_next_runs_on_their_days() {
    let clock = ManualClock::starting_at(SATURDAY_8AM);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    // Daily at 07:00 since three days ago, never run: missed three times, caught up once.
    clock.advance_ms(-3 * 24 * HOUR_MS);
    add(
        &api,
        ScheduleSpec {
            cron: Some("0 7 * * *".into()),
            ..named("backup")
        },
    )
    .await;
    clock.advance_ms(3 * 24 * HOUR_MS);
    // Due at 09:00 today; at 10:00 it has not run yet.
    add(
        &api,
        ScheduleSpec {
            at: Some("2026-11-28T09:00:00Z".into()),
            ..named("late-report")
        },
    )
    .await;
    clock.advance_ms(2 * HOUR_MS);
    add(
        &api,
        ScheduleSpec {
            cron: Some("0 9 * * *".into()),
            skip: vec!["2026-11-30".into()],
            ..named("tea")
        },
    )
    .await;
    add(
        &api,
        ScheduleSpec {
            cron: Some("0 12 * * *".into()),
            max_runs: Some(2),
            ..named("checkpoint")
        },
    )
    .await;
    add(
        &api,
        ScheduleSpec {
            at: Some("2026-11-28T15:30:00Z".into()),
            ..named("standup")
        },
    )
    .await;
    add(
        &api,
        ScheduleSpec {
            at: Some("2026-12-10T09:00:00Z".into()),
            ..named("far-off")
        },
    )
    .await;
    let paused = add(
        &api,
        ScheduleSpec {
            every: Some("1h".into()),
            ..named("paused-one")
        },
    )
    .await;
    api.app
        .schedules()
        .pause(&Actor::Operator, &paused, None)
        .await
        .unwrap();

    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui/upcoming").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("5 active schedule(s) due this week, the first 200 runs of each"),
        "{page}"
    );
    assert!(
        !page.contains("far-off") && !page.contains("paused-one"),
        "{page}"
    );
    let days = days(&page);
    assert_eq!(days.len(), 7, "{page}");
    let names = [
        "Sat 28 Nov (today)",
        "Sun 29 Nov",
        "Mon 30 Nov",
        "Tue 1 Dec",
        "Wed 2 Dec",
        "Thu 3 Dec",
        "Fri 4 Dec",
    ];
    for (day, name) in days.iter().zip(names) {
        assert!(day.contains(name), "{name}: {day}");
    }
    // Today: the overdue ones first (the backup's three missed days as one run), then
    // the rest in time order.
    let today = days[0];
    let entries: Vec<&str> = today.split("<li").skip(1).collect();
    let backup: Vec<&&str> = entries.iter().filter(|e| e.contains("backup")).collect();
    assert_eq!(backup.len(), 1, "{today}");
    assert!(
        backup[0].contains(">07:00<") && backup[0].contains(">overdue<"),
        "{today}"
    );
    let late: Vec<&&str> = entries
        .iter()
        .filter(|e| e.contains("late-report"))
        .collect();
    assert!(
        late[0].contains(">09:00<") && late[0].contains(">overdue<"),
        "{today}"
    );
    assert_eq!(today.matches(">overdue<").count(), 2, "{today}");
    // From tomorrow the backup goes on daily.
    assert!(days[1..].iter().all(|d| d.contains("backup")));
    let order: Vec<usize> = [
        "backup",
        "late-report",
        ">12:00<",
        "checkpoint",
        ">15:30<",
        "standup",
    ]
    .iter()
    .map(|needle| {
        today
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}: {today}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{today}");
    assert!(
        today.contains(">09:00<") && today.contains("overdue"),
        "{today}"
    );
    assert!(
        !today.contains("tea"),
        "09:00 today was before the schedule was made"
    );
    // The run limit: two checkpoints, today's and tomorrow's.
    assert!(days[1].contains("checkpoint") && days[1].contains("tea"));
    assert!(days[2..].iter().all(|d| !d.contains("checkpoint")));
    // Monday is skipped: shown, and marked so.
    let skipped: Vec<&str> = days[2]
        .split("<li")
        .filter(|e| e.contains("class=\"skipped\""))
        .collect();
    assert_eq!(skipped.len(), 1, "{}", days[2]);
    assert!(skipped[0].contains(">09:00<") && skipped[0].contains("tea"));
    assert!(skipped[0].contains(">skipped<"), "{}", skipped[0]);
    for day in &days[3..] {
        assert!(day.contains(">09:00<") && day.contains("tea"), "{day}");
        assert!(!day.contains("skipped"), "{day}");
    }
    // Each time says its instant in the schedule's zone.
    assert!(
        days[1].contains("datetime=\"2026-11-29T09:00:00+00:00\""),
        "{}",
        days[1]
    );

    // In the viewer's zone (Tokyo, UTC+9, where it is 19:00): Tokyo's days and times.
    let csrf = browser.csrf().await;
    let saved = browser
        .post(
            "/ui/settings",
            &[("csrf", &csrf), ("zone", "Asia/Tokyo")],
            None,
        )
        .await;
    assert_eq!(saved.status(), 303);
    let (_, page) = browser.get("/ui/upcoming").await;
    assert!(page.contains("Days and times in Asia/Tokyo"), "{page}");
    let days = self::days(&page);
    assert!(days[0].contains("Sat 28 Nov (today)"), "{}", days[0]);
    let today: Vec<&str> = days[0].split("<li").skip(1).collect();
    assert!(
        today
            .iter()
            .any(|e| e.contains(">21:00<") && e.contains("checkpoint")),
        "12:00 UTC is 21:00 in Tokyo: {}",
        days[0]
    );
    assert!(!days[0].contains("standup"), "{}", days[0]);
    let sunday: Vec<&str> = days[1].split("<li").skip(1).collect();
    assert!(
        sunday
            .iter()
            .any(|e| e.contains(">00:30<") && e.contains("standup")),
        "15:30 UTC is half past midnight on Sunday in Tokyo: {}",
        days[1]
    );
}
