//! A run's artifacts: attached to the http runtime's answer, stored with the run's
//! session and run id, announced by its notification (a webhook's metadata and links,
//! Telegram's documents after the text, resumed by part), and bad base64 refused.

mod common;

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::{ChannelConfig, ChannelKind, Config};
use nightshift::runtime::{AgentRuntime, GoalRequest, HttpRuntime};
use nightshift::schedule::types::{NewSchedule, NotifyPolicy, Schedule};
use nightshift::schedule::Cadence;
use serde_json::{json, Value};
use tempfile::TempDir;

async fn app(dir: &TempDir, tweak: impl FnOnce(&mut Config)) -> App {
    let mut config = common::config_in(dir);
    config.artifacts.inline_max_bytes = 16;
    tweak(&mut config);
    common::app_with(&config, None).await
}

fn alice() -> Actor {
    Actor::user("alice").unwrap()
}

/// Serves `answer` for every POST at `/goal`; the webhook peer records what it gets.
async fn serve_goal(answer: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/goal", listener.local_addr().unwrap());
    let router = Router::new().route(
        "/goal",
        post(move |Json(_): Json<Value>| {
            let answer = answer.clone();
            async move { Json(answer) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

async fn serve_webhook() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let router = Router::new()
        .route(
            "/hook",
            post(
                |State(seen): State<Arc<Mutex<Vec<Value>>>>, body: Bytes| async move {
                    seen.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                    "ok"
                },
            ),
        )
        .with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, seen)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_artifacts_are_stored_with_it_and_announced_by_webhook() {
    let csv = b"day,count\nmon,3\n".to_vec();
    let runtime_url = serve_goal(json!({
        "output": "report ready",
        "artifacts": [
            {"name": "report.csv", "type": "text/csv", "content_base64": b64(&csv)},
            {"name": "huge.bin", "content_base64": b64(&[0u8; 2000])},
            {"name": "bad/name", "content_base64": b64(b"x")},
        ]
    }))
    .await;
    let (hook_url, seen) = serve_webhook().await;
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |c| {
        c.runtime.kind = nightshift::config::RuntimeKind::Http;
        c.runtime.url = runtime_url;
        c.artifacts.max_artifact_bytes = 1024;
        c.server.public_url = Some("https://ns.example".into());
        c.channels.insert(
            "hook".into(),
            ChannelConfig {
                url: Some(hook_url),
                ..ChannelConfig::new(ChannelKind::Webhook)
            },
        );
    })
    .await;
    let mut new = NewSchedule::new(
        "alice",
        "report",
        Cadence::cron("0 9 * * *", "UTC").unwrap(),
    );
    new.channel_id = Some("hook".into());
    new.notify = NotifyPolicy::Always;
    let schedule = app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();
    run_once(&app, &schedule, || !seen.lock().unwrap().is_empty()).await;
    let message = seen.lock().unwrap().first().cloned().unwrap_or(Value::Null);

    let run_id = message["run_id"]
        .as_str()
        .expect("a webhook message")
        .to_string();
    let listed = app.artifacts().list(&alice(), "alice", None).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let stored = &listed[0];
    assert_eq!(stored.run_id.as_deref(), Some(run_id.as_str()));
    assert_eq!(
        stored.session_id,
        format!("scheduled:{}", schedule.schedule_id)
    );
    assert_eq!(
        app.artifacts()
            .get(&alice(), &stored.artifact_id)
            .await
            .unwrap()
            .1,
        csv
    );
    let announced = &message["artifacts"];
    assert_eq!(
        announced,
        &json!([{
            "id": stored.artifact_id,
            "name": "report.csv",
            "type": "text/csv",
            "size": csv.len(),
            "hash": blake3::hash(&csv).to_hex().to_string(),
            "url": format!("https://ns.example/v1/artifacts/{}/content", stored.artifact_id),
        }])
    );
    // The ones that could not be stored are named in the run's output; the run stands.
    let run = app
        .schedules()
        .run(&Actor::Operator, &run_id)
        .await
        .unwrap();
    let output = run.output.unwrap_or_default();
    assert!(output.starts_with("report ready"), "{output}");
    assert!(output.contains("`huge.bin` not stored"), "{output}");
    assert!(output.contains("artifacts.max_artifact_bytes"), "{output}");
    assert!(output.contains("`bad/name` not stored"), "{output}");
    assert_eq!(run.status.as_str(), "succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_that_is_not_base64_is_left_out_and_the_run_stands() {
    let url = serve_goal(json!({
        "output": "here",
        "artifacts": [{"name": "r.txt", "content_base64": "not base64 !!"}]
    }))
    .await;
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let runtime = HttpRuntime::new(&nightshift::config::RuntimeConfig {
        kind: nightshift::config::RuntimeKind::Http,
        url,
        timeout_secs: 5,
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let request = GoalRequest {
        run_id: "run-1".into(),
        schedule_id: "sch-1".into(),
        user_id: "alice".into(),
        goal: "g".into(),
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
    };
    let outcome = runtime.run_goal(&request, app.memory()).await;
    assert_eq!(outcome.error, None);
    assert!(outcome.artifacts.is_empty());
    assert!(
        outcome
            .output
            .starts_with("here\n[artifact 0 `r.txt` not stored"),
        "{}",
        outcome.output
    );
    assert!(outcome.output.contains("not base64"), "{}", outcome.output);
}

/// What a Telegram stand-in received: path, headers, body bytes.
type Seen = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

/// A Bot API stand-in: records every request; the first `sendDocument` fails with 502
/// when `fail_first_document` is set.
async fn serve_telegram(fail_first_document: bool) -> (String, Seen) {
    #[derive(Clone)]
    struct Peer {
        seen: Seen,
        fail: bool,
    }
    async fn record(
        State(peer): State<Peer>,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let mut seen = peer.seen.lock().unwrap();
        seen.push((uri.path().to_string(), headers, body.to_vec()));
        let documents = seen
            .iter()
            .filter(|r| r.0.ends_with("/sendDocument"))
            .count();
        if peer.fail && uri.path().ends_with("/sendDocument") && documents == 1 {
            return (StatusCode::BAD_GATEWAY, "try later").into_response();
        }
        Json(json!({"ok": true})).into_response()
    }
    let seen: Seen = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = Router::new().fallback(record).with_state(Peer {
        seen: seen.clone(),
        fail: fail_first_document,
    });
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, seen)
}

/// Runs `schedule` once in a worker on `app`, until `done` says so (at most 10 s).
async fn run_once(app: &App, schedule: &Schedule, done: impl Fn() -> bool) {
    app.schedules()
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();
    common::worker_until(app, done).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_sends_each_artifact_as_a_document_after_the_text_resuming_by_part() {
    let csv = b"day,count\nmon,3\n".to_vec();
    let chart = vec![0x89u8; 40];
    let runtime_url = serve_goal(json!({
        "output": "report ready",
        "artifacts": [
            {"name": "report.csv", "type": "text/csv", "content_base64": b64(&csv)},
            {"name": "chart é.png", "type": "image/png", "content_base64": b64(&chart)},
        ]
    }))
    .await;
    let (telegram_url, seen) = serve_telegram(true).await;
    std::env::set_var("NS_TEST_ARTIFACT_BOT_TOKEN", "123:SECRET");
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |c| {
        c.runtime.kind = nightshift::config::RuntimeKind::Http;
        c.runtime.url = runtime_url;
        c.notify.backoff_base_ms = 50;
        c.notify.backoff_max_ms = 100;
        c.scheduler.change_check_ms = 50;
        c.channels.insert(
            "tg".into(),
            ChannelConfig {
                url: Some(telegram_url),
                secret_env: Some("NS_TEST_ARTIFACT_BOT_TOKEN".into()),
                ..ChannelConfig::new(ChannelKind::Telegram)
            },
        );
    })
    .await;
    let mut new = NewSchedule::new(
        "alice",
        "report",
        Cadence::cron("0 9 * * *", "UTC").unwrap(),
    );
    new.channel_id = Some("tg".into());
    new.channel_context_id = Some("-100123".into());
    new.notify = NotifyPolicy::Always;
    let schedule = app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();
    let documents = || {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|r| r.0.ends_with("/sendDocument"))
            .count()
    };
    run_once(&app, &schedule, || documents() >= 3).await;

    let seen = seen.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|r| r.0.as_str()).collect();
    // The text once; the first document failed and was sent again, then the second: the
    // text already accepted was not repeated.
    assert_eq!(
        paths,
        [
            "/bot123:SECRET/sendMessage",
            "/bot123:SECRET/sendDocument",
            "/bot123:SECRET/sendDocument",
            "/bot123:SECRET/sendDocument",
        ]
    );
    let text: Value = serde_json::from_slice(&seen[0].2).unwrap();
    let text = text["text"].as_str().unwrap();
    assert!(
        text.contains("Files:\n- report.csv (text/csv, 16 bytes)"),
        "{text}"
    );
    // No public_url: no links.
    assert!(!text.contains("/v1/artifacts/"), "{text}");
    for (i, (name, bytes, mime)) in [
        ("report.csv", &csv, "text/csv"),
        ("report.csv", &csv, "text/csv"),
        ("chart _.png", &chart, "image/png"),
    ]
    .into_iter()
    .enumerate()
    {
        let (_, headers, body) = &seen[i + 1];
        let content_type = headers["content-type"].to_str().unwrap();
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        let head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n-100123\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"document\"; \
             filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n"
        );
        let mut expected = head.into_bytes();
        expected.extend_from_slice(bytes);
        expected.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        assert_eq!(body, &expected, "document {i}");
    }
    let listed = app.artifacts().list(&alice(), "alice", None).await.unwrap();
    assert_eq!(listed.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_keeps_at_most_its_share_of_artifacts_and_names_the_rest() {
    let limit = nightshift::artifact::MAX_ARTIFACTS_PER_RUN;
    let attached: Vec<Value> = (0..limit + 2)
        .map(|i| json!({"name": format!("f{i:02}.txt"), "content_base64": b64(format!("file {i}").as_bytes())}))
        .collect();
    let runtime_url = serve_goal(json!({"output": "many files", "artifacts": attached})).await;
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |c| {
        c.runtime.kind = nightshift::config::RuntimeKind::Http;
        c.runtime.url = runtime_url;
    })
    .await;
    let schedule = app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new("alice", "files", Cadence::cron("0 9 * * *", "UTC").unwrap()),
        )
        .await
        .unwrap();
    let finished = |app: &App| {
        let app = app.clone();
        move || {
            let app = app.clone();
            std::thread::spawn(move || {
                tokio::runtime::Runtime::new().unwrap().block_on(async {
                    let conn = app.db().conn().await.unwrap();
                    nightshift::db::query_scalar::<i64>(
                        &conn,
                        "SELECT count(*) FROM schedule_runs WHERE status != 'running'",
                        (),
                    )
                    .await
                    .unwrap()
                    .unwrap_or(0)
                        > 0
                })
            })
            .join()
            .unwrap()
        }
    };
    run_once(&app, &schedule, finished(&app)).await;
    let stored = app.artifacts().list(&alice(), "alice", None).await.unwrap();
    assert_eq!(stored.len(), limit);
    let runs = app
        .schedules()
        .runs(&Actor::Operator, &schedule.schedule_id, 10)
        .await
        .unwrap();
    let output = runs[0].output.clone().unwrap_or_default();
    assert_eq!(output.matches("a run keeps at most").count(), 2, "{output}");
    assert!(
        output.contains(&format!("`f{limit:02}.txt` not stored")),
        "{output}"
    );
}
