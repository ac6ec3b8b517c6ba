//! Approvals (issue 45, item 4), end to end: a real worker, a scripted OpenAI-compatible
//! model on 127.0.0.1 asking for a tool call the schedule's `approve` patterns cover, and
//! the answer through each door. Times come from a manual clock the tests move.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::api::TestApi;
use common::model::{final_answer, last_tool_result, serve, tool_call};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::approval::{Approval, ApprovalError, ApprovalState, Decision, Door};
use nightshift::config::{Config, RuntimeConfig, RuntimeKind};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::schedule::types::{NewSchedule, RunStatus};
use nightshift::schedule::Cadence;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::oneshot;

type Seen = Arc<Mutex<Vec<Value>>>;

const START_MS: i64 = 1_900_000_000_000;

/// A model that asks to save a note, then answers with the call's result.
async fn model() -> (String, Seen) {
    serve("/v1/chat/completions", |_, body| {
        let answered = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if answered {
            final_answer(&format!("done: {}", last_tool_result(&body)))
        } else {
            tool_call(
                "call-1",
                "memory_save",
                json!({"content": "ship the release on Friday"}),
            )
        }
    })
    .await
}

struct Harness {
    dir: TempDir,
    config: Config,
    clock: Arc<ManualClock>,
    app: App,
    seen: Seen,
}

struct Worker {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

async fn harness() -> Harness {
    let dir = TempDir::new().unwrap();
    let (url, seen) = model().await;
    let mut config = common::config_in(&dir);
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: format!("{url}/v1"),
        model: "scripted".into(),
        timeout_secs: 5,
        max_retries: 0,
        ..Default::default()
    };
    config.server.public_url = Some("https://nightshift.example".into());
    config.scheduler.change_check_ms = 50;
    let clock = ManualClock::starting_at(START_MS);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    Harness {
        dir,
        config,
        clock,
        app,
        seen,
    }
}

impl Harness {
    /// A one-shot of `user`'s, due now, whose memory_save calls need approval.
    async fn schedule(&self, user: &str) -> String {
        let mut new = NewSchedule::new(
            user,
            "note the release day",
            Cadence::Once {
                at: self.clock.now_ms() + 1000,
                tz: "UTC".into(),
            },
        );
        new.approve = vec!["memory_save".into()];
        new.channel_id = Some("log".into());
        let id = self
            .app
            .schedules()
            .create(&Actor::Operator, &new)
            .await
            .unwrap()
            .schedule_id;
        // Due now.
        self.clock.advance_ms(1000);
        id
    }

    /// A worker of the harness's app (a test wakes its loop after moving the clock).
    async fn worker(&self, id: &str) -> Worker {
        let app = self.app.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let parts = nightshift::worker::WorkerParts {
            runtime: None,
            worker_id: Some(id.to_string()),
        };
        let task = tokio::spawn(async move {
            nightshift::worker::run_with(&app, parts, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Worker { stop, task }
    }

    async fn run_status(&self, schedule_id: &str) -> Option<RunStatus> {
        let runs = self
            .app
            .schedules()
            .runs(&Actor::Operator, schedule_id, 10)
            .await
            .unwrap();
        runs.first().map(|r| r.status)
    }

    /// Waits (polling; the worker runs on real time) until the schedule's run is `status`.
    async fn until_run(&self, schedule_id: &str, status: RunStatus) {
        for _ in 0..400 {
            if self.run_status(schedule_id).await == Some(status) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "the run never became {status}; it is {:?}",
            self.run_status(schedule_id).await
        );
    }

    /// Waits until the worker's loop has made a pass that began after this call and looked
    /// at the waiting runs: two triggered canary schedules of user `canary` (no approval
    /// asked), the second triggered once the first has run. A pass reads the waiting events
    /// once, after it has resumed the runs whose approval was answered or timed out; the
    /// second canary's event comes after that read of the pass that claimed the first, so
    /// a later pass, begun after this call, claims it. The event a negative check waits
    /// for, not a sleep.
    async fn a_later_pass_looked(&self) {
        let store = self.app.schedules();
        for n in 1..=2 {
            let canary = NewSchedule::new(
                "canary",
                format!("canary {n}"),
                Cadence::Triggered { tz: "UTC".into() },
            );
            let id = store
                .create(&Actor::Operator, &canary)
                .await
                .unwrap()
                .schedule_id;
            store
                .trigger(&Actor::Operator, &id, None, None)
                .await
                .unwrap();
            self.app.scheduler_wake().notify_one();
            self.until_run(&id, RunStatus::Succeeded).await;
        }
    }

    async fn pending(&self, user: &str) -> Vec<Approval> {
        self.app
            .approvals()
            .list(&Actor::User(user.into()), Some(ApprovalState::Pending), 100)
            .await
            .unwrap()
    }

    async fn notes(&self, user: &str) -> i64 {
        common::count(
            self.app.memory(),
            &format!("SELECT count(*) FROM notes WHERE user_id = '{user}'"),
        )
        .await
    }

    fn model_calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn last_result(&self) -> String {
        last_tool_result(self.seen.lock().unwrap().last().unwrap())
    }
}

#[tokio::test]
async fn a_call_waits_for_approval_and_is_made_once_after_it() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let worker = h.worker("wrk-a").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;

    // Waiting: the call not made, the model asked once, the request sent with its links.
    assert_eq!(
        h.notes("ana").await,
        0,
        "nothing is saved before the answer"
    );
    assert_eq!(h.model_calls(), 1);
    let pending = h.pending("ana").await;
    assert_eq!(pending.len(), 1);
    let approval = &pending[0];
    assert_eq!(approval.tool_name, "memory_save");
    assert!(approval.arguments.contains("ship the release"));
    let messages = h.app.outbox().list(None, 10).await.unwrap();
    let request = messages
        .iter()
        .find(|m| m.kind == "approval")
        .expect("an approval request in the outbox");
    assert_eq!(request.priority, "high");
    let approve_url = request.payload["approve_url"].as_str().unwrap();
    assert!(approve_url.starts_with("https://nightshift.example/approval-link/"));
    assert!(request.payload["deny_url"].as_str().is_some());
    assert!(request.payload["output"]
        .as_str()
        .unwrap()
        .contains("ship the release"));
    // The slot is free: the run is held by no worker.
    let run = h
        .app
        .schedules()
        .run(&Actor::Operator, &approval.run_id)
        .await
        .unwrap();
    assert_eq!(run.worker_id, None);
    assert_eq!(run.turn_count, 1);
    // The run's `temp:` state outlives the sweep of ended runs' while it waits.
    let access = nightshift::state::StateAccess::run(
        "ana",
        &format!("scheduled:{schedule_id}"),
        &approval.run_id,
    );
    h.app
        .state()
        .set(&access, "temp:step", &json!(1), None)
        .await
        .unwrap();
    h.app.state().sweep_temp().await.unwrap();
    assert_eq!(
        h.app.state().get(&access, "temp:step").await.unwrap().value,
        json!(1)
    );

    let decided = h
        .app
        .approvals()
        .decide(
            &Actor::User("ana".into()),
            &approval.approval_id,
            Decision::Approve,
            Door::Cli,
            None,
        )
        .await
        .unwrap();
    assert_eq!(decided.state, ApprovalState::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("cli"));
    h.until_run(&schedule_id, RunStatus::Succeeded).await;
    assert_eq!(h.notes("ana").await, 1, "the approved call was made, once");
    assert_eq!(h.model_calls(), 2);
    assert!(h.last_result().contains("note_id"), "{}", h.last_result());
    let run = h
        .app
        .schedules()
        .run(&Actor::Operator, &approval.run_id)
        .await
        .unwrap();
    assert_eq!(run.turn_count, 2, "turns count across the wait");
    assert_eq!(run.prompt_tokens, 2);
    assert!(run.output.unwrap().starts_with("done: "));
    // The run's transcript holds the turns before and after the wait, and the answer.
    let transcript = common::count(
        h.app.memory(),
        &format!("SELECT count(*) FROM events WHERE session_id LIKE '%scheduled:{schedule_id}'"),
    )
    .await;
    assert!(
        transcript >= 5,
        "goal, call, answer note, result, final: {transcript}"
    );

    // A second answer, from any door, decides nothing.
    let again = h
        .app
        .approvals()
        .decide(
            &Actor::Operator,
            &approval.approval_id,
            Decision::Deny,
            Door::Api,
            None,
        )
        .await;
    assert!(
        matches!(
            again,
            Err(ApprovalError::Decided {
                state: ApprovalState::Approved,
                ..
            })
        ),
        "{again:?}"
    );
    worker.stop().await;
    assert_eq!(h.notes("ana").await, 1);
    drop(h.dir);
}

#[tokio::test]
async fn a_denied_call_is_not_made_and_the_model_is_told_why() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let worker = h.worker("wrk-a").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;
    let approval = h.pending("ana").await.remove(0);
    h.app
        .approvals()
        .decide(
            &Actor::User("ana".into()),
            &approval.approval_id,
            Decision::Deny,
            Door::Mcp,
            Some("not before the freeze ends"),
        )
        .await
        .unwrap();
    h.until_run(&schedule_id, RunStatus::Succeeded).await;
    worker.stop().await;
    assert_eq!(h.notes("ana").await, 0, "a denied call is never made");
    let told = h.last_result();
    assert!(told.contains("denied"), "{told}");
    assert!(told.contains("not before the freeze ends"), "{told}");
}

#[tokio::test]
async fn an_unanswered_request_counts_as_denied_once_its_time_runs_out() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let worker = h.worker("wrk-a").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;
    let approval = h.pending("ana").await.remove(0);
    // Just before the timeout nothing happens.
    h.clock
        .advance_ms(h.config.scheduler.approval_timeout_secs * 1000 - 1000);
    h.app.scheduler_wake().notify_one();
    h.a_later_pass_looked().await;
    assert_eq!(h.run_status(&schedule_id).await, Some(RunStatus::Waiting));
    h.clock.advance_ms(2000);
    h.app.scheduler_wake().notify_one();
    h.until_run(&schedule_id, RunStatus::Succeeded).await;
    worker.stop().await;
    assert_eq!(h.notes("ana").await, 0);
    assert!(
        h.last_result().contains("nobody answered"),
        "{}",
        h.last_result()
    );
    let expired = h
        .app
        .approvals()
        .get(&Actor::Operator, &approval.approval_id)
        .await
        .unwrap();
    assert_eq!(expired.state, ApprovalState::Expired);
    assert_eq!(expired.decided_by.as_deref(), Some("timeout"));
    // An answer after the time ran out is refused, saying so.
    let late = h
        .app
        .approvals()
        .decide(
            &Actor::User("ana".into()),
            &approval.approval_id,
            Decision::Approve,
            Door::Api,
            None,
        )
        .await;
    assert!(
        matches!(
            late,
            Err(ApprovalError::Decided {
                state: ApprovalState::Expired,
                ..
            })
        ),
        "{late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_at_once_from_every_door_decide_once() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let worker = h.worker("wrk-a").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;
    // No worker resumes it while the answers race.
    worker.stop().await;
    let approval = h.pending("ana").await.remove(0);
    let doors = [Door::Cli, Door::Api, Door::Mcp, Door::Dashboard];
    let mut racing = tokio::task::JoinSet::new();
    for i in 0..16 {
        let (store, id) = (h.app.approvals().clone(), approval.approval_id.clone());
        let decision = if i % 2 == 0 {
            Decision::Approve
        } else {
            Decision::Deny
        };
        racing.spawn(async move {
            store
                .decide(&Actor::Operator, &id, decision, doors[i % 4], None)
                .await
        });
    }
    let answers = racing.join_all().await;
    let won: Vec<&Approval> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    let stored = h
        .app
        .approvals()
        .get(&Actor::Operator, &approval.approval_id)
        .await
        .unwrap();
    assert_eq!(&stored, won[0]);
    for lost in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert!(
            matches!(lost, ApprovalError::Decided { state, .. } if *state == stored.state),
            "{lost}"
        );
    }
}

#[tokio::test]
async fn another_worker_resumes_the_run_after_the_first_stopped() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let first = h.worker("wrk-first").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;
    first.stop().await;
    let approval = h.pending("ana").await.remove(0);
    h.app
        .approvals()
        .decide(
            &Actor::Operator,
            &approval.approval_id,
            Decision::Approve,
            Door::Dashboard,
            None,
        )
        .await
        .unwrap();
    let second = h.worker("wrk-second").await;
    h.until_run(&schedule_id, RunStatus::Succeeded).await;
    second.stop().await;
    assert_eq!(h.notes("ana").await, 1);
    assert_eq!(
        h.model_calls(),
        2,
        "resumed from the call, not started over"
    );
    let run = h
        .app
        .schedules()
        .run(&Actor::Operator, &approval.run_id)
        .await
        .unwrap();
    assert_eq!(run.worker_id.as_deref(), Some("wrk-second"));
}

#[tokio::test]
async fn links_answer_only_when_their_button_is_pressed_and_only_once() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let worker = h.worker("wrk-a").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;
    worker.stop().await;
    let messages = h.app.outbox().list(None, 10).await.unwrap();
    let request = messages.iter().find(|m| m.kind == "approval").unwrap();
    let path = |key: &str| {
        request.payload[key]
            .as_str()
            .unwrap()
            .trim_start_matches("https://nightshift.example")
            .to_string()
    };
    let (approve, deny) = (path("approve_url"), path("deny_url"));
    let approval = h.pending("ana").await.remove(0);
    let api = TestApi::serve(TempDir::new().unwrap(), h.config.clone(), h.app.clone()).await;
    let page = |path: String| {
        let client = api.client.clone();
        let url = format!("{}{path}", api.base);
        async move {
            let response = client.get(url).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let press = |path: String| {
        let client = api.client.clone();
        let url = format!("{}{path}", api.base);
        async move {
            let response = client.post(url).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    // Opening it (as a chat app's preview does) shows the call and answers nothing.
    let (status, body) = page(approve.clone()).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("memory_save") && body.contains("Approve"),
        "{body}"
    );
    assert_eq!(h.pending("ana").await.len(), 1);
    // A changed link, or one cut short, is refused and tells nothing.
    let mut tampered = approve.clone();
    tampered.pop();
    tampered.push(if approve.ends_with('A') { 'B' } else { 'A' });
    for bad in [tampered, "/approval-link/x.approve.1.AAAA".to_string()] {
        let (status, body) = press(bad).await;
        assert_eq!(status, 404, "{body}");
        assert!(body.contains("not valid"), "{body}");
    }
    assert_eq!(h.pending("ana").await.len(), 1);
    // Pressed from another site: refused, nothing answered.
    let cross = api
        .client
        .post(format!("{}{approve}", api.base))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    assert_eq!(h.pending("ana").await.len(), 1);
    // Pressed on the page at the public address, through a proxy that sends its own
    // Host: answered, once. The deny link of the same request cannot undo it.
    let (status, body) = {
        let response = api
            .client
            .post(format!("{}{approve}", api.base))
            .header("origin", "https://nightshift.example")
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("approved"), "{body}");
    for again in [approve.clone(), deny.clone()] {
        let (status, body) = press(again).await;
        assert_eq!(status, 409, "{body}");
        assert!(body.contains("already answered"), "{body}");
    }
    let stored = h
        .app
        .approvals()
        .get(&Actor::Operator, &approval.approval_id)
        .await
        .unwrap();
    assert_eq!(stored.decided_by.as_deref(), Some("link"));

    // A link runs out with its request.
    let expired_key = h.app.approvals().link_key().await.unwrap();
    let old = expired_key.sign(
        &approval.approval_id,
        nightshift::approval::LinkAction::Deny,
        START_MS - 1,
    );
    let (status, body) = page(format!("/approval-link/{old}")).await;
    assert_eq!(status, 404);
    assert!(body.contains("expired"), "{body}");
    api.stop().await;
}

#[tokio::test]
async fn another_user_cannot_see_or_answer_an_approval_by_any_door() {
    let h = harness().await;
    let schedule_id = h.schedule("ana").await;
    let worker = h.worker("wrk-a").await;
    h.until_run(&schedule_id, RunStatus::Waiting).await;
    worker.stop().await;
    let approval = h.pending("ana").await.remove(0);
    let api = TestApi::serve(TempDir::new().unwrap(), h.config.clone(), h.app.clone()).await;
    let ana = api.token(Some("ana")).await;
    let bob = api.token(Some("bob")).await;
    let id = &approval.approval_id;
    // Bob's answers are those of an id that does not exist, byte for byte.
    for (method, path) in [
        ("GET", format!("/v1/approvals/{id}")),
        ("POST", format!("/v1/approvals/{id}/approve")),
        ("POST", format!("/v1/approvals/{id}/deny")),
    ] {
        let theirs = api.call(method, &path, Some(&bob), None).await;
        let missing = api
            .call(
                method,
                &path.replace(id.as_str(), "apr-missing"),
                Some(&bob),
                None,
            )
            .await;
        assert_eq!(theirs.status, 404, "{path}");
        assert_eq!(
            theirs.body.to_string().replace(id.as_str(), "X"),
            missing.body.to_string().replace("apr-missing", "X"),
            "{path}"
        );
    }
    let listed = api.call("GET", "/v1/approvals", Some(&bob), None).await;
    assert_eq!(listed.body, json!([]));
    // Over MCP too.
    let bobs = h
        .app
        .approvals()
        .decide(
            &Actor::User("bob".into()),
            id,
            Decision::Approve,
            Door::Mcp,
            None,
        )
        .await;
    assert!(matches!(bobs, Err(ApprovalError::NotFound(_))), "{bobs:?}");
    // Ana's own token answers it, with a reason; a malformed state filter is refused.
    let bad = api
        .call("GET", "/v1/approvals?state=maybe", Some(&ana), None)
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.to_string().contains("state"));
    let mine = api
        .call("GET", "/v1/approvals?state=pending", Some(&ana), None)
        .await;
    assert_eq!(mine.body.as_array().unwrap().len(), 1);
    let long = "x".repeat(2001);
    let refused = api
        .call(
            "POST",
            &format!("/v1/approvals/{id}/deny"),
            Some(&ana),
            Some(json!({"reason": long})),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        h.pending("ana").await.len(),
        1,
        "a refused answer changes nothing"
    );
    let answered = api
        .call(
            "POST",
            &format!("/v1/approvals/{id}/deny"),
            Some(&ana),
            Some(json!({"reason": "no"})),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.body["state"], "denied");
    assert_eq!(answered.body["decided_by"], "api");
    let twice = api
        .call(
            "POST",
            &format!("/v1/approvals/{id}/approve"),
            Some(&ana),
            // A `null` body is no reason, as no body is.
            Some(Value::Null),
        )
        .await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    api.stop().await;
}
