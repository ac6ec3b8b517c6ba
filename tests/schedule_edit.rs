//! `schedule edit`: a schedule changed in place keeps its id and runs, its next run is
//! worked out again only when its cadence changed, a run in progress goes on as it
//! started, and a bad change (or another user's schedule) changes nothing.

mod common;

use std::sync::Arc;

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::error::{Error, ErrorKind};
use nightshift::schedule::sync::sync;
use nightshift::schedule::types::{RunOutcome, RunStatus, Schedule, ScheduleStatus};
use nightshift::schedule::Cadence;
use nightshift::spec::{ClearField, NotifyPolicy, SchedulePatch, ScheduleSpec};
use proptest::prelude::*;
use tempfile::TempDir;

/// 2027-01-15T08:00:00Z, a Friday.
const START: i64 = 1_800_000_000_000;

async fn setup() -> (TempDir, App, Arc<ManualClock>) {
    let dir = TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    (dir, app, clock)
}

fn alice() -> Actor {
    Actor::User("alice".into())
}

async fn add(app: &App, spec: ScheduleSpec) -> Schedule {
    app.add_schedule(&alice(), "alice", &spec).await.unwrap()
}

fn hourly(goal: &str) -> ScheduleSpec {
    ScheduleSpec {
        goal: goal.into(),
        every: Some("1h".into()),
        max_cost: Some(2.0),
        ..Default::default()
    }
}

fn kind(err: impl Into<Error>) -> ErrorKind {
    err.into().kind()
}

/// Claims the schedule's due occurrence (after moving the clock to it) as worker `w`.
async fn claim_due(app: &App, clock: &ManualClock, id: &str) -> nightshift::schedule::types::Claim {
    let schedule = app.schedules().get(&Actor::Operator, id).await.unwrap();
    let due = schedule.next_run_at.unwrap();
    let now = clock.now_ms();
    if due > now {
        clock.advance_ms(due - now);
    }
    let schedule = app.schedules().get(&Actor::Operator, id).await.unwrap();
    app.schedules()
        .claim(&schedule, "w", 60_000)
        .await
        .unwrap()
        .expect("the occurrence is claimed")
}

#[tokio::test]
async fn an_edit_keeps_the_id_and_runs_and_moves_the_next_run_only_for_a_new_cadence() {
    let (_dir, app, clock) = setup().await;
    let added = add(&app, hourly("water the plants")).await;
    let id = added.schedule_id.clone();
    let claim = claim_due(&app, &clock, &id).await;
    app.schedules()
        .finish(
            &claim,
            Some("w"),
            &RunOutcome {
                status: Some(RunStatus::Succeeded),
                ..Default::default()
            },
            3,
        )
        .await
        .unwrap();
    let before = app.schedules().get(&alice(), &id).await.unwrap();

    // The goal and a policy: the next run stays where it was.
    let patch = SchedulePatch {
        goal: Some("water the ferns".into()),
        notify: Some(NotifyPolicy::OnFailure),
        clear: vec![ClearField::MaxCost],
        ..Default::default()
    };
    let edited = app.edit_schedule(&alice(), &id, &patch).await.unwrap();
    assert_eq!(edited.schedule_id, id);
    assert_eq!(edited.goal, "water the ferns");
    assert_eq!(edited.notify, NotifyPolicy::OnFailure);
    assert_eq!(edited.max_cost, None, "cleared");
    assert_eq!(edited.next_run_at, before.next_run_at);
    assert_eq!(edited.created_at, added.created_at);
    let runs = app.schedules().runs(&alice(), &id, 10).await.unwrap();
    assert_eq!(runs.len(), 1, "the run history stays");

    // A new cadence: the next run is the new cadence's.
    let patch = SchedulePatch {
        cron: Some("30 9 * * *".into()),
        tz: Some("Europe/Lisbon".into()),
        ..Default::default()
    };
    let edited = app.edit_schedule(&alice(), &id, &patch).await.unwrap();
    let cadence = Cadence::cron("30 9 * * *", "Europe/Lisbon").unwrap();
    assert_eq!(edited.cadence, cadence);
    assert_eq!(edited.next_run_at, cadence.next_after(clock.now_ms()));
    assert_eq!(edited.goal, "water the ferns", "what was not given stays");

    // The zone alone: the same expression read in the new zone.
    let patch = SchedulePatch {
        tz: Some("Asia/Tokyo".into()),
        ..Default::default()
    };
    let edited = app.edit_schedule(&alice(), &id, &patch).await.unwrap();
    let cadence = Cadence::cron("30 9 * * *", "Asia/Tokyo").unwrap();
    assert_eq!(edited.cadence, cadence);
    assert_eq!(edited.next_run_at, cadence.next_after(clock.now_ms()));
}

#[tokio::test]
async fn a_run_in_progress_goes_on_and_a_one_shot_made_recurring_is_not_completed_by_it() {
    let (_dir, app, clock) = setup().await;
    let once = add(
        &app,
        ScheduleSpec {
            goal: "remind me".into(),
            at: Some("2027-01-15T09:00:00Z".into()),
            ..Default::default()
        },
    )
    .await;
    let id = once.schedule_id.clone();
    let claim = claim_due(&app, &clock, &id).await;
    // While it runs, it becomes a daily schedule with a new goal.
    let patch = SchedulePatch {
        goal: Some("remind me daily".into()),
        every: Some("1d".into()),
        ..Default::default()
    };
    let edited = app.edit_schedule(&alice(), &id, &patch).await.unwrap();
    assert_eq!(edited.status, ScheduleStatus::Active);
    let ok = RunOutcome {
        status: Some(RunStatus::Succeeded),
        output: Some("reminded".into()),
        ..Default::default()
    };
    assert!(
        app.schedules()
            .finish(&claim, Some("w"), &ok, 3)
            .await
            .unwrap(),
        "the run is recorded"
    );
    let after = app.schedules().get(&alice(), &id).await.unwrap();
    assert_eq!(
        after.status,
        ScheduleStatus::Active,
        "no longer a one-shot: not completed"
    );
    assert_eq!(after.next_run_at, edited.next_run_at);
    let runs = app.schedules().runs(&alice(), &id, 10).await.unwrap();
    assert_eq!(runs[0].status, RunStatus::Succeeded);
    assert_eq!(runs[0].output.as_deref(), Some("reminded"));
}

#[tokio::test]
async fn a_finished_one_shot_given_a_new_time_is_active_again() {
    let (_dir, app, clock) = setup().await;
    let once = add(
        &app,
        ScheduleSpec {
            goal: "call the bank".into(),
            at: Some("2027-01-15T09:00:00Z".into()),
            ..Default::default()
        },
    )
    .await;
    let id = once.schedule_id;
    let claim = claim_due(&app, &clock, &id).await;
    let ok = RunOutcome {
        status: Some(RunStatus::Succeeded),
        ..Default::default()
    };
    app.schedules()
        .finish(&claim, Some("w"), &ok, 3)
        .await
        .unwrap();
    assert_eq!(
        app.schedules().get(&alice(), &id).await.unwrap().status,
        ScheduleStatus::Completed
    );

    // A new goal alone leaves it completed.
    let goal = SchedulePatch {
        goal: Some("call the bank again".into()),
        ..Default::default()
    };
    let edited = app.edit_schedule(&alice(), &id, &goal).await.unwrap();
    assert_eq!(edited.status, ScheduleStatus::Completed);
    // A new time makes it active, due then.
    let at = SchedulePatch {
        at: Some("2027-01-16T09:00:00Z".into()),
        ..Default::default()
    };
    let edited = app.edit_schedule(&alice(), &id, &at).await.unwrap();
    assert_eq!(edited.status, ScheduleStatus::Active);
    assert_eq!(edited.status_reason, None);
    assert_eq!(edited.next_run_at, Some(START + 3_600_000 + 86_400_000));
}

#[tokio::test]
async fn bad_changes_and_other_users_schedules_change_nothing() {
    let (_dir, app, _clock) = setup().await;
    let added = add(&app, hourly("stretch")).await;
    let id = added.schedule_id.clone();
    let bad: Vec<(SchedulePatch, ErrorKind, &str)> = vec![
        (SchedulePatch::default(), ErrorKind::BadInput, "patch"),
        (
            SchedulePatch {
                cron: Some("61 * * * *".into()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "cron",
        ),
        (
            SchedulePatch {
                cron: Some("0 9 * * *".into()),
                every: Some("1h".into()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "cadence",
        ),
        (
            SchedulePatch {
                every: Some("10s".into()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "every",
        ),
        (
            SchedulePatch {
                tz: Some("Mars/Olympus".into()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "tz",
        ),
        (
            SchedulePatch {
                goal: Some(String::new()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "goal",
        ),
        (
            SchedulePatch {
                max_attempts: Some(0),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "max_attempts",
        ),
        (
            SchedulePatch {
                max_cost: Some(1.0),
                clear: vec![ClearField::MaxCost],
                ..Default::default()
            },
            ErrorKind::BadInput,
            "clear",
        ),
        (
            SchedulePatch {
                channel: Some("nowhere".into()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "channel",
        ),
        (
            SchedulePatch {
                at: Some("2020-01-01T00:00:00Z".into()),
                ..Default::default()
            },
            ErrorKind::BadInput,
            "at",
        ),
    ];
    for (patch, expected, field) in bad {
        let err: Error = app
            .edit_schedule(&alice(), &id, &patch)
            .await
            .unwrap_err()
            .into();
        assert_eq!(err.kind(), expected, "{patch:?}");
        assert!(err.to_string().contains(field), "`{err}` names {field}");
        assert_eq!(
            app.schedules().get(&alice(), &id).await.unwrap(),
            added,
            "{patch:?} changed nothing"
        );
    }
    // Bob cannot see it, let alone change it; an unknown id is the same answer.
    let goal = SchedulePatch {
        goal: Some("bob's now".into()),
        ..Default::default()
    };
    let bob = Actor::User("bob".into());
    let err = app.edit_schedule(&bob, &id, &goal).await.unwrap_err();
    assert_eq!(kind(err), ErrorKind::NotFound);
    let err = app
        .edit_schedule(&alice(), "sch-nope", &goal)
        .await
        .unwrap_err();
    assert_eq!(kind(err), ErrorKind::NotFound);
    assert_eq!(app.schedules().get(&alice(), &id).await.unwrap(), added);
}

#[tokio::test]
async fn a_config_schedule_is_changed_in_its_file_and_keeps_its_id_when_it_is() {
    let (dir, _app, _clock) = setup().await;
    let mut config = common::config_in(&dir);
    let entry = |goal: &str, cron: &str| ScheduleSpec {
        user: Some("alice".into()),
        name: Some("digest".into()),
        goal: goal.into(),
        cron: Some(cron.into()),
        ..Default::default()
    };
    config.schedules = vec![entry("send the digest", "0 8 * * *")];
    let app = common::app_with(&config, None).await;
    sync(app.schedules(), &config.schedules, "UTC")
        .await
        .unwrap();
    let (list, _) = app
        .schedules()
        .list(&Actor::Operator, &Default::default())
        .await
        .unwrap();
    let id = list[0].schedule_id.clone();
    let patch = SchedulePatch {
        goal: Some("something else".into()),
        ..Default::default()
    };
    let err: Error = app
        .edit_schedule(&Actor::Operator, &id, &patch)
        .await
        .unwrap_err()
        .into();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("config file"), "{err}");

    // The file changes: the schedule changes in place.
    drop(app);
    config.schedules = vec![entry("send the long digest", "0 9 * * *")];
    let app = common::app_with(&config, None).await;
    sync(app.schedules(), &config.schedules, "UTC")
        .await
        .unwrap();
    let schedule = app.schedules().get(&Actor::Operator, &id).await.unwrap();
    assert_eq!(schedule.goal, "send the long digest");
    assert_eq!(schedule.cadence, Cadence::cron("0 9 * * *", "UTC").unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any text in any field is a change or an error, and an error changes nothing.
    #[test]
    fn any_text_is_a_change_or_an_error_that_changes_nothing(
        field in 0usize..7,
        text in any::<String>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (_dir, app, _clock) = setup().await;
            let added = add(&app, hourly("stretch")).await;
            let mut patch = SchedulePatch::default();
            match field {
                0 => patch.goal = Some(text.clone()),
                1 => patch.name = Some(text.clone()),
                2 => patch.cron = Some(text.clone()),
                3 => patch.every = Some(text.clone()),
                4 => patch.at = Some(text.clone()),
                5 => patch.when = Some(text.clone()),
                _ => patch.tz = Some(text.clone()),
            }
            match app.edit_schedule(&alice(), &added.schedule_id, &patch).await {
                Ok(edited) => {
                    prop_assert_eq!(&edited.schedule_id, &added.schedule_id);
                    prop_assert!(edited.status == ScheduleStatus::Active);
                }
                Err(err) => {
                    let err: Error = err.into();
                    prop_assert_eq!(err.kind(), ErrorKind::BadInput, "{}", err);
                    let now = app.schedules().get(&alice(), &added.schedule_id).await.unwrap();
                    prop_assert_eq!(now, added);
                }
            }
            Ok(())
        })?;
    }
}
