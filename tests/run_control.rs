//! Cancelling runs (issue 47, item 1), against a real worker: a running run whose model
//! never answers is stopped by the worker holding it (its HTTP request dropped) when
//! another process asks, and recorded `cancelled` once, not as a failure; a run waiting
//! for an approval is cancelled at once and its approval can no longer be answered; a
//! run that ended cannot be cancelled.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::routing::post;
use axum::Router;
use nightshift::access::Actor;
use nightshift::approval::{ApprovalError, ApprovalState, Decision, Door};
use nightshift::config::{Config, RuntimeConfig, RuntimeKind};
use nightshift::schedule::types::{NewSchedule, RunStatus, ScheduleStatus};
use nightshift::schedule::{Cadence, ScheduleError};
use tempfile::TempDir;

/// Counts requests started and requests dropped before they were answered.
#[derive(Default)]
struct Hanging {
    started: AtomicUsize,
    dropped: AtomicUsize,
}

struct DropCount(Arc<Hanging>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// A model that never answers.
async fn hanging_model() -> (String, Arc<Hanging>) {
    let seen = Arc::new(Hanging::default());
    let app = Router::new().route(
        "/v1/chat/completions",
        post({
            let seen = seen.clone();
            move || {
                let seen = seen.clone();
                async move {
                    seen.started.fetch_add(1, Ordering::SeqCst);
                    let _guard = DropCount(seen);
                    std::future::pending::<()>().await;
                    ""
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

fn config(dir: &TempDir, model: &str) -> Config {
    let mut config = common::config_in(dir);
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: model.to_string(),
        model: "m".into(),
        timeout_secs: 600,
        max_retries: 0,
        ..Default::default()
    };
    config.scheduler.change_check_ms = 50;
    config
}

#[tokio::test]
async fn a_running_run_is_stopped_by_its_worker_when_another_process_cancels_it() {
    let dir = TempDir::new().unwrap();
    let (model, seen) = hanging_model().await;
    let config = config(&dir, &model);
    let worker_app = common::app_with(&config, None).await;
    let mut new = NewSchedule::new(
        "ana",
        "think forever",
        Cadence::Once {
            at: nightshift::db::clock::now_ms() + 1000,
            tz: "UTC".into(),
        },
    );
    new.max_attempts = 3;
    let schedule = worker_app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn({
        let app = worker_app.clone();
        async move {
            nightshift::worker::run(&app, async {
                let _ = stopped.await;
            })
            .await
            .unwrap()
        }
    });
    common::until("the model is asked", async || {
        seen.started.load(Ordering::SeqCst) == 1
    })
    .await;
    // Another process (the CLI) asks to stop it.
    let cli = common::app_with(&config, None).await;
    let runs = cli
        .schedules()
        .runs(&Actor::Operator, &schedule.schedule_id, 5)
        .await
        .unwrap();
    let run_id = runs[0].run_id.clone();
    // Not another user's to stop: answered as a missing run.
    let bobs = cli
        .schedules()
        .cancel_run(&Actor::User("bob".into()), &run_id, "cli")
        .await;
    assert!(
        matches!(bobs, Err(ScheduleError::RunNotFound(_))),
        "{bobs:?}"
    );
    let asked = cli
        .schedules()
        .cancel_run(&Actor::User("ana".into()), &run_id, "cli")
        .await
        .unwrap();
    assert_eq!(asked.status, RunStatus::Running);
    assert_eq!(asked.cancel_requested_by.as_deref(), Some("cli"));
    let store = cli.schedules().clone();
    common::until("the run is recorded cancelled", async || {
        store.run(&Actor::Operator, &run_id).await.unwrap().status == RunStatus::Cancelled
    })
    .await;
    common::until("the model's request is dropped", async || {
        seen.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    let run = store.run(&Actor::Operator, &run_id).await.unwrap();
    assert_eq!(run.attempt, 1, "a cancelled run is not tried again");
    assert!(run.error.unwrap().contains("cancelled (cli)"));
    let schedule = store
        .get(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();
    assert_eq!(
        schedule.status,
        ScheduleStatus::Completed,
        "its one run was cancelled"
    );
    assert_eq!(
        schedule.consecutive_failures, 0,
        "a cancel is not a failure"
    );
    // A run that ended cannot be cancelled.
    let again = store
        .cancel_run(&Actor::User("ana".into()), &run_id, "api")
        .await;
    assert!(matches!(again, Err(ScheduleError::State(_))), "{again:?}");
    let _ = stop.send(());
    worker.await.unwrap();
    assert_eq!(seen.started.load(Ordering::SeqCst), 1, "asked once");
}

#[tokio::test]
async fn a_waiting_run_is_cancelled_at_once_and_its_approval_closed() {
    let dir = TempDir::new().unwrap();
    let app = common::app_with(&config(&dir, "http://127.0.0.1:9/v1"), None).await;
    let schedule = app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "ana",
                "tidy",
                Cadence::Interval {
                    every_secs: 3600,
                    anchor: 4_000_000_000_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    let conn = app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, turn_count)
         VALUES ('run-w', ?1, 1, 'waiting', 3)",
        [schedule.schedule_id.as_str()],
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
         arguments, created_at, expires_at)
         VALUES ('apr-w', 'run-w', ?1, 'ana', 'files__write', '{}', 1, 9999999999999)",
        [schedule.schedule_id.as_str()],
    )
    .await
    .unwrap();
    let run = app
        .schedules()
        .cancel_run(&Actor::User("ana".into()), "run-w", "api")
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Cancelled);
    assert_eq!(run.cancel_requested_by.as_deref(), Some("api"));
    assert_eq!(run.turn_count, 3, "what it used before it waited is kept");
    let approval = app
        .approvals()
        .get(&Actor::Operator, "apr-w")
        .await
        .unwrap();
    assert_eq!(approval.state, ApprovalState::Denied);
    assert_eq!(approval.decided_by.as_deref(), Some("cancel"));
    let late = app
        .approvals()
        .decide(
            &Actor::Operator,
            "apr-w",
            Decision::Approve,
            Door::Api,
            None,
        )
        .await;
    assert!(
        matches!(late, Err(ApprovalError::Decided { .. })),
        "{late:?}"
    );
    // Nothing resumes it.
    assert!(app
        .schedules()
        .resume_answered("wrk", 60_000, 10)
        .await
        .unwrap()
        .is_empty());
    let schedule = app
        .schedules()
        .get(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();
    assert_eq!(
        schedule.status,
        ScheduleStatus::Active,
        "a recurring schedule goes on"
    );
}

/// A run with a cancel asked: its worker shutting down records it cancelled, not
/// interrupted (no failure counted), and it cannot start waiting for an approval.
#[tokio::test]
async fn a_cancel_asked_holds_through_a_shutdown_and_before_a_wait() {
    let dir = TempDir::new().unwrap();
    let app = common::app_with(&config(&dir, "http://127.0.0.1:9/v1"), None).await;
    let store = app.schedules();
    let at = nightshift::db::clock::now_ms() + 86_400_000;
    let one_shot = |goal: &str| {
        NewSchedule::new(
            "ana",
            goal,
            Cadence::Once {
                at,
                tz: "UTC".into(),
            },
        )
    };
    let conn = app.db().conn().await.unwrap();
    let mut schedules = Vec::new();
    for (run_id, goal) in [("run-s", "shut down"), ("run-w", "about to wait")] {
        let schedule = store
            .create(&Actor::Operator, &one_shot(goal))
            .await
            .unwrap();
        conn.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, worker_id,
             lease_expires_at, cancel_requested_by)
             VALUES (?1, ?2, ?3, 'running', 'wrk-1', 9999999999999, 'cli')",
            libsql::params![run_id, schedule.schedule_id.as_str(), at],
        )
        .await
        .unwrap();
        schedules.push(schedule);
    }
    // Asking to wait: refused, saying who asked to stop it; nothing written.
    let claim =
        nightshift::schedule::types::Claim::of_cadence("run-w".into(), schedules[1].clone(), at, 1);
    let paused = store
        .wait_for_approval(
            &claim,
            "wrk-1",
            &Default::default(),
            &nightshift::approval::WaitFor {
                tool_name: "memory_delete".into(),
                arguments: "{}".into(),
                saved: serde_json::Value::Null,
            },
            60_000,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        paused,
        nightshift::schedule::store::Paused::CancelAsked("cli".into())
    );
    assert!(app
        .approvals()
        .list(&Actor::Operator, None, 10)
        .await
        .unwrap()
        .is_empty());
    // The worker shuts down holding both: each is recorded cancelled.
    assert_eq!(store.interrupt_held("wrk-1", 1).await.unwrap(), 2);
    for (run_id, schedule) in ["run-s", "run-w"].iter().zip(&schedules) {
        let run = store.run(&Actor::Operator, run_id).await.unwrap();
        assert_eq!(run.status, RunStatus::Cancelled, "{run_id}");
        let schedule = store
            .get(&Actor::Operator, &schedule.schedule_id)
            .await
            .unwrap();
        assert_eq!(schedule.consecutive_failures, 0);
        assert_eq!(schedule.status, ScheduleStatus::Completed);
    }
}
