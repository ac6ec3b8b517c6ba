//! When a schedule's occurrences run: bounds at their edges (a window, a run limit,
//! skipped dates), jitter, and the overlap policies that queue or cancel, on a manual
//! clock with real claims and finishes.

mod common;

use std::sync::Arc;

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::error::{Error, ErrorKind};
use nightshift::schedule::jitter;
use nightshift::schedule::types::{
    CatchUp, Overlap, RunOutcome, RunStatus, Schedule, ScheduleStatus,
};
use nightshift::schedule::view::{ScheduleView, SHOW_NEXT_RUNS};
use nightshift::spec::{ClearField, SchedulePatch, ScheduleSpec};
use tempfile::TempDir;

/// 2027-01-15T08:00:00Z, a Friday.
const START: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// A change to a spec, for tables of bad input.
type Tweak = fn(&mut ScheduleSpec);

async fn setup() -> (TempDir, App, Arc<ManualClock>) {
    let dir = TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    (dir, app, clock)
}

fn op() -> Actor {
    Actor::Operator
}

async fn add(app: &App, spec: ScheduleSpec) -> Result<Schedule, Error> {
    app.add_schedule(&op(), "alice", &spec)
        .await
        .map_err(Error::from)
}

fn hourly() -> ScheduleSpec {
    ScheduleSpec {
        goal: "check the queue".into(),
        every: Some("1h".into()),
        ..Default::default()
    }
}

async fn get(app: &App, id: &str) -> Schedule {
    app.schedules().get(&op(), id).await.unwrap()
}

/// Runs the schedule's due occurrence (moving the clock to it when it is ahead): claim
/// and finish, succeeded. Returns the occurrence.
async fn run_due(app: &App, clock: &ManualClock, id: &str) -> i64 {
    let schedule = get(app, id).await;
    let due = schedule.next_run_at.expect("an occurrence is due");
    let now = clock.now_ms();
    if due > now {
        clock.advance_ms(due - now);
    }
    let claim = app
        .schedules()
        .claim(&get(app, id).await, "w", 60_000)
        .await
        .unwrap()
        .expect("claimed");
    let ok = RunOutcome {
        status: Some(RunStatus::Succeeded),
        ..Default::default()
    };
    assert!(app
        .schedules()
        .finish(&claim, Some("w"), &ok, 3)
        .await
        .unwrap());
    claim.scheduled_for
}

#[tokio::test]
async fn max_runs_completes_the_schedule_after_its_last_run() {
    let (_dir, app, clock) = setup().await;
    let mut spec = hourly();
    spec.max_runs = Some(2);
    let s = add(&app, spec).await.unwrap();
    let view = ScheduleView::new(&s, SHOW_NEXT_RUNS);
    assert_eq!(view.runs_left, Some(2));
    assert_eq!(view.next_runs.len(), 2, "no more runs shown than are left");
    assert!(
        view.description.ends_with("2 of 2 runs left"),
        "{}",
        view.description
    );

    run_due(&app, &clock, &s.schedule_id).await;
    let after_one = get(&app, &s.schedule_id).await;
    assert_eq!(after_one.status, ScheduleStatus::Active);
    assert_eq!(ScheduleView::new(&after_one, 5).runs_left, Some(1));

    run_due(&app, &clock, &s.schedule_id).await;
    let done = get(&app, &s.schedule_id).await;
    assert_eq!(done.status, ScheduleStatus::Completed);
    assert_eq!(done.next_run_at, None);
    assert!(done.status_reason.unwrap().contains("max_runs"));
    let runs = app
        .schedules()
        .runs(&op(), &s.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 2, "exactly max_runs runs");

    // A higher limit given by edit makes it active again, the runs made still counted.
    let more = SchedulePatch {
        max_runs: Some(5),
        ..Default::default()
    };
    let edited = app
        .edit_schedule(&op(), &s.schedule_id, &more)
        .await
        .unwrap();
    assert_eq!(edited.status, ScheduleStatus::Active);
    assert_eq!(ScheduleView::new(&edited, 5).runs_left, Some(3));
}

#[tokio::test]
async fn the_window_bounds_the_first_and_the_last_run() {
    let (_dir, app, clock) = setup().await;
    let mut spec = hourly();
    // Not before 11:30; the last run at 13:30 exactly (the end is inclusive).
    spec.starts_at = Some("2027-01-15T11:30:00Z".into());
    spec.ends_at = Some("2027-01-15T13:30:00Z".into());
    spec.cron = Some("30 * * * *".into());
    spec.every = None;
    let s = add(&app, spec).await.unwrap();
    assert_eq!(s.next_run_at, Some(START + 3 * HOUR + HOUR / 2));
    let view = ScheduleView::new(&s, SHOW_NEXT_RUNS);
    assert_eq!(view.next_runs.len(), 3, "{:?}", view.next_runs);
    assert!(view
        .description
        .contains("; from 2027-01-15T11:30:00Z; until 2027-01-15T13:30:00Z"));
    let mut ran = Vec::new();
    for _ in 0..3 {
        ran.push(run_due(&app, &clock, &s.schedule_id).await);
    }
    assert_eq!(
        ran,
        [
            START + 7 * HOUR / 2,
            START + 9 * HOUR / 2,
            START + 11 * HOUR / 2
        ]
    );
    let done = get(&app, &s.schedule_id).await;
    assert_eq!(done.status, ScheduleStatus::Completed);
    assert!(done.status_reason.unwrap().contains("ends_at"));
}

#[tokio::test]
async fn skipped_dates_are_neither_run_nor_missed_by_catch_up() {
    let (_dir, app, clock) = setup().await;
    let spec = ScheduleSpec {
        goal: "morning brief".into(),
        cron: Some("0 9 * * *".into()),
        catch_up: Some(CatchUp::All),
        // Saturday the 16th, and every Sunday.
        skip: vec!["2027-01-16".into(), "* * * * 0".into()],
        ..Default::default()
    };
    let s = add(&app, spec).await.unwrap();
    // The worker is down from Friday 08:00 until Tuesday 10:00.
    clock.advance_ms(4 * DAY + 2 * HOUR);
    let mut ran = Vec::new();
    while get(&app, &s.schedule_id).await.next_run_at.unwrap() <= clock.now_ms() {
        ran.push(run_due(&app, &clock, &s.schedule_id).await);
    }
    // Friday 15th, Monday 18th, Tuesday 19th: not the 16th, not Sunday the 17th.
    let nine = START + HOUR;
    assert_eq!(ran, [nine, nine + 3 * DAY, nine + 4 * DAY]);
    let runs = app
        .schedules()
        .runs(&op(), &s.schedule_id, 100)
        .await
        .unwrap();
    assert!(
        runs.iter().all(|r| r.status == RunStatus::Succeeded),
        "nothing recorded as missed or skipped: {runs:?}"
    );
    assert_eq!(
        get(&app, &s.schedule_id).await.next_run_at,
        Some(nine + 5 * DAY)
    );
}

#[tokio::test]
async fn bad_bounds_are_refused_naming_the_field_and_change_nothing() {
    let (_dir, app, _clock) = setup().await;
    let bad: Vec<(Tweak, &str)> = vec![
        (|s| s.max_runs = Some(0), "max_runs"),
        (|s| s.max_runs = Some(i64::MAX), "max_runs"),
        (|s| s.ends_at = Some("2020-01-01".into()), "ends_at"),
        (
            |s| {
                s.starts_at = Some("2027-03-01".into());
                s.ends_at = Some("2027-02-01".into());
            },
            "ends_at",
        ),
        (|s| s.starts_at = Some("next tuesday".into()), "starts_at"),
        (|s| s.skip = vec!["christmas".into()], "skip"),
        (|s| s.skip = vec!["0 9 * * 9".into()], "skip"),
        (|s| s.skip = vec!["* * * * *".into()], "skip"),
        (|s| s.skip = vec!["2027-01-15\u{0}".into()], "skip"),
    ];
    for (tweak, field) in bad {
        let mut spec = hourly();
        tweak(&mut spec);
        let err = add(&app, spec.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadInput, "{spec:?}: {err}");
        assert!(
            err.to_string().contains(field),
            "{spec:?}: `{err}` names {field}"
        );
    }
    let (listed, total) = app
        .schedules()
        .list(&op(), &Default::default())
        .await
        .unwrap();
    assert_eq!((listed.len(), total), (0, 0));

    // An edit that would leave no occurrence changes nothing; clearing the bounds works.
    let mut spec = hourly();
    spec.max_runs = Some(3);
    spec.skip = vec!["2027-12-25".into()];
    let s = add(&app, spec).await.unwrap();
    let closing = SchedulePatch {
        ends_at: Some("2027-01-15T08:30:00Z".into()),
        ..Default::default()
    };
    let err: Error = app
        .edit_schedule(&op(), &s.schedule_id, &closing)
        .await
        .unwrap_err()
        .into();
    assert!(err.to_string().contains("ends_at"), "{err}");
    assert_eq!(get(&app, &s.schedule_id).await, s);
    let clear = SchedulePatch {
        clear: vec![ClearField::MaxRuns, ClearField::Skip],
        ..Default::default()
    };
    let cleared = app
        .edit_schedule(&op(), &s.schedule_id, &clear)
        .await
        .unwrap();
    assert!(cleared.bounds.is_unbounded());
}

#[tokio::test]
async fn jitter_is_the_same_for_every_worker_and_keeps_the_nominal_time_as_identity() {
    let (dir, app, clock) = setup().await;
    let mut spec = hourly();
    spec.jitter = Some("20m".into());
    let s = add(&app, spec).await.unwrap();
    let nominal = START + HOUR;
    let due = s.next_run_at.unwrap();
    assert_eq!(due, jitter::due_at(&s.schedule_id, nominal, Some(1200)));
    assert!(
        (nominal..nominal + 20 * 60_000).contains(&due),
        "inside its window"
    );
    assert_eq!(s.next_nominal_at, Some(nominal));
    assert!(ScheduleView::new(&s, 5)
        .description
        .contains("up to 20m late by jitter"));

    // Another worker on the same database sees the same due time, and nothing is due
    // before it.
    let other = common::app_with(
        &common::config_in(&dir),
        Some(clock.clone() as Arc<dyn Clock>),
    )
    .await;
    assert_eq!(get(&other, &s.schedule_id).await.next_run_at, Some(due));
    clock.advance_ms(due - 1 - clock.now_ms());
    assert!(app
        .schedules()
        .due(clock.now_ms(), 10)
        .await
        .unwrap()
        .is_empty());
    clock.advance_ms(1);
    assert_eq!(
        app.schedules().due(clock.now_ms(), 10).await.unwrap().len(),
        1
    );

    // Both claim it: one run, recorded at its nominal time.
    let seen = get(&app, &s.schedule_id).await;
    let first = app.schedules().claim(&seen, "w1", 60_000).await.unwrap();
    let second = other.schedules().claim(&seen, "w2", 60_000).await.unwrap();
    assert!(first.is_some() != second.is_some(), "exactly one claim");
    let claim = first.or(second).unwrap();
    assert_eq!(claim.scheduled_for, nominal);
    let after = get(&app, &s.schedule_id).await;
    assert_eq!(after.next_nominal_at, Some(nominal + HOUR));
    assert_eq!(
        after.next_run_at,
        Some(jitter::due_at(&s.schedule_id, nominal + HOUR, Some(1200)))
    );
    // The next runs shown are the jittered ones.
    let view = ScheduleView::new(&after, 3);
    let expected: Vec<String> = (1..=3)
        .map(|k| {
            let at = jitter::due_at(&s.schedule_id, nominal + k * HOUR, Some(1200));
            chrono::DateTime::from_timestamp_millis(at)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        })
        .collect();
    assert_eq!(view.next_runs, expected);
}

#[tokio::test]
async fn jitter_stays_inside_its_window_across_a_dst_change_and_must_fit_the_gap() {
    let (_dir, app, _clock) = setup().await;
    let spec = ScheduleSpec {
        goal: "water the plants".into(),
        cron: Some("0 9 * * *".into()),
        tz: Some("Europe/Lisbon".into()),
        jitter: Some("30m".into()),
        ..Default::default()
    };
    let s = add(&app, spec).await.unwrap();
    // Walk the occurrences through the end of March (DST starts on the 28th).
    let mut nominal = s.next_nominal_at.unwrap();
    for _ in 0..80 {
        let due = s.due_at(nominal);
        assert!(due >= nominal && due < nominal + 30 * 60_000);
        nominal = s.next_after(nominal).unwrap();
    }
    let local = chrono::DateTime::from_timestamp_millis(nominal)
        .unwrap()
        .with_timezone(&chrono_tz::Europe::Lisbon);
    assert_eq!(
        local.format("%H:%M").to_string(),
        "09:00",
        "still 9am local after DST"
    );

    for (jitter, cadence) in [
        ("1h", "0 * * * *"),
        ("0s", "0 9 * * *"),
        ("2d", "0 9 * * *"),
    ] {
        let spec = ScheduleSpec {
            goal: "g".into(),
            cron: Some(cadence.into()),
            jitter: Some(jitter.into()),
            ..Default::default()
        };
        let err = add(&app, spec).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadInput, "{jitter}");
        assert!(err.to_string().contains("jitter"), "{jitter}: {err}");
    }
}

#[tokio::test]
async fn the_configured_default_jitter_applies_where_it_fits() {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.scheduler.default_jitter_secs = 600;
    let app = common::app_with(
        &config,
        Some(ManualClock::starting_at(START) as Arc<dyn Clock>),
    )
    .await;
    let daily = ScheduleSpec {
        goal: "g".into(),
        cron: Some("0 9 * * *".into()),
        ..Default::default()
    };
    assert_eq!(add(&app, daily).await.unwrap().jitter_secs, Some(600));
    let every_5m = ScheduleSpec {
        goal: "g".into(),
        every: Some("5m".into()),
        ..Default::default()
    };
    assert_eq!(
        add(&app, every_5m).await.unwrap().jitter_secs,
        None,
        "closer than 10m apart"
    );
}

fn every_minute(overlap: Overlap) -> ScheduleSpec {
    ScheduleSpec {
        goal: "poll".into(),
        every: Some("1m".into()),
        overlap: Some(overlap),
        ..Default::default()
    }
}

async fn claim_now(
    app: &App,
    id: &str,
    worker: &str,
) -> Option<nightshift::schedule::types::Claim> {
    app.schedules()
        .claim(&get(app, id).await, worker, 600_000)
        .await
        .unwrap()
}

fn succeeded() -> RunOutcome {
    RunOutcome {
        status: Some(RunStatus::Succeeded),
        ..Default::default()
    }
}

#[tokio::test]
async fn cancel_other_cancels_exactly_the_run_going_and_its_answer_is_not_recorded() {
    let (_dir, app, clock) = setup().await;
    let s = add(&app, every_minute(Overlap::CancelOther)).await.unwrap();
    let id = s.schedule_id.clone();
    clock.advance_ms(60_000);
    let first = claim_now(&app, &id, "w1").await.expect("first");
    clock.advance_ms(60_000);
    let second = claim_now(&app, &id, "w2")
        .await
        .expect("the next starts anyway");
    let runs = app.schedules().runs(&op(), &id, 10).await.unwrap();
    let status = |run_id: &str| runs.iter().find(|r| r.run_id == run_id).unwrap().status;
    assert_eq!(status(&first.run_id), RunStatus::Cancelled);
    assert_eq!(status(&second.run_id), RunStatus::Running);
    // The cancelled run's worker loses its lease, and its answer is dropped.
    assert!(!app
        .schedules()
        .renew_lease(&first.run_id, "w1", 60_000)
        .await
        .unwrap());
    assert!(!app
        .schedules()
        .finish(&first, Some("w1"), &succeeded(), 3)
        .await
        .unwrap());
    assert!(app
        .schedules()
        .finish(&second, Some("w2"), &succeeded(), 3)
        .await
        .unwrap());
    let runs = app.schedules().runs(&op(), &id, 10).await.unwrap();
    assert_eq!(
        runs.iter()
            .filter(|r| r.status == RunStatus::Cancelled)
            .count(),
        1
    );
    assert_eq!(
        runs.iter()
            .filter(|r| r.status == RunStatus::Succeeded)
            .count(),
        1
    );

    let mut spec = every_minute(Overlap::CancelOther);
    spec.catch_up = Some(CatchUp::All);
    let err = add(&app, spec).await.unwrap_err();
    assert!(err.to_string().contains("overlap"), "{err}");
}

#[tokio::test]
async fn buffer_all_runs_every_occurrence_that_came_due_behind_a_run_in_turn() {
    let (_dir, app, clock) = setup().await;
    for (overlap, expected_runs) in [(Overlap::BufferAll, 4), (Overlap::BufferOne, 2)] {
        let s = add(&app, every_minute(overlap)).await.unwrap();
        let id = s.schedule_id.clone();
        let start = get(&app, &id).await.next_run_at.unwrap();
        if start > clock.now_ms() {
            clock.advance_ms(start - clock.now_ms());
        }
        let first = claim_now(&app, &id, "w").await.expect("first");
        // Three more come due while it runs: they wait, none is skipped.
        clock.advance_ms(3 * 60_000);
        assert!(app
            .schedules()
            .due(clock.now_ms(), 10)
            .await
            .unwrap()
            .iter()
            .all(|d| d.schedule_id != id));
        app.schedules()
            .finish(&first, Some("w"), &succeeded(), 3)
            .await
            .unwrap();
        let mut ran = vec![first.scheduled_for];
        while get(&app, &id).await.next_run_at.unwrap() <= clock.now_ms() {
            let claim = claim_now(&app, &id, "w").await.expect("claimed");
            ran.push(claim.scheduled_for);
            app.schedules()
                .finish(&claim, Some("w"), &succeeded(), 3)
                .await
                .unwrap();
        }
        assert_eq!(ran.len(), expected_runs, "{overlap}: {ran:?}");
        if overlap == Overlap::BufferAll {
            let expected: Vec<i64> = (0..4).map(|k| first.scheduled_for + k * 60_000).collect();
            assert_eq!(ran, expected, "each in turn, oldest first");
        }
        let runs = app.schedules().runs(&op(), &id, 10).await.unwrap();
        assert!(
            runs.iter().all(|r| r.status == RunStatus::Succeeded),
            "{runs:?}"
        );
    }
}

#[tokio::test]
async fn occurrences_missed_longer_ago_than_the_catch_up_window_are_skipped_and_recorded() {
    let (_dir, app, clock) = setup().await;
    let mut spec = hourly();
    spec.catch_up = Some(CatchUp::All);
    spec.catch_up_window = Some("150m".into());
    let s = add(&app, spec).await.unwrap();
    // Down from 08:00 until 13:30: 09:00 to 13:00 were missed.
    clock.advance_ms(5 * HOUR + HOUR / 2);
    while let Some(due) = get(&app, &s.schedule_id).await.next_run_at {
        if due > clock.now_ms() {
            break;
        }
        if let Some(claim) = claim_now(&app, &s.schedule_id, "w").await {
            app.schedules()
                .finish(&claim, Some("w"), &succeeded(), 3)
                .await
                .unwrap();
        }
    }
    let mut runs = app
        .schedules()
        .runs(&op(), &s.schedule_id, 20)
        .await
        .unwrap();
    runs.sort_by_key(|r| r.scheduled_for);
    let seen: Vec<(i64, RunStatus)> = runs
        .iter()
        .map(|r| ((r.scheduled_for - START) / HOUR, r.status))
        .collect();
    assert_eq!(
        seen,
        [
            (1, RunStatus::Skipped),
            (2, RunStatus::Skipped),
            (3, RunStatus::Succeeded),
            (4, RunStatus::Succeeded),
            (5, RunStatus::Succeeded),
        ],
        "older than 150 minutes at 13:30: skipped and recorded; the rest run"
    );
    assert!(runs[0]
        .error
        .as_deref()
        .unwrap()
        .contains("catch_up_window"));

    let mut bad = hourly();
    bad.catch_up_window = Some("forever".into());
    let err = add(&app, bad).await.unwrap_err();
    assert!(err.to_string().contains("catch_up_window"), "{err}");
}

#[tokio::test]
async fn a_one_shot_run_now_early_runs_once_and_completes() {
    let (_dir, app, clock) = setup().await;
    let once = add(
        &app,
        ScheduleSpec {
            goal: "remind me".into(),
            at: Some("2027-01-15T18:00:00Z".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let id = once.schedule_id;
    let due = app.schedules().run_now(&op(), &id).await.unwrap();
    assert_eq!(due.next_run_at, Some(clock.now_ms()));
    let claim = claim_now(&app, &id, "w").await.expect("claimed now");
    assert_eq!(claim.scheduled_for, START + 10 * HOUR, "its own occurrence");
    let err: Error = app
        .schedules()
        .run_now(&op(), &id)
        .await
        .unwrap_err()
        .into();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    app.schedules()
        .finish(&claim, Some("w"), &succeeded(), 3)
        .await
        .unwrap();
    let done = get(&app, &id).await;
    assert_eq!(done.status, ScheduleStatus::Completed);
    assert_eq!(done.next_run_at, None, "it does not run again at 18:00");
}

#[tokio::test]
async fn a_schedule_at_its_run_limit_gets_no_more_runs_from_resume_or_edit() {
    let (_dir, app, clock) = setup().await;
    let mut spec = hourly();
    spec.max_runs = Some(1);
    let s = add(&app, spec).await.unwrap();
    let id = s.schedule_id.clone();
    let due = s.next_run_at.unwrap();
    clock.advance_ms(due - clock.now_ms());
    let claim = claim_now(&app, &id, "w").await.expect("the one run");
    // Paused during its last run, then resumed: nothing left to run.
    app.schedules().pause(&op(), &id, None).await.unwrap();
    app.schedules()
        .finish(&claim, Some("w"), &succeeded(), 3)
        .await
        .unwrap();
    let resumed = app.schedules().resume(&op(), &id).await.unwrap();
    assert_eq!(resumed.status, ScheduleStatus::Completed);
    assert_eq!(resumed.next_run_at, None);
    // New skip dates or jitter do not bring it back; a higher limit does.
    for patch in [
        SchedulePatch {
            skip: Some(vec!["2027-12-25".into()]),
            ..Default::default()
        },
        SchedulePatch {
            jitter: Some("5m".into()),
            ..Default::default()
        },
    ] {
        let edited = app.edit_schedule(&op(), &id, &patch).await.unwrap();
        assert_eq!(edited.status, ScheduleStatus::Completed, "{patch:?}");
        assert_eq!(edited.next_run_at, None, "{patch:?}");
    }
    let more = SchedulePatch {
        max_runs: Some(2),
        ..Default::default()
    };
    assert_eq!(
        app.edit_schedule(&op(), &id, &more).await.unwrap().status,
        ScheduleStatus::Active
    );
}

#[tokio::test]
async fn buffer_all_queues_behind_runs_but_not_across_an_outage() {
    let (_dir, app, clock) = setup().await;
    let s = add(&app, every_minute(Overlap::BufferAll)).await.unwrap();
    let id = s.schedule_id.clone();
    // Down for ten minutes after the first occurrence was due: catch_up = "once" folds
    // them into one run, then the cadence goes on from now.
    clock.advance_ms(s.next_run_at.unwrap() - clock.now_ms() + 10 * 60_000);
    let claim = claim_now(&app, &id, "w")
        .await
        .expect("one run for the outage");
    app.schedules()
        .finish(&claim, Some("w"), &succeeded(), 3)
        .await
        .unwrap();
    let next = get(&app, &id).await.next_run_at.unwrap();
    assert!(next > clock.now_ms(), "nothing more is due: {next}");
}
