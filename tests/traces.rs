//! Traces (`[traces] otlp_endpoint`): `nightshift run`'s spans, exported over OTLP/HTTP
//! and decoded by the OpenTelemetry protocol's own Python messages in a receiver the test
//! starts (scripts/otlp_receiver.py). A run is one trace: `invoke_agent` at its root, each
//! model call a `chat` span and each tool call an `execute_tool` span under it (GenAI
//! semantic conventions, with token usage), the searches under what made them; the
//! runtime and the webhook receive a `traceparent` naming the span they belong to; an
//! overnight pass is a span with its counts.
//!
//! One test: the process's tracer is global, and this binary's is set once.

mod common;

use std::collections::HashMap;

use common::model::{final_answer, serve_keeping_headers, tool_call};
use common::peer::PythonPeer;
use nightshift::access::Actor;
use nightshift::config::{ChannelConfig, ChannelKind, RuntimeConfig, RuntimeKind, TracesConfig};
use nightshift::consolidate::Pass;
use nightshift::memory::NewNote;
use nightshift::spec::{NotifyPolicy, ScheduleSpec};
use serde_json::{json, Value};
use tempfile::TempDir;

/// The spans named `name`.
fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// The `traceparent` a span's child request carries: version, trace, span, sampled.
fn traceparent(span: &Value) -> String {
    format!(
        "00-{}-{}-01",
        span["trace_id"].as_str().unwrap(),
        span["span_id"].as_str().unwrap()
    )
}

#[tokio::test]
async fn a_runs_spans_reach_an_otlp_receiver_as_one_trace_with_genai_attributes() {
    let dir = TempDir::new().unwrap();
    let peers = "the Python peers (opentelemetry-proto)";
    let Some(receiver) = PythonPeer::start(&dir, "otlp_receiver.py", peers, &[]) else {
        return;
    };
    let (model_url, _bodies, model_headers) =
        serve_keeping_headers("/v1/chat/completions", |n, _| match n {
            1 => tool_call("call-1", "memory_search", json!({"query": "colour"})),
            _ => final_answer("blue, as noted"),
        })
        .await;
    let (hook_url, _, hook_headers) = serve_keeping_headers("/hook", |_, _| {
        axum::response::IntoResponse::into_response("ok")
    })
    .await;

    let mut config = common::config_in(&dir);
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: format!("{model_url}/v1"),
        model: "scripted".into(),
        timeout_secs: 5,
        max_retries: 0,
        ..Default::default()
    };
    config.channels.insert(
        "hook".into(),
        ChannelConfig {
            url: Some(format!("{hook_url}/hook")),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    // No path: the receiver's /v1/traces is added.
    config.traces = TracesConfig {
        otlp_endpoint: Some(format!("http://127.0.0.1:{}", receiver.port)),
        service_name: "nightshift-test".into(),
        ..Default::default()
    };
    config.validate().unwrap();
    let app = common::app_with(&config, None).await;
    app.memory()
        .save_note("alice", &NewNote::new("alice's favourite colour is blue"))
        .await
        .unwrap();
    let spec = ScheduleSpec {
        name: Some("colour check".into()),
        goal: "say alice's favourite colour".into(),
        triggered: true,
        channel: Some("hook".into()),
        notify: Some(NotifyPolicy::Always),
        ..Default::default()
    };
    let id = app
        .add_schedule(&Actor::Operator, "alice", &spec)
        .await
        .unwrap()
        .schedule_id;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn({
        let app = app.clone();
        async move {
            nightshift::daemon::run(&app, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    let alice = Actor::User("alice".into());
    app.schedules()
        .trigger(&alice, &id, Some("go"), None)
        .await
        .unwrap();
    let hook = hook_headers.clone();
    common::until("the run ended and its message was delivered", async || {
        !hook.lock().unwrap().is_empty()
    })
    .await;
    let run = app
        .schedules()
        .runs(&alice, &id, 1)
        .await
        .unwrap()
        .remove(0);
    app.consolidator(None)
        .run(&[Pass::Expiry], None, None)
        .await
        .unwrap();
    // Shutting down sends the spans still buffered.
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();

    let spans = receiver.lines();
    assert!(
        spans
            .iter()
            .all(|s| s["service"] == "nightshift-test" && s["scope"] == "nightshift"),
        "{spans:?}"
    );
    // The run: one root span, with what it used.
    let runs = named(&spans, "invoke_agent colour check");
    assert_eq!(runs.len(), 1, "{spans:?}");
    let root = runs[0];
    let attrs = &root["attributes"];
    assert_eq!(root["parent_span_id"], "", "{root}");
    assert_eq!(attrs["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(attrs["gen_ai.agent.name"], "colour check");
    assert_eq!(attrs["nightshift.run.id"], run.run_id.as_str());
    assert_eq!(attrs["nightshift.schedule.id"], id.as_str());
    assert_eq!(attrs["nightshift.run.status"], "succeeded");
    assert_eq!(
        attrs["gen_ai.usage.input_tokens"], 2,
        "two calls of one token"
    );
    assert_eq!(root["status"], "STATUS_CODE_UNSET");
    let trace = root["trace_id"].as_str().unwrap();
    let under = |span: &Value, parent: &Value| {
        span["trace_id"] == trace && span["parent_span_id"] == parent["span_id"]
    };

    // Each model call, under the run, told its span.
    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 2, "{spans:?}");
    for chat in &chats {
        assert!(under(chat, root), "{chat}");
        assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(chat["attributes"]["gen_ai.operation.name"], "chat");
        assert_eq!(chat["attributes"]["gen_ai.request.model"], "scripted");
        assert_eq!(chat["attributes"]["gen_ai.usage.input_tokens"], 1);
        assert_eq!(chat["attributes"]["gen_ai.usage.output_tokens"], 1);
    }
    let sent: Vec<String> = model_headers
        .lock()
        .unwrap()
        .iter()
        .map(|h| h["traceparent"].to_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = chats.iter().map(|c| traceparent(c)).collect();
    let (mut sent_sorted, mut expected_sorted) = (sent.clone(), expected.clone());
    sent_sorted.sort();
    expected_sorted.sort();
    assert_eq!(sent_sorted, expected_sorted);

    // The tool call, under the run; the search it made, under it.
    let tools = named(&spans, "execute_tool memory_search");
    assert_eq!(tools.len(), 1, "{spans:?}");
    let tool = tools[0];
    assert!(under(tool, root), "{tool}");
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "memory_search");
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call-1");
    let searches = named(&spans, "memory.search");
    let by_parent: HashMap<&str, &Value> = searches
        .iter()
        .map(|s| (s["parent_span_id"].as_str().unwrap(), *s))
        .collect();
    let tool_search = by_parent[tool["span_id"].as_str().unwrap()];
    assert_eq!(tool_search["trace_id"], trace);
    assert!(
        tool_search["attributes"]["nightshift.search.hits"]
            .as_i64()
            .unwrap()
            >= 1
    );
    assert!(
        by_parent.contains_key(root["span_id"].as_str().unwrap()),
        "the context's search, under the run: {searches:?}"
    );

    // The delivery: its own span, named in the webhook's traceparent.
    let deliveries = named(&spans, "deliver hook");
    assert_eq!(deliveries.len(), 1, "{spans:?}");
    let delivery = deliveries[0];
    assert_eq!(
        delivery["attributes"]["nightshift.run.id"],
        run.run_id.as_str()
    );
    assert_eq!(delivery["kind"], "SPAN_KIND_PRODUCER");
    let hook_parent = hook_headers.lock().unwrap()[0]["traceparent"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(hook_parent, traceparent(delivery));

    // The overnight pass, with its counts.
    let passes = named(&spans, "consolidate expiry");
    assert_eq!(passes.len(), 1, "{spans:?}");
    assert_eq!(passes[0]["attributes"]["nightshift.pass"], "expiry");
}
