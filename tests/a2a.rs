//! A2A agents as a runtime (issue 45, items 2 and 5): a real agent made with the official
//! Python SDK (scripts/a2a_agent.py; `a2a-sdk` pinned in scripts/a2a-peers/, installed by
//! scripts/a2a-peers.sh, which scripts/test.sh runs), spoken to in protocol 1.0 and, through
//! a 0.3 card, in 0.3; and raw axum peers that answer garbage. Without the SDK installed the
//! tests that need it print one line saying they were skipped and why.

mod common;

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::approval::{ApprovalState, Resume};
use nightshift::config::{RuntimeConfig, RuntimeKind};
use nightshift::memory::Memory;
use nightshift::runtime::{
    A2aRuntime, AgentRuntime, GoalOutcome, GoalRequest, RuntimeError, AGENT_INPUT,
};
use nightshift::schedule::types::{NewSchedule, Run, RunStatus};
use nightshift::schedule::Cadence;
use serde_json::{json, Value};
use tempfile::TempDir;

/// The SDK's python, or `None` after the skip line.
fn python() -> Option<String> {
    common::skip::installed(
        "NIGHTSHIFT_TEST_A2A_PYTHON",
        "the A2A Python SDK",
        "scripts/a2a-peers.sh",
    )
}

/// scripts/a2a_agent.py, running; killed when dropped.
struct Agent {
    child: Child,
    base: String,
    log: PathBuf,
    _dir: TempDir,
}

impl Agent {
    /// Starts the agent in `mode` with `args`; `None` (after the skip line) without the SDK.
    fn start(mode: &str, args: &[&str]) -> Option<Agent> {
        let python = python()?;
        let dir = TempDir::new().unwrap();
        let log = dir.path().join("agent.log");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/a2a_agent.py");
        let mut child = Command::new(python)
            .arg(script)
            .args(["--mode", mode, "--log", log.to_str().unwrap()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start scripts/a2a_agent.py");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let Some(port) = line.trim().strip_prefix("PORT ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the agent did not start (it printed {line:?})");
        };
        Some(Agent {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        })
    }

    fn card(&self) -> String {
        format!("{}/.well-known/agent-card.json", self.base)
    }

    fn endpoint(&self) -> String {
        format!("{}/a2a", self.base)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (at most ten seconds) for a log line starting with `prefix`.
    async fn logged(&self, prefix: &str) -> bool {
        for _ in 0..200 {
            if self.log().lines().any(|l| l.starts_with(prefix)) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(url: &str) -> RuntimeConfig {
    RuntimeConfig {
        kind: RuntimeKind::A2a,
        url: url.to_string(),
        timeout_secs: 5,
        connect_timeout_secs: 2,
        max_retries: 0,
        max_response_bytes: 1 << 20,
        ..Default::default()
    }
}

fn runtime(url: &str) -> A2aRuntime {
    A2aRuntime::new(&config(url)).unwrap()
}

fn goal() -> GoalRequest {
    GoalRequest {
        run_id: "run-1".into(),
        schedule_id: "sch-1".into(),
        user_id: "alice".into(),
        goal: "check the weather".into(),
        session_id: "scheduled:sch-1".into(),
        context: String::new(),
        input: None,
        agent_id: None,
        max_turns: 1,
        tools: Vec::new(),
        approve: Vec::new(),
        resume: None,
        max_cost: None,
        progress: Default::default(),
        memory_as_of: None,
    }
}

async fn run(runtime: &A2aRuntime, request: &GoalRequest) -> GoalOutcome {
    let (_dir, memory): (TempDir, Memory) = common::fresh().await;
    runtime.run_goal(request, &memory).await
}

fn artifact<'a>(outcome: &'a GoalOutcome, name: &str) -> &'a nightshift::artifact::NewArtifact {
    outcome
        .artifacts
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no artifact `{name}` in {:?}", outcome.artifacts))
}

#[tokio::test]
async fn a_completed_tasks_text_is_the_output_and_its_artifacts_are_kept() {
    let Some(agent) = Agent::start("echo", &[]) else {
        return;
    };
    let mut request = goal();
    request.input = Some("the trigger's input".into());
    request.context = "Relevant memories:\n- alice lives in Lisbon".into();
    let outcome = run(&runtime(&agent.card()), &request).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    // The goal, the input and the context arrived as the message's text parts, in order.
    let sent = agent.log();
    let sent = sent
        .lines()
        .find(|l| l.starts_with("request "))
        .unwrap_or_default();
    assert_eq!(
        sent,
        "request check the weather|Input (what started this run): the trigger's input|\
         Context (what nightshift remembers for this user and schedule): Relevant memories: \
         - alice lives in Lisbon"
    );
    assert!(
        outcome
            .output
            .starts_with("echo: check the weather\nInput (what started this run):"),
        "{}",
        outcome.output
    );
    let echo = artifact(&outcome, "echo.txt");
    assert_eq!(echo.mime_type, "text/plain");
    assert_eq!(echo.content, outcome.output.as_bytes());
    let report = artifact(&outcome, "report.csv");
    assert_eq!(report.mime_type, "text/csv");
    assert_eq!(report.content, b"a,b\n1,2\n");
    assert_eq!(outcome.artifacts.len(), 2);
    // The transcript keeps the goal, its input and the agent's answer.
    let turns: Vec<&str> = outcome
        .transcript
        .iter()
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(
        turns,
        [
            "check the weather",
            "the trigger's input",
            outcome.output.as_str()
        ]
    );
}

#[tokio::test]
async fn a_slow_task_is_polled_to_completion_at_the_endpoint_itself() {
    let Some(agent) = Agent::start("slow", &["--delay", "0.4"]) else {
        return;
    };
    // The endpoint, not the card: spoken to in 1.0.
    let outcome = run(&runtime(&agent.endpoint()), &goal()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(outcome.output, "echo: check the weather");
    assert_eq!(outcome.artifacts.len(), 2);
    let log = agent.log();
    assert!(log.contains("method SendMessage\n"), "{log}");
    assert!(log.contains("method GetTask\n"), "{log}");
}

#[tokio::test]
async fn a_message_answer_is_the_output() {
    let Some(agent) = Agent::start("message", &[]) else {
        return;
    };
    let outcome = run(&runtime(&agent.card()), &goal()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(outcome.output, "echo: check the weather");
    assert!(outcome.artifacts.is_empty());
}

#[tokio::test]
async fn an_agent_of_protocol_0_3_is_spoken_to_in_0_3_through_its_card() {
    let Some(agent) = Agent::start("slow", &["--legacy", "--delay", "0.2"]) else {
        return;
    };
    let outcome = run(&runtime(&agent.card()), &goal()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(outcome.output, "echo: check the weather");
    assert_eq!(artifact(&outcome, "report.csv").content, b"a,b\n1,2\n");
    // It was asked in 0.3's words (the SDK serves 1.0 on the same endpoint too).
    let log = agent.log();
    assert!(log.contains("method message/send\n"), "{log}");
    assert!(log.contains("method tasks/get\n"), "{log}");
    assert!(!log.contains("method SendMessage"), "{log}");
}

#[tokio::test]
async fn a_failed_task_is_a_clear_error_naming_the_agent() {
    let Some(agent) = Agent::start("fails", &[]) else {
        return;
    };
    let outcome = run(&runtime(&agent.card()), &goal()).await;
    let err = outcome.error.clone().expect("a failed task fails the run");
    assert!(
        matches!(
            &err,
            RuntimeError::TaskEnded {
                state: "failed",
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(&agent.endpoint()), "{text}");
    assert!(text.contains("the agent could not do it"), "{text}");
    assert_eq!(outcome.output, "the agent could not do it");
}

#[tokio::test]
async fn input_required_waits_for_the_user_whose_answer_goes_to_the_agent() {
    let Some(agent) = Agent::start("input-required", &[]) else {
        return;
    };
    let runtime = runtime(&agent.card());
    let outcome = run(&runtime, &goal()).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let wait = outcome.wait.expect("the run waits for the user");
    assert_eq!(wait.tool_name, AGENT_INPUT);
    assert!(
        wait.arguments.contains("Which inbox?"),
        "{}",
        wait.arguments
    );
    assert!(
        !agent.logged("cancel ").await,
        "a task waiting for the user's answer stays open: {}",
        agent.log()
    );
    // The user approves with an answer: the agent gets it and finishes the task.
    let mut resumed = goal();
    resumed.resume = Some(Resume {
        approval_id: "apr-1".into(),
        state: ApprovalState::Approved,
        decided_by: "cli".into(),
        reason: Some("the work inbox".into()),
        saved: wait.saved.clone(),
    });
    let outcome = run(&runtime, &resumed).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(
        outcome.output.contains("inbox: the work inbox"),
        "{}",
        outcome.output
    );
    assert_eq!(outcome.turn_count, 2);
}

#[tokio::test]
async fn input_denied_cancels_the_task_and_fails_the_run_saying_so() {
    let Some(agent) = Agent::start("input-required", &[]) else {
        return;
    };
    let runtime = runtime(&agent.card());
    let wait = run(&runtime, &goal()).await.wait.expect("a wait");
    let mut denied = goal();
    denied.resume = Some(Resume {
        approval_id: "apr-1".into(),
        state: ApprovalState::Denied,
        decided_by: "api".into(),
        reason: Some("not that one".into()),
        saved: wait.saved,
    });
    let outcome = run(&runtime, &denied).await;
    let err = outcome.error.expect("a denied input fails the run");
    assert!(matches!(&err, RuntimeError::InputRefused { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("denied it (api): not that one"), "{text}");
    assert!(text.contains(&agent.endpoint()), "{text}");
    assert!(
        agent.logged("cancel ").await,
        "the agent was not asked to cancel: {}",
        agent.log()
    );
}

#[tokio::test]
async fn the_auth_header_is_sent_from_its_file_and_never_shown() {
    let Some(agent) = Agent::start("echo", &["--token", "Bearer s3cret-token"]) else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("a2a-auth");
    std::fs::write(&file, "Bearer s3cret-token\n").unwrap();
    let mut with_file = config(&agent.card());
    with_file.auth_header_file = Some(file.display().to_string());
    let outcome = run(&A2aRuntime::new(&with_file).unwrap(), &goal()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert!(agent.log().contains("auth Bearer s3cret-token"));
    // Without it the agent refuses the request, and the run says so.
    let outcome = run(&runtime(&agent.card()), &goal()).await;
    let err = outcome.error.expect("refused without the header");
    assert!(
        matches!(err, RuntimeError::Status { status: 401, .. }),
        "{err:?}"
    );
    // A file that cannot be a header value is named; its content never is.
    std::fs::write(&file, "Bearer s3cret\u{1}-token\n").unwrap();
    let outcome = run(&A2aRuntime::new(&with_file).unwrap(), &goal()).await;
    let err = outcome.error.expect("a bad header value").to_string();
    assert!(err.contains("runtime.auth_header_file"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    std::fs::remove_file(&file).unwrap();
    let outcome = run(&A2aRuntime::new(&with_file).unwrap(), &goal()).await;
    let err = outcome.error.expect("a missing file").to_string();
    assert!(
        err.contains("cannot read runtime.auth_header_file"),
        "{err}"
    );
}

// ---- Through the worker ----

async fn app(dir: &TempDir, url: &str) -> App {
    let mut config = common::config_in(dir);
    config.runtime = self::config(url);
    config.scheduler.change_check_ms = 50;
    common::app_with(&config, None).await
}

/// Runs `schedule` now in a worker on `app` until the run has ended (at most 20 s).
async fn run_in_worker(app: &App, schedule_id: &str) -> Run {
    app.schedules()
        .run_now(&Actor::Operator, schedule_id)
        .await
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn({
        let app = app.clone();
        async move {
            nightshift::worker::run(&app, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    let mut last = None;
    for _ in 0..400 {
        let runs = app
            .schedules()
            .runs(&Actor::Operator, schedule_id, 1)
            .await
            .unwrap();
        if let Some(run) = runs.into_iter().next() {
            if run.status != RunStatus::Running {
                last = Some(run);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    last.expect("the run ended within 20 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_keeps_the_agents_output_and_artifacts() {
    let Some(agent) = Agent::start("echo", &["--legacy"]) else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let app = app(&dir, &agent.card()).await;
    let new = NewSchedule::new(
        "alice",
        "summarise my inbox",
        Cadence::cron("0 9 * * *", "UTC").unwrap(),
    );
    let schedule = app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();
    let run = run_in_worker(&app, &schedule.schedule_id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let output = run.output.unwrap_or_default();
    assert!(output.starts_with("echo: summarise my inbox"), "{output}");
    let alice = Actor::user("alice").unwrap();
    let mut stored: Vec<(String, Option<String>)> = app
        .artifacts()
        .list(&alice, "alice", None)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.name, a.run_id))
        .collect();
    stored.sort();
    let run_id = Some(run.run_id.clone());
    assert_eq!(
        stored,
        [
            ("echo.txt".to_string(), run_id.clone()),
            ("report.csv".to_string(), run_id)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_never_finishes_times_out_and_is_canceled() {
    let Some(agent) = Agent::start("never", &[]) else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let app = app(&dir, &agent.card()).await;
    let mut new = NewSchedule::new(
        "alice",
        "wait forever",
        Cadence::cron("0 9 * * *", "UTC").unwrap(),
    );
    new.timeout_secs = Some(1);
    new.max_attempts = 1;
    let schedule = app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();
    let run = run_in_worker(&app, &schedule.schedule_id).await;
    assert_eq!(run.status, RunStatus::TimedOut, "{run:?}");
    let error = run.error.unwrap_or_default();
    assert!(error.contains("deadline"), "{error}");
    assert!(
        agent.logged("method CancelTask").await && agent.logged("cancel ").await,
        "the agent was not asked to cancel: {}",
        agent.log()
    );
}

// ---- Garbage ----

/// What a raw peer answers a JSON-RPC request with (the method, the request's id).
type Script = Arc<dyn Fn(&str, &Value) -> String + Send + Sync>;

/// A raw peer at `/rpc` (and an agent card at `/card.json`): answers each POST with what
/// `script` says, records the methods it was called with.
async fn garbage_peer(card: Value, script: Script) -> (String, Arc<Mutex<Vec<String>>>) {
    #[derive(Clone)]
    struct Peer {
        script: Script,
        seen: Arc<Mutex<Vec<String>>>,
    }
    async fn rpc(State(peer): State<Peer>, Json(body): Json<Value>) -> String {
        let method = body["method"].as_str().unwrap_or_default().to_string();
        peer.seen.lock().unwrap().push(method.clone());
        (peer.script)(&method, &body["id"])
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = Router::new()
        .route("/rpc", post(rpc))
        .route("/card.json", get(move || async move { Json(card) }))
        .with_state(Peer {
            script,
            seen: seen.clone(),
        });
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (base, seen)
}

fn answer(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

fn working(id: &str) -> Value {
    json!({"task": {"id": id, "status": {"state": "TASK_STATE_WORKING"}}})
}

#[tokio::test]
async fn garbage_answers_fail_the_run_naming_the_agent() {
    let cases: Vec<(&str, Script)> = vec![
        ("not JSON", Arc::new(|_, _| "<html>hello</html>".into())),
        (
            "`jsonrpc` is not \"2.0\"",
            Arc::new(|_, _| json!({"hello": 1}).to_string()),
        ),
        (
            "is to request id 999",
            Arc::new(|_, _| answer(&json!(999), working("t1"))),
        ),
        (
            "neither `result` nor `error`",
            Arc::new(|_, id| json!({"jsonrpc": "2.0", "id": id}).to_string()),
        ),
        (
            "neither a task nor a message",
            Arc::new(|_, id| answer(id, json!({"weather": "sunny"}))),
        ),
        (
            "state `TASK_STATE_DANCING`",
            Arc::new(|_, id| {
                answer(
                    id,
                    json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_DANCING"}}}),
                )
            }),
        ),
        (
            "has no `status.state`",
            Arc::new(|_, id| answer(id, json!({"task": {"id": "t1"}}))),
        ),
        (
            "asked for task `t1`, answered task `t2`",
            Arc::new(|method, id| match method {
                "SendMessage" => answer(id, working("t1")),
                _ => answer(id, working("t2")["task"].clone()),
            }),
        ),
    ];
    for (expected, script) in cases {
        let (base, seen) = garbage_peer(json!({}), script).await;
        let url = format!("{base}/rpc");
        let outcome = run(&runtime(&url), &goal()).await;
        let err = outcome.error.expect(expected);
        assert!(
            matches!(err, RuntimeError::BadAnswer { .. }),
            "{expected}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains(&url), "{expected}: {text}");
        assert!(text.contains(expected), "{expected}: {text}");
        // A task left mid-way is canceled.
        if expected.starts_with("asked for task") {
            for _ in 0..100 {
                if seen.lock().unwrap().iter().any(|m| m == "CancelTask") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                seen.lock().unwrap().iter().any(|m| m == "CancelTask"),
                "{:?}",
                seen.lock().unwrap()
            );
        }
    }
}

#[tokio::test]
async fn an_agents_jsonrpc_error_and_a_bad_card_name_the_peer() {
    let (base, _) = garbage_peer(
        json!({"name": "no interfaces"}),
        Arc::new(|_, id| {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "boom"}})
                .to_string()
        }),
    )
    .await;
    let url = format!("{base}/rpc");
    let err = run(&runtime(&url), &goal()).await.error.unwrap();
    assert!(
        matches!(err, RuntimeError::AgentError { code: -32603, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&url) && text.contains("SendMessage") && text.contains("boom"),
        "{text}"
    );
    // An agent of 0.3 does not know 1.0's method names: the error says what to do.
    let (old, _) = garbage_peer(
        json!({}),
        Arc::new(|_, id| {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
                .to_string()
        }),
    )
    .await;
    let text = run(&runtime(&format!("{old}/rpc")), &goal())
        .await
        .error
        .unwrap()
        .to_string();
    assert!(text.contains("agent-card.json"), "{text}");
    let card = format!("{base}/card.json");
    let err = run(&runtime(&card), &goal()).await.error.unwrap();
    assert!(matches!(err, RuntimeError::BadAnswer { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&card) && text.contains("no JSON-RPC interface"),
        "{text}"
    );
}

/// A hanging agent and a garbage one, with a good one alongside: each fails on its own,
/// the good run is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_agents_fail_their_own_runs_only() {
    let Some(good) = Agent::start("echo", &[]) else {
        return;
    };
    let (hanging, hanging_seen) = garbage_peer(
        json!({}),
        Arc::new(|method, id| match method {
            "SendMessage" => answer(id, working("t1")),
            _ => answer(id, working("t1")["task"].clone()),
        }),
    )
    .await;
    let (garbage, _) = garbage_peer(json!({}), Arc::new(|_, _| "][".into())).await;
    let (_dir, memory) = common::fresh().await;
    let (good_rt, hanging_rt, garbage_rt) = (
        runtime(&good.card()),
        runtime(&format!("{hanging}/rpc")),
        runtime(&format!("{garbage}/rpc")),
    );
    let request = goal();
    let (good_out, hanging_out, garbage_out) = tokio::join!(
        good_rt.run_goal(&request, &memory),
        tokio::time::timeout(
            Duration::from_millis(700),
            hanging_rt.run_goal(&request, &memory)
        ),
        garbage_rt.run_goal(&request, &memory),
    );
    assert_eq!(good_out.error, None, "{good_out:?}");
    assert_eq!(good_out.output, "echo: check the weather");
    assert!(
        hanging_out.is_err(),
        "the hanging agent's run ended by itself"
    );
    let err = garbage_out.error.unwrap().to_string();
    assert!(err.contains(&garbage) && err.contains("not JSON"), "{err}");
    // The abandoned task is canceled once its run's future is dropped.
    for _ in 0..100 {
        if hanging_seen
            .lock()
            .unwrap()
            .iter()
            .any(|m| m == "CancelTask")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = hanging_seen.lock().unwrap().clone();
    assert!(seen.iter().any(|m| m == "CancelTask"), "{seen:?}");
    assert!(seen.iter().any(|m| m == "GetTask"), "{seen:?}");
}
