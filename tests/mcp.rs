//! The MCP server through rmcp's own client: over streamable HTTP at `/mcp` on the real
//! API router, and over stdio with `nightshift mcp` as a child process. Every tool, every
//! resource, bad arguments as tool errors, one user never reaching another's data, and
//! stdout holding protocol messages only.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::api::TestApi;
use nightshift::access::Actor;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use common::mcp::{call, connect, text, Client};

/// A successful call's structured result.
async fn ok(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
    assert!(
        !text(&result).is_empty(),
        "{tool} says something a model can read"
    );
    result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} has structured content"))
}

/// A call that must fail as a tool error; its message.
async fn tool_error(client: &Client, tool: &'static str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} should fail: {result:?}"
    );
    text(&result)
}

async fn read(client: &Client, uri: &str) -> Result<String, ServiceError> {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    let value = serde_json::to_value(&result.contents[0]).unwrap();
    Ok(value["text"].as_str().unwrap_or_default().to_string())
}

const TOOLS: [&str; 29] = [
    "memory_search",
    "memory_save",
    "memory_update",
    "memory_delete",
    "memory_append",
    "memory_recall",
    "memory_context",
    "schedule_add",
    "schedule_list",
    "schedule_show",
    "schedule_edit",
    "schedule_pause",
    "schedule_resume",
    "schedule_delete",
    "schedule_runs",
    "schedule_run_now",
    "schedule_trigger",
    "schedule_backfill",
    "state_get",
    "state_set",
    "state_delete",
    "state_list",
    "memory_history",
    "memory_restore",
    "approval_list",
    "approval_decide",
    "schedule_run_cancel",
    "schedule_run_rerun",
    "schedule_run_events",
];

#[tokio::test]
async fn every_tool_and_resource_over_streamable_http() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let client = connect(&api, &token).await;

    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(info.server_info.as_ref().unwrap().name, "nightshift");
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.resources.is_some());

    // Every tool on the first page (some clients read no other), and a cursor honoured.
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), TOOLS.len());
    assert!(first.next_cursor.is_none());
    let rest = client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("8".into())),
        ))
        .await
        .unwrap();
    assert_eq!(rest.tools, first.tools[8..]);
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut expected = TOOLS.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);
    for tool in &tools {
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        let output = tool.output_schema.as_ref().expect("an output schema");
        assert_eq!(output["type"], "object", "{}", tool.name);
        assert!(!serde_json::to_string(&tool.input_schema)
            .unwrap()
            .contains("$ref"));
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(!description.is_empty() && !description.contains('\n'));
    }
    let delete = tools.iter().find(|t| t.name == "memory_delete").unwrap();
    assert_eq!(
        delete.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );

    // Memory.
    let saved = ok(
        &client,
        "memory_save",
        json!({"text": "Alice drinks oolong tea", "tags": ["drink"]}),
    )
    .await;
    let note_id = saved["note_id"].as_str().unwrap().to_string();
    let updated = ok(
        &client,
        "memory_update",
        json!({"note_id": note_id, "text": "Alice drinks jasmine tea"}),
    )
    .await;
    assert_eq!(updated["content"], "Alice drinks jasmine tea");
    let found = ok(
        &client,
        "memory_search",
        json!({"query": "jasmine tea", "tags": ["drink"]}),
    )
    .await;
    assert_eq!(found["hits"][0]["note_id"], note_id.as_str());
    let appended = ok(
        &client,
        "memory_append",
        json!({"session": "chat-1", "role": "user", "text": "book the train to Lyon"}),
    )
    .await;
    assert_eq!(appended["sequences"], json!([1]));
    let recalled = ok(&client, "memory_recall", json!({"session": "chat-1"})).await;
    assert_eq!(recalled["events"][0]["content"], "book the train to Lyon");
    let context = call(
        &client,
        "memory_context",
        json!({"session": "chat-1", "budget": 500}),
    )
    .await;
    assert_ne!(context.is_error, Some(true), "{}", text(&context));
    assert!(text(&context).contains("book the train to Lyon"));

    // Schedules.
    let added = ok(
        &client,
        "schedule_add",
        json!({"goal": "summarize my inbox", "every": "1h", "approve": ["mail__send_*"]}),
    )
    .await;
    let schedule_id = added["schedule_id"].as_str().unwrap().to_string();
    assert_eq!(added["user_id"], "alice");
    assert_eq!(added["approve"], json!(["mail__send_*"]));
    let listed = ok(&client, "schedule_list", json!({})).await;
    assert_eq!(listed["total"], 1);
    let shown = ok(
        &client,
        "schedule_show",
        json!({"schedule_id": schedule_id}),
    )
    .await;
    assert_eq!(shown["next_runs"].as_array().unwrap().len(), 5);
    let paused = ok(
        &client,
        "schedule_pause",
        json!({"schedule_id": schedule_id, "note": "on holiday"}),
    )
    .await;
    assert_eq!(paused["status"], "paused");
    let resumed = ok(
        &client,
        "schedule_resume",
        json!({"schedule_id": schedule_id}),
    )
    .await;
    assert_eq!(resumed["status"], "active");
    let edited = ok(
        &client,
        "schedule_edit",
        json!({"schedule_id": schedule_id, "changes": {"goal": "edited goal", "every": "2h",
            "approve": ["mail__*", "!mail__read_*"]}}),
    )
    .await;
    assert_eq!(edited["goal"], "edited goal");
    assert_eq!(edited["approve"], json!(["mail__*", "!mail__read_*"]));
    assert_eq!(edited["schedule_id"], schedule_id);
    ok(
        &client,
        "schedule_run_now",
        json!({"schedule_id": schedule_id}),
    )
    .await;
    let triggered = ok(
        &client,
        "schedule_trigger",
        json!({"schedule_id": schedule_id, "input": "a webhook", "idempotency_key": "k1"}),
    )
    .await;
    assert_eq!(triggered["deduplicated"], false);
    let again = ok(
        &client,
        "schedule_trigger",
        json!({"schedule_id": schedule_id, "idempotency_key": "k1"}),
    )
    .await;
    assert_eq!(again["event_id"], triggered["event_id"]);
    assert_eq!(again["deduplicated"], true);
    let backfill = ok(
        &client,
        "schedule_backfill",
        json!({"schedule_id": schedule_id, "from": "2020-01-01", "to": "2020-01-01", "dry_run": true}),
    )
    .await;
    assert_eq!(backfill["dry_run"], true);
    let runs = ok(
        &client,
        "schedule_runs",
        json!({"schedule_id": schedule_id}),
    )
    .await;
    assert_eq!(runs["runs"], json!([]));

    // Resources.
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"nightshift://notes"), "{uris:?}");
    assert!(uris.contains(&"nightshift://schedules"), "{uris:?}");
    assert!(
        uris.contains(&"nightshift://sessions/chat%2D1/summary"),
        "{uris:?}"
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(
        templates[0].uri_template,
        "nightshift://sessions/{session_id}/summary"
    );
    let notes: Value =
        serde_json::from_str(&read(&client, "nightshift://notes").await.unwrap()).unwrap();
    assert_eq!(notes[0]["note_id"], note_id.as_str());
    let schedules: Value =
        serde_json::from_str(&read(&client, "nightshift://schedules").await.unwrap()).unwrap();
    assert_eq!(
        schedules["schedules"][0]["schedule_id"],
        schedule_id.as_str()
    );
    let summary = read(&client, "nightshift://sessions/chat%2D1/summary")
        .await
        .unwrap();
    assert!(summary.contains("no summary yet"), "{summary}");
    let missing = read(&client, "nightshift://nothing").await.unwrap_err();
    assert!(
        matches!(missing, ServiceError::McpError(ref e) if e.code.0 == -32002),
        "{missing}"
    );

    // And the deletes.
    ok(
        &client,
        "schedule_delete",
        json!({"schedule_id": schedule_id}),
    )
    .await;
    ok(&client, "memory_delete", json!({"note_id": note_id})).await;
    assert_eq!(api.app.memory().notes("alice").await.unwrap(), vec![]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_with_the_cli_message() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let client = connect(&api, &token).await;

    let empty = tool_error(&client, "memory_save", json!({"text": ""})).await;
    assert!(empty.contains("note content"), "{empty}");
    let nul = tool_error(
        &client,
        "memory_save",
        json!({"text": "a\u{0}b", "key": "k\u{0}"}),
    )
    .await;
    assert!(nul.contains("U+0000") && nul.contains("key"), "{nul}");
    let unknown_field = tool_error(
        &client,
        "memory_save",
        json!({"text": "x", "colour": "red"}),
    )
    .await;
    assert!(unknown_field.contains("colour"), "{unknown_field}");
    let wrong_type = tool_error(&client, "memory_search", json!({"query": 7})).await;
    assert!(wrong_type.contains("invalid arguments"), "{wrong_type}");
    let missing = tool_error(&client, "memory_search", json!({})).await;
    assert!(missing.contains("query"), "{missing}");
    let huge = tool_error(
        &client,
        "memory_search",
        json!({"query": "tea", "top_k": u64::MAX}),
    )
    .await;
    assert!(huge.contains("top_k") || huge.contains("invalid"), "{huge}");
    let two_cadences = tool_error(
        &client,
        "schedule_add",
        json!({"goal": "g", "every": "1h", "cron": "0 9 * * *"}),
    )
    .await;
    assert!(two_cadences.contains("one of"), "{two_cadences}");
    let other_user = tool_error(
        &client,
        "schedule_add",
        json!({"goal": "g", "every": "1h", "user": "bob"}),
    )
    .await;
    assert!(other_user.contains("user"), "{other_user}");
    let no_note = tool_error(&client, "memory_delete", json!({"note_id": "note-nope"})).await;
    assert!(no_note.contains("no note"), "{no_note}");
    let no_schedule = tool_error(&client, "schedule_show", json!({"schedule_id": "nope"})).await;
    assert!(no_schedule.contains("no schedule"), "{no_schedule}");
    let bad_status = tool_error(&client, "schedule_list", json!({"status": "sleeping"})).await;
    assert!(bad_status.contains("status"), "{bad_status}");

    // An unknown tool is the protocol's error, and the session goes on.
    let unknown = client
        .call_tool(CallToolRequestParams::new("memory_teleport"))
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, ServiceError::McpError(ref e) if e.code.0 == -32602),
        "{unknown}"
    );
    let bad_cursor = client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("zzz".into())),
        ))
        .await
        .unwrap_err();
    assert!(matches!(bad_cursor, ServiceError::McpError(ref e) if e.code.0 == -32602));
    ok(&client, "schedule_list", json!({})).await;
    assert_eq!(api.app.memory().notes("alice").await.unwrap(), vec![]);
}

#[tokio::test]
async fn one_user_never_reaches_anothers_data() {
    let api = TestApi::start(|_| {}).await;
    let alice = connect(&api, &api.token(Some("alice")).await).await;
    let bob = connect(&api, &api.token(Some("bob")).await).await;

    let note = ok(
        &alice,
        "memory_save",
        json!({"text": "alice's locker code is 4711"}),
    )
    .await;
    let note_id = note["note_id"].as_str().unwrap();
    ok(
        &alice,
        "memory_append",
        json!({"session": "private-chat", "role": "user", "text": "my locker code is 4711"}),
    )
    .await;
    let schedule = ok(
        &alice,
        "schedule_add",
        json!({"goal": "water the plants", "every": "1d"}),
    )
    .await;
    let schedule_id = schedule["schedule_id"].as_str().unwrap();
    // A run of hers waiting for her approval of a call.
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
         VALUES ('run-w', ?1, 1, 'waiting')",
        [schedule_id],
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
         arguments, created_at, expires_at)
         VALUES ('apr-a1', 'run-w', ?1, 'alice', 'memory_save', '{}', 1, 9999999999999)",
        [schedule_id],
    )
    .await
    .unwrap();
    assert_eq!(
        ok(&alice, "approval_list", json!({})).await["approvals"][0]["approval_id"],
        "apr-a1"
    );
    assert_eq!(
        ok(&bob, "approval_list", json!({"state": "all"})).await["approvals"],
        json!([])
    );

    let found = ok(&bob, "memory_search", json!({"query": "locker code 4711"})).await;
    assert_eq!(found["hits"], json!([]));
    let refused = tool_error(
        &bob,
        "memory_search",
        json!({"query": "locker code", "session": "private-chat"}),
    )
    .await;
    assert!(!refused.contains("4711"), "{refused}");
    for (tool, args) in [
        (
            "memory_update",
            json!({"note_id": note_id, "text": "bob was here"}),
        ),
        ("memory_delete", json!({"note_id": note_id})),
        ("memory_recall", json!({"session": "private-chat"})),
        ("memory_context", json!({"session": "private-chat"})),
        ("schedule_show", json!({"schedule_id": schedule_id})),
        (
            "schedule_edit",
            json!({"schedule_id": schedule_id, "changes": {"goal": "bob was here"}}),
        ),
        ("schedule_pause", json!({"schedule_id": schedule_id})),
        ("schedule_resume", json!({"schedule_id": schedule_id})),
        ("schedule_run_now", json!({"schedule_id": schedule_id})),
        (
            "schedule_trigger",
            json!({"schedule_id": schedule_id, "input": "bob was here"}),
        ),
        (
            "schedule_backfill",
            json!({"schedule_id": schedule_id, "from": "2020-01-01", "to": "2020-01-02"}),
        ),
        ("schedule_runs", json!({"schedule_id": schedule_id})),
        (
            "approval_decide",
            json!({"approval_id": "apr-a1", "decision": "approve"}),
        ),
        ("schedule_delete", json!({"schedule_id": schedule_id})),
    ] {
        let message = tool_error(&bob, tool, args).await;
        assert!(
            !message.contains("4711") && !message.contains("alice"),
            "{tool}: {message}"
        );
    }
    let listed = ok(&bob, "schedule_list", json!({})).await;
    assert_eq!(listed["total"], 0);
    assert_eq!(
        ok(&alice, "approval_list", json!({})).await["approvals"][0]["state"],
        "pending",
        "bob's answer changed nothing"
    );
    let resources = bob.list_all_resources().await.unwrap();
    assert!(
        resources.iter().all(|r| !r.uri.contains("alice")),
        "{resources:?}"
    );
    assert_eq!(read(&bob, "nightshift://notes").await.unwrap(), "[]");
    assert!(!read(&bob, "nightshift://schedules")
        .await
        .unwrap()
        .contains(schedule_id));
    assert!(read(&bob, "nightshift://sessions/private%2Dchat/summary")
        .await
        .is_err());
    // Her schedule's transcript session is no one's to append to, nor are notes sessions.
    for session in [
        format!("scheduled:{schedule_id}"),
        "memory:alice".to_string(),
    ] {
        let message = tool_error(
            &bob,
            "memory_append",
            json!({"session": session, "role": "user", "text": "bob was here"}),
        )
        .await;
        assert!(message.contains("reserved"), "{session}: {message}");
    }
    // Alice's session id is answered as an id nobody uses, the id aside.
    for tool in ["memory_recall", "memory_context"] {
        let theirs = tool_error(&bob, tool, json!({"session": "private-chat"})).await;
        let unknown = tool_error(&bob, tool, json!({"session": "nobodys-chat"})).await;
        assert_eq!(
            theirs.replace("private-chat", "nobodys-chat"),
            unknown,
            "{tool}"
        );
    }
    // Appending under alice's id makes bob's own session: his turn is his alone, and
    // nothing of hers is in it (before, this was refused as "in use by another user").
    let appended = ok(
        &bob,
        "memory_append",
        json!({"session": "private-chat", "role": "user", "text": "bob was here"}),
    )
    .await;
    assert!(!appended.to_string().contains("alice"), "{appended}");
    let recalled = ok(&bob, "memory_recall", json!({"session": "private-chat"})).await;
    let recalled = recalled.to_string();
    assert!(
        recalled.contains("bob was here") && !recalled.contains("4711"),
        "{recalled}"
    );
    let found = ok(
        &bob,
        "memory_search",
        json!({"query": "locker code 4711", "session": "private-chat"}),
    )
    .await;
    assert!(!found.to_string().contains("4711"), "{found}");
    let summary = read(&bob, "nightshift://sessions/private%2Dchat/summary")
        .await
        .unwrap();
    assert!(!summary.contains("4711"), "{summary}");

    // Nothing of alice's changed, as the database has it.
    let memory = api.app.memory();
    assert_eq!(
        memory.note("alice", note_id).await.unwrap().content,
        "alice's locker code is 4711"
    );
    let events = memory
        .recall(&Actor::user("alice").unwrap(), "private-chat", 10)
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].content, "my locker code is 4711");
    let schedule = api
        .app
        .schedules()
        .get(&Actor::Operator, schedule_id)
        .await
        .unwrap();
    assert_eq!(schedule.status.as_str(), "active");
}

/// Raw HTTP, as any client: the token rules, session ids bound to their token, `DELETE`,
/// version negotiation, ping, and a bad message.
#[tokio::test]
async fn the_http_transport_follows_the_protocol_and_the_api_rules() {
    let api = TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let admin = api.token(None).await;
    let post = |token: Option<&str>, session: Option<&str>, body: Value| {
        let mut request = api
            .client
            .post(format!("{}/mcp", api.base))
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let initialize = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
    };

    let none = post(None, None, initialize("2025-06-18")).await.unwrap();
    assert_eq!(none.status(), 401);
    assert!(none.headers().contains_key("www-authenticate"));
    let as_admin = post(Some(&admin), None, initialize("2025-06-18"))
        .await
        .unwrap();
    assert_eq!(as_admin.status(), 403);
    assert!(as_admin.text().await.unwrap().contains("user token"));

    // The current revision and the one before it are both spoken.
    for version in ["2025-11-25", "2025-06-18"] {
        let reply = post(Some(&alice), None, initialize(version)).await.unwrap();
        assert_eq!(reply.status(), 200);
        let body = sse_json(&reply.text().await.unwrap());
        assert_eq!(body["result"]["protocolVersion"], version);
    }
    // An unknown revision gets one the server speaks.
    let reply = post(Some(&alice), None, initialize("1999-01-01"))
        .await
        .unwrap();
    let body = sse_json(&reply.text().await.unwrap());
    assert!(body["result"]["protocolVersion"].as_str().unwrap() >= "2025-06-18");

    let opened = post(Some(&alice), None, initialize("2025-06-18"))
        .await
        .unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = post(Some(&alice), Some(&session), initialized)
        .await
        .unwrap();
    assert!(accepted.status().is_success(), "{}", accepted.status());
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let pong = post(Some(&alice), Some(&session), ping.clone())
        .await
        .unwrap();
    assert_eq!(sse_json(&pong.text().await.unwrap())["result"], json!({}));

    // Another token cannot use alice's session id.
    let stolen = post(Some(&bob), Some(&session), ping.clone())
        .await
        .unwrap();
    assert_eq!(stolen.status(), 404);

    // A message that is not JSON-RPC is refused with a reason, and the session goes on.
    let garbage = api
        .client
        .post(format!("{}/mcp", api.base))
        .bearer_auth(&alice)
        .header("mcp-session-id", &session)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(garbage.status().as_u16() / 100, 4);
    let garbage: Value = garbage.json().await.unwrap();
    assert!(!garbage["error"]["message"].as_str().unwrap().is_empty());
    let pong = post(Some(&alice), Some(&session), ping.clone())
        .await
        .unwrap();
    assert_eq!(pong.status(), 200);

    // A body over the API's limit is refused before it is read, here too.
    let big = "x".repeat(api.config.server.max_body_bytes + 1);
    let too_big = post(
        Some(&alice),
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": big}}),
    )
    .await
    .unwrap();
    assert_eq!(too_big.status(), 413);

    // DELETE ends the session.
    let ended = api
        .client
        .delete(format!("{}/mcp", api.base))
        .bearer_auth(&alice)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 204);
    let after = post(Some(&alice), Some(&session), ping).await.unwrap();
    assert_eq!(after.status(), 404);
}

/// The JSON-RPC message of a response that may be an event stream.
fn sse_json(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .next_back()
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))
}

fn nightshift(db: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nightshift"));
    command
        .env("NIGHTSHIFT_DB", db)
        .env("NIGHTSHIFT_LOG", "debug")
        .env_remove("NIGHTSHIFT_CONFIG")
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn stdio_serves_one_user_from_a_child_process() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = common::database_in(&dir);
    let mut command = nightshift(&db);
    command.args(["mcp", "--user", "alice"]);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client: Client = ().serve(transport).await.expect("initialize over stdio");
    assert_eq!(client.list_all_tools().await.unwrap().len(), TOOLS.len());
    let saved = ok(
        &client,
        "memory_save",
        json!({"text": "stdio remembers the blue door"}),
    )
    .await;
    let found = ok(&client, "memory_search", json!({"query": "blue door"})).await;
    assert_eq!(found["hits"][0]["note_id"], saved["note_id"]);
    let notes = read(&client, "nightshift://notes").await.unwrap();
    assert!(notes.contains("blue door"));
    client.cancel().await.unwrap();

    let app = nightshift::app::App::open(&common::config_in(&dir))
        .await
        .unwrap();
    let notes = app.memory().notes("alice").await.unwrap();
    assert_eq!(notes.len(), 1, "the note is in the database, alice's");
}

#[tokio::test]
async fn stdio_refuses_a_bad_user_before_speaking() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("nightshift.db").display().to_string();
    let out = nightshift(&db)
        .args(["mcp", "--user", " bad\u{7}user"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("user id"));
}

/// Every line a stdio server writes is a JSON-RPC message: with debug logs on, and with the
/// database gone mid-session (the calls then fail as tool errors, on stdout as protocol).
#[tokio::test]
async fn stdio_stdout_holds_only_protocol_messages_even_when_the_database_fails() {
    let Some(sqld) = common::sqld::Sqld::start() else {
        return;
    };
    let mut child = nightshift(&sqld.url)
        .args(["mcp", "--user", "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Debug logs are many: read them as they come, or the child blocks writing to a
    // full pipe.
    let mut logs = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move { while let Ok(Some(_)) = logs.next_line().await {} });
    let mut send = async |message: Value| {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_save", "arguments": {"text": "saved while the server is up"}}}),
    )
    .await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("stdout open");
        seen.push(line);
    }
    sqld.stop();
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "memory_save", "arguments": {"text": "saved while the server is down"}}}),
    )
    .await;
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {
        "uri": "nightshift://notes"}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "ping"})).await;
    // The answers come as each call finishes, in any order.
    let mut waiting: std::collections::BTreeSet<i64> = [3, 4, 5].into();
    while !waiting.is_empty() {
        let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await
        else {
            panic!("no answer to {waiting:?}; so far {seen:#?}");
        };
        if let Ok(message) = serde_json::from_str::<Value>(&line) {
            message["id"].as_i64().map(|id| waiting.remove(&id));
        }
        seen.push(line);
    }
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("exits when stdin closes")
        .unwrap();
    assert!(status.success(), "{status}");
    let mut answered = std::collections::BTreeMap::new();
    for line in &seen {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        answered.insert(message["id"].as_i64().unwrap(), message);
    }
    assert_eq!(
        answered[&2]["result"]["isError"], false,
        "{:?}",
        answered[&2]
    );
    assert_eq!(
        answered[&3]["result"]["isError"], true,
        "{:?}",
        answered[&3]
    );
    assert!(
        answered[&4]["error"]["message"].is_string(),
        "{:?}",
        answered[&4]
    );
    assert_eq!(answered[&5]["result"], json!({}));
}

/// A cancelled call gets no answer and holds nothing up: the server answers a ping while
/// the call still waits on the database, and the write, once it can go, is whole.
#[tokio::test]
async fn a_cancelled_call_is_dropped_and_the_session_goes_on() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = common::database_in(&dir);
    let mut child = nightshift(&db)
        .args(["mcp", "--user", "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("stdout open");
        serde_json::from_str(&line).unwrap()
    };
    let mut send = async |message: Value| {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    assert_eq!(next().await["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    // Another connection holds the write lock: the save waits on it.
    let lock = common::postgres::WriteLockHolder::hold(&db).await;
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_save", "arguments": {"text": "written after the cancel"}}}),
    )
    .await;
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user gave up"}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})).await;
    assert_eq!(
        next().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {}})
    );
    lock.release().await;

    // The save goes through whole once the lock is free; its answer never comes.
    let app = nightshift::app::App::open(&common::config_in(&dir))
        .await
        .unwrap();
    let mut saved = Vec::new();
    for _ in 0..200 {
        saved = app.memory().notes("alice").await.unwrap();
        if !saved.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(saved.len(), 1, "the write finished");
    assert_eq!(saved[0].content, "written after the cancel");
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})).await;
    assert_eq!(
        next().await["id"],
        4,
        "no answer for the cancelled call came first"
    );
}

/// Calls are bounded like requests: past `server.max_concurrent_requests` a call is turned
/// away at once, and one over `server.request_timeout_secs` answers with a tool error,
/// while the write it started still finishes whole once it can. On a libSQL server, whose
/// write lock another client holds: there a waiting write waits without a thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_bounded_in_number_and_time() {
    let Some(sqld) = common::sqld::Sqld::start() else {
        return;
    };
    let url = sqld.url.clone();
    let api = TestApi::start(move |config| {
        config.database.path = url;
        config.server.max_concurrent_requests = 2;
        config.server.request_timeout_secs = 2;
    })
    .await;
    let token = api.token(Some("alice")).await;
    let client = connect(&api, &token).await;
    let holder = libsql::Builder::new_remote(sqld.url.clone(), String::new())
        .build()
        .await
        .unwrap();
    let conn = holder.connect().unwrap();
    let lock = conn
        .transaction_with_behavior(libsql::TransactionBehavior::Immediate)
        .await
        .unwrap();
    lock.execute("CREATE TABLE IF NOT EXISTS held (x)", ())
        .await
        .unwrap();

    // Two writes wait on the lock and take both slots.
    let slow: Vec<_> = ["one", "two"]
        .into_iter()
        .map(|which| {
            let (api_base, token) = (api.base.clone(), token.clone());
            tokio::spawn(async move {
                // A session of its own: a session's calls may be answered in turn.
                let config =
                    StreamableHttpClientTransportConfig::with_uri(format!("{api_base}/mcp"))
                        .auth_header(token);
                let client: Client = loop {
                    let transport = StreamableHttpClientTransport::from_config(config.clone());
                    if let Ok(client) = ().serve(transport).await {
                        break client;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                };
                let Value::Object(args) = json!({"text": format!("write {which}")}) else {
                    unreachable!()
                };
                // Shed (by the HTTP layer or for want of a slot while a list ran): it never
                // reached the tool, so it is sent again.
                loop {
                    let save =
                        CallToolRequestParams::new("memory_save").with_arguments(args.clone());
                    match client.call_tool(save).await {
                        Ok(result) if !text(&result).contains("at capacity") => break result,
                        _ => {}
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        })
        .collect();
    let mut shed = None;
    for _ in 0..400 {
        // The HTTP layer may itself shed a request while the slow ones start (the same
        // limit): only the tool's answer counts here.
        let list = CallToolRequestParams::new("schedule_list").with_arguments(Default::default());
        if let Ok(result) = client.call_tool(list).await {
            if result.is_error == Some(true) {
                shed = Some(text(&result));
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let shed = shed.expect("a second call while the first runs is turned away");
    assert!(shed.contains("max_concurrent_requests"), "{shed}");

    for write in slow {
        let timed_out = write.await.unwrap();
        assert_eq!(timed_out.is_error, Some(true));
        assert!(
            text(&timed_out).contains("request_timeout_secs"),
            "{}",
            text(&timed_out)
        );
    }
    lock.commit().await.unwrap();
    let mut notes = Vec::new();
    for _ in 0..400 {
        notes = api.app.memory().notes("alice").await.unwrap();
        if notes.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(notes.len(), 2, "the writes finished once the lock was free");
    ok(&client, "schedule_list", json!({})).await;
}

/// A token at its limit of open sessions is refused a new one (503), but a request that
/// opens none (no session id, not `initialize`: a sessionless client's) is not refused
/// for it (the report's D19).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_opening_a_session_counts_against_the_session_limit() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let client = reqwest::Client::new();
    let post = |body: Value, version: &'static str| {
        client
            .post(format!("{}/mcp", api.base))
            .bearer_auth(&token)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", version)
            .json(&body)
            .send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "limit-test", "version": "1"}}});
    for i in 0..64 {
        let reply = post(initialize.clone(), "2025-06-18").await.unwrap();
        let opened = reply.headers().contains_key("mcp-session-id");
        assert_eq!(
            (reply.status().as_u16(), opened),
            (200, true),
            "session {i}: {}",
            reply.text().await.unwrap()
        );
    }
    let refused = post(initialize.clone(), "2025-06-18").await.unwrap();
    assert_eq!(refused.status(), 503);
    let sessionless = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        "2026-07-28",
    )
    .await
    .unwrap();
    let status = sessionless.status();
    let text = sessionless.text().await.unwrap();
    assert!(!text.contains("too many MCP sessions"), "{status}: {text}");
}

/// A JSON body the MCP transport cannot decode is a bad request (400, `bad_input`), not
/// an unsupported media type; a body sent as another type still is 415 (the report's D17).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_json_body_is_a_bad_request() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let client = reqwest::Client::new();
    for (body, content_type, status) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initia"#,
            "application/json",
            400,
        ),
        ("[1, 2]", "application/json", 400),
        ("nope", "application/json", 400),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "text/plain",
            415,
        ),
    ] {
        let reply = client
            .post(format!("{}/mcp", api.base))
            .bearer_auth(&token)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), status, "{body}");
        let error: Value = reply.json().await.unwrap();
        if status == 400 {
            assert_eq!(error["error"]["code"], "bad_input", "{error}");
        }
    }
}
