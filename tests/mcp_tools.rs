//! Tools from MCP servers in the built-in tool loop, against the official reference server
//! (`@modelcontextprotocol/server-everything` from npm, pinned in scripts/mcp-peers/ and
//! installed by scripts/mcp-peers.sh, which scripts/test.sh runs) and a scripted
//! OpenAI-compatible model that asks for the tools. Without the server installed each test
//! prints one line saying it was skipped and why.

mod common;

use std::collections::BTreeMap;

use common::model::{final_answer, last_tool_result, offered_tools, serve, tool_call};
use nightshift::config::{
    Config, McpServerConfig, RuntimeConfig, RuntimeKind, SecretSource, UserConfig,
};
use nightshift::mcp_client::McpTools;
use nightshift::runtime::{AgentRuntime, GoalRequest, OpenAiRuntime};
use serde_json::json;

/// The reference server's entry point, or `None` after the skip line.
fn everything() -> Option<String> {
    common::skip::installed(
        "NIGHTSHIFT_TEST_MCP_EVERYTHING",
        "the MCP reference server",
        "scripts/mcp-peers.sh",
    )
}

fn stdio_server(entry: &str) -> McpServerConfig {
    McpServerConfig {
        command: Some("node".into()),
        args: vec![entry.to_string(), "stdio".into()],
        ..Default::default()
    }
}

/// A config with `servers`, granting alice `grants`.
fn config_with(servers: Vec<(&str, McpServerConfig)>, grants: &[&str]) -> Config {
    let mut config = Config {
        mcp_servers: servers
            .into_iter()
            .map(|(name, server)| (name.to_string(), server))
            .collect::<BTreeMap<_, _>>(),
        ..Config::default()
    };
    config.users.insert(
        "alice".into(),
        UserConfig {
            mcp_servers: grants.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        },
    );
    config
}

fn runtime(url: &str, config: &Config) -> OpenAiRuntime {
    let runtime_config = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: format!("{url}/v1"),
        model: "scripted".into(),
        timeout_secs: 30,
        ..Default::default()
    };
    OpenAiRuntime::new(&runtime_config)
        .unwrap()
        .with_mcp_tools(McpTools::from_config(config))
}

fn request(user: &str) -> GoalRequest {
    GoalRequest {
        run_id: "run-1".into(),
        schedule_id: "sch-1".into(),
        user_id: user.into(),
        goal: "say hello through the echo tool".into(),
        session_id: "scheduled:sch-1".into(),
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

/// A model that, in each run (two requests), calls `tool` with `arguments` once, then
/// answers with what it got back.
async fn model_calling(
    tool: &'static str,
    arguments: serde_json::Value,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    serve("/v1/chat/completions", move |n, body| {
        if n % 2 == 1 {
            tool_call("call-1", tool, arguments.clone())
        } else {
            final_answer(&format!("the tool said: {}", last_tool_result(&body)))
        }
    })
    .await
}

/// The model is offered the granted server's tools as `NAME__tool` with their schemas,
/// calls one, and reads its result; the call and the result are in the transcript.
#[tokio::test]
async fn a_run_calls_a_tool_of_a_granted_mcp_server() {
    let Some(entry) = everything() else { return };
    let (_dir, memory) = common::fresh().await;
    let config = config_with(vec![("everything", stdio_server(&entry))], &["everything"]);
    let (url, seen) =
        model_calling("everything__echo", json!({"message": "hi from the loop"})).await;
    let outcome = runtime(&url, &config)
        .run_goal(&request("alice"), &memory)
        .await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert!(
        outcome.output.contains("Echo: hi from the loop"),
        "{}",
        outcome.output
    );
    let first = seen.lock().unwrap()[0].clone();
    let offered = offered_tools(&first);
    assert!(
        offered.contains(&"everything__echo".to_string()),
        "{offered:?}"
    );
    assert!(
        offered.contains(&"memory_search".to_string()),
        "memory tools stay"
    );
    let echo = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .unwrap()
        .clone();
    assert_eq!(
        echo["function"]["parameters"]["properties"]["message"]["type"], "string",
        "{echo}"
    );
    let tool_events: Vec<_> = outcome
        .transcript
        .iter()
        .filter(|e| e.role == nightshift::memory::Role::Tool)
        .collect();
    assert_eq!(tool_events.len(), 1);
    assert!(tool_events[0].content.contains("Echo: hi from the loop"));
}

/// A user the server is not granted to is not offered its tools, and a call to one by
/// name is an unknown tool; a schedule's filter takes tools away from a granted user.
#[tokio::test]
async fn tools_reach_only_granted_users_and_what_the_schedule_allows() {
    let Some(entry) = everything() else { return };
    let (_dir, memory) = common::fresh().await;
    let config = config_with(vec![("everything", stdio_server(&entry))], &["*"]);
    let (url, seen) = model_calling("everything__echo", json!({"message": "let me in"})).await;
    let runtime = runtime(&url, &config);
    let outcome = runtime.run_goal(&request("bob"), &memory).await;
    assert!(
        !offered_tools(&seen.lock().unwrap()[0])
            .iter()
            .any(|t| t.starts_with("everything__")),
        "bob was offered alice's server"
    );
    assert!(
        outcome.output.contains("unknown tool"),
        "{}",
        outcome.output
    );
    assert!(!outcome.output.contains("let me in"));

    let mut narrowed = request("alice");
    narrowed.tools = vec!["everything__*".into(), "!everything__echo".into()];
    let outcome = runtime.run_goal(&narrowed, &memory).await;
    let offered = offered_tools(&seen.lock().unwrap()[2]);
    assert!(
        offered.contains(&"everything__get-sum".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"everything__echo".to_string()),
        "{offered:?}"
    );
    assert!(
        outcome.output.contains("unknown tool"),
        "{}",
        outcome.output
    );
}

/// The server's environment holds what its config names (from a file and from one of
/// the worker's variables) and none of the worker's own secrets.
#[tokio::test]
async fn a_server_gets_the_environment_its_config_names_and_no_other_secret() {
    let Some(entry) = everything() else { return };
    let (dir, memory) = common::fresh().await;
    let file = dir.path().join("token");
    std::fs::write(&file, "from-a-file\n").unwrap();
    std::env::set_var("NIGHTSHIFT_TEST_PARENT_VALUE", "from-the-worker");
    std::env::set_var("NIGHTSHIFT_TEST_WORKER_SECRET", "never-passed-on");
    let mut server = stdio_server(&entry);
    server.env.insert(
        "FROM_FILE".into(),
        SecretSource {
            env: None,
            file: Some(file.display().to_string()),
        },
    );
    server.env.insert(
        "FROM_ENV".into(),
        SecretSource {
            env: Some("NIGHTSHIFT_TEST_PARENT_VALUE".into()),
            file: None,
        },
    );
    let config = config_with(vec![("everything", server)], &["everything"]);
    let (url, _) = model_calling("everything__get-env", json!({})).await;
    let outcome = runtime(&url, &config)
        .run_goal(&request("alice"), &memory)
        .await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert!(outcome.output.contains("from-a-file"), "{}", outcome.output);
    assert!(
        outcome.output.contains("from-the-worker"),
        "{}",
        outcome.output
    );
    assert!(
        !outcome.output.contains("never-passed-on"),
        "{}",
        outcome.output
    );
}

/// A result over the server's `max_result_bytes` is cut, on a character boundary, with a
/// note; a call past `call_timeout_secs` is a tool error naming the limit, and the run
/// goes on.
#[tokio::test]
async fn results_are_bounded_and_slow_calls_time_out() {
    let Some(entry) = everything() else { return };
    let (_dir, memory) = common::fresh().await;
    let mut server = stdio_server(&entry);
    server.max_result_bytes = 256;
    server.call_timeout_secs = 2;
    let config = config_with(vec![("everything", server)], &["everything"]);
    let long = "é".repeat(1000);
    let (url, seen) = model_calling("everything__echo", json!({ "message": long })).await;
    let outcome = runtime(&url, &config)
        .run_goal(&request("alice"), &memory)
        .await;
    assert_eq!(outcome.error, None);
    let result = last_tool_result(&seen.lock().unwrap()[1]);
    let shown: serde_json::Value = serde_json::from_str(&result).unwrap();
    let text = shown["result"].as_str().unwrap();
    assert!(text.len() <= 256, "{} bytes", text.len());
    let (kept, note) = text.split_once("\n[… ").expect("a cut note");
    assert!(kept.starts_with("Echo: é"), "{kept}");
    assert!(note.ends_with("more bytes not kept]"), "{note}");

    let (url, seen) = model_calling(
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 3}),
    )
    .await;
    let outcome = runtime(&url, &config)
        .run_goal(&request("alice"), &memory)
        .await;
    assert_eq!(outcome.error, None, "the run goes on after a slow tool");
    let result = last_tool_result(&seen.lock().unwrap()[1]);
    assert!(
        result.contains("no answer within 2s (call_timeout_secs)"),
        "{result}"
    );
}

/// Hostile or broken servers: one that is not a program, one that exits at once, one
/// that never speaks MCP. Each leaves the run with its other tools and a reason, names
/// the server, and is not tried again until its backoff runs out.
#[tokio::test]
async fn a_server_that_cannot_start_fails_its_tools_not_the_run() {
    let (_dir, memory) = common::fresh().await;
    let silent = McpServerConfig {
        command: Some("sleep".into()),
        args: vec!["600".into()],
        call_timeout_secs: 1,
        ..Default::default()
    };
    let config = config_with(
        vec![
            (
                "missing",
                McpServerConfig {
                    command: Some("/nonexistent/mcp-server".into()),
                    ..Default::default()
                },
            ),
            (
                "exits",
                McpServerConfig {
                    command: Some("false".into()),
                    ..Default::default()
                },
            ),
            ("silent", silent),
        ],
        &["*"],
    );
    let (url, seen) = model_calling("missing__anything", json!({})).await;
    let runtime = runtime(&url, &config);
    let outcome = runtime.run_goal(&request("alice"), &memory).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    let first = seen.lock().unwrap()[0].clone();
    let system: Vec<String> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    for name in ["missing", "exits", "silent"] {
        assert!(
            system
                .iter()
                .any(|s| s.contains(&format!("MCP server `{name}`"))),
            "{name}: {system:?}"
        );
    }
    assert!(system
        .iter()
        .any(|s| s.contains("cannot start `/nonexistent/mcp-server`")));
    assert!(system
        .iter()
        .any(|s| s.contains("did not finish starting within 1s")));
    assert!(
        outcome.output.contains("unknown tool"),
        "{}",
        outcome.output
    );
    // A second run soon after does not wait on them again: they are in their backoff.
    runtime.run_goal(&request("alice"), &memory).await;
    let second = seen.lock().unwrap()[2].clone();
    assert!(
        second["messages"]
            .to_string()
            .contains("it is tried again in"),
        "{second}"
    );
}

/// The hostile server in tests/peers/hostile_mcp.js in `mode`.
fn hostile(mode: &str) -> McpServerConfig {
    McpServerConfig {
        command: Some("node".into()),
        args: vec![
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/hostile_mcp.js").into(),
            mode.into(),
        ],
        call_timeout_secs: 3,
        max_tools: 50,
        ..Default::default()
    }
}

/// Peers no SDK would produce: a 1 MB answer is cut to the limit; a 50 MB one (past the
/// client's 16 MiB line limit, dropped unread), an answer that is not JSON or a server
/// that dies mid-call is a tool error naming the tool or server (a broken one is left
/// alone for its backoff); 10,000 tools are cut to `max_tools`. Each run ends with the
/// model's answer, and the other servers keep working.
#[tokio::test]
async fn hostile_servers_fail_their_own_calls_and_nothing_else() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip::skipped("needs node");
        return;
    }
    let (_dir, memory) = common::fresh().await;
    let config = config_with(
        vec![
            ("big", hostile("big")),
            ("huge", hostile("huge")),
            ("garbage", hostile("garbage")),
            ("dies", hostile("dies")),
            ("many", hostile("many-tools")),
        ],
        &["*"],
    );
    let runtime_for = |url: &str| runtime(url, &config);

    let (url, seen) = model_calling("big__t0", json!({})).await;
    let outcome = runtime_for(&url).run_goal(&request("alice"), &memory).await;
    assert_eq!(outcome.error, None);
    let result = last_tool_result(&seen.lock().unwrap()[1]);
    assert!(
        result.len() < 70 * 1024,
        "{} bytes reached the model",
        result.len()
    );
    assert!(
        result.contains("more bytes not kept]"),
        "{}",
        &result[result.len().saturating_sub(300)..]
    );
    let offered = offered_tools(&seen.lock().unwrap()[0]);
    assert_eq!(
        offered.iter().filter(|t| t.starts_with("many__")).count(),
        50
    );

    for (server, tool) in [
        ("huge", "huge__t0"),
        ("garbage", "garbage__t0"),
        ("dies", "dies__t0"),
    ] {
        let (url, seen) = model_calling(tool, json!({})).await;
        let runtime = runtime_for(&url);
        let outcome = runtime.run_goal(&request("alice"), &memory).await;
        assert_eq!(outcome.error, None, "{server}");
        let result = last_tool_result(&seen.lock().unwrap()[1]);
        assert!(result.contains("\"error\""), "{server}: {result}");
        assert!(result.contains(server), "{server}: {result}");
        // A second run gets an answer again (the server restarted, or left alone in its
        // backoff: never a hung worker), and the other servers are still offered.
        let outcome = runtime.run_goal(&request("alice"), &memory).await;
        assert_eq!(outcome.error, None, "{server}");
        let again = last_tool_result(&seen.lock().unwrap()[3]);
        assert!(again.contains(server), "{server}: {again}");
        let offered = offered_tools(&seen.lock().unwrap()[2]);
        assert!(
            offered.contains(&"big__t0".to_string()),
            "{server}: {offered:?}"
        );
    }
}

/// A schedule's tool patterns are kept with it (set, replaced, cleared, refused when
/// malformed) and reach its runs: the worker's run of a schedule that takes `echo` away
/// is not offered it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedules_tool_patterns_are_kept_and_narrow_its_runs() {
    use nightshift::access::Actor;
    use nightshift::spec::{ClearField, SchedulePatch, ScheduleSpec};
    let dir = tempfile::TempDir::new().unwrap();
    let (url, seen) = serve("/v1/chat/completions", |_, _| final_answer("nothing to do")).await;
    let mut config = common::config_in(&dir);
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: format!("{url}/v1"),
        model: "scripted".into(),
        timeout_secs: 30,
        ..Default::default()
    };
    let everything_entry = everything();
    if let Some(entry) = &everything_entry {
        config
            .mcp_servers
            .insert("everything".into(), stdio_server(entry));
        config.users.insert(
            "alice".into(),
            UserConfig {
                mcp_servers: vec!["everything".into()],
                ..Default::default()
            },
        );
    }
    let app = common::app_with(&config, None).await;
    let alice = Actor::User("alice".into());
    let spec = ScheduleSpec {
        goal: "report".into(),
        every: Some("1h".into()),
        tools: vec!["everything__*".into(), "!everything__echo".into()],
        ..Default::default()
    };
    let made = app.add_schedule(&alice, "alice", &spec).await.unwrap();
    assert_eq!(made.tools, spec.tools);
    for bad in [
        vec!["files/*".to_string()],
        vec!["!".into()],
        vec!["x".into(); 65],
    ] {
        let refused = app
            .add_schedule(
                &alice,
                "alice",
                &ScheduleSpec {
                    tools: bad.clone(),
                    ..spec.clone()
                },
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("tools"), "{bad:?}: {refused}");
    }
    let patch = SchedulePatch {
        tools: Some(vec!["everything__get-*".into()]),
        ..Default::default()
    };
    let edited = app
        .edit_schedule(&alice, &made.schedule_id, &patch)
        .await
        .unwrap();
    assert_eq!(edited.tools, vec!["everything__get-*".to_string()]);
    let cleared = app
        .edit_schedule(
            &alice,
            &made.schedule_id,
            &SchedulePatch {
                clear: vec![ClearField::Tools],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(cleared.tools.is_empty());
    app.edit_schedule(
        &alice,
        &made.schedule_id,
        &SchedulePatch {
            tools: Some(vec!["!everything__echo".into()]),
            ..Default::default()
        },
    )
    .await
    .unwrap();

    // The worker's run is offered what the patterns leave.
    let Some(_) = everything_entry else { return };
    app.schedules()
        .run_now(&Actor::Operator, &made.schedule_id)
        .await
        .unwrap();
    let asked = seen.clone();
    common::worker_until(&app, move || !asked.lock().unwrap().is_empty()).await;
    let offered = offered_tools(&seen.lock().unwrap()[0]);
    assert!(
        offered.contains(&"everything__get-sum".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"everything__echo".to_string()),
        "{offered:?}"
    );
}

/// A schedule's approval patterns are kept with it as its tool patterns are: set, shown,
/// replaced, cleared; malformed ones are refused naming `approve` and change nothing.
#[tokio::test]
async fn a_schedules_approval_patterns_are_kept_replaced_cleared_and_checked() {
    use nightshift::access::Actor;
    use nightshift::schedule::view::ScheduleView;
    use nightshift::spec::{ClearField, SchedulePatch, ScheduleSpec};
    let dir = tempfile::TempDir::new().unwrap();
    let app = common::app_with(&common::config_in(&dir), None).await;
    let alice = Actor::User("alice".into());
    let spec = ScheduleSpec {
        goal: "tidy the files".into(),
        every: Some("1h".into()),
        tools: vec!["files__*".into()],
        approve: vec![
            "files__write_*".into(),
            "memory_delete".into(),
            "!files__write_draft".into(),
        ],
        ..Default::default()
    };
    let made = app.add_schedule(&alice, "alice", &spec).await.unwrap();
    assert_eq!(made.approve, spec.approve);
    assert_eq!(made.tools, spec.tools, "tools and approve are kept apart");
    let view = serde_json::to_value(ScheduleView::new(&made, 0)).unwrap();
    assert_eq!(view["approve"], serde_json::json!(spec.approve));
    let shown = app
        .schedules()
        .get(&alice, &made.schedule_id)
        .await
        .unwrap();
    assert_eq!(shown, made);

    let schedules = || async {
        app.schedules()
            .list(&alice, &Default::default())
            .await
            .unwrap()
            .0
    };
    for bad in [
        vec!["files/*".to_string()],
        vec!["!".into()],
        vec!["".into()],
        vec!["x".repeat(129)],
        vec!["x".into(); 65],
    ] {
        let refused = app
            .add_schedule(
                &alice,
                "alice",
                &ScheduleSpec {
                    approve: bad.clone(),
                    ..spec.clone()
                },
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("approve"), "{bad:?}: {refused}");
        let refused = app
            .edit_schedule(
                &alice,
                &made.schedule_id,
                &SchedulePatch {
                    approve: Some(bad.clone()),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("approve"), "{bad:?}: {refused}");
        assert_eq!(
            schedules().await,
            vec![made.clone()],
            "{bad:?} changed nothing"
        );
    }
    let both = app
        .edit_schedule(
            &alice,
            &made.schedule_id,
            &SchedulePatch {
                approve: Some(vec!["files__*".into()]),
                clear: vec![ClearField::Approve],
                ..Default::default()
            },
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(both.contains("approve"), "{both}");

    let edited = app
        .edit_schedule(
            &alice,
            &made.schedule_id,
            &SchedulePatch {
                approve: Some(vec!["*".into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(edited.approve, ["*"]);
    assert_eq!(edited.tools, made.tools, "tools untouched");
    let cleared = app
        .edit_schedule(
            &alice,
            &made.schedule_id,
            &SchedulePatch {
                clear: vec![ClearField::Approve],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(cleared.approve.is_empty());
    assert_eq!(cleared.tools, made.tools, "tools untouched");
    let view = serde_json::to_value(ScheduleView::new(&cleared, 0)).unwrap();
    assert!(view.get("approve").is_none(), "{view}");
    let stored = common::count(
        app.memory(),
        &format!(
            "SELECT count(*) FROM schedules WHERE schedule_id = '{}' AND approve_json IS NULL",
            made.schedule_id
        ),
    )
    .await;
    assert_eq!(stored, 1, "none is stored as NULL");
}
