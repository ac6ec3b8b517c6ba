//! Runtime clients against real HTTP peers on 127.0.0.1:0, shaped like the APIs they
//! stand in for: the plain goal protocol and an OpenAI-compatible `/chat/completions`.

mod common;

use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use nightshift::config::{RuntimeConfig, RuntimeKind};
use nightshift::memory::{NewNote, SearchRequest};
use nightshift::runtime::{AgentRuntime, GoalRequest, HttpRuntime, OpenAiRuntime, RuntimeError};
use serde_json::{json, Value};

use common::model::serve;

fn http_config(url: String) -> RuntimeConfig {
    RuntimeConfig {
        kind: RuntimeKind::Http,
        url,
        timeout_secs: 2,
        max_retries: 2,
        ..Default::default()
    }
}

fn request(user: &str) -> GoalRequest {
    GoalRequest {
        run_id: "run-1".into(),
        schedule_id: "sch-1".into(),
        user_id: user.into(),
        goal: "check the weather".into(),
        session_id: "scheduled:sch-1".into(),
        context: "Relevant notes: none".into(),
        max_turns: 4,
        tools: Vec::new(),
        approve: Vec::new(),
        resume: None,
        max_cost: None,
        progress: Default::default(),
        memory_as_of: None,
        input: None,
        agent_id: None,
    }
}

#[tokio::test]
async fn http_goal_protocol_round_trip() {
    let (_dir, memory) = common::fresh().await;
    let (url, seen) = serve("/goal", |_, _| {
        Json(json!({"output": "sunny", "turn_count": 3, "cost": 0.02})).into_response()
    })
    .await;
    let runtime = HttpRuntime::new(&http_config(format!("{url}/goal"))).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    assert_eq!(outcome.error, None);
    assert_eq!(
        (outcome.output.as_str(), outcome.turn_count, outcome.cost),
        ("sunny", 3, 0.02)
    );
    let body = seen.lock().unwrap()[0].clone();
    for key in [
        "run_id",
        "schedule_id",
        "user_id",
        "goal",
        "session_id",
        "context",
    ] {
        assert!(body[key].is_string(), "{key} missing from {body}");
    }
    assert_eq!(body["goal"], "check the weather");
}

/// A run started by an event carries its input: the goal protocol as an `input` field,
/// the OpenAI one as a user message after the goal; both transcripts keep it.
#[tokio::test]
async fn a_runs_input_reaches_both_runtimes_beside_the_goal() {
    let (_dir, memory) = common::fresh().await;
    let mut with_input = request("u");
    with_input.input = Some("webhook: order 7 shipped".into());

    let (url, seen) = serve("/goal", |_, _| {
        Json(json!({"output": "noted"})).into_response()
    })
    .await;
    let runtime = HttpRuntime::new(&http_config(format!("{url}/goal"))).unwrap();
    let outcome = runtime.run_goal(&with_input, &memory).await;
    assert_eq!(outcome.error, None);
    let body = seen.lock().unwrap()[0].clone();
    assert_eq!(body["input"], "webhook: order 7 shipped");
    assert_eq!(body["goal"], "check the weather");
    assert_eq!(outcome.transcript[1].content, "webhook: order 7 shipped");
    // Without one, there is no `input` key at all.
    runtime.run_goal(&request("u"), &memory).await;
    assert!(seen.lock().unwrap()[1].get("input").is_none());

    let (url, seen) = serve("/v1/chat/completions", |_, _| {
        Json(
            json!({"choices": [{"message": {"role": "assistant", "content": "done"}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
        )
        .into_response()
    })
    .await;
    let runtime = OpenAiRuntime::new(&openai_config(format!("{url}/v1"))).unwrap();
    let outcome = runtime.run_goal(&with_input, &memory).await;
    assert_eq!(outcome.error, None);
    let messages = seen.lock().unwrap()[0]["messages"].clone();
    assert_eq!(messages[1]["content"], "check the weather");
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"], "webhook: order 7 shipped");
    assert_eq!(outcome.transcript[1].content, "webhook: order 7 shipped");
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed_once() {
    let (_dir, memory) = common::fresh().await;
    let (url, seen) = serve("/goal", |n, _| {
        if n == 1 {
            (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response()
        } else {
            Json(json!({"output": "ok"})).into_response()
        }
    })
    .await;
    let runtime = HttpRuntime::new(&http_config(format!("{url}/goal"))).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    assert_eq!(outcome.error, None);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// On tokio's paused clock: the wait between the attempts is tokio time, no wall-clock
/// second passes, and the schedule of attempts is what is checked.
#[tokio::test(start_paused = true)]
async fn too_many_requests_honours_retry_after() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let (_dir, memory) = common::fresh().await;
    // A paused runtime that finds nothing ready jumps to its next timer: were a socket's
    // bytes still on their way (a loaded machine), that could be the client's own 2 s
    // timeout. This ticker keeps every jump to 1 ms, so that timeout is reached only by
    // time that passes, never by one jump over a request in flight.
    let ticker = tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let arrived = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (url, seen) = serve("/goal", {
        let arrived = arrived.clone();
        move |n, _| {
            arrived.lock().unwrap().push(tokio::time::Instant::now());
            if n == 1 {
                let mut headers = HeaderMap::new();
                headers.insert("retry-after", "1".parse().unwrap());
                (StatusCode::TOO_MANY_REQUESTS, headers, "slow down").into_response()
            } else {
                Json(json!({"output": "ok"})).into_response()
            }
        }
    })
    .await;
    let runtime = HttpRuntime::new(&http_config(format!("{url}/goal"))).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    ticker.abort();
    assert_eq!(outcome.error, None);
    assert_eq!(seen.lock().unwrap().len(), 2);
    // The second attempt came as told (1 s of tokio time after the first), not after the
    // client's own first backoff (500 ms).
    let arrived = arrived.lock().unwrap().clone();
    let waited = arrived[1] - arrived[0];
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
}

#[tokio::test]
async fn faults_become_errors_that_say_what_failed() {
    let (_dir, memory) = common::fresh().await;
    let mut config = http_config(String::new());
    config.max_retries = 0;

    let (url, _) = serve("/goal", |_, _| {
        (StatusCode::OK, "{not json").into_response()
    })
    .await;
    config.url = format!("{url}/goal");
    let err = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await
        .error
        .unwrap();
    assert!(matches!(err, RuntimeError::BadAnswer { .. }), "{err}");

    let (url, _) = serve("/goal", |_, _| {
        Json(json!({"result": "wrong shape"})).into_response()
    })
    .await;
    config.url = format!("{url}/goal");
    let err = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await
        .error
        .unwrap();
    assert!(err.to_string().contains("output"), "{err}");

    let (url, _) = serve("/goal", |_, _| {
        (StatusCode::INTERNAL_SERVER_ERROR, "kaput").into_response()
    })
    .await;
    config.url = format!("{url}/goal");
    let err = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await
        .error
        .unwrap();
    assert!(
        matches!(err, RuntimeError::Status { status: 500, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("kaput"));

    let (url, _) = serve("/goal", |_, _| {
        Json(json!({"output": "could not do it", "status": "failed"})).into_response()
    })
    .await;
    config.url = format!("{url}/goal");
    let err = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await
        .error
        .unwrap();
    assert!(matches!(err, RuntimeError::Reported(_)), "{err}");

    // A port held but not listening: a connection to it is refused (a port let go could
    // be taken by another test meanwhile).
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    config.url = format!("http://127.0.0.1:{port}/goal");
    let err = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await
        .error
        .unwrap();
    assert!(matches!(err, RuntimeError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");

    // A server that never answers in time.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    config.url = format!("http://{addr}/goal");
    config.timeout_secs = 1;
    let err = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await
        .error
        .unwrap();
    assert!(matches!(err, RuntimeError::Unreachable { .. }), "{err}");
}

fn openai_config(base_url: String) -> RuntimeConfig {
    RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url,
        model: "test-model".into(),
        timeout_secs: 5,
        max_retries: 0,
        prompt_price_per_mtok: 1.0,
        completion_price_per_mtok: 2.0,
        ..Default::default()
    }
}

fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
}

#[tokio::test]
async fn openai_tool_loop_uses_memory_tools_scoped_to_the_user() {
    let (_dir, memory) = common::fresh().await;
    memory
        .save_note("alice", &NewNote::new("Alice's favourite city is Porto"))
        .await
        .unwrap();
    memory
        .save_note("bob", &NewNote::new("Bob's favourite city is Oslo"))
        .await
        .unwrap();
    let (url, seen) = serve("/v1/chat/completions", |n, _| {
        let message = match n {
            1 => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("c1", "memory_search", json!({"query": "favourite city"}))]}),
            2 => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("c2", "memory_save", json!({"content": "Weather checked for Porto"}))]}),
            _ => json!({"role": "assistant", "content": "Porto will be sunny."}),
        };
        Json(json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}})).into_response()
    })
    .await;
    let runtime = OpenAiRuntime::new(&openai_config(format!("{url}/v1"))).unwrap();
    let outcome = runtime.run_goal(&request("alice"), &memory).await;
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.output, "Porto will be sunny.");
    assert_eq!(
        (
            outcome.turn_count,
            outcome.prompt_tokens,
            outcome.completion_tokens
        ),
        (3, 300, 30)
    );
    assert!((outcome.cost - (300.0 * 1e-6 + 30.0 * 2e-6)).abs() < 1e-12);

    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies[0]["model"], "test-model");
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "memory_search",
            "memory_save",
            "memory_update",
            "memory_delete",
            "state_get",
            "state_set",
            "state_delete",
            "state_list"
        ]
    );
    // The search result the model saw holds Alice's note and not Bob's.
    let tool_result = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        tool_result.contains("Porto") && !tool_result.contains("Oslo"),
        "{tool_result}"
    );
    // The save landed in Alice's memory only.
    let saved = memory
        .search(&SearchRequest {
            user_id: "alice".into(),
            query: "weather checked".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(saved[0].text, "Weather checked for Porto");
    let bobs = memory
        .search(&SearchRequest {
            user_id: "bob".into(),
            query: "weather checked".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(bobs.iter().all(|h| !h.text.contains("Weather")));
    // Goal, two tool calls with their results, and the answer.
    assert_eq!(outcome.transcript.len(), 6);
}

#[tokio::test]
async fn openai_state_tools_act_for_the_run_its_user_and_its_session() {
    let dir = tempfile::TempDir::new().unwrap();
    let app = nightshift::app::App::open(&common::config_in(&dir))
        .await
        .unwrap();
    let memory = app.memory().clone();
    // The run exists, as it does when the worker calls the runtime.
    let schedule = app
        .schedules()
        .create(
            &nightshift::access::Actor::Operator,
            &nightshift::schedule::types::NewSchedule::new(
                "alice",
                "goal",
                nightshift::schedule::Cadence::Interval {
                    every_secs: 3600,
                    anchor: 4_000_000_000_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    let conn = memory.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
         VALUES ('run-1', ?1, 1, 'running')",
        [schedule.schedule_id.as_str()],
    )
    .await
    .unwrap();
    let (url, seen) = serve("/v1/chat/completions", |n, _| {
        let message = match n {
            1 => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("c1", "state_set", json!({"key": "temp:step", "value": {"n": 1}})),
                tool_call("c2", "state_set", json!({"key": "user:seen", "value": true, "expected_version": 0})),
                tool_call("c3", "state_set", json!({"key": "progress", "value": [1, 2]})),
                tool_call("c4", "state_set", json!({"key": "app:motd", "value": "mine"}))]}),
            2 => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("c5", "state_get", json!({"key": "temp:step"})),
                tool_call("c6", "state_list", json!({})),
                tool_call("c7", "state_set", json!({"key": "user:seen", "value": 1, "expected_version": "x"}))]}),
            _ => json!({"role": "assistant", "content": "done"}),
        };
        Json(json!({"choices": [{"message": message}]})).into_response()
    })
    .await;
    let runtime = OpenAiRuntime::new(&openai_config(format!("{url}/v1"))).unwrap();
    let outcome = runtime.run_goal(&request("alice"), &memory).await;
    assert_eq!(outcome.error, None);
    let bodies = seen.lock().unwrap().clone();
    let results = |body: &Value| -> Vec<Value> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
            .collect()
    };
    let first = results(&bodies[1]);
    assert_eq!(first[0]["message"], "set", "{first:?}");
    assert_eq!(first[1]["message"], "set", "{first:?}");
    assert_eq!(first[2]["message"], "set", "{first:?}");
    assert!(
        first[3]["error"]
            .as_str()
            .unwrap()
            .contains("only the operator"),
        "{first:?}"
    );
    let second = &results(&bodies[2])[4..];
    assert_eq!(second[0]["value"], json!({"n": 1}));
    let keys: Vec<&str> = second[1]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["progress", "temp:step", "user:seen"]);
    assert!(second[2]["error"]
        .as_str()
        .unwrap()
        .contains("expected_version"));
    // The session key went to the schedule's session, the user key to alice.
    let state = app.state();
    let session = nightshift::state::StateAccess::user("alice", Some("scheduled:sch-1".into()));
    assert_eq!(
        state.get(&session, "progress").await.unwrap().value,
        json!([1, 2])
    );
    assert_eq!(
        state.get(&session, "user:seen").await.unwrap().value,
        json!(true)
    );
}

#[tokio::test]
async fn openai_limits_turns_and_cost() {
    let (_dir, memory) = common::fresh().await;
    let (url, _) = serve("/v1/chat/completions", |_, _| {
        Json(
            json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            tool_call("c", "memory_search", json!({"query": "anything"}))]}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 0}}),
        )
        .into_response()
    })
    .await;
    let runtime = OpenAiRuntime::new(&openai_config(format!("{url}/v1"))).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    assert_eq!(outcome.error, Some(RuntimeError::TooManyTurns { turns: 4 }));
    assert_eq!(outcome.turn_count, 4);

    let mut costly = request("u");
    costly.max_cost = Some(0.0015);
    let outcome = runtime.run_goal(&costly, &memory).await;
    assert!(
        matches!(outcome.error, Some(RuntimeError::TooExpensive { .. })),
        "{:?}",
        outcome.error
    );
    assert_eq!(outcome.turn_count, 2);
}

/// A runtime's usage is checked: negative, fractional or absurd counts make its answer bad,
/// so a cost can never go negative and slip under `max_cost`.
#[tokio::test]
async fn usage_that_cannot_be_true_is_a_bad_answer() {
    let (_dir, memory) = common::fresh().await;
    for usage in [
        json!({"prompt_tokens": -1000000, "completion_tokens": 5}),
        json!({"prompt_tokens": 1.5, "completion_tokens": 5}),
        json!({"prompt_tokens": "many", "completion_tokens": 5}),
        json!({"prompt_tokens": 10, "completion_tokens": 1e12}),
    ] {
        let (url, _) = serve("/v1/chat/completions", move |_, _| {
            Json(
                json!({"choices": [{"message": {"role": "assistant", "content": "done"}}],
                        "usage": usage.clone()}),
            )
            .into_response()
        })
        .await;
        let runtime = OpenAiRuntime::new(&openai_config(format!("{url}/v1"))).unwrap();
        let outcome = runtime.run_goal(&request("u"), &memory).await;
        assert!(
            matches!(&outcome.error, Some(RuntimeError::BadAnswer { reason, .. }) if reason.contains("usage")),
            "{:?}",
            outcome.error
        );
        assert!(outcome.cost >= 0.0 && outcome.prompt_tokens >= 0);
    }
}

/// 300 tool calls in one turn run none of them: the turn is over the per-turn cap.
#[tokio::test]
async fn tool_calls_are_capped_per_turn_and_per_run() {
    let (_dir, memory) = common::fresh().await;
    let calls: Vec<Value> = (0..300)
        .map(|i| {
            tool_call(
                &format!("c{i}"),
                "memory_save",
                json!({"content": format!("note {i}")}),
            )
        })
        .collect();
    let (url, _) = serve("/v1/chat/completions", move |_, _| {
        Json(json!({"choices": [{"message": {"role": "assistant", "content": null,
                    "tool_calls": calls.clone()}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
        .into_response()
    })
    .await;
    let runtime = OpenAiRuntime::new(&openai_config(format!("{url}/v1"))).unwrap();
    let mut two_turns = request("u");
    two_turns.max_turns = 2;
    let outcome = runtime.run_goal(&two_turns, &memory).await;
    assert!(
        matches!(
            outcome.error,
            Some(RuntimeError::TooManyToolCalls { calls: 300, .. })
        ),
        "{:?}",
        outcome.error
    );
    assert!(memory.notes("u").await.unwrap().is_empty(), "no tool ran");

    // Within the per-turn cap, but more turns than the run allows in all.
    let (url, _) = serve("/v1/chat/completions", |_, _| {
        let calls: Vec<Value> = (0..10)
            .map(|i| tool_call(&format!("c{i}"), "memory_search", json!({"query": "x"})))
            .collect();
        Json(
            json!({"choices": [{"message": {"role": "assistant", "content": null,
                    "tool_calls": calls}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
        )
        .into_response()
    })
    .await;
    let mut config = openai_config(format!("{url}/v1"));
    config.max_tool_calls_per_run = 25;
    let runtime = OpenAiRuntime::new(&config).unwrap();
    let mut many_turns = request("u");
    many_turns.max_turns = 100;
    let outcome = runtime.run_goal(&many_turns, &memory).await;
    assert!(
        matches!(
            outcome.error,
            Some(RuntimeError::TooManyToolCalls {
                scope: "in one run",
                ..
            })
        ),
        "{:?}",
        outcome.error
    );
    assert_eq!(outcome.turn_count, 3);
}

/// An answer larger than `runtime.max_response_bytes` fails the request without being
/// read whole; one that never ends is cut by the timeout.
#[tokio::test]
async fn answers_are_read_up_to_their_limit() {
    let (_dir, memory) = common::fresh().await;
    let (url, _) = serve("/goal", |_, _| {
        Json(json!({"output": "x".repeat(3 << 20)})).into_response()
    })
    .await;
    let mut config = http_config(format!("{url}/goal"));
    config.max_response_bytes = 1 << 20;
    let runtime = HttpRuntime::new(&config).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    assert!(
        matches!(&outcome.error, Some(RuntimeError::BadAnswer { reason, .. }) if reason.contains("max_response_bytes")),
        "{:?}",
        outcome.error
    );

    // Negative or non-finite figures from the goal protocol are refused as well.
    let (url, _) = serve("/goal", |_, _| {
        Json(json!({"output": "ok", "cost": -5.0, "turn_count": 1})).into_response()
    })
    .await;
    let runtime = HttpRuntime::new(&http_config(format!("{url}/goal"))).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    assert!(
        matches!(outcome.error, Some(RuntimeError::BadAnswer { .. })),
        "{:?}",
        outcome.error
    );
}

/// `runtime.max_tool_arguments_bytes`: a tool call whose arguments are exactly the limit
/// runs; one a byte over is not run, and the model is answered with a tool error naming
/// the limit, as for an unknown tool. The run goes on and ends with the model's answer.
#[tokio::test]
async fn tool_call_arguments_over_their_limit_are_answered_with_a_tool_error() {
    let (_dir, memory) = common::fresh().await;
    // `{"content":"…"}` is 14 bytes around its text.
    let arguments = |len: usize| json!({"content": "x".repeat(len - 14)});
    assert_eq!(arguments(1024).to_string().len(), 1024);
    let (url, seen) = serve("/v1/chat/completions", move |n, _| {
        let message = match n {
            1 => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("c1", "memory_save", arguments(1024))]}),
            2 => json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("c2", "memory_save", arguments(1025))]}),
            _ => json!({"role": "assistant", "content": "saved what fitted"}),
        };
        Json(json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
            .into_response()
    })
    .await;
    let mut config = openai_config(format!("{url}/v1"));
    config.max_tool_arguments_bytes = 1024;
    let runtime = OpenAiRuntime::new(&config).unwrap();
    let outcome = runtime.run_goal(&request("u"), &memory).await;
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.output, "saved what fitted");
    let notes = memory.notes("u").await.unwrap();
    assert_eq!(notes.len(), 1, "only the call at the limit ran");
    assert_eq!(notes[0].content.len(), 1010);

    let bodies = seen.lock().unwrap().clone();
    let last_tool_result = |body: &Value| {
        body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(last_tool_result(&bodies[1]).contains("note_id"));
    let refused = last_tool_result(&bodies[2]);
    let refused: Value = serde_json::from_str(&refused).unwrap();
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("1025 bytes")
            && error.contains("limit of 1024 bytes")
            && error.contains("runtime.max_tool_arguments_bytes"),
        "{error}"
    );
}

/// An answer of exactly `runtime.max_response_bytes` is read; one a byte longer fails the
/// attempt saying which limit it went over.
#[tokio::test]
async fn an_answer_of_exactly_the_response_limit_is_read() {
    let (_dir, memory) = common::fresh().await;
    const LIMIT: usize = 1 << 20;
    // `{"output":"…"}` is 13 bytes around its text.
    for (len, fits) in [(LIMIT, true), (LIMIT + 1, false)] {
        let body = json!({"output": "x".repeat(len - 13)}).to_string();
        assert_eq!(body.len(), len);
        let (url, _) = serve("/goal", move |_, _| {
            ([("content-type", "application/json")], body.clone()).into_response()
        })
        .await;
        let mut config = http_config(format!("{url}/goal"));
        config.max_response_bytes = LIMIT;
        config.max_retries = 0;
        let outcome = HttpRuntime::new(&config)
            .unwrap()
            .run_goal(&request("u"), &memory)
            .await;
        if fits {
            assert_eq!(outcome.error, None);
            assert_eq!(outcome.output.len(), LIMIT - 13);
        } else {
            assert!(
                matches!(&outcome.error, Some(RuntimeError::BadAnswer { reason, .. })
                    if reason.contains(&format!("limit of {LIMIT} bytes")) && reason.contains("max_response_bytes")),
                "{:?}",
                outcome.error
            );
            assert!(outcome.output.is_empty());
        }
    }
}

/// A runtime's error answer is read up to 16 KiB, never whole: a 500 with a body of
/// 32 MiB is a clear status error at once, with a short reason: the body's start.
#[tokio::test]
async fn a_runtime_error_body_is_read_only_up_to_its_limit() {
    let (_dir, memory) = common::fresh().await;
    let huge = "e".repeat(32 << 20);
    let (url, seen) = serve("/goal", move |_, _| {
        (StatusCode::INTERNAL_SERVER_ERROR, huge.clone()).into_response()
    })
    .await;
    let mut config = http_config(format!("{url}/goal"));
    config.max_retries = 0;
    let outcome = HttpRuntime::new(&config)
        .unwrap()
        .run_goal(&request("u"), &memory)
        .await;
    let err = outcome.error.unwrap();
    assert!(
        matches!(err, RuntimeError::Status { status: 500, .. }),
        "{err}"
    );
    assert!(
        err.to_string().len() < 500,
        "{} bytes",
        err.to_string().len()
    );
    assert!(err.to_string().contains(&"e".repeat(100)), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}
