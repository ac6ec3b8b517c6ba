//! `cargo bench --bench runtime`: what nightshift adds to a run that acts, in three parts
//! (each skipped, saying why, when its peer is not installed).
//!
//! **MCP tools.** What the tool loop adds to a call of an MCP server's tool: the official
//! `server-everything` over stdio (installed by scripts/mcp-peers.sh, found through
//! NIGHTSHIFT_TEST_MCP_EVERYTHING), called three ways, each CALLS times:
//!
//! - directly with rmcp's client (the floor);
//! - through the openai tool loop, a scripted model on 127.0.0.1 asking for
//!   `everything__echo` and then answering;
//! - through the same loop asking for a tool that does not exist (the same two model
//!   round trips, no MCP call).
//!
//! The loop's cost of a call is the second minus the third, and its overhead over the
//! floor that minus the first.
//!
//! **A2A.** A run through the `a2a` runtime against scripts/a2a_agent.py (the official
//! Python SDK, installed by scripts/a2a-peers.sh) in `echo` mode, which answers at once,
//! against the floor: the same `SendMessage` made directly, blocking until the task ends.
//!
//! **Approvals.** A triggered schedule whose `memory_save` needs approval, run by a real
//! worker with a scripted model: from an answer given (the `decide` call returning) to
//! the model receiving the call's result (so after the call was made), RESUMES times.
//!
//! Prints a table per part, then every part's `name=value` pairs as its last line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::approval::{ApprovalState, Decision, Door};
use nightshift::config::{Config, McpServerConfig, RuntimeConfig, RuntimeKind, UserConfig};
use nightshift::mcp_client::McpTools;
use nightshift::runtime::A2aRuntime;
use nightshift::runtime::{AgentRuntime, GoalRequest, OpenAiRuntime};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

mod common;
use common::percentile;

const CALLS: usize = 300;
const WARM_UP: usize = 20;
const A2A_RUNS: usize = 200;
const RESUMES: usize = 100;

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
        progress: Default::default(),
        memory_as_of: None,
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

/// The MCP part's table and pairs; `None` (after saying why) without the server.
async fn mcp_part(memory: &nightshift::memory::Memory) -> Option<String> {
    let Some(entry) = std::env::var("NIGHTSHIFT_TEST_MCP_EVERYTHING")
        .ok()
        .filter(|p| std::path::Path::new(p).is_file())
    else {
        eprintln!(
            "runtime bench: MCP part skipped: needs the MCP reference server; run `eval \"$(scripts/mcp-peers.sh)\"` first"
        );
        return None;
    };
    eprintln!("direct calls…");
    let direct = direct_times(&entry).await;
    eprintln!("through the loop…");
    let through = loop_times(&entry, "everything__echo", memory).await;
    eprintln!("the loop without an MCP call…");
    let bare = loop_times(&entry, "no_such_tool", memory).await;

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
    Some(format!(
        "mcp_direct_p95_ms={:.3} mcp_loop_call_p50_ms={loop_call_p50:.3} \
         mcp_loop_call_p95_ms={loop_call_p95:.3} mcp_tool_overhead_p95_ms={overhead_p95:.3}",
        ms(&direct, 0.95)
    ))
}

/// scripts/a2a_agent.py in `mode`, and its base URL.
fn start_agent(python: &str, mode: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/a2a_agent.py");
    let log = std::env::temp_dir().join(format!("a2a-bench-{}.log", std::process::id()));
    let mut child = std::process::Command::new(python)
        .arg(script)
        .args(["--mode", mode, "--log", log.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start scripts/a2a_agent.py");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().strip_prefix("PORT ").expect("the agent's port");
    (child, format!("http://127.0.0.1:{port}"))
}

/// The A2A part's table and pairs; `None` (after saying why) without the SDK.
async fn a2a_part(memory: &nightshift::memory::Memory) -> Option<String> {
    let Some(python) = std::env::var("NIGHTSHIFT_TEST_A2A_PYTHON")
        .ok()
        .filter(|p| std::path::Path::new(p).is_file())
    else {
        eprintln!(
            "runtime bench: A2A part skipped: needs the A2A Python SDK; run `eval \"$(scripts/a2a-peers.sh)\"` first"
        );
        return None;
    };
    let (mut child, base) = start_agent(&python, "echo");
    let endpoint = format!("{base}/a2a");
    let client = reqwest::Client::new();
    eprintln!("A2A: direct SendMessage…");
    let mut direct = Vec::with_capacity(A2A_RUNS);
    for i in 0..WARM_UP + A2A_RUNS {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m-{i}"), "role": "ROLE_USER",
                        "parts": [{"text": "echo once"}]},
            "configuration": {"returnImmediately": false, "historyLength": 0}}});
        let start = Instant::now();
        let answer: Value = client
            .post(&endpoint)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let took = start.elapsed();
        assert!(answer.get("result").is_some(), "{answer}");
        if i >= WARM_UP {
            direct.push(took);
        }
    }
    eprintln!("A2A: runs through the runtime…");
    let runtime = A2aRuntime::new(&RuntimeConfig {
        kind: RuntimeKind::A2a,
        url: endpoint.clone(),
        ..Default::default()
    })
    .unwrap();
    let mut through = Vec::with_capacity(A2A_RUNS);
    for i in 0..WARM_UP + A2A_RUNS {
        let start = Instant::now();
        let outcome = runtime.run_goal(&request(), memory).await;
        let took = start.elapsed();
        assert_eq!(outcome.error, None, "{outcome:?}");
        if i >= WARM_UP {
            through.push(took);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    direct.sort();
    through.sort();
    let ms = |t: &[Duration], p: f64| percentile(t, p);
    println!();
    println!(
        "| {:<43} | p50 | p95 | p99 |",
        format!("{A2A_RUNS} runs, ms")
    );
    println!("|---------------------------------------------|----:|----:|----:|");
    for (name, times) in [
        ("SendMessage, blocking until done (direct)", &direct),
        ("a run through the a2a runtime", &through),
    ] {
        println!(
            "| {name:<43} | {:.3} | {:.3} | {:.3} |",
            ms(times, 0.5),
            ms(times, 0.95),
            ms(times, 0.99)
        );
    }
    Some(format!(
        "a2a_direct_p95_ms={:.3} a2a_run_p95_ms={:.3} a2a_overhead_p95_ms={:.3}",
        ms(&direct, 0.95),
        ms(&through, 0.95),
        ms(&through, 0.95) - ms(&direct, 0.95)
    ))
}

/// A model that asks to save a note, then answers; tells `results` when it is given the
/// call's result.
async fn approval_model(results: tokio::sync::mpsc::UnboundedSender<Instant>) -> String {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let results = results.clone();
            async move {
                let answered = body["messages"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
                let answer = if answered {
                    let _ = results.send(Instant::now());
                    json!({"choices": [{"message": {"role": "assistant", "content": "saved"}}]})
                } else {
                    json!({"choices": [{"message": {"role": "assistant", "content": null,
                        "tool_calls": [{"id": "c1", "type": "function", "function": {
                            "name": "memory_save",
                            "arguments": "{\"content\":\"the bench note\"}"}}]}}]})
                };
                Json(answer).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// The approvals part's table and pairs: a real worker, answers through the library.
async fn approvals_part(dir: &std::path::Path) -> String {
    let (results, mut called) = tokio::sync::mpsc::unbounded_channel();
    let mut config = Config::default();
    config.database.path = dir.join("approvals.db").display().to_string();
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: approval_model(results).await,
        model: "scripted".into(),
        ..Default::default()
    };
    config.consolidation.enabled = false;
    let app = nightshift::app::App::open(&config).await.unwrap();
    let mut new = NewSchedule::new(
        "bench",
        "save a note",
        Cadence::Triggered { tz: "UTC".into() },
    );
    new.approve = vec!["memory_save".into()];
    let schedule = app
        .schedules()
        .create(&Actor::Operator, &new)
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
            .unwrap()
        }
    });
    eprintln!("approvals: answered, resumed, called…");
    let actor = Actor::User("bench".into());
    let mut times = Vec::with_capacity(RESUMES);
    for i in 0..WARM_UP + RESUMES {
        app.schedules()
            .trigger(&actor, &schedule.schedule_id, None, None)
            .await
            .unwrap();
        let approval = loop {
            let pending = app
                .approvals()
                .list(&actor, Some(ApprovalState::Pending), 1)
                .await
                .unwrap();
            if let Some(approval) = pending.into_iter().next() {
                break approval;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        app.approvals()
            .decide(
                &actor,
                &approval.approval_id,
                Decision::Approve,
                Door::Api,
                None,
            )
            .await
            .unwrap();
        let answered = Instant::now();
        let at = called.recv().await.unwrap();
        if i >= WARM_UP {
            times.push(at.duration_since(answered));
        }
    }
    let _ = stop.send(());
    worker.await.unwrap();
    times.sort();
    let ms = |p: f64| percentile(&times, p);
    println!();
    println!(
        "| {:<43} | p50 | p95 | p99 |",
        format!("{RESUMES} approvals, ms")
    );
    println!("|---------------------------------------------|----:|----:|----:|");
    println!(
        "| {:<43} | {:.3} | {:.3} | {:.3} |",
        "answer given to the call's result at the model",
        ms(0.5),
        ms(0.95),
        ms(0.99)
    );
    format!(
        "approval_resume_p50_ms={:.3} approval_resume_p99_ms={:.3}",
        ms(0.5),
        ms(0.99)
    )
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    let memory = nightshift::app::open_memory(&config).await.unwrap();
    let mut pairs = Vec::new();
    pairs.extend(mcp_part(&memory).await);
    pairs.extend(a2a_part(&memory).await);
    pairs.push(approvals_part(dir.path()).await);
    println!();
    println!("{}", pairs.join(" "));
}
