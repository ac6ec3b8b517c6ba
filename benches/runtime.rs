//! `cargo bench --bench runtime`: what the tool loop adds to a call of an MCP server's tool.
//! The official `server-everything` over stdio (installed by scripts/mcp-peers.sh, found
//! through NIGHTSHIFT_TEST_MCP_EVERYTHING), called three ways, each CALLS times:
//!
//! - directly with rmcp's client (the floor);
//! - through the openai tool loop, a scripted model on 127.0.0.1 asking for
//!   `everything__echo` and then answering;
//! - through the same loop asking for a tool that does not exist (the same two model
//!   round trips, no MCP call).
//!
//! The loop's cost of a call is the second minus the third, and its overhead over the
//! floor that minus the first. Prints a table, then `name=value` pairs as its last line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use nightshift::config::{Config, McpServerConfig, RuntimeConfig, RuntimeKind, UserConfig};
use nightshift::mcp_client::McpTools;
use nightshift::runtime::{AgentRuntime, GoalRequest, OpenAiRuntime};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

mod common;
use common::percentile;

const CALLS: usize = 300;
const WARM_UP: usize = 20;

/// A model that asks for `tool` on a conversation's first request, then answers.
async fn scripted_model(tool: &'static str) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| async move {
            let asked = body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            let answer = if asked {
                json!({"choices": [{"message": {"role": "assistant", "content": "done"}}]})
            } else {
                json!({"choices": [{"message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {
                        "name": tool, "arguments": "{\"message\":\"bench\"}"}}]}}]})
            };
            Json(answer).into_response()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn request() -> GoalRequest {
    GoalRequest {
        run_id: "run-bench".into(),
        schedule_id: "sch-bench".into(),
        user_id: "bench".into(),
        goal: "echo once".into(),
        session_id: "scheduled:sch-bench".into(),
        context: String::new(),
        input: None,
        agent_id: None,
        tools: Vec::new(),
        approve: Vec::new(),
        resume: None,
        max_turns: 4,
        max_cost: None,
    }
}

async fn loop_times(
    entry: &str,
    tool: &'static str,
    memory: &nightshift::memory::Memory,
) -> Vec<Duration> {
    let mut config = Config::default();
    config.mcp_servers.insert(
        "everything".into(),
        McpServerConfig {
            command: Some("node".into()),
            args: vec![entry.to_string(), "stdio".into()],
            ..Default::default()
        },
    );
    config.users.insert(
        "bench".into(),
        UserConfig {
            mcp_servers: vec!["everything".into()],
            ..Default::default()
        },
    );
    let runtime = OpenAiRuntime::new(&RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: scripted_model(tool).await,
        model: "scripted".into(),
        ..Default::default()
    })
    .unwrap()
    .with_mcp_tools(McpTools::from_config(&config));
    let runtime: Arc<dyn AgentRuntime> = Arc::new(runtime);
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..WARM_UP + CALLS {
        let start = Instant::now();
        let outcome = runtime.run_goal(&request(), memory).await;
        let took = start.elapsed();
        assert_eq!(outcome.error, None, "{outcome:?}");
        if i >= WARM_UP {
            times.push(took);
        }
    }
    times.sort();
    times
}

async fn direct_times(entry: &str) -> Vec<Duration> {
    let mut command = tokio::process::Command::new("node");
    command.args([entry, "stdio"]);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.expect("initialize");
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..WARM_UP + CALLS {
        let arguments = json!({"message": "bench"}).as_object().unwrap().clone();
        let start = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
            .await
            .expect("echo");
        if i >= WARM_UP {
            times.push(start.elapsed());
        }
    }
    times.sort();
    times
}

#[tokio::main]
async fn main() {
    let Some(entry) = std::env::var("NIGHTSHIFT_TEST_MCP_EVERYTHING")
        .ok()
        .filter(|p| std::path::Path::new(p).is_file())
    else {
        eprintln!(
            "runtime bench: needs the MCP reference server; run `eval \"$(scripts/mcp-peers.sh)\"` first"
        );
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    let memory = nightshift::app::open_memory(&config).await.unwrap();

    eprintln!("direct calls…");
    let direct = direct_times(&entry).await;
    eprintln!("through the loop…");
    let through = loop_times(&entry, "everything__echo", &memory).await;
    eprintln!("the loop without an MCP call…");
    let bare = loop_times(&entry, "no_such_tool", &memory).await;

    let ms = |t: &[Duration], p: f64| percentile(t, p);
    println!();
    println!("| {:<43} | p50 | p95 | p99 |", format!("{CALLS} calls, ms"));
    println!("|---------------------------------------------|----:|----:|----:|");
    for (name, times) in [
        ("echo with rmcp's client (direct)", &direct),
        ("a run: model, echo through the loop, model", &through),
        ("a run: model, unknown tool, model", &bare),
    ] {
        println!(
            "| {name:<43} | {:.3} | {:.3} | {:.3} |",
            ms(times, 0.5),
            ms(times, 0.95),
            ms(times, 0.99)
        );
    }
    let loop_call_p95 = ms(&through, 0.95) - ms(&bare, 0.95);
    let overhead_p95 = loop_call_p95 - ms(&direct, 0.95);
    let loop_call_p50 = ms(&through, 0.5) - ms(&bare, 0.5);
    println!();
    println!(
        "mcp_direct_p95_ms={:.3} mcp_loop_call_p50_ms={loop_call_p50:.3} \
         mcp_loop_call_p95_ms={loop_call_p95:.3} mcp_tool_overhead_p95_ms={overhead_p95:.3}",
        ms(&direct, 0.95)
    );
}
