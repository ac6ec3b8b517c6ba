//! Named calendars: dates kept once in the configuration (inline and in a file) that
//! schedules skip by name, read as configured now by every process that opens the database.

mod common;

use std::sync::Arc;

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::Config;
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::error::{Error, ErrorKind};
use nightshift::schedule::calendar::CalendarConfig;
use nightshift::schedule::view::{ScheduleView, SHOW_NEXT_RUNS};
use nightshift::spec::{ClearField, SchedulePatch, ScheduleSpec};
use tempfile::TempDir;

/// 2027-01-15T08:00:00Z, a Friday.
const START: i64 = 1_800_000_000_000;

fn with_holidays(config: &mut Config, dates: &[&str], file: Option<String>) {
    config.calendars.insert(
        "holidays".into(),
        CalendarConfig {
            dates: dates.iter().map(|d| d.to_string()).collect(),
            file,
        },
    );
}

/// An app on `config`'s database, its calendars adopted as `nightshift run` does.
async fn open(config: &Config) -> App {
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(config, Some(clock as Arc<dyn Clock>)).await;
    app.schedules().adopt_calendars().await.unwrap();
    app
}

fn daily() -> ScheduleSpec {
    ScheduleSpec {
        goal: "standup notes".into(),
        cron: Some("0 9 * * *".into()),
        tz: Some("Europe/Lisbon".into()),
        calendars: vec!["holidays".into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_schedule_skips_its_calendars_dates_as_configured_now() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("holidays.txt");
    std::fs::write(
        &file,
        "# company days off\n2027-01-18\n\n2027-01-19  # a Tuesday\n",
    )
    .unwrap();
    let mut config = common::config_in(&dir);
    with_holidays(
        &mut config,
        &["2027-01-16"],
        Some(file.display().to_string()),
    );
    let app = open(&config).await;
    let s = app
        .add_schedule(&Actor::Operator, "alice", &daily())
        .await
        .unwrap();
    let view = ScheduleView::new(&s, SHOW_NEXT_RUNS);
    assert_eq!(
        view.next_runs,
        [
            "2027-01-15T09:00:00Z",
            "2027-01-17T09:00:00Z",
            "2027-01-20T09:00:00Z",
            "2027-01-21T09:00:00Z",
            "2027-01-22T09:00:00Z"
        ]
    );
    assert!(
        view.description.contains("skips the dates of holidays"),
        "{}",
        view.description
    );
    assert_eq!(view.calendars, ["holidays"]);
    drop(app);

    // The calendar is kept once: changed in the configuration, every schedule naming it
    // follows, with nothing done to the schedules.
    let mut config = common::config_in(&dir);
    with_holidays(&mut config, &["2027-01-15"], None);
    let app = open(&config).await;
    let s = app
        .schedules()
        .get(&Actor::Operator, &s.schedule_id)
        .await
        .unwrap();
    // The worker found the calendar changed and worked the next run out again: the 15th
    // is a holiday now, the 16th and the 18th are free again.
    let view = ScheduleView::new(&s, 3);
    assert_eq!(
        view.next_runs,
        [
            "2027-01-16T09:00:00Z",
            "2027-01-17T09:00:00Z",
            "2027-01-18T09:00:00Z"
        ]
    );
    assert_eq!(s.next_run_at, Some(START + 25 * 3_600_000));
    assert_eq!(s.bounds.calendar_dates.len(), 1);
    // A process that has not adopted a calendar the table lacks reads the table, not its
    // own configuration: the schedule is unchanged by it.
    let mut other = common::config_in(&dir);
    with_holidays(&mut other, &["2027-01-16"], None);
    let clock = ManualClock::starting_at(START);
    let reader = common::app_with(&other, Some(clock as Arc<dyn Clock>)).await;
    let seen = reader
        .schedules()
        .get(&Actor::Operator, &s.schedule_id)
        .await
        .unwrap();
    assert_eq!(seen.next_run_at, s.next_run_at);
    // A next run stored before its date joined a calendar (the worker was not restarted
    // yet) is skipped by its claim, recorded.
    let mut stale = s.clone();
    stale.bounds.calendar_dates = vec![chrono::NaiveDate::from_ymd_opt(2027, 1, 16).unwrap()];
    let claimed = app.schedules().claim(&stale, "w", 60_000).await.unwrap();
    assert!(claimed.is_none(), "not run on a holiday");
    let runs = app
        .schedules()
        .runs(&Actor::Operator, &s.schedule_id, 5)
        .await
        .unwrap();
    assert_eq!(
        runs[0].status,
        nightshift::schedule::types::RunStatus::Skipped
    );
    assert!(runs[0].error.as_deref().unwrap().contains("calendars"));
    // An edit works the next run out again, with the calendar as it is now.
    let patch = SchedulePatch {
        goal: Some("standup".into()),
        cron: Some("0 9 * * *".into()),
        ..Default::default()
    };
    let edited = app
        .edit_schedule(&Actor::Operator, &s.schedule_id, &patch)
        .await
        .unwrap();
    assert_eq!(
        ScheduleView::new(&edited, 1).next_runs,
        ["2027-01-16T09:00:00Z"]
    );
    let cleared = app
        .edit_schedule(
            &Actor::Operator,
            &s.schedule_id,
            &SchedulePatch {
                clear: vec![ClearField::Calendars],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(cleared.bounds.calendars.is_empty());
    assert_eq!(
        ScheduleView::new(&cleared, 1).next_runs,
        ["2027-01-15T09:00:00Z"]
    );
}

#[tokio::test]
async fn an_unknown_calendar_is_refused_naming_it() {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    with_holidays(&mut config, &["2027-01-16"], None);
    let app = open(&config).await;
    let mut spec = daily();
    spec.calendars = vec!["holidayz".into()];
    let err = Error::from(
        app.add_schedule(&Actor::Operator, "alice", &spec)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.kind(), ErrorKind::BadInput);
    assert!(err.to_string().contains("calendars"), "{err}");
    assert!(err.to_string().contains("holidayz"), "{err}");
    let (_, total) = app
        .schedules()
        .list(&Actor::Operator, &Default::default())
        .await
        .unwrap();
    assert_eq!(total, 0);
    // A triggered schedule has no dates to skip.
    let spec = ScheduleSpec {
        goal: "t".into(),
        triggered: true,
        calendars: vec!["holidays".into()],
        ..Default::default()
    };
    let err = Error::from(
        app.add_schedule(&Actor::Operator, "alice", &spec)
            .await
            .unwrap_err(),
    );
    assert!(err.to_string().contains("calendars"), "{err}");
}

#[tokio::test]
async fn a_bad_calendar_is_a_configuration_error_naming_its_key() {
    let dir = TempDir::new().unwrap();
    let cases: [(Vec<&str>, Option<&str>, &str); 3] = [
        (vec!["2027-13-01"], None, "calendars.holidays.dates[0]"),
        (vec![], Some("nope.txt"), "calendars.holidays.file"),
        (vec![], Some("bad.txt"), "line 2"),
    ];
    std::fs::write(dir.path().join("bad.txt"), "2027-01-01\nnot a date\n").unwrap();
    for (dates, file, expected) in cases {
        let mut config = common::config_in(&dir);
        with_holidays(
            &mut config,
            &dates,
            file.map(|f| dir.path().join(f).display().to_string()),
        );
        let Err(err) = App::open(&config).await else {
            panic!("{expected}: opened");
        };
        let err = Error::from(err);
        assert_eq!(err.kind(), ErrorKind::Config, "{err}");
        assert!(err.to_string().contains(expected), "{err}");
    }
}
