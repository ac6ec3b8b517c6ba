//! Runs that start from events: triggers with an input and an idempotency key, and
//! schedules that follow another's runs (chains), on a manual clock with real claims and
//! finishes against a libSQL file.

mod common;

use std::sync::Arc;

use common::runs::{claim_events, finish};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::error::{Error, ErrorKind};
use nightshift::schedule::store::{MAX_TRIGGER_INPUT_BYTES, MAX_WAITING_EVENTS};
use nightshift::schedule::types::{RunOrigin, RunOutcome, RunStatus, Schedule, ScheduleStatus};
use nightshift::schedule::view::{ScheduleView, SHOW_NEXT_RUNS};
use nightshift::spec::{ChainOn, ClearField, Overlap, SchedulePatch, ScheduleSpec};
use proptest::prelude::*;
use tempfile::TempDir;

const START: i64 = 1_800_000_000_000;

/// A change to a spec, for tables of bad input.
type Tweak = fn(&mut ScheduleSpec);
const HOUR: i64 = 3_600_000;

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

fn alice() -> Actor {
    Actor::User("alice".into())
}

async fn add(app: &App, user: &str, spec: ScheduleSpec) -> Result<Schedule, Error> {
    app.add_schedule(&op(), user, &spec)
        .await
        .map_err(Error::from)
}

fn triggered(goal: &str) -> ScheduleSpec {
    ScheduleSpec {
        goal: goal.into(),
        triggered: true,
        ..Default::default()
    }
}

fn following(goal: &str, upstream: &str, on: Option<ChainOn>) -> ScheduleSpec {
    ScheduleSpec {
        goal: goal.into(),
        after: Some(upstream.into()),
        on,
        ..Default::default()
    }
}

async fn get(app: &App, id: &str) -> Schedule {
    app.schedules().get(&op(), id).await.unwrap()
}

fn kind(err: nightshift::schedule::ScheduleError) -> ErrorKind {
    Error::from(err).kind()
}

#[tokio::test]
async fn a_trigger_starts_one_run_with_its_input() {
    let (_dir, app, _clock) = setup().await;
    let s = add(&app, "alice", triggered("triage the ticket"))
        .await
        .unwrap();
    assert_eq!(s.next_run_at, None, "no times of its own");
    let view = ScheduleView::new(&s, SHOW_NEXT_RUNS);
    assert!(view.next_runs.is_empty());
    assert_eq!(view.description, "only when triggered");

    let t = app
        .schedules()
        .trigger(
            &alice(),
            &s.schedule_id,
            Some("ticket #12: login fails"),
            None,
        )
        .await
        .unwrap();
    assert!(!t.deduplicated);
    assert_eq!(t.run_id, None, "waiting for a worker");
    // Nothing is due by the cadence; the event is what the scheduler wakes for.
    let wake = app.schedules().next_wake().await.unwrap();
    assert_eq!(wake.due_at, Some(START));

    let claims = claim_events(&app, "w").await;
    assert_eq!(claims.len(), 1);
    let claim = &claims[0];
    assert_eq!(claim.origin, RunOrigin::Trigger);
    assert_eq!(claim.input.as_deref(), Some("ticket #12: login fails"));
    assert!(claim_events(&app, "w2").await.is_empty(), "claimed once");
    finish(&app, claim, RunStatus::Failed, "").await;

    // A failed triggered run neither ends nor completes a schedule with no times.
    let after = get(&app, &s.schedule_id).await;
    assert_eq!(after.status, ScheduleStatus::Active);
    let runs = app
        .schedules()
        .runs(&op(), &s.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].origin, RunOrigin::Trigger);
    assert_eq!(runs[0].status, RunStatus::Failed);
}

#[tokio::test]
async fn the_same_idempotency_key_twice_starts_one_run() {
    let (_dir, app, _clock) = setup().await;
    let s = add(&app, "alice", triggered("sync")).await.unwrap();
    let id = s.schedule_id.as_str();
    let first = app
        .schedules()
        .trigger(&alice(), id, Some("a"), Some("delivery-1"))
        .await
        .unwrap();
    let second = app
        .schedules()
        .trigger(&alice(), id, Some("a different body"), Some("delivery-1"))
        .await
        .unwrap();
    assert!(second.deduplicated);
    assert_eq!(first.event_id, second.event_id);
    let claims = claim_events(&app, "w").await;
    assert_eq!(claims.len(), 1);
    assert_eq!(
        claims[0].input.as_deref(),
        Some("a"),
        "the first one's input"
    );
    finish(&app, &claims[0], RunStatus::Succeeded, "ok").await;
    // After its run, the key still answers with that run.
    let third = app
        .schedules()
        .trigger(&alice(), id, None, Some("delivery-1"))
        .await
        .unwrap();
    assert!(third.deduplicated);
    assert_eq!(third.run_id.as_deref(), Some(claims[0].run_id.as_str()));
    // Another key is another run.
    let other = app
        .schedules()
        .trigger(&alice(), id, None, Some("delivery-2"))
        .await
        .unwrap();
    assert!(!other.deduplicated);
    assert_eq!(claim_events(&app, "w").await.len(), 1);
}

#[tokio::test]
async fn a_trigger_at_the_instant_of_an_occurrence_takes_nothing_from_it() {
    let (_dir, app, clock) = setup().await;
    let mut spec = ScheduleSpec {
        goal: "hourly".into(),
        every: Some("1h".into()),
        ..Default::default()
    };
    spec.overlap = Some(Overlap::Allow);
    let s = add(&app, "alice", spec).await.unwrap();
    let due = s.next_run_at.unwrap();
    clock.advance_ms(due - START);
    app.schedules()
        .trigger(&alice(), &s.schedule_id, Some("now"), None)
        .await
        .unwrap();
    let event_claims = claim_events(&app, "w").await;
    assert_eq!(event_claims.len(), 1);
    assert_eq!(event_claims[0].scheduled_for, due, "the same instant");
    let occurrence = app
        .schedules()
        .claim(&get(&app, &s.schedule_id).await, "w", 60_000)
        .await
        .unwrap()
        .expect("the occurrence still runs");
    assert_eq!(occurrence.origin, RunOrigin::Cadence);
    assert_eq!(occurrence.scheduled_for, due);
    let runs = app
        .schedules()
        .runs(&op(), &s.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 2);
}

#[tokio::test]
async fn triggered_runs_wait_for_the_run_going_unless_overlap_allows() {
    let (_dir, app, _clock) = setup().await;
    let s = add(&app, "alice", triggered("one at a time"))
        .await
        .unwrap();
    let id = s.schedule_id.as_str();
    for input in ["first", "second"] {
        app.schedules()
            .trigger(&alice(), id, Some(input), None)
            .await
            .unwrap();
    }
    let claims = claim_events(&app, "w").await;
    assert_eq!(claims.len(), 1, "the second waits");
    assert_eq!(claims[0].input.as_deref(), Some("first"), "oldest first");
    assert!(app.schedules().due_events(10).await.unwrap().is_empty());
    assert_eq!(app.schedules().next_wake().await.unwrap().due_at, None);
    finish(&app, &claims[0], RunStatus::Succeeded, "done").await;
    let next = claim_events(&app, "w").await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].input.as_deref(), Some("second"));

    // overlap = allow: side by side.
    let mut spec = triggered("in parallel");
    spec.overlap = Some(Overlap::Allow);
    let p = add(&app, "alice", spec).await.unwrap();
    for _ in 0..3 {
        app.schedules()
            .trigger(&alice(), &p.schedule_id, None, None)
            .await
            .unwrap();
    }
    assert_eq!(claim_events(&app, "w").await.len(), 3);
}

#[tokio::test]
async fn a_paused_schedule_refuses_triggers_and_the_queue_is_bounded() {
    let (_dir, app, _clock) = setup().await;
    let s = add(&app, "alice", triggered("bounded")).await.unwrap();
    let id = s.schedule_id.as_str();
    for _ in 0..MAX_WAITING_EVENTS {
        app.schedules()
            .trigger(&alice(), id, None, None)
            .await
            .unwrap();
    }
    let err = app
        .schedules()
        .trigger(&alice(), id, None, None)
        .await
        .unwrap_err();
    assert_eq!(kind(err), ErrorKind::Conflict);
    app.schedules().pause(&alice(), id, None).await.unwrap();
    let err = app
        .schedules()
        .trigger(&alice(), id, None, Some("k"))
        .await
        .unwrap_err();
    assert_eq!(kind(err), ErrorKind::Conflict);
    // Another user's schedule is not there for them.
    let err = app
        .schedules()
        .trigger(&Actor::User("bob".into()), id, None, None)
        .await
        .unwrap_err();
    assert_eq!(kind(err), ErrorKind::NotFound);
}

#[tokio::test]
async fn bad_trigger_input_is_refused_and_changes_nothing() {
    let (_dir, app, _clock) = setup().await;
    let s = add(&app, "alice", triggered("careful")).await.unwrap();
    let id = s.schedule_id.as_str();
    let too_big = "x".repeat(MAX_TRIGGER_INPUT_BYTES + 1);
    let long_key = "k".repeat(300);
    let cases: [(Option<&str>, Option<&str>, &str); 5] = [
        (Some(too_big.as_str()), None, "input"),
        (Some(" \n\t\u{85}"), None, "input"),
        (None, Some(""), "idempotency_key"),
        (None, Some("two\nlines"), "idempotency_key"),
        (None, Some(long_key.as_str()), "idempotency_key"),
    ];
    for (input, key, field) in cases {
        let err = Error::from(
            app.schedules()
                .trigger(&alice(), id, input, key)
                .await
                .unwrap_err(),
        );
        assert_eq!(err.kind(), ErrorKind::BadInput);
        assert!(err.to_string().contains(field), "{err}");
    }
    assert!(app.schedules().due_events(10).await.unwrap().is_empty());
    // A run's input is conversation: a tool's coloured output, NUL and all, is kept as given.
    let input = "\u{1b}[0;31mFAILED\u{1b}[0m\r\n\0\u{8}\u{c}\u{85}";
    app.schedules()
        .trigger(&alice(), id, Some(input), None)
        .await
        .unwrap();
    let due = app.schedules().due_events(10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].input.as_deref(), Some(input));
}

#[tokio::test]
async fn a_chain_passes_each_output_on_once() {
    let (_dir, app, _clock) = setup().await;
    let a = add(&app, "alice", triggered("fetch")).await.unwrap();
    let b = add(&app, "alice", following("summarize", &a.schedule_id, None))
        .await
        .unwrap();
    let c = add(
        &app,
        "alice",
        following("publish", &b.schedule_id, Some(ChainOn::Finished)),
    )
    .await
    .unwrap();
    let d = add(
        &app,
        "alice",
        following("alert", &b.schedule_id, Some(ChainOn::Failed)),
    )
    .await
    .unwrap();
    assert!(matches!(
        b.cadence,
        nightshift::schedule::Cadence::Triggered { .. }
    ));
    let view = ScheduleView::new(&b, SHOW_NEXT_RUNS);
    assert!(
        view.description.contains(&format!(
            "after each run of {} that succeeds",
            a.schedule_id
        )),
        "{}",
        view.description
    );

    app.schedules()
        .trigger(&alice(), &a.schedule_id, Some("feed"), None)
        .await
        .unwrap();
    let run_a = claim_events(&app, "w").await.remove(0);
    finish(&app, &run_a, RunStatus::Succeeded, "ten items").await;
    let run_b = claim_events(&app, "w").await;
    assert_eq!(run_b.len(), 1, "only the follower of a");
    assert_eq!(run_b[0].schedule.schedule_id, b.schedule_id);
    assert_eq!(run_b[0].origin, RunOrigin::Chain);
    assert_eq!(run_b[0].input.as_deref(), Some("ten items"));
    finish(&app, &run_b[0], RunStatus::Failed, "").await;
    // b failed: "finished" and "failed" followers run, with its error as input.
    let mut next = claim_events(&app, "w").await;
    next.sort_by_key(|c| c.schedule.goal.clone());
    let goals: Vec<&str> = next.iter().map(|c| c.schedule.goal.as_str()).collect();
    assert_eq!(goals, ["alert", "publish"]);
    assert!(next.iter().all(|c| c.input.as_deref() == Some("it broke")));
    for claim in &next {
        finish(&app, claim, RunStatus::Succeeded, "ok").await;
    }
    assert!(claim_events(&app, "w").await.is_empty());
    for id in [&a, &b, &c, &d] {
        let runs = app
            .schedules()
            .runs(&op(), &id.schedule_id, 10)
            .await
            .unwrap();
        assert_eq!(runs.len(), 1, "{}", id.goal);
    }
}

#[tokio::test]
async fn a_recovered_upstream_run_starts_its_follower_once() {
    let (_dir, app, clock) = setup().await;
    let a = add(&app, "alice", triggered("fetch")).await.unwrap();
    let b = add(&app, "alice", following("summarize", &a.schedule_id, None))
        .await
        .unwrap();
    app.schedules()
        .trigger(&alice(), &a.schedule_id, Some("x"), None)
        .await
        .unwrap();
    let lost = claim_events(&app, "w1").await.remove(0);
    // w1 goes silent; w2 takes the run over and finishes it.
    clock.advance_ms(61_000);
    let recovered = app.schedules().recover_expired("w2", 60_000).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(
        recovered[0].input.as_deref(),
        Some("x"),
        "the input survives"
    );
    assert_eq!(recovered[0].origin, RunOrigin::Trigger);
    let ok = RunOutcome {
        status: Some(RunStatus::Succeeded),
        output: Some("out".into()),
        ..Default::default()
    };
    assert!(app
        .schedules()
        .finish(&recovered[0], Some("w2"), &ok, 3)
        .await
        .unwrap());
    // w1 comes back with its answer: refused, and no second follower run.
    assert!(!app
        .schedules()
        .finish(&lost, Some("w1"), &ok, 3)
        .await
        .unwrap());
    let follower = claim_events(&app, "w2").await;
    assert_eq!(follower.len(), 1);
    assert_eq!(follower[0].schedule.schedule_id, b.schedule_id);
    assert!(claim_events(&app, "w2").await.is_empty());
}

#[tokio::test]
async fn a_chain_is_one_users_and_never_a_cycle() {
    let (_dir, app, _clock) = setup().await;
    let a = add(&app, "alice", triggered("a")).await.unwrap();
    let b = add(&app, "alice", following("b", &a.schedule_id, None))
        .await
        .unwrap();
    let c = add(&app, "alice", following("c", &b.schedule_id, None))
        .await
        .unwrap();
    // a after c would close the loop: refused, naming the field, nothing changed.
    let patch = SchedulePatch {
        after: Some(c.schedule_id.clone()),
        ..Default::default()
    };
    let err = Error::from(
        app.edit_schedule(&alice(), &a.schedule_id, &patch)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.kind(), ErrorKind::BadInput);
    assert!(err.to_string().contains("after"), "{err}");
    assert!(err.to_string().contains("cycle"), "{err}");
    assert_eq!(get(&app, &a.schedule_id).await.after, None);
    // Itself.
    let patch = SchedulePatch {
        after: Some(a.schedule_id.clone()),
        ..Default::default()
    };
    assert!(app
        .edit_schedule(&alice(), &a.schedule_id, &patch)
        .await
        .is_err());
    // Another user's schedule is refused exactly like one that does not exist.
    let bobs = add(&app, "bob", triggered("bob's")).await.unwrap();
    let theirs = Error::from(
        app.add_schedule(&alice(), "alice", &following("x", &bobs.schedule_id, None))
            .await
            .unwrap_err(),
    );
    let missing = Error::from(
        app.add_schedule(&alice(), "alice", &following("x", "sch-nope", None))
            .await
            .unwrap_err(),
    );
    assert_eq!(theirs.kind(), ErrorKind::BadInput);
    assert_eq!(
        theirs.to_string().replace(&bobs.schedule_id, "ID"),
        missing.to_string().replace("sch-nope", "ID")
    );
    // `on` without `after`.
    let spec = ScheduleSpec {
        goal: "x".into(),
        every: Some("1h".into()),
        on: Some(ChainOn::Failed),
        ..Default::default()
    };
    assert!(add(&app, "alice", spec).await.is_err());
    // Clearing `after` leaves a triggered schedule that nothing starts but a trigger.
    let patch = SchedulePatch {
        clear: vec![ClearField::After],
        ..Default::default()
    };
    let cleared = app
        .edit_schedule(&alice(), &c.schedule_id, &patch)
        .await
        .unwrap();
    assert_eq!(cleared.after, None);
}

#[tokio::test]
async fn the_followers_show_tells_of_a_paused_or_deleted_upstream() {
    let (_dir, app, _clock) = setup().await;
    let a = add(&app, "alice", triggered("a")).await.unwrap();
    let b = add(&app, "alice", following("b", &a.schedule_id, None))
        .await
        .unwrap();
    app.schedules()
        .pause(&alice(), &a.schedule_id, Some("holiday"))
        .await
        .unwrap();
    let view = ScheduleView::new(&get(&app, &b.schedule_id).await, SHOW_NEXT_RUNS);
    assert_eq!(view.after.as_ref().unwrap().upstream_status, "paused");
    assert!(
        view.description.contains("(it is paused)"),
        "{}",
        view.description
    );
    app.schedules()
        .delete(&alice(), &a.schedule_id)
        .await
        .unwrap();
    let view = ScheduleView::new(&get(&app, &b.schedule_id).await, SHOW_NEXT_RUNS);
    assert_eq!(view.after.as_ref().unwrap().upstream_status, "deleted");
    assert!(
        view.description.contains("(it was deleted)"),
        "{}",
        view.description
    );
}

#[tokio::test]
async fn a_triggered_schedule_takes_no_timing_settings() {
    let (_dir, app, _clock) = setup().await;
    let tweaks: [(Tweak, &str); 5] = [
        (|s| s.jitter = Some("5m".into()), "jitter"),
        (|s| s.max_runs = Some(3), "max_runs"),
        (|s| s.skip = vec!["2027-12-25".into()], "skip"),
        (|s| s.every = Some("1h".into()), "triggered"),
        (|s| s.ends_at = Some("2028-01-01".into()), "ends_at"),
    ];
    for (tweak, field) in tweaks {
        let mut spec = triggered("x");
        tweak(&mut spec);
        let err = add(&app, "alice", spec).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadInput);
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    // A schedule with times of its own may follow another too, and an edit can take its
    // times away.
    let a = add(&app, "alice", triggered("a")).await.unwrap();
    let mut both = following("b", &a.schedule_id, None);
    both.every = Some("1h".into());
    let b = add(&app, "alice", both).await.unwrap();
    assert_eq!(b.next_run_at, Some(START + HOUR));
    let patch = SchedulePatch {
        triggered: Some(true),
        ..Default::default()
    };
    let edited = app
        .edit_schedule(&alice(), &b.schedule_id, &patch)
        .await
        .unwrap();
    assert_eq!(edited.next_run_at, None);
    assert_eq!(edited.after.unwrap().schedule_id, a.schedule_id);
}

#[tokio::test]
async fn a_triggered_run_of_a_one_shot_leaves_the_one_shot_to_run() {
    let (_dir, app, _clock) = setup().await;
    let spec = ScheduleSpec {
        goal: "remind".into(),
        when: Some("in 2 hours".into()),
        ..Default::default()
    };
    let s = add(&app, "alice", spec).await.unwrap();
    app.schedules()
        .trigger(&alice(), &s.schedule_id, Some("early"), None)
        .await
        .unwrap();
    let claim = claim_events(&app, "w").await.remove(0);
    finish(&app, &claim, RunStatus::Failed, "").await;
    let after = get(&app, &s.schedule_id).await;
    assert_eq!(
        after.status,
        ScheduleStatus::Active,
        "its own run is to come"
    );
    assert_eq!(after.next_run_at, s.next_run_at);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Any key and any input is a trigger or a clear refusal naming the field; a key that
    /// was accepted answers with the same event the second time.
    #[test]
    fn any_key_and_input_is_a_trigger_or_a_named_refusal(
        key in proptest::option::of(any::<String>()),
        input in proptest::option::of(any::<String>()),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (_dir, app, _clock) = setup().await;
            let s = add(&app, "alice", triggered("p")).await.unwrap();
            let id = s.schedule_id.as_str();
            match app.schedules().trigger(&alice(), id, input.as_deref(), key.as_deref()).await {
                Ok(first) => {
                    let again = app
                        .schedules()
                        .trigger(&alice(), id, input.as_deref(), key.as_deref())
                        .await
                        .unwrap();
                    assert_eq!(again.deduplicated, key.is_some());
                    assert_eq!(again.event_id == first.event_id, key.is_some());
                }
                Err(err) => {
                    let err = Error::from(err);
                    assert_eq!(err.kind(), ErrorKind::BadInput);
                    let message = err.to_string();
                    assert!(message.contains("input") || message.contains("idempotency_key"), "{message}");
                    assert!(app.schedules().due_events(10).await.unwrap().is_empty());
                }
            }
        });
    }
}

/// A daily 09:00 schedule in Lisbon, added at START (2027-01-15).
fn daily() -> ScheduleSpec {
    ScheduleSpec {
        goal: "daily digest".into(),
        cron: Some("0 9 * * *".into()),
        tz: Some("Europe/Lisbon".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_backfill_runs_a_past_range_once_oldest_first() {
    let (_dir, app, clock) = setup().await;
    let s = add(&app, "alice", daily()).await.unwrap();
    let id = s.schedule_id.as_str();
    // A week later: the live occurrences of the last days ran.
    clock.advance_ms(7 * 24 * HOUR);
    let dry = app
        .schedules()
        .backfill(&alice(), id, "2027-01-10", "2027-01-12", true)
        .await
        .unwrap();
    assert_eq!(
        dry.queued,
        [
            "2027-01-10T09:00:00Z",
            "2027-01-11T09:00:00Z",
            "2027-01-12T09:00:00Z"
        ]
    );
    assert!(
        app.schedules().due_events(10).await.unwrap().is_empty(),
        "a dry run queues nothing"
    );
    let queued = app
        .schedules()
        .backfill(&alice(), id, "2027-01-10", "2027-01-12", false)
        .await
        .unwrap();
    assert_eq!(queued.queued, dry.queued);
    // Twice: nothing more.
    let again = app
        .schedules()
        .backfill(&alice(), id, "2027-01-10", "2027-01-12", false)
        .await
        .unwrap();
    assert!(again.queued.is_empty());
    assert_eq!(again.already_run.len(), 3);
    // One at a time (overlap = skip), oldest first, each recorded for its occurrence.
    let mut ran = Vec::new();
    loop {
        let claims = claim_events(&app, "w").await;
        if claims.is_empty() {
            break;
        }
        assert_eq!(claims.len(), 1, "the schedule's runs go one after another");
        assert_eq!(claims[0].origin, RunOrigin::Backfill);
        ran.push(claims[0].scheduled_for);
        finish(&app, &claims[0], RunStatus::Succeeded, "ok").await;
    }
    assert_eq!(ran.len(), 3);
    assert!(ran.windows(2).all(|w| w[0] < w[1]), "oldest first");
    // The live schedule is untouched: its next run is still the next 09:00.
    assert_eq!(get(&app, id).await.next_run_at, s.next_run_at);
    let runs = app.schedules().runs(&op(), id, 10).await.unwrap();
    assert!(runs.iter().all(|r| r.origin == RunOrigin::Backfill));
}

#[tokio::test]
async fn a_backfill_skips_occurrences_that_already_ran_live() {
    let (_dir, app, clock) = setup().await;
    let s = add(&app, "alice", daily()).await.unwrap();
    let id = s.schedule_id.as_str();
    // The first live occurrence, 2027-01-15 09:00, runs.
    let first = s.next_run_at.unwrap();
    assert_eq!(first, START + HOUR);
    clock.advance_ms(first - START);
    let claim = app
        .schedules()
        .claim(&get(&app, id).await, "w", 60_000)
        .await
        .unwrap()
        .unwrap();
    finish(&app, &claim, RunStatus::Succeeded, "live").await;
    // Two days later; 01-16 09:00 is due and has not run yet.
    clock.advance_ms(2 * 24 * HOUR);
    let backfill = app
        .schedules()
        .backfill(&alice(), id, "2027-01-14", "2027-01-16", false)
        .await
        .unwrap();
    assert_eq!(backfill.already_run, ["2027-01-15T09:00:00Z"]);
    assert_eq!(
        backfill.queued,
        ["2027-01-14T09:00:00Z", "2027-01-16T09:00:00Z"]
    );
    // The live claim of 01-16 (due, folding 01-17 into it) and the backfilled 01-16
    // meet: whichever comes first runs it, the other finds it taken.
    let live = app
        .schedules()
        .claim(&get(&app, id).await, "w", 60_000)
        .await
        .unwrap()
        .expect("the live occurrence is claimed");
    assert_eq!(live.scheduled_for, first + 24 * HOUR);
    finish(&app, &live, RunStatus::Succeeded, "live").await;
    while let Some(claim) = claim_events(&app, "w").await.pop() {
        finish(&app, &claim, RunStatus::Succeeded, "backfilled").await;
    }
    let runs = app.schedules().runs(&op(), id, 10).await.unwrap();
    let times: Vec<i64> = runs.iter().map(|r| r.scheduled_for).collect();
    assert_eq!(
        times,
        [first + 24 * HOUR, first, first - 24 * HOUR],
        "one run per occurrence: {runs:?}"
    );
    // `--to` a date that ends later today stops at now.
    let today = app
        .schedules()
        .backfill(&alice(), id, "2027-01-17", "2027-01-17", true)
        .await
        .unwrap();
    assert_eq!(today.queued, ["2027-01-17T09:00:00Z"]);
}

#[tokio::test]
async fn a_bad_backfill_is_refused_and_queues_nothing() {
    let (_dir, app, clock) = setup().await;
    let s = add(&app, "alice", daily()).await.unwrap();
    let id = s.schedule_id.as_str();
    clock.advance_ms(24 * HOUR);
    let every_minute = add(
        &app,
        "alice",
        ScheduleSpec {
            goal: "m".into(),
            cron: Some("* * * * *".into()),
            ..Default::default()
        },
    )
    .await;
    let cases: [(&str, &str, &str); 5] = [
        ("2027-01-12", "2027-01-10", "to"),
        ("2099-01-01", "2099-01-02", "from"),
        ("yesterday-ish", "2027-01-12", "from"),
        ("2027-01-10", "not a time", "to"),
        ("2027-01-10", "2027-01-12\0", "to"),
    ];
    for (from, to, field) in cases {
        let err = Error::from(
            app.schedules()
                .backfill(&alice(), id, from, to, false)
                .await
                .unwrap_err(),
        );
        assert_eq!(err.kind(), ErrorKind::BadInput, "{from} {to}");
        assert!(err.to_string().contains(field), "{err}");
    }
    if let Ok(m) = every_minute {
        // More than the maximum in the range: refused whole, not cut.
        let err = app
            .schedules()
            .backfill(&alice(), &m.schedule_id, "2027-01-10", "2027-01-12", false)
            .await
            .unwrap_err();
        assert!(Error::from(err).to_string().contains("1000"));
    }
    let t = add(&app, "alice", triggered("t")).await.unwrap();
    assert!(app
        .schedules()
        .backfill(&alice(), &t.schedule_id, "2027-01-10", "2027-01-12", false)
        .await
        .is_err());
    let err = app
        .schedules()
        .backfill(
            &Actor::User("bob".into()),
            id,
            "2027-01-10",
            "2027-01-12",
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(kind(err), ErrorKind::NotFound);
    assert!(app.schedules().due_events(10).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_interval_backfill_reaches_back_before_its_first_run() {
    let (_dir, app, clock) = setup().await;
    let s = add(
        &app,
        "alice",
        ScheduleSpec {
            goal: "every 6h".into(),
            every: Some("6h".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    clock.advance_ms(HOUR);
    let backfill = app
        .schedules()
        .backfill(
            &alice(),
            &s.schedule_id,
            &nightshift::schedule::cadence::render(START - 24 * HOUR, chrono_tz::Tz::UTC),
            &nightshift::schedule::cadence::render(START, chrono_tz::Tz::UTC),
            true,
        )
        .await
        .unwrap();
    // In the interval's rhythm (its first run at START + 6h): START - 24h .. START.
    assert_eq!(backfill.queued.len(), 5, "{:?}", backfill.queued);
}

#[tokio::test]
async fn a_triggered_schedule_survives_resume_and_refuses_run_now() {
    let (_dir, app, _clock) = setup().await;
    let s = add(&app, "alice", triggered("t")).await.unwrap();
    let id = s.schedule_id.as_str();
    app.schedules().pause(&alice(), id, None).await.unwrap();
    let resumed = app.schedules().resume(&alice(), id).await.unwrap();
    assert_eq!(resumed.status, ScheduleStatus::Active, "{resumed:?}");
    assert_eq!(resumed.next_run_at, None);
    let err = app.schedules().run_now(&alice(), id).await.unwrap_err();
    let err = Error::from(err);
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("schedule trigger"), "{err}");
    // Triggered runs, failing past pause_after_failures, pause it; resumed, it is active.
    for _ in 0..3 {
        app.schedules()
            .trigger(&alice(), id, None, None)
            .await
            .unwrap();
        let claim = claim_events(&app, "w").await.remove(0);
        finish(&app, &claim, RunStatus::Failed, "").await;
    }
    assert_eq!(get(&app, id).await.status, ScheduleStatus::Paused);
    let resumed = app.schedules().resume(&alice(), id).await.unwrap();
    assert_eq!(resumed.status, ScheduleStatus::Active);
}

#[tokio::test]
async fn events_of_a_schedule_that_ended_are_recorded_not_lost() {
    let (_dir, app, clock) = setup().await;
    let mut spec = ScheduleSpec {
        goal: "last one".into(),
        every: Some("1h".into()),
        max_runs: Some(1),
        ..Default::default()
    };
    spec.overlap = Some(Overlap::Skip);
    let s = add(&app, "alice", spec).await.unwrap();
    let id = s.schedule_id.as_str();
    clock.advance_ms(HOUR);
    let last = app
        .schedules()
        .claim(&get(&app, id).await, "w", 60_000)
        .await
        .unwrap()
        .unwrap();
    // A trigger while its last run goes: accepted, and waits.
    app.schedules()
        .trigger(&alice(), id, Some("late"), None)
        .await
        .unwrap();
    assert!(claim_events(&app, "w").await.is_empty());
    finish(&app, &last, RunStatus::Succeeded, "done").await;
    assert_eq!(get(&app, id).await.status, ScheduleStatus::Completed);
    // The scheduler wakes for it and records it as not run.
    assert!(app.schedules().next_wake().await.unwrap().due_at.is_some());
    assert!(claim_events(&app, "w").await.is_empty());
    let runs = app.schedules().runs(&op(), id, 10).await.unwrap();
    let skipped: Vec<_> = runs
        .iter()
        .filter(|r| r.origin == RunOrigin::Trigger)
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].status, RunStatus::Skipped);
    assert!(skipped[0].error.as_deref().unwrap().contains("completed"));
    assert!(app.schedules().due_events(10).await.unwrap().is_empty());
    assert_eq!(app.schedules().next_wake().await.unwrap().due_at, None);
}

#[tokio::test]
async fn a_backfill_runs_an_occurrence_that_was_skipped() {
    let (_dir, app, clock) = setup().await;
    let mut spec = daily();
    spec.catch_up = Some(nightshift::spec::CatchUp::Skip);
    let s = add(&app, "alice", spec).await.unwrap();
    let id = s.schedule_id.as_str();
    // Down for two days: the missed occurrence is recorded skipped by catch_up = skip.
    clock.advance_ms(2 * 24 * HOUR + HOUR);
    assert!(app
        .schedules()
        .claim(&get(&app, id).await, "w", 60_000)
        .await
        .unwrap()
        .is_none());
    let runs = app.schedules().runs(&op(), id, 10).await.unwrap();
    assert_eq!(runs[0].status, RunStatus::Skipped);
    let skipped_at = runs[0].scheduled_for;
    let day = nightshift::schedule::cadence::render(skipped_at, chrono_tz::Tz::UTC);
    let backfill = app
        .schedules()
        .backfill(&alice(), id, &day, &day, false)
        .await
        .unwrap();
    assert_eq!(backfill.queued.len(), 1, "{backfill:?}");
    let claim = claim_events(&app, "w").await.remove(0);
    assert_eq!(claim.scheduled_for, skipped_at);
    finish(&app, &claim, RunStatus::Succeeded, "caught up").await;
    let runs = app.schedules().runs(&op(), id, 10).await.unwrap();
    let at: Vec<_> = runs
        .iter()
        .filter(|r| r.scheduled_for == skipped_at)
        .collect();
    assert_eq!(at.len(), 1);
    assert_eq!(at[0].status, RunStatus::Succeeded);
}

#[tokio::test]
async fn a_paused_follower_keeps_at_most_the_limit_of_runs_waiting() {
    let (_dir, app, _clock) = setup().await;
    let mut upstream_spec = triggered("often");
    upstream_spec.overlap = Some(Overlap::Allow);
    let a = add(&app, "alice", upstream_spec).await.unwrap();
    let b = add(&app, "alice", following("later", &a.schedule_id, None))
        .await
        .unwrap();
    app.schedules()
        .pause(&alice(), &b.schedule_id, None)
        .await
        .unwrap();
    for _ in 0..=MAX_WAITING_EVENTS {
        app.schedules()
            .trigger(&alice(), &a.schedule_id, None, None)
            .await
            .unwrap();
        let claim = claim_events(&app, "w").await.remove(0);
        finish(&app, &claim, RunStatus::Succeeded, "out").await;
    }
    let runs = app
        .schedules()
        .runs(&op(), &b.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1, "the one over the limit is recorded");
    assert_eq!(runs[0].status, RunStatus::Skipped);
    assert!(runs[0].error.as_deref().unwrap().contains("limit"));
    app.schedules()
        .resume(&alice(), &b.schedule_id)
        .await
        .unwrap();
    let mut ran = 0;
    while let Some(claim) = claim_events(&app, "w").await.pop() {
        finish(&app, &claim, RunStatus::Succeeded, "ok").await;
        ran += 1;
    }
    assert_eq!(ran, MAX_WAITING_EVENTS);
}
