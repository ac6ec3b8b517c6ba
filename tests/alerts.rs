//! Alerts to a schedule's owner: a run late past `alert_late`, `alert_failures` failed
//! runs in a row, no success for `alert_silent`. Each incident is told once in the outbox
//! (urgent), whichever worker looks, and its end once; settings are checked and named. On
//! a manual clock with real claims and finishes, on the test's engine.

mod common;

use std::sync::Arc;

use common::runs::{claim_due, claim_events, finish};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::{ChannelConfig, ChannelKind, Config};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::error::{Error, ErrorKind};
use nightshift::notify::outbox::Message;
use nightshift::schedule::store::AlertsChecked;
use nightshift::schedule::types::RunStatus;
use nightshift::spec::{ClearField, SchedulePatch, ScheduleSpec};
use tempfile::TempDir;

const START: i64 = 1_800_000_000_000;
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn config(dir: &TempDir) -> Config {
    let mut config = common::config_in(dir);
    config.channels.insert(
        "hook".into(),
        ChannelConfig {
            url: Some("http://127.0.0.1:9/hook".into()),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    config
}

async fn setup() -> (TempDir, Config, App, Arc<ManualClock>) {
    let dir = TempDir::new().unwrap();
    let config = config(&dir);
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    (dir, config, app, clock)
}

async fn add(app: &App, spec: ScheduleSpec) -> Result<String, ErrorKind> {
    app.add_schedule(&Actor::Operator, "alice", &spec)
        .await
        .map(|s| s.schedule_id)
        .map_err(|e| Error::from(e).kind())
}

fn hourly() -> ScheduleSpec {
    ScheduleSpec {
        name: Some("check the queue".into()),
        goal: "look at the queue and say what is stuck".into(),
        every: Some("1h".into()),
        channel: Some("hook".into()),
        ..Default::default()
    }
}

/// The outbox's alert messages, oldest first.
async fn alerts(app: &App) -> Vec<Message> {
    let mut all = app.outbox().list(None, 1000).await.unwrap();
    all.retain(|m| m.kind == "alert");
    all.reverse();
    all
}

fn summaries(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            m.payload["summary"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn checked(opened: usize, ended: usize) -> AlertsChecked {
    AlertsChecked { opened, ended }
}

#[tokio::test]
async fn a_late_run_is_told_once_by_whichever_worker_looks_and_its_start_once() {
    let (_dir, config, app, clock) = setup().await;
    let id = add(
        &app,
        ScheduleSpec {
            alert_late: Some("10m".into()),
            ..hourly()
        },
    )
    .await
    .unwrap();
    let other = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    let due = app
        .schedules()
        .get(&Actor::Operator, &id)
        .await
        .unwrap()
        .next_run_at
        .unwrap();
    clock.advance_ms(due + 10 * MINUTE - 1 - clock.now_ms());
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
    clock.advance_ms(1);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(1, 0));
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
    assert_eq!(
        other.schedules().check_alerts().await.unwrap(),
        checked(0, 0),
        "another worker tells it again"
    );
    let told = alerts(&app).await;
    assert_eq!(summaries(&told), ["check the queue: a run is late"]);
    assert_eq!(told[0].priority, "high", "an alert is urgent");
    assert_eq!(told[0].user_id, "alice");
    assert_eq!(told[0].channel_id, "hook");
    assert!(told[0].payload["output"]
        .as_str()
        .unwrap()
        .contains("has not started (10m after its time"));

    // Its run starts 5 minutes later: the end is told once.
    clock.advance_ms(5 * MINUTE);
    let claim = claim_due(&app, &id).await;
    assert_eq!(
        other.schedules().check_alerts().await.unwrap(),
        checked(0, 1)
    );
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
    let told = alerts(&app).await;
    assert_eq!(told.len(), 2);
    assert_eq!(
        told[1].payload["summary"],
        "check the queue: no longer late"
    );
    assert_eq!(
        told[1].priority, "normal",
        "an end can wait for quiet hours"
    );
    assert!(
        told[1].payload["output"]
            .as_str()
            .unwrap()
            .contains("(15m after its time)"),
        "{}",
        told[1].payload
    );
    finish(&app, &claim, RunStatus::Succeeded, "ok").await;
}

#[tokio::test]
async fn failures_in_a_row_are_told_once_instead_of_the_failing_notice_and_a_success_ends_them() {
    let (_dir, _config, app, _clock) = setup().await;
    let id = add(
        &app,
        ScheduleSpec {
            name: Some("triage".into()),
            goal: "triage the ticket".into(),
            triggered: true,
            channel: Some("hook".into()),
            alert_failures: Some(2),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let run = async |status| {
        app.schedules()
            .trigger(&Actor::Operator, &id, Some("x"), None)
            .await
            .unwrap();
        let claims = claim_events(&app, "w").await;
        finish(&app, &claims[0], status, "").await;
    };
    run(RunStatus::Failed).await;
    assert!(alerts(&app).await.is_empty(), "one failure is not two");
    run(RunStatus::TimedOut).await;
    run(RunStatus::Failed).await;
    let told = alerts(&app).await;
    assert_eq!(summaries(&told), ["triage: runs keep failing"]);
    assert!(told[0].payload["output"]
        .as_str()
        .unwrap()
        .starts_with("2 runs in a row failed"));
    // The third failure reached notify.failure_notice_after (3): this schedule's own
    // alert stands for it.
    let all = app.outbox().list(None, 1000).await.unwrap();
    assert!(all.iter().all(|m| m.kind != "failing"), "told twice");
    // That failure also paused it (pause_after_failures = 3): resumed, it succeeds.
    app.schedules().resume(&Actor::Operator, &id).await.unwrap();
    run(RunStatus::Succeeded).await;
    run(RunStatus::Succeeded).await;
    assert_eq!(
        summaries(&alerts(&app).await),
        ["triage: runs keep failing", "triage: no longer failing"]
    );
    // Failing again is a new incident.
    run(RunStatus::Failed).await;
    run(RunStatus::Failed).await;
    assert_eq!(alerts(&app).await.len(), 3);
}

#[tokio::test]
async fn silence_is_told_once_and_ended_by_a_success() {
    let (_dir, _config, app, clock) = setup().await;
    let id = add(
        &app,
        ScheduleSpec {
            alert_silent: Some("1d".into()),
            ..hourly()
        },
    )
    .await
    .unwrap();
    // Half a day, a failed run (which ends no silence), and the rest of the day.
    clock.advance_ms(12 * HOUR);
    let failed = claim_due(&app, &id).await;
    finish(&app, &failed, RunStatus::Failed, "").await;
    clock.advance_ms(12 * HOUR - MINUTE);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
    clock.advance_ms(MINUTE);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(1, 0));
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
    clock.advance_ms(HOUR);
    let claim = claim_due(&app, &id).await;
    finish(&app, &claim, RunStatus::Succeeded, "ok").await;
    let told = alerts(&app).await;
    assert_eq!(
        summaries(&told),
        [
            "check the queue: no run has succeeded for too long",
            "check the queue: no longer silent"
        ]
    );
    // Counted from the success now: quiet for a day less a minute, nothing to tell.
    clock.advance_ms(24 * HOUR - MINUTE);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
}

#[tokio::test]
async fn alert_settings_are_checked_named_and_taken_away() {
    let (_dir, _config, app, clock) = setup().await;
    let refused: [(ScheduleSpec, &str); 8] = [
        (
            ScheduleSpec {
                alert_late: Some("0s".into()),
                ..hourly()
            },
            "alert_late",
        ),
        (
            ScheduleSpec {
                alert_late: Some("soon".into()),
                ..hourly()
            },
            "alert_late",
        ),
        (
            ScheduleSpec {
                alert_failures: Some(0),
                ..hourly()
            },
            "alert_failures",
        ),
        (
            ScheduleSpec {
                alert_failures: Some(-3),
                ..hourly()
            },
            "alert_failures",
        ),
        (
            ScheduleSpec {
                alert_failures: Some(1001),
                ..hourly()
            },
            "alert_failures",
        ),
        (
            ScheduleSpec {
                alert_failures: Some(i64::MAX),
                ..hourly()
            },
            "alert_failures",
        ),
        (
            ScheduleSpec {
                alert_silent: Some("59s".into()),
                ..hourly()
            },
            "alert_silent",
        ),
        (
            ScheduleSpec {
                every: None,
                triggered: true,
                alert_late: Some("5m".into()),
                ..hourly()
            },
            "alert_late",
        ),
    ];
    for (spec, field) in refused {
        let err = app
            .add_schedule(&Actor::Operator, "alice", &spec)
            .await
            .expect_err(field);
        let err = Error::from(err);
        assert_eq!(err.kind(), ErrorKind::BadInput, "{err}");
        assert!(err.to_string().contains(field), "{err} names {field}");
    }
    assert!(app
        .schedules()
        .list(&Actor::Operator, &Default::default())
        .await
        .unwrap()
        .0
        .is_empty());
    for ok in [1, 1000] {
        add(
            &app,
            ScheduleSpec {
                alert_failures: Some(ok),
                ..hourly()
            },
        )
        .await
        .unwrap();
    }

    // Set by an edit, shown, and taken away: an incident open then ends without a word.
    let id = add(&app, hourly()).await.unwrap();
    let patch = SchedulePatch {
        alert_late: Some("1m".into()),
        ..Default::default()
    };
    let edited = app
        .edit_schedule(&Actor::Operator, &id, &patch)
        .await
        .unwrap();
    assert_eq!(edited.alerts.late_secs, Some(60));
    let both = SchedulePatch {
        alert_late: Some("2m".into()),
        clear: vec![ClearField::AlertLate],
        ..Default::default()
    };
    let err = Error::from(
        app.edit_schedule(&Actor::Operator, &id, &both)
            .await
            .expect_err("given and cleared"),
    );
    assert!(err.to_string().contains("alert_late"), "{err}");
    clock.advance_ms(2 * HOUR);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(1, 0));
    let clear = SchedulePatch {
        clear: vec![ClearField::AlertLate],
        ..Default::default()
    };
    let cleared = app
        .edit_schedule(&Actor::Operator, &id, &clear)
        .await
        .unwrap();
    assert!(cleared.alerts.is_empty());
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
    assert_eq!(alerts(&app).await.len(), 1, "only the opening was told");
    let open: i64 = nightshift::db::query_scalar(
        &app.db().conn().await.unwrap(),
        "SELECT count(*) FROM schedule_alerts",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(open, 0, "the incident ended");
}

#[tokio::test]
async fn a_late_one_shot_is_told_when_its_run_starts_though_the_schedule_then_ends() {
    let (_dir, _config, app, clock) = setup().await;
    let id = add(
        &app,
        ScheduleSpec {
            every: None,
            at: Some("2027-01-15T10:00:00Z".into()),
            alert_late: Some("5m".into()),
            ..hourly()
        },
    )
    .await
    .unwrap();
    let due = app
        .schedules()
        .get(&Actor::Operator, &id)
        .await
        .unwrap()
        .next_run_at
        .unwrap();
    clock.advance_ms(due + 6 * MINUTE - clock.now_ms());
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(1, 0));
    let claim = claim_due(&app, &id).await;
    finish(&app, &claim, RunStatus::Succeeded, "ok").await;
    let ended = app.schedules().get(&Actor::Operator, &id).await.unwrap();
    assert_eq!(ended.status.as_str(), "completed");
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 1));
    assert_eq!(
        summaries(&alerts(&app).await),
        [
            "check the queue: a run is late",
            "check the queue: no longer late"
        ]
    );
}

#[tokio::test]
async fn a_backlog_draining_one_late_occurrence_after_another_is_one_incident() {
    let (_dir, _config, app, clock) = setup().await;
    let id = add(
        &app,
        ScheduleSpec {
            catch_up: Some(nightshift::spec::CatchUp::All),
            alert_late: Some("10m".into()),
            ..hourly()
        },
    )
    .await
    .unwrap();
    // Five hours with no worker: five occurrences missed, each to run in turn.
    clock.advance_ms(5 * HOUR + 30 * MINUTE);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(1, 0));
    for _ in 0..4 {
        let claim = claim_due(&app, &id).await;
        finish(&app, &claim, RunStatus::Succeeded, "ok").await;
        assert_eq!(
            app.schedules().check_alerts().await.unwrap(),
            checked(0, 0),
            "the next occurrence is late too: the same incident"
        );
    }
    let claim = claim_due(&app, &id).await;
    finish(&app, &claim, RunStatus::Succeeded, "ok").await;
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 1));
    assert_eq!(alerts(&app).await.len(), 2, "one incident, told and ended");
}

#[tokio::test]
async fn silence_counts_from_when_the_schedule_starts() {
    let (_dir, _config, app, clock) = setup().await;
    add(
        &app,
        ScheduleSpec {
            starts_at: Some("2027-01-20T00:00:00Z".into()),
            alert_silent: Some("1d".into()),
            ..hourly()
        },
    )
    .await
    .unwrap();
    // START is 2027-01-15; a day later it has not started yet: nothing to tell.
    clock.advance_ms(2 * 24 * HOUR);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 0));
}

#[tokio::test]
async fn after_an_outage_each_person_gets_one_message_for_all_their_late_schedules() {
    let (_dir, _config, app, clock) = setup().await;
    let late = || ScheduleSpec {
        alert_late: Some("10m".into()),
        ..hourly()
    };
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(add(&app, late()).await.unwrap());
    }
    let bobs = app
        .add_schedule(&Actor::Operator, "bob", &late())
        .await
        .unwrap()
        .schedule_id;
    ids.push(bobs);
    // No worker for two hours.
    clock.advance_ms(2 * HOUR);
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(4, 0));
    let told = alerts(&app).await;
    assert_eq!(
        told.len(),
        2,
        "one message per person: {:?}",
        summaries(&told)
    );
    let alices = told.iter().find(|m| m.user_id == "alice").unwrap();
    assert_eq!(alices.payload["summary"], "3 schedules need you");
    assert_eq!(alices.payload["alerts"].as_array().unwrap().len(), 3);
    assert_eq!(alices.priority, "high");
    let bobs = told.iter().find(|m| m.user_id == "bob").unwrap();
    assert_eq!(bobs.payload["summary"], "check the queue: a run is late");
    assert!(
        !bobs.payload.to_string().contains(&ids[0]),
        "bob's message names none of alice's schedules"
    );
    // The worker is back and runs them all: one message each for their end.
    for id in &ids {
        let claim = claim_due(&app, id).await;
        finish(&app, &claim, RunStatus::Succeeded, "ok").await;
    }
    assert_eq!(app.schedules().check_alerts().await.unwrap(), checked(0, 4));
    let told = alerts(&app).await;
    assert_eq!(told.len(), 4);
    assert!(told
        .iter()
        .any(|m| m.user_id == "alice" && m.payload["summary"] == "3 schedules are back to normal"));
}
