//! A run's live progress (issue 47, item 5): `GET /v1/runs/{id}/events` as Server-Sent
//! Events against a real worker and a real server on 127.0.0.1, the model a scripted
//! OpenAI-compatible peer that holds its second answer until the test lets it go. The
//! stream sends what happened so far, then each event as it happens, then the end; a
//! client resumes after the last id it saw; one that saw the end is told 204; another
//! process (reading the database, no wake-up from the worker) sees the same events;
//! another user's run is a missing one, and a bad `Last-Event-ID` is refused, naming it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use common::api::TestApi;
use nightshift::access::Actor;
use nightshift::config::{RuntimeConfig, RuntimeKind};
use nightshift::schedule::progress::ProgressKind;
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use serde_json::{json, Value};

/// A model that asks for one `memory_search`, then (once `release` is notified) answers.
async fn held_model(release: Arc<tokio::sync::Notify>) -> (String, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let app = Router::new().route(
        "/v1/chat/completions",
        post({
            let asked = asked.clone();
            move |Json(_body): Json<Value>| {
                let asked = asked.clone();
                let release = release.clone();
                async move {
                    let n = asked.fetch_add(1, Ordering::SeqCst) + 1;
                    if n == 1 {
                        return common::model::tool_call(
                            "call-1",
                            "memory_search",
                            json!({"query": "plants"}),
                        );
                    }
                    release.notified().await;
                    Json(json!({
                        "choices": [{"message": {"role": "assistant",
                            "content": "watered the ferns"}}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2}
                    }))
                    .into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), asked)
}

/// One SSE event as a client reads it.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: i64,
    event: String,
    data: Value,
}

/// Fails, naming where, unless `value` is what `schema` (a part of the OpenAPI document
/// `doc`) describes, by the keywords the document uses for this stream: `$ref`, `type`,
/// `enum`, `required`, `properties`, a digits `pattern`, and JSON text of a
/// `contentSchema`. A keyword it does not know fails rather than passes unread.
fn conforms(doc: &Value, schema: &Value, value: &Value, at: &str) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.strip_prefix("#/components/schemas/").unwrap();
        let named = &doc["components"]["schemas"][name];
        assert!(
            named.is_object(),
            "{at}: {reference} is not in the document"
        );
        return conforms(doc, named, value, at);
    }
    for keyword in ["oneOf", "anyOf", "allOf", "not", "items", "const"] {
        assert!(
            schema.get(keyword).is_none(),
            "{at}: `{keyword}` is not checked here"
        );
    }
    if let Some(ty) = schema.get("type") {
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let allowed: Vec<&str> = match ty {
            Value::Array(types) => types.iter().filter_map(Value::as_str).collect(),
            other => vec![other.as_str().unwrap()],
        };
        let fits = allowed.contains(&kind) || (kind == "integer" && allowed.contains(&"number"));
        assert!(fits, "{at}: a {kind}, documented as {ty}");
    }
    if let Some(allowed) = schema["enum"].as_array() {
        assert!(
            allowed.contains(value),
            "{at}: {value} is not one of {allowed:?}"
        );
    }
    for key in schema["required"].as_array().into_iter().flatten() {
        let key = key.as_str().unwrap();
        assert!(
            value.get(key).is_some(),
            "{at}: no `{key}`, which the document requires"
        );
    }
    for (key, part) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(inner) = value.get(key) {
            conforms(doc, part, inner, &format!("{at}.{key}"));
        }
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        assert_eq!(
            pattern, "^[0-9]+$",
            "{at}: a pattern this check does not read"
        );
        let text = value.as_str().unwrap_or_default();
        let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        assert!(digits, "{at}: {value} is not digits");
    }
    if let Some(media) = schema["contentMediaType"].as_str() {
        assert_eq!(
            media, "application/json",
            "{at}: a media type this check does not read"
        );
        let inner: Value = serde_json::from_str(value.as_str().unwrap())
            .unwrap_or_else(|err| panic!("{at}: not JSON: {err}"));
        conforms(
            doc,
            &schema["contentSchema"],
            &inner,
            &format!("{at} (its JSON)"),
        );
    }
}

/// An open event stream, read event by event.
struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    /// The next event; `None` when the server ended the stream.
    async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (None, None, None);
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.parse().expect("a numeric id"));
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event = Some(v.to_string());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str(v).expect("JSON data"));
                    }
                }
                // A keep-alive comment has none of them.
                if let (Some(id), Some(event), Some(data)) = (id, event, data) {
                    return Some(Sse { id, event, data });
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .expect("the stream went quiet")
                .expect("read the stream")?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Events until one of `kind` (included).
    async fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let done = event.event == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before a `{kind}` event: {seen:?}");
    }
}

async fn open(api: &TestApi, run_id: &str, token: &str, last: Option<&str>) -> reqwest::Response {
    let mut request = api
        .client
        .get(format!("{}/v1/runs/{run_id}/events", api.base))
        .bearer_auth(token);
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last);
    }
    request.send().await.unwrap()
}

async fn stream(api: &TestApi, run_id: &str, token: &str, last: Option<&str>) -> Stream {
    let response = open(api, run_id, token, last).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    Stream {
        response,
        buffer: String::new(),
    }
}

/// `run-live`, ana's run held by a worker `w` that is still going; a connection to the
/// database.
async fn a_live_run(api: &TestApi) -> nightshift::db::Conn {
    let schedule = api
        .app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new("ana", "think", Cadence::Triggered { tz: "UTC".into() }),
        )
        .await
        .unwrap();
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, worker_id,
         lease_expires_at)
         VALUES ('run-live', ?1, 1, 'running', 'w', 9999999999999)",
        [schedule.schedule_id.as_str()],
    )
    .await
    .unwrap();
    conn
}

#[tokio::test]
async fn a_runs_progress_streams_live_resumes_after_the_last_event_and_ends() {
    let release = Arc::new(tokio::sync::Notify::new());
    let (model, asked) = held_model(release.clone()).await;
    let api = TestApi::start(|config| {
        config.runtime = RuntimeConfig {
            kind: RuntimeKind::Openai,
            base_url: model.clone(),
            model: "m".into(),
            max_retries: 0,
            ..Default::default()
        };
        config.scheduler.change_check_ms = 50;
    })
    .await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn({
        let app = api.app.clone();
        async move {
            nightshift::worker::run(&app, async {
                let _ = stopped.await;
            })
            .await
            .unwrap()
        }
    });
    let schedule = api
        .app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "ana",
                "water the plants",
                Cadence::Once {
                    at: nightshift::db::clock::now_ms() + 1000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    // The model has asked for its tool and waits to give its answer.
    common::until("the model is asked twice", async || {
        asked.load(Ordering::SeqCst) == 2
    })
    .await;
    let runs = api
        .app
        .schedules()
        .runs(&Actor::Operator, &schedule.schedule_id, 5)
        .await
        .unwrap();
    let run_id = runs[0].run_id.clone();
    let ana = api.token(Some("ana")).await;

    // What happened so far comes at once, in order.
    let mut live = stream(&api, &run_id, &ana, None).await;
    let so_far = live.until("tool_result").await;
    let kinds: Vec<&str> = so_far.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["status", "turn", "tool_call", "tool_result"]);
    assert_eq!(so_far[0].data["data"]["status"], "running");
    assert_eq!(so_far[0].data["data"]["attempt"], 1);
    assert_eq!(
        so_far[1].data["data"]["tool_calls"],
        json!(["memory_search"])
    );
    assert_eq!(so_far[2].data["data"]["name"], "memory_search");
    assert!(so_far[2].data["data"]["arguments"]
        .as_str()
        .unwrap()
        .contains("plants"));
    assert_eq!(so_far[3].data["data"]["name"], "memory_search");

    // Then the rest as it happens: the answer, the end.
    release.notify_one();
    let rest = live.until("end").await;
    let kinds: Vec<&str> = rest.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["turn", "end"]);
    assert_eq!(rest[0].data["data"]["text"], "watered the ferns");
    assert_eq!(rest[1].data["data"]["status"], "succeeded");
    assert_eq!(rest[1].data["data"]["output_summary"], "watered the ferns");
    assert!(live.next().await.is_none(), "the stream ends after `end`");
    let all: Vec<Sse> = so_far.into_iter().chain(rest).collect();
    let ids: Vec<i64> = all.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=6).collect::<Vec<_>>(),
        "ids count from 1, no gaps"
    );
    for event in &all {
        assert_eq!(event.data["seq"], event.id, "the data names its own id");
        assert_eq!(event.data["kind"], event.event.as_str());
    }
    // Each event is what the OpenAPI document says a client reads from the stream, which
    // is how generated clients and the API fuzzer (scripts/api-fuzz.sh) judge it.
    let doc = api.call("GET", "/v1/openapi.json", None, None).await.body;
    let documented = &doc["paths"]["/v1/runs/{run_id}/events"]["get"]["responses"]["200"]
        ["content"]["text/event-stream"]["schema"];
    for event in &all {
        let frame = json!({"id": event.id.to_string(), "event": event.event,
            "data": event.data.to_string()});
        conforms(&doc, documented, &frame, &format!("event {}", event.id));
    }

    // A client that lost its connection after event 2 gets exactly what followed.
    let mut resumed = stream(&api, &run_id, &ana, Some("2")).await;
    let again = resumed.until("end").await;
    assert_eq!(again, all[2..].to_vec());
    // One that saw the end is told there is nothing more (an EventSource stops there).
    let done = open(&api, &run_id, &ana, Some("6")).await;
    assert_eq!(done.status(), 204);

    // Another process, with no wake-up from this worker, follows the same events.
    let other = common::app_with(&api.config, None).await;
    let mut follow = other
        .schedules()
        .follow(&Actor::User("ana".into()), &run_id, 0)
        .await
        .unwrap()
        .expect("the run has events to send");
    let mut read = Vec::new();
    while let Some(event) = follow.next().await.unwrap() {
        read.push((event.seq, event.kind));
    }
    let expected: Vec<(i64, ProgressKind)> = all
        .iter()
        .map(|e| (e.id, e.event.parse().unwrap()))
        .collect();
    assert_eq!(read, expected);

    let _ = stop.send(());
    worker.await.unwrap();
}

#[tokio::test]
async fn another_users_run_is_missing_and_a_bad_last_event_id_is_refused_naming_it() {
    let api = TestApi::start(|_| {}).await;
    let schedule = api
        .app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "ana",
                "water the plants",
                Cadence::Interval {
                    every_secs: 86_400,
                    anchor: 4_000_000_000_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, output)
         VALUES ('run-a1', ?1, 1, 'succeeded', 'ana secret output 4711')",
        [schedule.schedule_id.as_str()],
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO run_progress (run_id, seq, kind, body, at)
         VALUES ('run-a1', 1, 'turn', '{\"text\": \"ana secret 4711\"}', 1)",
        (),
    )
    .await
    .unwrap();
    let ana = api.token(Some("ana")).await;
    let bob = api.token(Some("bob")).await;

    let theirs = api
        .call("GET", "/v1/runs/run-a1/events", Some(&bob), None)
        .await;
    let missing = api
        .call("GET", "/v1/runs/run-nope/events", Some(&bob), None)
        .await;
    assert_eq!(theirs.status, 404);
    assert_eq!(
        theirs.body.to_string().replace("run-a1", "ID"),
        missing.body.to_string().replace("run-nope", "ID")
    );
    assert!(!theirs.body.to_string().contains("4711"));

    for bad in ["-1", "abc", "1.5", "9999999999999999999", "+3"] {
        let response = open(&api, "run-a1", &ana, Some(bad)).await;
        assert_eq!(response.status(), 400, "Last-Event-ID {bad:?}");
        let body: Value = response.json().await.unwrap();
        assert!(
            body.to_string().contains("Last-Event-ID"),
            "{bad:?}: {body}"
        );
    }

    // An event that comes after the run's end (an attempt cut short, still writing) is
    // not stored: the end stays the last.
    api.app
        .schedules()
        .record_progress("run-a1", ProgressKind::Turn, &json!({"text": "late"}))
        .await
        .unwrap();
    let stored: i64 = nightshift::db::query_scalar(
        &conn,
        "SELECT count(*) FROM run_progress WHERE run_id = 'run-a1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(stored, 1);

    // Her own ended run: its one event, then its end, numbered after it.
    let mut own = stream(&api, "run-a1", &ana, Some("0")).await;
    let events = own.until("end").await;
    assert_eq!(events.iter().map(|e| e.id).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(events[1].data["data"]["status"], "succeeded");
    assert!(own.next().await.is_none());
}

#[tokio::test]
async fn streams_open_at_once_are_bounded_so_followers_cannot_hold_every_connection() {
    // Two connections: one event stream at most.
    let api = TestApi::start(|config| config.server.max_connections = 2).await;
    a_live_run(&api).await;
    let ana = api.token(Some("ana")).await;
    let first = open(&api, "run-live", &ana, None).await;
    assert_eq!(first.status(), 200);
    let second = open(&api, "run-live", &ana, None).await;
    assert_eq!(second.status(), 503);
    assert_eq!(second.headers()["retry-after"], "1");
    let body: Value = second.json().await.unwrap();
    assert!(body.to_string().contains("event streams"), "{body}");
    // Other requests still go through.
    let run = api.call("GET", "/v1/runs/run-live", Some(&ana), None).await;
    assert_eq!(run.status, 200);
    drop(first);
}

#[tokio::test]
async fn one_caller_holds_its_share_of_streams_and_an_id_past_the_last_counts_as_the_last() {
    let api = TestApi::start(|_| {}).await;
    a_live_run(&api).await;
    let store = api.app.schedules();
    for turn in 1..=2 {
        store
            .record_progress("run-live", ProgressKind::Turn, &json!({"turn": turn}))
            .await
            .unwrap();
    }
    let ana = api.token(Some("ana")).await;
    // A client that claims to have seen event 999 of a run with 2 is caught up from 2.
    let mut ahead = stream(&api, "run-live", &ana, Some("999")).await;
    store
        .record_progress("run-live", ProgressKind::Turn, &json!({"turn": 3}))
        .await
        .unwrap();
    let next = ahead.next().await.unwrap();
    assert_eq!((next.id, next.data["data"]["turn"].as_i64()), (3, Some(3)));

    // Sixteen streams at most for one caller; another user still gets one.
    let mut open_streams = vec![ahead];
    for _ in 1..16 {
        open_streams.push(stream(&api, "run-live", &ana, None).await);
    }
    let refused = open(&api, "run-live", &ana, None).await;
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert!(body.to_string().contains("16 event streams"), "{body}");
    let admin = api.token(None).await;
    assert_eq!(open(&api, "run-live", &admin, None).await.status(), 200);
    drop(open_streams);
}

#[tokio::test]
async fn an_agent_reads_a_runs_progress_over_mcp_after_the_last_event_it_saw() {
    use common::mcp::{call, connect, text};
    let api = TestApi::start(|_| {}).await;
    let conn = a_live_run(&api).await;
    let store = api.app.schedules();
    store
        .record_progress(
            "run-live",
            ProgressKind::Status,
            &json!({"status": "running", "attempt": 1}),
        )
        .await
        .unwrap();
    store
        .record_progress(
            "run-live",
            ProgressKind::ToolCall,
            &json!({"name": "memory_search", "arguments": "{}"}),
        )
        .await
        .unwrap();
    let ana = api.token(Some("ana")).await;
    let client = connect(&api, &ana).await;

    let all = call(
        &client,
        "schedule_run_events",
        json!({"run_id": "run-live"}),
    )
    .await;
    let out = all.structured_content.clone().unwrap();
    assert_eq!(out["events"].as_array().unwrap().len(), 2, "{out}");
    assert_eq!(out["ended"], false);
    assert!(
        text(&all).contains("2. memory_search({})"),
        "{}",
        text(&all)
    );
    let after = call(
        &client,
        "schedule_run_events",
        json!({"run_id": "run-live", "after": 1}),
    )
    .await;
    let out = after.structured_content.clone().unwrap();
    assert_eq!(out["events"][0]["seq"], 2);
    assert_eq!(out["events"].as_array().unwrap().len(), 1);

    // Once it ended, nothing after the last event, and it says so.
    conn.execute(
        "UPDATE schedule_runs SET status = 'succeeded', finished_at = 2 WHERE run_id = 'run-live'",
        (),
    )
    .await
    .unwrap();
    let end = call(
        &client,
        "schedule_run_events",
        json!({"run_id": "run-live", "after": 2}),
    )
    .await;
    let out = end.structured_content.clone().unwrap();
    assert_eq!(
        (
            out["ended"].as_bool(),
            out["events"].as_array().unwrap().len()
        ),
        (Some(true), 0)
    );
    assert!(text(&end).contains("The run ended: succeeded."));
    let bad = call(
        &client,
        "schedule_run_events",
        json!({"run_id": "run-live", "after": -1}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("after"), "{}", text(&bad));
    client.cancel().await.unwrap();
}
