//! The scheduler on tokio's paused clock: exactly-once claims across two workers, catch-up,
//! overlap, retries, timeouts, one-shots and pausing after repeated failures.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use nightshift::access::Actor;
use nightshift::config::Config;
use nightshift::db::clock::{Clock, TokioClock};
use nightshift::db::query_scalar;
use nightshift::memory::{Memory, MemoryError, NewEvent, Role};
use nightshift::runtime::{AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use nightshift::schedule::store::ScheduleStore;
use nightshift::schedule::types::{CatchUp, NewSchedule, Overlap, RunStatus, ScheduleStatus};
use nightshift::schedule::Cadence;
use nightshift::worker::{run_with, WorkerParts};
use tempfile::TempDir;
use tokio::sync::oneshot;

/// A runtime that takes `delay` of (virtual) time and succeeds, or fails when the goal
/// says so, and counts its calls per run.
#[derive(Default)]
struct FakeRuntime {
    delay: Duration,
    calls: Mutex<HashMap<String, u32>>,
}

impl FakeRuntime {
    fn new(delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            delay,
            calls: Mutex::default(),
        })
    }

    fn total(&self) -> u32 {
        self.calls.lock().unwrap().values().sum()
    }
}

#[async_trait]
impl AgentRuntime for FakeRuntime {
    async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(request.run_id.clone())
            .or_default() += 1;
        tokio::time::sleep(self.delay).await;
        if request.goal.contains("fail") {
            return GoalOutcome {
                error: Some(RuntimeError::Reported("told to fail".into())),
                ..Default::default()
            };
        }
        let output = format!("done: {}", request.goal);
        GoalOutcome {
            transcript: vec![
                NewEvent::new(Role::User, request.goal.clone()),
                NewEvent::new(Role::Assistant, output.clone()),
            ],
            output,
            turn_count: 1,
            ..Default::default()
        }
    }
}

struct Harness {
    _dir: TempDir,
    config: Config,
    clock: Arc<dyn Clock>,
    store: ScheduleStore,
    memory: Memory,
}

async fn harness(tweak: impl FnOnce(&mut Config)) -> Harness {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.scheduler.retry_base_secs = 10;
    tweak(&mut config);
    let clock: Arc<dyn Clock> = TokioClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    Harness {
        _dir: dir,
        config,
        clock,
        store,
        memory,
    }
}

impl Harness {
    fn every(&self, secs: i64, goal: &str) -> NewSchedule {
        let now = self.clock.now_ms();
        NewSchedule::new(
            "u",
            goal,
            Cadence::Interval {
                every_secs: secs,
                anchor: now + secs * 1000,
                tz: "UTC".into(),
            },
        )
    }

    /// Starts a worker; dropping (or sending on) the returned sender stops it.
    fn worker(
        &self,
        id: &str,
        runtime: Arc<dyn AgentRuntime>,
    ) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
        let (stop, stopped) = oneshot::channel::<()>();
        let config = self.config.clone();
        let clock = self.clock.clone();
        let parts = WorkerParts {
            runtime: Some(runtime),
            worker_id: Some(id.to_string()),
        };
        let handle = tokio::spawn(async move {
            let app = common::app_with(&config, Some(clock)).await;
            run_with(&app, parts, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        (stop, handle)
    }

    async fn scalar(&self, sql: &str) -> i64 {
        let conn = self.memory.db().conn().await.unwrap();
        query_scalar::<i64>(&conn, sql, ())
            .await
            .unwrap()
            .unwrap_or(0)
    }

    async fn statuses(&self, schedule_id: &str) -> Vec<RunStatus> {
        let mut runs = self
            .store
            .runs(&Actor::Operator, schedule_id, 1000)
            .await
            .unwrap();
        runs.reverse();
        runs.into_iter().map(|r| r.status).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn two_workers_run_each_occurrence_exactly_once() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    for i in 0..25 {
        h.store
            .create(&Actor::Operator, &h.every(60, &format!("job {i}")))
            .await
            .unwrap();
    }
    let runtime = FakeRuntime::new(Duration::from_millis(1500));
    let (stop_a, a) = h.worker("worker-a", runtime.clone());
    let (stop_b, b) = h.worker("worker-b", runtime.clone());
    tokio::time::sleep(Duration::from_secs(41 * 60 + 30)).await;
    stop_a.send(()).unwrap();
    stop_b.send(()).unwrap();
    a.await.unwrap();
    b.await.unwrap();

    let runs = h.scalar("SELECT count(*) FROM schedule_runs").await;
    assert!(runs >= 1000, "only {runs} occurrences ran");
    assert_eq!(
        runs,
        h.scalar("SELECT count(DISTINCT schedule_id || ':' || scheduled_for) FROM schedule_runs")
            .await
    );
    assert_eq!(
        h.scalar("SELECT count(*) FROM schedule_runs WHERE status != 'succeeded'")
            .await,
        0
    );
    let calls = runtime.calls.lock().unwrap().clone();
    assert_eq!(calls.len() as i64, runs);
    assert!(calls.values().all(|n| *n == 1), "an occurrence ran twice");
    for worker in ["worker-a", "worker-b"] {
        let mine = h
            .scalar(&format!(
                "SELECT count(*) FROM schedule_runs WHERE worker_id = '{worker}'"
            ))
            .await;
        assert!(mine > 0, "{worker} ran nothing");
    }
    // Each run's transcript is stored in its schedule's session.
    let events = h
        .scalar(
            "SELECT count(*) FROM events e JOIN sessions s ON s.session_id = e.session_id
             WHERE s.kind = 'scheduled'",
        )
        .await;
    assert_eq!(events, 2 * runs, "a goal and an answer per run");
}

/// More work due than a worker can do, for as long as it lasts: it works through the
/// oldest due occurrences and passes over none. (Each worker once started claiming at a
/// fixed row within the first few due ones, so with one free slot the rows before that
/// one waited for as long as the backlog lasted.)
#[tokio::test(start_paused = true)]
async fn a_worker_behind_a_backlog_passes_over_no_schedule() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|c| {
        c.scheduler.min_interval_secs = 1;
        c.scheduler.max_concurrent = 1;
    })
    .await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let mut every_second = h.every(1, &format!("job {i}"));
        every_second.catch_up = CatchUp::All;
        ids.push(
            h.store
                .create(&Actor::Operator, &every_second)
                .await
                .unwrap()
                .schedule_id,
        );
    }
    // Twelve occurrences due a second, one run a second.
    let runtime = FakeRuntime::new(Duration::from_secs(1));
    // One worker after another (which rows a worker favoured depended on its id), on the
    // backlog the ones before left.
    for worker in ["worker-a", "worker-b", "worker-c", "worker-d"] {
        let (stop, handle) = h.worker(worker, runtime.clone());
        tokio::time::sleep(Duration::from_secs(120)).await;
        stop.send(()).unwrap();
        handle.await.unwrap();
        for id in &ids {
            let runs = h
                .scalar(&format!(
                    "SELECT count(*) FROM schedule_runs WHERE schedule_id = '{id}'
                     AND worker_id = '{worker}'"
                ))
                .await;
            assert!(runs >= 3, "{worker} ran {id} {runs} times in two minutes");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn catch_up_policies_after_downtime() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let mut once = h.every(60, "once");
    once.catch_up = CatchUp::Once;
    let mut skip = h.every(60, "skip");
    skip.catch_up = CatchUp::Skip;
    let mut all = h.every(60, "all");
    all.catch_up = CatchUp::All;
    let (once, skip, all) = (
        h.store.create(&Actor::Operator, &once).await.unwrap(),
        h.store.create(&Actor::Operator, &skip).await.unwrap(),
        h.store.create(&Actor::Operator, &all).await.unwrap(),
    );
    // Nobody runs for ten minutes and a half: ten occurrences are missed.
    tokio::time::advance(Duration::from_secs(630)).await;
    let runtime = FakeRuntime::new(Duration::from_millis(10));
    let (stop, worker) = h.worker("w", runtime);
    tokio::time::sleep(Duration::from_secs(20)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();

    assert_eq!(h.statuses(&once.schedule_id).await, [RunStatus::Succeeded]);
    assert_eq!(h.statuses(&skip.schedule_id).await, [RunStatus::Skipped]);
    assert_eq!(
        h.statuses(&all.schedule_id).await,
        vec![RunStatus::Succeeded; 10]
    );
    // Afterwards each is back on its own cadence, in the future.
    let now = h.clock.now_ms();
    for id in [&once.schedule_id, &skip.schedule_id, &all.schedule_id] {
        let next = h
            .store
            .get(&Actor::Operator, id)
            .await
            .unwrap()
            .next_run_at
            .unwrap();
        assert!(next > now && next <= now + 60_000, "{id}");
    }
}

/// More due than the worker can run, with `catch_up = "skip"`: an occurrence that came
/// due while the worker was up is late because the worker was busy, not missed while none
/// ran, so it runs (the ones after it fold into it) and the worker's slots stay full. (Each
/// such claim once recorded the occurrence skipped and moved on: under sustained overload
/// almost nothing ran, and the worker spent its writes recording skips.)
#[tokio::test(start_paused = true)]
async fn catch_up_skip_under_overload_keeps_the_slots_full() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|c| {
        c.scheduler.min_interval_secs = 1;
        c.scheduler.max_concurrent = 2;
    })
    .await;
    let runtime = FakeRuntime::new(Duration::from_secs(1));
    let (stop, worker) = h.worker("w", runtime);
    // The worker is up before any occurrence comes due.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for i in 0..10 {
        let mut spec = h.every(1, &format!("job {i}"));
        spec.catch_up = CatchUp::Skip;
        h.store.create(&Actor::Operator, &spec).await.unwrap();
    }
    // Ten occurrences due a second, two runs a second: five times the capacity.
    tokio::time::sleep(Duration::from_secs(60)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    let succeeded = h
        .scalar("SELECT count(*) FROM schedule_runs WHERE status = 'succeeded'")
        .await;
    let skipped = h
        .scalar("SELECT count(*) FROM schedule_runs WHERE status = 'skipped'")
        .await;
    // Two slots for about 60 s of one-second runs: at least 90 % of 120.
    assert!(
        succeeded >= 108,
        "{succeeded} runs succeeded and {skipped} were recorded skipped in 60 s of 2 slots"
    );
    assert_eq!(skipped, 0, "no occurrence was missed while no worker ran");
}

/// `catch_up = "all"` after a long downtime runs the last 100 missed occurrences, and the
/// ones before those are in the history too: one `skipped` run that says how many it
/// stands for, so every occurrence is accounted for.
#[tokio::test(start_paused = true)]
async fn catch_up_all_records_what_it_passes_over() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|c| c.scheduler.history_keep = 1000).await;
    let mut all = h.every(60, "all");
    all.catch_up = CatchUp::All;
    let all = h.store.create(&Actor::Operator, &all).await.unwrap();
    let first = all.next_run_at.unwrap();
    // Down for 150 occurrences: the first is claimed, of the 149 after it the last 100
    // run, and the 49 between are passed over.
    tokio::time::advance(Duration::from_secs(150 * 60 + 30)).await;
    let (stop, worker) = h.worker("w", FakeRuntime::new(Duration::from_millis(10)));
    tokio::time::sleep(Duration::from_secs(50)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();

    let mut runs = h
        .store
        .runs(&Actor::Operator, &all.schedule_id, 1000)
        .await
        .unwrap();
    runs.reverse();
    let statuses: Vec<RunStatus> = runs.iter().map(|r| r.status).collect();
    assert_eq!(statuses[..2], [RunStatus::Succeeded, RunStatus::Skipped]);
    // The last 100 missed, and whatever came due since.
    assert!(runs.len() >= 102, "{statuses:?}");
    assert!(
        statuses[2..].iter().all(|s| *s == RunStatus::Succeeded),
        "{statuses:?}"
    );
    let passed = &runs[1];
    assert_eq!(passed.scheduled_for, first + 60_000);
    let reason = passed.error.as_deref().unwrap();
    assert!(
        reason.starts_with("49 missed occurrence(s) from "),
        "{reason}"
    );
    // Every occurrence from the first on: a run each, and the 49 in the skipped one.
    assert_eq!(runs[2].scheduled_for, first + 50 * 60_000);
    for pair in runs[2..].windows(2) {
        assert_eq!(pair[1].scheduled_for - pair[0].scheduled_for, 60_000);
    }
}

#[tokio::test(start_paused = true)]
async fn overlapping_occurrence_is_skipped_by_default() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|c| {
        c.scheduler.default_timeout_secs = 1000;
        // Slots for every run here: with the slots full, an occurrence waits for one before
        // the worker looks at it at all, and would run late rather than be skipped.
        c.scheduler.max_concurrent = 8;
    })
    .await;
    let schedule = h
        .store
        .create(&Actor::Operator, &h.every(60, "slow"))
        .await
        .unwrap();
    let mut allow = h.every(60, "slow too");
    allow.overlap = Overlap::Allow;
    let allow = h.store.create(&Actor::Operator, &allow).await.unwrap();
    let (stop, worker) = h.worker("w", FakeRuntime::new(Duration::from_secs(150)));
    tokio::time::sleep(Duration::from_secs(200)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    // Due at 60s (runs until 210s), 120s and 180s overlap it.
    let statuses = h.statuses(&schedule.schedule_id).await;
    assert_eq!(statuses[1..], [RunStatus::Skipped, RunStatus::Skipped]);
    let allowed = h.statuses(&allow.schedule_id).await;
    assert!(
        allowed.iter().all(|s| *s != RunStatus::Skipped),
        "{allowed:?}"
    );
    assert_eq!(allowed.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn failures_retry_with_backoff_then_pause_the_schedule() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|c| {
        c.scheduler.pause_after_failures = 3;
    })
    .await;
    let mut failing = h.every(600, "please fail");
    failing.max_attempts = 2;
    let failing = h.store.create(&Actor::Operator, &failing).await.unwrap();
    let runtime = FakeRuntime::new(Duration::from_millis(10));
    let (stop, worker) = h.worker("w", runtime.clone());
    tokio::time::sleep(Duration::from_secs(3 * 600 + 120)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();

    let runs = h
        .store
        .runs(&Actor::Operator, &failing.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 3);
    for run in &runs {
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.attempt, 2, "retried once");
        assert!(run.error.as_deref().unwrap().contains("told to fail"));
    }
    assert_eq!(runtime.total(), 6);
    let schedule = h
        .store
        .get(&Actor::Operator, &failing.schedule_id)
        .await
        .unwrap();
    assert_eq!(schedule.status, ScheduleStatus::Paused);
    assert_eq!(schedule.consecutive_failures, 3);
    assert!(schedule.status_reason.unwrap().contains("3 consecutive"));
}

#[tokio::test(start_paused = true)]
async fn one_shots_complete_or_fail_never_both() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let at = h.clock.now_ms() + 90_000;
    let good = h
        .store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "u",
                "remind me",
                Cadence::Once {
                    at,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    let mut bad = NewSchedule::new(
        "u",
        "fail please",
        Cadence::Once {
            at,
            tz: "UTC".into(),
        },
    );
    bad.max_attempts = 3;
    let bad = h.store.create(&Actor::Operator, &bad).await.unwrap();
    let (stop, worker) = h.worker("w", FakeRuntime::new(Duration::from_millis(10)));
    tokio::time::sleep(Duration::from_secs(600)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();

    let good = h
        .store
        .get(&Actor::Operator, &good.schedule_id)
        .await
        .unwrap();
    assert_eq!(good.status, ScheduleStatus::Completed);
    assert_eq!(good.next_run_at, None);
    let bad_runs = h
        .store
        .runs(&Actor::Operator, &bad.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(bad_runs.len(), 1);
    assert_eq!(
        (bad_runs[0].status, bad_runs[0].attempt),
        (RunStatus::Failed, 3)
    );
    let bad = h
        .store
        .get(&Actor::Operator, &bad.schedule_id)
        .await
        .unwrap();
    assert_eq!(bad.status, ScheduleStatus::Failed);
}

#[tokio::test(start_paused = true)]
async fn a_run_past_its_deadline_is_timed_out() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let mut slow = h.every(3600, "slow");
    slow.timeout_secs = Some(30);
    slow.max_attempts = 1;
    let slow = h.store.create(&Actor::Operator, &slow).await.unwrap();
    let (stop, worker) = h.worker("w", FakeRuntime::new(Duration::from_secs(120)));
    tokio::time::sleep(Duration::from_secs(3700)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    let runs = h
        .store
        .runs(&Actor::Operator, &slow.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs[0].status, RunStatus::TimedOut);
    let error = runs[0].error.as_deref().unwrap();
    assert!(error.contains("deadline of 30s"), "{error}");
    assert!(!error.contains("reported failure"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_change_made_elsewhere_is_picked_up_within_a_second() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let schedule = h
        .store
        .create(&Actor::Operator, &h.every(3600, "hourly"))
        .await
        .unwrap();
    let runtime = FakeRuntime::new(Duration::from_millis(10));
    let (stop, worker) = h.worker("w", runtime.clone());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(runtime.total(), 0);
    // Another process (a second store on the same file) makes it due now.
    let other = common::app_with(&h.config, Some(h.clock.clone()))
        .await
        .schedules()
        .clone();
    other
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(runtime.total(), 1);
    stop.send(()).unwrap();
    worker.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_interrupts_runs_that_outlive_the_grace_period() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|c| {
        c.scheduler.shutdown_grace_secs = 5;
        c.scheduler.default_timeout_secs = 10_000;
    })
    .await;
    let schedule = h
        .store
        .create(&Actor::Operator, &h.every(60, "long"))
        .await
        .unwrap();
    let (stop, worker) = h.worker("w", FakeRuntime::new(Duration::from_secs(3000)));
    tokio::time::sleep(Duration::from_secs(70)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    let runs = h
        .store
        .runs(&Actor::Operator, &schedule.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Interrupted);
    assert_eq!(
        h.scalar("SELECT count(*) FROM schedule_runs WHERE status = 'running'")
            .await,
        0
    );
}

/// A schedule's transcript session is its runs' alone (D11): no user may append to a
/// `scheduled:…` id, neither another user (before, mallory's append took the session and
/// every run's transcript was dropped) nor the schedule's own, and every run's transcript
/// is stored in the session of the schedule's user.
#[tokio::test(start_paused = true)]
async fn a_schedules_transcript_session_is_its_runs_alone() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let schedule = h
        .store
        .create(&Actor::Operator, &h.every(60, "tidy up"))
        .await
        .unwrap();
    let session = format!("scheduled:{}", schedule.schedule_id);
    for user in ["mallory", "u"] {
        let refused = h
            .memory
            .append(user, &session, &[NewEvent::new(Role::User, "mine now")])
            .await;
        assert!(
            matches!(refused, Err(MemoryError::ReservedSession(_))),
            "{user}: {refused:?}"
        );
    }
    let runtime = FakeRuntime::new(Duration::from_millis(100));
    let (stop, worker) = h.worker("worker-a", runtime.clone());
    tokio::time::sleep(Duration::from_secs(5 * 60 + 30)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    let statuses = h.statuses(&schedule.schedule_id).await;
    assert_eq!(statuses.len(), 5, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == RunStatus::Succeeded),
        "{statuses:?}"
    );
    assert_eq!(runtime.total(), 5);
    let events = h
        .scalar(&format!(
            "SELECT count(*) FROM events WHERE session_id = 'u\u{1f}{session}'"
        ))
        .await;
    assert_eq!(events, 10, "a goal and an answer per run, in u's session");
    assert_eq!(
        h.scalar("SELECT count(*) FROM sessions WHERE user_id = 'mallory'")
            .await,
        0
    );
}

/// A one-shot paused before its time and resumed after it runs then (as catch-up would),
/// and is completed only by that run: a reminder is never dropped unseen.
#[tokio::test(start_paused = true)]
async fn a_paused_one_shot_resumed_after_its_time_still_runs() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let at = h.clock.now_ms() + 3_000;
    let once = h
        .store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "u",
                "remind me",
                Cadence::Once {
                    at,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    h.store
        .pause(&Actor::Operator, &once.schedule_id, Some("away"))
        .await
        .unwrap();
    let runtime = FakeRuntime::new(Duration::from_millis(10));
    let (stop, worker) = h.worker("w", runtime.clone());
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(runtime.total(), 0, "paused: nothing ran");
    let resumed = h
        .store
        .resume(&Actor::Operator, &once.schedule_id)
        .await
        .unwrap();
    assert_eq!(resumed.status, ScheduleStatus::Active);
    assert_eq!(resumed.next_run_at, Some(at), "due at once, as itself");
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    assert_eq!(runtime.total(), 1);
    let done = h
        .store
        .get(&Actor::Operator, &once.schedule_id)
        .await
        .unwrap();
    assert_eq!(done.status, ScheduleStatus::Completed);
    assert_eq!(h.statuses(&once.schedule_id).await, [RunStatus::Succeeded]);
}

/// A run whose tools printed what terminals print (ANSI colours, a progress bar redrawn
/// with carriage returns, backspaces, a form feed, NEL, NUL) keeps its whole transcript
/// and its output as they were: conversation content is stored byte for byte, so the run's
/// session gets no hole.
#[tokio::test(start_paused = true)]
async fn a_run_with_terminal_output_keeps_its_transcript_byte_for_byte() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    const TOOL: &str = "\u{1b}[1;32m✓\u{1b}[0m build\r 10%\r100%\nwarn\u{8}\u{8}\u{8}\u{8}WARN\u{c}page 2\u{85}\0end";
    const ANSWER: &str = "\u{1b}[0;31mFAILED\u{1b}[0m: 1 test";
    struct Colourful;
    #[async_trait]
    impl AgentRuntime for Colourful {
        async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
            GoalOutcome {
                transcript: vec![
                    NewEvent::new(Role::User, request.goal.clone()),
                    NewEvent::new(Role::Tool, TOOL),
                    NewEvent::new(Role::Assistant, ANSWER),
                ],
                output: ANSWER.to_string(),
                turn_count: 1,
                ..Default::default()
            }
        }
    }
    let h = harness(|_| {}).await;
    let schedule = h
        .store
        .create(&Actor::Operator, &h.every(3600, "run the tests"))
        .await
        .unwrap();
    let (stop, worker) = h.worker("w", Arc::new(Colourful));
    tokio::time::sleep(Duration::from_secs(3700)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    let runs = h
        .store
        .runs(&Actor::Operator, &schedule.schedule_id, 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].output.as_deref(), Some(ANSWER));
    let session = format!("scheduled:{}", schedule.schedule_id);
    let events = h
        .memory
        .recall(&Actor::Operator, &session, 10)
        .await
        .unwrap();
    let contents: Vec<&str> = events.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(contents, ["run the tests", TOOL, ANSWER]);
}

/// A run's request carries its schedule's tool and approval patterns, as stored.
#[tokio::test(start_paused = true)]
async fn a_runs_request_carries_its_schedules_tool_and_approval_patterns() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    #[derive(Default)]
    struct Recording(Mutex<Vec<(Vec<String>, Vec<String>)>>);
    #[async_trait]
    impl AgentRuntime for Recording {
        async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
            let asked = (request.tools.clone(), request.approve.clone());
            self.0.lock().unwrap().push(asked);
            GoalOutcome {
                output: "done".into(),
                turn_count: 1,
                ..Default::default()
            }
        }
    }
    let h = harness(|_| {}).await;
    let mut new = h.every(3600, "tidy the files");
    new.tools = vec!["files__*".into()];
    new.approve = vec!["files__write_*".into(), "!files__write_draft".into()];
    h.store.create(&Actor::Operator, &new).await.unwrap();
    let runtime = Arc::new(Recording::default());
    let (stop, worker) = h.worker("w", runtime.clone());
    tokio::time::sleep(Duration::from_secs(3700)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    assert_eq!(*runtime.0.lock().unwrap(), [(new.tools, new.approve)]);
}

/// A runtime answering far more than a run keeps: the answer is stored cut with a note,
/// and the message to the user carries a bounded part of it.
#[tokio::test(start_paused = true)]
async fn a_huge_answer_is_kept_bounded_and_sent_bounded() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    struct Verbose;
    #[async_trait]
    impl AgentRuntime for Verbose {
        async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
            let output = "é".repeat(1_000_000);
            GoalOutcome {
                transcript: vec![
                    NewEvent::new(Role::User, request.goal.clone()),
                    NewEvent::new(Role::Assistant, output.clone()),
                ],
                output,
                turn_count: 1,
                ..Default::default()
            }
        }
    }
    let h = harness(|_| {}).await;
    let schedule = h
        .store
        .create(&Actor::Operator, &h.every(3600, "talk a lot"))
        .await
        .unwrap();
    let (stop, worker) = h.worker("w", Arc::new(Verbose));
    tokio::time::sleep(Duration::from_secs(3700)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();
    let runs = h
        .store
        .runs(&Actor::Operator, &schedule.schedule_id, 10)
        .await
        .unwrap();
    let output = runs[0].output.as_deref().unwrap();
    assert!(
        output.len() <= h.config.scheduler.max_output_bytes,
        "{}",
        output.len()
    );
    assert!(output.ends_with("more bytes not kept]"));
    let payload: String = {
        let conn = h.memory.db().conn().await.unwrap();
        query_scalar(&conn, "SELECT payload_json FROM outbox LIMIT 1", ())
            .await
            .unwrap()
            .unwrap()
    };
    let payload: serde_json::Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["output_truncated"], true);
    assert!(
        payload["output"].as_str().unwrap().chars().count() <= h.config.notify.max_message_chars
    );
    // The transcript was kept too, within the size of an event.
    let longest = h
        .scalar(&format!(
            "SELECT max(octet_length(content)) FROM events
             WHERE session_id = '{}\u{1f}scheduled:{}'",
            schedule.user_id, schedule.schedule_id
        ))
        .await;
    assert!(
        longest > 0 && longest <= h.config.memory.max_text_bytes as i64,
        "{longest}"
    );
}

/// A stored schedule that cannot be read (a fraction in an integer column, a cadence of
/// no known kind: whatever put it there) takes nothing down: the worker keeps running the
/// other schedules, the bad one is paused with the reason, and listing schedules skips it
/// instead of failing (the hardening report's D1 and D2).
#[tokio::test(start_paused = true)]
async fn an_unreadable_schedule_is_paused_and_the_others_keep_running() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let h = harness(|_| {}).await;
    let good = h
        .store
        .create(&Actor::Operator, &h.every(60, "good"))
        .await
        .unwrap();
    let mut broken = Vec::new();
    for edit in [
        "max_attempts = 2.5",
        "cadence_json = '{\"kind\":\"bogus\"}'",
        "timeout_secs = 'soon'",
    ] {
        let schedule = h
            .store
            .create(&Actor::Operator, &h.every(60, "broken"))
            .await
            .unwrap();
        let conn = h.memory.db().conn().await.unwrap();
        conn.execute(
            &format!(
                "UPDATE schedules SET {edit} WHERE schedule_id = '{}'",
                schedule.schedule_id
            ),
            (),
        )
        .await
        .unwrap();
        broken.push(schedule.schedule_id);
    }
    let runtime = FakeRuntime::new(Duration::from_millis(100));
    let (stop, worker) = h.worker("worker-a", runtime.clone());
    tokio::time::sleep(Duration::from_secs(5 * 60 + 30)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();

    let ran = h
        .scalar(&format!(
            "SELECT count(*) FROM schedule_runs WHERE schedule_id = '{}' AND status = 'succeeded'",
            good.schedule_id
        ))
        .await;
    assert!(ran >= 4, "the readable schedule ran {ran} times");
    for id in &broken {
        let paused = h
            .scalar(&format!(
                "SELECT count(*) FROM schedules WHERE schedule_id = '{id}' AND status = 'paused'
                 AND status_reason LIKE '%cannot be read%'"
            ))
            .await;
        assert_eq!(paused, 1, "{id} was not paused with the reason");
        let runs = h
            .scalar(&format!(
                "SELECT count(*) FROM schedule_runs WHERE schedule_id = '{id}'"
            ))
            .await;
        assert_eq!(runs, 0, "{id} ran");
    }
    let (listed, _) = h
        .store
        .list(&Actor::Operator, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|s| s.schedule_id.as_str())
            .collect::<Vec<_>>(),
        vec![good.schedule_id.as_str()]
    );
}
