//! Reruns and replays: a past run's occurrence run again with the input it had, as a new
//! run linked to it; a range of past runs at once, bounded, each once. On a manual clock
//! with real claims and finishes, on the test's engine; the HTTP door against a real
//! server on 127.0.0.1.

mod common;

use std::sync::Arc;

use common::api::TestApi;
use common::runs::{claim_due, claim_events, finish};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::error::{Error, ErrorKind};
use nightshift::schedule::store::{ReplayAsk, RerunMemory, MAX_WAITING_EVENTS};
use nightshift::schedule::types::{RunOrigin, RunStatus};
use nightshift::spec::ScheduleSpec;
use serde_json::json;
use tempfile::TempDir;

const START: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

async fn setup() -> (TempDir, App, Arc<ManualClock>) {
    let dir = TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    (dir, app, clock)
}

/// A replay of `from..to`, only of runs that ended as `status` when given, seeing memory
/// as it is.
fn ask<'a>(from: &'a str, to: &'a str, status: Option<&'a str>, dry_run: bool) -> ReplayAsk<'a> {
    ReplayAsk {
        from,
        to,
        status,
        dry_run,
        memory: RerunMemory::Now,
    }
}

fn user(name: &str) -> Actor {
    Actor::User(name.into())
}

fn kind<T: std::fmt::Debug>(result: Result<T, nightshift::schedule::ScheduleError>) -> ErrorKind {
    Error::from(result.expect_err("refused")).kind()
}

async fn add(app: &App, owner: &str, spec: ScheduleSpec) -> String {
    app.add_schedule(&Actor::Operator, owner, &spec)
        .await
        .unwrap()
        .schedule_id
}

fn triggered() -> ScheduleSpec {
    ScheduleSpec {
        goal: "triage the ticket".into(),
        triggered: true,
        ..Default::default()
    }
}

/// Triggers the schedule with `input` and runs it to `status`; returns the run's id.
async fn run_triggered(app: &App, id: &str, input: &str, status: RunStatus) -> String {
    app.schedules()
        .trigger(&user("alice"), id, Some(input), None)
        .await
        .unwrap();
    let claims = claim_events(app, "w").await;
    assert_eq!(claims.len(), 1);
    finish(app, &claims[0], status, "first try").await;
    claims[0].run_id.clone()
}

#[tokio::test]
async fn a_rerun_runs_the_occurrence_again_with_its_input_linked_to_the_original() {
    let (_dir, app, clock) = setup().await;
    let id = add(&app, "alice", triggered()).await;
    let failed = run_triggered(&app, &id, "ticket #42: printer on fire", RunStatus::Failed).await;
    let original = app.schedules().run(&user("alice"), &failed).await.unwrap();
    clock.advance_ms(HOUR);

    let rerun = app
        .schedules()
        .rerun(&user("alice"), &failed, RerunMemory::Now)
        .await
        .unwrap();
    assert_eq!(rerun.parent_run_id, failed);
    assert_eq!(rerun.schedule_id, id);
    let claims = claim_events(&app, "w").await;
    assert_eq!(claims.len(), 1, "one run queued");
    let claim = &claims[0];
    assert_ne!(claim.run_id, failed, "a new run");
    assert_eq!(
        claim.input.as_deref(),
        Some("ticket #42: printer on fire"),
        "with the input the original had"
    );
    assert_eq!(
        claim.scheduled_for, original.scheduled_for,
        "for the same occurrence"
    );
    finish(&app, claim, RunStatus::Succeeded, "put out").await;

    let again = app
        .schedules()
        .run(&user("alice"), &claim.run_id)
        .await
        .unwrap();
    assert_eq!(again.parent_run_id.as_deref(), Some(failed.as_str()));
    assert_eq!(again.status, RunStatus::Succeeded);
    assert_eq!(again.origin, RunOrigin::Trigger);
    // The original is left as it was.
    assert_eq!(
        app.schedules().run(&user("alice"), &failed).await.unwrap(),
        original
    );
}

#[tokio::test]
async fn a_rerun_of_an_occurrence_of_the_cadence_runs_that_occurrence_again() {
    let (_dir, app, clock) = setup().await;
    let spec = ScheduleSpec {
        goal: "daily digest".into(),
        every: Some("1h".into()),
        ..Default::default()
    };
    let id = add(&app, "alice", spec).await;
    clock.advance_ms(HOUR);
    let claim = claim_due(&app, &id).await;
    finish(&app, &claim, RunStatus::TimedOut, "").await;

    app.schedules()
        .rerun(&user("alice"), &claim.run_id, RerunMemory::Now)
        .await
        .unwrap();
    let reruns = claim_events(&app, "w").await;
    assert_eq!(reruns.len(), 1);
    assert_eq!(reruns[0].scheduled_for, claim.scheduled_for);
    assert_eq!(
        reruns[0].input, None,
        "an occurrence of the cadence has no input"
    );
    // The live cadence is untouched.
    assert_eq!(
        app.schedules()
            .get(&user("alice"), &id)
            .await
            .unwrap()
            .next_run_at,
        claim.schedule.next_run_at
    );
}

#[tokio::test]
async fn a_rerun_is_refused_for_a_run_going_skipped_hidden_or_paused_and_changes_nothing() {
    let (_dir, app, _clock) = setup().await;
    let id = add(&app, "alice", triggered()).await;
    let ended = run_triggered(&app, &id, "x", RunStatus::Succeeded).await;

    // Another user's run is a missing one; so is a run that does not exist.
    assert_eq!(
        kind(
            app.schedules()
                .rerun(&user("bob"), &ended, RerunMemory::Now)
                .await
        ),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            app.schedules()
                .rerun(&user("alice"), "run-nope", RerunMemory::Now)
                .await
        ),
        ErrorKind::NotFound
    );
    // A run still going is a conflict.
    app.schedules()
        .trigger(&user("alice"), &id, Some("y"), None)
        .await
        .unwrap();
    let going = claim_events(&app, "w").await;
    assert_eq!(
        kind(
            app.schedules()
                .rerun(&user("alice"), &going[0].run_id, RerunMemory::Now)
                .await
        ),
        ErrorKind::Conflict
    );
    finish(&app, &going[0], RunStatus::Succeeded, "ok").await;
    // A paused schedule takes no rerun until it is resumed.
    app.schedules()
        .pause(&user("alice"), &id, None)
        .await
        .unwrap();
    assert_eq!(
        kind(
            app.schedules()
                .rerun(&user("alice"), &ended, RerunMemory::Now)
                .await
        ),
        ErrorKind::Conflict
    );
    app.schedules().resume(&user("alice"), &id).await.unwrap();
    // At most MAX_WAITING_EVENTS wait.
    for _ in 0..MAX_WAITING_EVENTS {
        app.schedules()
            .rerun(&user("alice"), &ended, RerunMemory::Now)
            .await
            .unwrap();
    }
    assert_eq!(
        kind(
            app.schedules()
                .rerun(&user("alice"), &ended, RerunMemory::Now)
                .await
        ),
        ErrorKind::Conflict
    );
    assert_eq!(
        app.schedules().due_events(1000).await.unwrap().len(),
        MAX_WAITING_EVENTS as usize,
        "a refused rerun queued nothing"
    );
}

#[tokio::test]
async fn a_skipped_run_is_refused_as_never_run() {
    let (_dir, app, clock) = setup().await;
    let spec = ScheduleSpec {
        goal: "hourly".into(),
        every: Some("1h".into()),
        ..Default::default()
    };
    let id = add(&app, "alice", spec).await;
    // An occurrence that comes due while the last run is still going is recorded
    // skipped (overlap = skip).
    clock.advance_ms(HOUR);
    let schedule = app.schedules().get(&user("alice"), &id).await.unwrap();
    let first = app
        .schedules()
        .claim(&schedule, "w", 600_000)
        .await
        .unwrap()
        .expect("due");
    clock.advance_ms(HOUR);
    let schedule = app.schedules().get(&user("alice"), &id).await.unwrap();
    assert!(app
        .schedules()
        .claim(&schedule, "w", 600_000)
        .await
        .unwrap()
        .is_none());
    let runs = app.schedules().runs(&user("alice"), &id, 10).await.unwrap();
    let skipped = runs
        .iter()
        .find(|r| r.status == RunStatus::Skipped)
        .expect("the second occurrence was skipped");
    let refused = app
        .schedules()
        .rerun(&user("alice"), &skipped.run_id, RerunMemory::Now)
        .await;
    assert_eq!(kind(refused), ErrorKind::BadInput);
    finish(&app, &first, RunStatus::Succeeded, "ok").await;
}

#[tokio::test]
async fn a_replay_reruns_a_range_once_oldest_first_filtered_by_status() {
    let (_dir, app, clock) = setup().await;
    let id = add(&app, "alice", triggered()).await;
    // Four runs an hour apart: failed, succeeded, failed, timed out.
    let mut runs = Vec::new();
    for (i, status) in [
        RunStatus::Failed,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::TimedOut,
    ]
    .into_iter()
    .enumerate()
    {
        runs.push(run_triggered(&app, &id, &format!("input {i}"), status).await);
        clock.advance_ms(HOUR);
    }
    let (from, to) = ("2027-01-01", "2027-12-31");
    let dry = app
        .schedules()
        .replay(&user("alice"), &id, &ask(from, to, Some("failed"), true))
        .await
        .unwrap();
    let ids = |list: &[nightshift::schedule::store::ReplayedRun]| {
        list.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&dry.queued), [runs[0].clone(), runs[2].clone()]);
    assert!(
        app.schedules().due_events(10).await.unwrap().is_empty(),
        "a dry run queues nothing"
    );
    let replay = app
        .schedules()
        .replay(&user("alice"), &id, &ask(from, to, Some("failed"), false))
        .await
        .unwrap();
    assert_eq!(ids(&replay.queued), ids(&dry.queued));
    // Asked again: each was rerun already.
    let again = app
        .schedules()
        .replay(&user("alice"), &id, &ask(from, to, Some("failed"), false))
        .await
        .unwrap();
    assert!(again.queued.is_empty());
    assert_eq!(ids(&again.already_rerun), ids(&replay.queued));
    // One after another, oldest first, each with its own input.
    let mut inputs = Vec::new();
    loop {
        let claims = claim_events(&app, "w").await;
        let Some(claim) = claims.first() else { break };
        assert_eq!(claims.len(), 1, "the schedule's runs go one after another");
        inputs.push(claim.input.clone().unwrap());
        finish(&app, claim, RunStatus::Succeeded, "ok").await;
    }
    assert_eq!(inputs, ["input 0", "input 2"]);
    // Without a status: every run that ran and has not been rerun, the reruns included.
    let all = app
        .schedules()
        .replay(&user("alice"), &id, &ask(from, to, None, true))
        .await
        .unwrap();
    assert_eq!(all.queued.len(), 4, "{all:?}");
    assert_eq!(all.already_rerun.len(), 2);
}

#[tokio::test]
async fn a_bad_replay_is_refused_and_queues_nothing() {
    let (_dir, app, clock) = setup().await;
    let id = add(&app, "alice", triggered()).await;
    run_triggered(&app, &id, "x", RunStatus::Failed).await;
    clock.advance_ms(HOUR);
    let cases: [(&str, &str, Option<&str>, ErrorKind); 6] = [
        ("2027-02-01", "2027-01-01", None, ErrorKind::BadInput),
        ("yesterday-ish", "2027-01-01", None, ErrorKind::BadInput),
        (
            "2027-01-01",
            "2027-12-31",
            Some("skipped"),
            ErrorKind::BadInput,
        ),
        (
            "2027-01-01",
            "2027-12-31",
            Some("running"),
            ErrorKind::BadInput,
        ),
        (
            "2027-01-01",
            "2027-12-31",
            Some("FAILED\u{7}"),
            ErrorKind::BadInput,
        ),
        ("2027-01-01", "2027-12-31", Some(""), ErrorKind::BadInput),
    ];
    for (from, to, status, expected) in cases {
        let refused = app
            .schedules()
            .replay(&user("alice"), &id, &ask(from, to, status, false))
            .await;
        assert_eq!(kind(refused), expected, "{from} {to} {status:?}");
    }
    // Another user's schedule is a missing one.
    let hidden = app
        .schedules()
        .replay(
            &user("bob"),
            &id,
            &ask("2027-01-01", "2027-12-31", None, true),
        )
        .await;
    assert_eq!(kind(hidden), ErrorKind::NotFound);
    assert!(app.schedules().due_events(10).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_http_doors_rerun_and_replay_a_users_own_runs_only() {
    let api = TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let id = add(&api.app, "alice", triggered()).await;
    let run_id = run_triggered(&api.app, &id, "from the API", RunStatus::Failed).await;

    let refused = api
        .call(
            "POST",
            &format!("/v1/runs/{run_id}/rerun"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(refused.status, 404, "{:?}", refused.body);
    let rerun = api
        .call(
            "POST",
            &format!("/v1/runs/{run_id}/rerun"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(rerun.status, 202, "{:?}", rerun.body);
    assert_eq!(rerun.body["parent_run_id"], run_id.as_str());

    let body =
        json!({"from": "2020-01-01", "to": "2099-12-31", "status": "failed", "dry_run": true});
    let hidden = api
        .call(
            "POST",
            &format!("/v1/schedules/{id}/replay"),
            Some(&bob),
            Some(body.clone()),
        )
        .await;
    assert_eq!(hidden.status, 404, "{:?}", hidden.body);
    let dry = api
        .call(
            "POST",
            &format!("/v1/schedules/{id}/replay"),
            Some(&alice),
            Some(body),
        )
        .await;
    assert_eq!(dry.status, 200, "{:?}", dry.body);
    assert_eq!(dry.body["queued"], json!([]), "the run was rerun already");
    assert_eq!(dry.body["already_rerun"][0]["run_id"], run_id.as_str());
    let unknown_field = api
        .call(
            "POST",
            &format!("/v1/schedules/{id}/replay"),
            Some(&alice),
            Some(json!({"from": "2020-01-01", "to": "2099-12-31", "limit": 5})),
        )
        .await;
    assert_eq!(unknown_field.status, 400, "{:?}", unknown_field.body);
    // The rerun's run, once claimed, names its parent in the run's view.
    let claims = claim_events(&api.app, "w").await;
    let shown = api
        .call(
            "GET",
            &format!("/v1/runs/{}", claims[0].run_id),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(shown.body["parent_run_id"], run_id.as_str());
    assert_eq!(shown.body["memory_as_of"], json!(null));
    finish(&api.app, &claims[0], RunStatus::Succeeded, "rerun").await;

    // With memory as of the original: the instant its run started, on the event, the
    // answer and the rerun's run; a value that is not a boolean is refused, naming it.
    let original = api
        .app
        .schedules()
        .run(&Actor::Operator, &run_id)
        .await
        .unwrap();
    let started = nightshift::db::clock::to_rfc3339(original.started_at.unwrap());
    let bad = api
        .call(
            "POST",
            &format!("/v1/runs/{run_id}/rerun?memory_as_of_original=perhaps"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(bad.status, 400, "{:?}", bad.body);
    assert!(
        bad.body.to_string().contains("memory_as_of_original"),
        "{:?}",
        bad.body
    );
    let as_of = api
        .call(
            "POST",
            &format!("/v1/runs/{run_id}/rerun?memory_as_of_original=true"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(as_of.status, 202, "{:?}", as_of.body);
    assert_eq!(as_of.body["memory_as_of"], started.as_str());
    let claims = claim_events(&api.app, "w").await;
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].memory_as_of, original.started_at);
    // A rerun of that rerun sees the same moment, not its own start.
    finish(&api.app, &claims[0], RunStatus::Succeeded, "again").await;
    let again = api
        .call(
            "POST",
            &format!(
                "/v1/runs/{}/rerun?memory_as_of_original=true",
                claims[0].run_id
            ),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(again.body["memory_as_of"], started.as_str());
}
